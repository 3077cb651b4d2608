#!/usr/bin/env bash
# Every plugin renders with ansible-doc, as a user meets it (non-empty, no warnings).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
fail=0
# A plugin deprecated in meta/runtime.yml warns that it is, and its page says DEPRECATED: only those lines are allowed.
deprecated=$(python3 -c "import yaml; r = yaml.safe_load(open('meta/runtime.yml')).get('plugin_routing', {}); \
print(' '.join('%s/%s' % (t, n) for t, ps in r.items() for n, p in ps.items() if 'deprecation' in p))")
check() {
  local type=$1 name=$2 out
  out=$(ansible-doc -t "$type" "aifabric.lab.$name" 2>&1) || out="ansible-doc failed: $out"
  # ansible-core 2.20 and 2.21 warn about their own internal collection when they list roles (ansible/ansible#85689):
  # that line alone is not ours
  out=$(grep -v "ansible_collections/ansible/_protomatter' does not have a MANIFEST.json file" <<<"$out" || true)
  if [[ " $deprecated " == *" $type/$name "* ]]; then
    grep -q "DEPRECATED" <<<"$out" || out="[ERROR] deprecated in meta/runtime.yml but its page does not say so: $out"
    out=$(grep -v -e "Deprecation warnings can be disabled" -e "DEPRECATION WARNING.*aifabric.lab.$name" <<<"$out")
  fi
  if [ -z "$out" ] || grep -qE "\[(WARNING|ERROR)\]|^ansible-doc failed" <<<"$out"; then
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
