#!/usr/bin/env bash
# host-units.sh X.Y: the host-side unit tests (tests/unit/plugins/module_utils, tests/unit/plugins/modules) on a lab
# host's Python X.Y, the way the modules run there: that Python, pyroute2 from constraints.txt, and the
# ansible.module_utils of the controller's ansible-core (the `python` first on PATH: .venv's, the newest) on
# PYTHONPATH with an empty `ansible` package around it, as ansible-test's units do for module tests; no other part of
# ansible-core. The venv is host-python-X.Y in $AIFABRIC_MATRIX_VENVS (else .matrix) (pytest from requirements-test.txt, pyroute2), rebuilt when the
# pins or the Python change. Exit 3 when this machine has no Python X.Y (tests/matrix/find-python.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
minor=${1:?usage: host-units.sh 3.9}
found=$(bash tests/matrix/find-python.sh "$minor") \
  || { echo "host units: no Python $minor on this machine (pyenv's versions, /usr/bin, PATH): skipped"; exit 3; }
venv="${AIFABRIC_MATRIX_VENVS:-$root/.matrix}/host-python-$minor"
pins=$(grep -E '^(pyroute2)==' constraints.txt; grep -E '^pytest==' requirements-test.txt)
stamp="$venv/.aifabric-$( (echo "$pins"; "$found" -VV) | sha256sum | cut -c1-12)"
if [ ! -e "$stamp" ]; then
  rm -rf "$venv"
  "$found" -m venv "$venv"
  # shellcheck disable=SC2086  # one pin a word
  "$venv/bin/pip" install -q --disable-pip-version-check $pins
  touch "$stamp"
fi
module_utils=$(python -c 'import ansible.module_utils, os; print(os.path.dirname(ansible.module_utils.__file__))')
core=$(python -c 'from ansible.release import __version__; print(__version__)')
path="$venv/ansible-path"
rm -rf "$path" && mkdir -p "$path/ansible"
: > "$path/ansible/__init__.py"
ln -s "$module_utils" "$path/ansible/module_utils"
dirs=()
for d in tests/unit/plugins/module_utils tests/unit/plugins/modules; do [ -d "$d" ] && dirs+=("$d"); done
echo "host units on $found ($("$found" -V)), ansible.module_utils of ansible-core $core: ${dirs[*]}"
units_ns=()   # run.sh's pool: these tests in a network namespace of their own (loopback up), beside another row's
if [ "${MATRIX_UNITS_NS:-}" = 1 ]; then units_ns=(unshare --net --mount bash -c 'mount -t sysfs sysfs /sys && ip link set lo up && exec "$@"' units); fi
PYTHONPATH="$path" exec "${units_ns[@]}" "$venv/bin/python" -m pytest -q -p no:cacheprovider -m "not needs_root" "${dirs[@]}"
