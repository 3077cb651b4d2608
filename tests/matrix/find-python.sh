#!/usr/bin/env bash
# find-python.sh MINOR [MINOR ...]: print the path of a working Python of the first of these minors (3.13, 3.12, ...)
# this machine has, and exit 1 (printing nothing) when it has none of them.
# Where it looks, for each minor in turn: the distribution's /usr/bin, then /usr/local/bin, pyenv's versions
# directory ($PYENV_ROOT, else ~/.pyenv; the newest patch first), then PATH. A candidate counts only when it runs, is
# that minor, is no venv's and can make a venv (a pyenv shim of a version pyenv has not selected fails to run;
# Debian's python3.X needs python3.X-venv).
set -uo pipefail
pyenv_root=${PYENV_ROOT:-$HOME/.pyenv}
works() {   # works PATH MINOR
  [ -x "$1" ] || return 1
  [ "$("$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" = "$2" ] || return 1
  # an interpreter of its own, not a venv's (.venv/bin on PATH holds python3.13 too)
  "$1" -c 'import sys, venv, ensurepip, ssl, sqlite3; sys.exit(sys.prefix != sys.base_prefix)' 2>/dev/null
}
for minor in "$@"; do
  candidates=("/usr/bin/python$minor" "/usr/local/bin/python$minor")
  if [ -d "$pyenv_root/versions" ]; then
    while IFS= read -r dir; do candidates+=("$dir/bin/python$minor"); done \
      < <(find "$pyenv_root/versions" -mindepth 1 -maxdepth 1 -name "$minor.*" | sort -rV)
  fi
  found=$(command -v "python$minor" 2>/dev/null) && candidates+=("$found")
  for candidate in "${candidates[@]}"; do
    if works "$candidate" "$minor"; then echo "$candidate"; exit 0; fi
  done
done
exit 1
