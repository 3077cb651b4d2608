#!/usr/bin/env bash
# Every plugin renders with ansible-doc, as a user meets it (non-empty, no warnings).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
fail=0
check() {
  local type=$1 name=$2 out
  if ! out=$(ansible-doc -t "$type" "aifabric.lab.$name" 2>&1) || [ -z "$out" ] || grep -qE "\[(WARNING|ERROR)\]" <<<"$out"; then
    echo "ansible-doc -t $type aifabric.lab.$name: FAILED"; echo "$out" | head -20; fail=1
  else
    echo "ansible-doc -t $type aifabric.lab.$name: ok ($(wc -l <<<"$out") lines)"
  fi
}
for f in plugins/modules/*.py; do check module "$(basename "$f" .py)"; done
for f in plugins/connection/*.py; do check connection "$(basename "$f" .py)"; done
for f in plugins/callback/*.py; do check callback "$(basename "$f" .py)"; done
for f in plugins/filter/*.yml; do check filter "$(basename "$f" .yml)"; done
for r in roles/*/meta/argument_specs.yml; do
  check role "$(basename "$(dirname "$(dirname "$r")")")"
done
exit $fail
