#!/usr/bin/env bash
# The ansible-core matrix: sanity and the unit tier against every version in tests/matrix/ansible-core.txt, each in
# its own pinned venv (.matrix/ansible-core-<version>: that ansible-core, the collection's pins from constraints.txt,
# pytest). `run.sh` runs all of them; `run.sh --skip-current` leaves out the version .venv runs (make test covers it
# in its own tiers); `run.sh 2.17.14 ...` runs those. Prints one line per version and a table at the end.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
PYTHON=${PYTHON:-/usr/bin/python3}
listed=$(grep -E '^[0-9]' tests/matrix/ansible-core.txt)
current=$(grep -E '^ansible-core==' constraints.txt | cut -d= -f3)
pytest_pin=$(grep -E '^pytest==' requirements-test.txt)
versions=()
skip_current=0
for arg in "$@"; do
  case "$arg" in
    --skip-current) skip_current=1 ;;
    *) grep -qx "$arg" <<<"$listed" || { echo "matrix: $arg is not in tests/matrix/ansible-core.txt ($(echo $listed))"; exit 2; }
       versions+=("$arg") ;;
  esac
done
[ ${#versions[@]} -gt 0 ] || versions=($listed)
results=()
failed=0
for v in "${versions[@]}"; do
  if [ "$skip_current" = 1 ] && [ "$v" = "$current" ]; then
    results+=("$v|(.venv: the sanity and unit tiers of make test)|"); continue
  fi
  venv="$root/.matrix/ansible-core-$v"
  start=$SECONDS
  echo; echo "=== ansible-core $v: venv $venv"
  stamp="$venv/.aifabric-$(cat requirements.txt constraints.txt <(echo "$pytest_pin $("$PYTHON" -V)") \
    | sha256sum | cut -c1-12)"
  if [ ! -e "$stamp" ]; then
    rm -rf "$venv"
    # the collection's pins without .venv's ansible-core: this venv's ansible-core is the matrix's
    if ! { "$PYTHON" -m venv "$venv" && grep -v '^ansible-core==' constraints.txt > "$venv/constraints.txt" \
           && "$venv/bin/pip" install -q --disable-pip-version-check -c "$venv/constraints.txt" -r requirements.txt \
                "ansible-core==$v" "$pytest_pin"; }; then
      echo "ansible-core $v: its venv could not be built ($venv)"
      failed=$((failed + 1)); results+=("$v|venv FAILED|$((SECONDS - start)) s"); continue
    fi
    touch "$stamp"
  fi
  got=$("$venv/bin/python" -c 'from ansible.release import __version__; print(__version__)')
  if [ "$got" != "$v" ]; then
    echo "ansible-core $v: $venv runs ansible-core $got"
    failed=$((failed + 1)); results+=("$v|venv runs $got|$((SECONDS - start)) s"); continue
  fi
  sanity=FAILED; units=FAILED
  if PATH="$venv/bin:$PATH" bash tests/sanity/run.sh > "$venv/sanity.log" 2>&1; then sanity=passed
  else tail -40 "$venv/sanity.log"; fi
  echo "ansible-core $v: sanity $sanity ($(grep -cE '^Running sanity test' "$venv/sanity.log") tests, log $venv/sanity.log)"
  if PATH="$venv/bin:$PATH" "$venv/bin/python" -m pytest -q -p no:cacheprovider -m "not needs_root" tests/unit \
      > "$venv/units.log" 2>&1; then units=passed
  else tail -40 "$venv/units.log"; fi
  echo "ansible-core $v: units $units ($(tail -n1 "$venv/units.log"))"
  [ "$sanity" = passed ] && [ "$units" = passed ] || failed=$((failed + 1))
  results+=("$v|sanity $sanity, units $units|$((SECONDS - start)) s")
done
echo
printf '%-14s %-50s %s\n' "ansible-core" "result" "time"
for r in "${results[@]}"; do IFS='|' read -r v what took <<<"$r"; printf '%-14s %-50s %s\n' "$v" "$what" "$took"; done
[ "$failed" -eq 0 ] || { echo "matrix: $failed version(s) failed"; exit 1; }
