#!/usr/bin/env bash
# The collection works installed, not only from the checkout: build the tarball, install it into an empty collections
# path, and use it from there (docs, a module with its module_utils, a filter with its plugin_utils, the callback).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"
ansible-galaxy collection build --force --output-path "$work/dist" . >/dev/null
tarball=$(ls "$work"/dist/aifabric-lab-*.tar.gz)
echo "built $(basename "$tarball") ($(du -k "$tarball" | cut -f1) KiB)"
if tar tzf "$tarball" | grep -E '^(\.venv|\.collections|\.stamps|runs|build)/' ; then echo "build_ignore let these in"; exit 1; fi
ansible-galaxy collection install --force -p "$work/collections" "$tarball" >/dev/null 2>&1
cd "$work"   # away from the checkout's ansible.cfg
printf "[defaults]\n" > "$work/ansible.cfg"
export ANSIBLE_CONFIG="$work/ansible.cfg" ANSIBLE_COLLECTIONS_PATH="$work/collections" ANSIBLE_CALLBACKS_ENABLED=aifabric.lab.barrier_report
export AIFABRIC_RUNS_DIR="$work/runs"
test "$(ansible-galaxy collection list aifabric.lab -p "$work/collections" 2>/dev/null | grep -c 'aifabric.lab')" -ge 1
doc=$(ansible-doc aifabric.lab.flow)
grep -q "wall-clock instant" <<<"$doc"
out=$(ansible localhost -c local -e "ansible_python_interpreter=$(command -v python)" -m aifabric.lab.tc_shape \
  -a "device=lo rate=1gbit" --check)
grep -q '"changed": true' <<<"$out"
out=$(ansible localhost -c local -m ansible.builtin.debug \
  -a "msg={{ {'w1': ['b'], 'w2': ['b', 't']} | aifabric.lab.fair_share({'b': '8gbit', 't': '2gbit'}) }}")
grep -q '"rate_bps": 6000000000.0' <<<"$out"
echo "installed collection: ansible-doc, a module (check mode), a filter and the callback load from $work/collections"
