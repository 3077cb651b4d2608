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
    echo "ansible-doc -t $type aifabric.lab.$name: FAILED"; echo "$out" | head -20; return 1
  else
    echo "ansible-doc -t $type aifabric.lab.$name: ok ($(wc -l <<<"$out") lines)"
  fi
}
# Two at a time (ansible-doc's time is its own start-up, on a 2-core machine), printed in order.
out_dir=$(mktemp -d)
trap 'rm -rf "$out_dir"' EXIT
n=0
run() {
  while [ "$(jobs -rp | wc -l)" -ge "${DOCS_JOBS:-2}" ]; do wait -n || true; done
  n=$((n + 1))
  { if check "$1" "$2" > "$out_dir/$n.out"; then echo 0; else echo 1; fi > "$out_dir/$n.rc"; } &
}
for f in plugins/modules/*.py; do run module "$(basename "$f" .py)"; done
for f in plugins/connection/*.py; do run connection "$(basename "$f" .py)"; done
for f in plugins/callback/*.py; do run callback "$(basename "$f" .py)"; done
for f in plugins/filter/*.yml; do run filter "$(basename "$f" .yml)"; done
for r in roles/*/meta/argument_specs.yml; do
  run role "$(basename "$(dirname "$(dirname "$r")")")"
done
wait
for i in $(seq 1 "$n"); do
  cat "$out_dir/$i.out"
  [ "$(cat "$out_dir/$i.rc" 2>/dev/null)" = 0 ] || fail=1
done
exit $fail
