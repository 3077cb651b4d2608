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
# The tarball's version is the changelog's latest release (between releases: the next one, beyond it).
latest=$(python -c "import yaml
from ansible.module_utils.compat.version import LooseVersion as V
print(max(yaml.safe_load(open('changelogs/changelog.yaml'))['releases'], key=V))")
unreleased=$(find changelogs/fragments -name '*.y*ml' | wc -l)
if [ "$unreleased" -eq 0 ] && [ "$(basename "$tarball")" != "aifabric-lab-$latest.tar.gz" ]; then
  echo "built $(basename "$tarball") but the changelog's latest release is $latest"; exit 1
fi
echo "version: $(basename "$tarball" .tar.gz | cut -d- -f3) (changelog: latest release $latest, $unreleased unreleased fragments)"
listing=$(tar tzf "$tarball")
for f in CHANGELOG.md changelogs/changelog.yaml meta/execution-environment.yml requirements.txt bindep.txt \
         LICENSES/GPL-3.0-or-later.txt; do
  grep -qx "$f" <<<"$listing" || { echo "the tarball lacks $f"; exit 1; }
done
# The licence: the SPDX identifier in the manifest (galaxy.yml's license), and its full text, which every file's
# header points to, inside the tarball: the GPL v3 itself, whole (Debian's copy where there is one).
tar xzf "$tarball" -C "$work" MANIFEST.json LICENSES/GPL-3.0-or-later.txt
python -c "import json, sys; info = json.load(open(sys.argv[1]))['collection_info']
assert info['license'] == ['GPL-3.0-or-later'], info['license']" "$work/MANIFEST.json" \
  || { echo "MANIFEST.json: the licence is not GPL-3.0-or-later"; exit 1; }
licence="$work/LICENSES/GPL-3.0-or-later.txt"
grep -q "GNU GENERAL PUBLIC LICENSE" "$licence" && grep -q "Version 3, 29 June 2007" "$licence" \
  && grep -q "END OF TERMS AND CONDITIONS" "$licence" \
  || { echo "the tarball's licence is not the GPL v3 text"; exit 1; }
if [ -e /usr/share/common-licenses/GPL-3 ]; then
  cmp -s "$licence" /usr/share/common-licenses/GPL-3 \
    || { echo "the licence differs from /usr/share/common-licenses/GPL-3"; exit 1; }
fi
echo "licence: GPL-3.0-or-later in MANIFEST.json, its full text in LICENSES/GPL-3.0-or-later.txt ($(wc -l < "$licence") lines)"
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
# The report's templates are files of the collection (plugin_utils/_report/templates): the installed copy renders a
# checked-in run directory, its text and its HTML page.
fixture="$root/tests/unit/plugins/plugin_utils/fixtures/history/20261130T185009-demo"
out=$(ansible localhost -c local -m ansible.builtin.debug \
  -a "msg={{ (('$fixture' | aifabric.lab.run_report | aifabric.lab.report_files)['report.txt'].splitlines())[4] }}")
grep -q "worker         completion s     Gb/s" <<<"$out" || { echo "the installed collection's report.txt: $out"; exit 1; }
out=$(ansible localhost -c local -m ansible.builtin.debug \
  -a "msg={{ ('$fixture' | aifabric.lab.run_report | aifabric.lab.report_files)['report.html'].startswith('<!DOCTYPE html>') }}")
grep -q '"msg": true' <<<"$out" || { echo "the installed collection's report.html: $out"; exit 1; }
# The execution environment: ansible-builder's own introspection (the script a build runs inside the image) reads the
# installed collection's meta/execution-environment.yml, and `ansible-builder create` writes the example EE's context.
ansible-builder create -f "$root/ee/execution-environment.yml" --context "$work/ee" > "$work/ee.log" \
  || { cat "$work/ee.log"; exit 1; }
python "$work/ee/_build/scripts/introspect.py" introspect --write-pip "$work/ee-pip.txt" \
  --write-bindep "$work/ee-bindep.txt" "$work/collections" > "$work/introspect.log" 2>&1 \
  || { cat "$work/introspect.log"; exit 1; }
for want in "pyroute2>=0.9.7" "numpy>=2.4" "jinja2>=3.1"; do
  grep -q "^$want  # from collection aifabric.lab" "$work/ee-pip.txt" || { echo "EE pip lacks $want"; cat "$work/ee-pip.txt"; exit 1; }
done
grep -q "^iproute \[platform:redhat\]  # from collection aifabric.lab" "$work/ee-bindep.txt" \
  || { echo "EE bindep lacks iproute"; cat "$work/ee-bindep.txt"; exit 1; }
# what the image's assemble step installs: `bindep -l newline` of that file, no profile (here a dpkg platform)
ee_system=$(cd "$work" && bindep -f ee-bindep.txt -l newline | paste -sd' ')
[ "$ee_system" = "iproute2" ] || { echo "the EE would install: $ee_system (expected iproute2 alone)"; exit 1; }
grep -q "aifabric.lab" "$work/ee/_build/requirements.yml"
grep -q "FROM \$EE_BASE_IMAGE" "$work/ee/Dockerfile"
echo "execution environment: context written ($(find "$work/ee" -type f | wc -l) files); introspection of the installed" \
  "collection: $(wc -l < "$work/ee-pip.txt") Python and $(grep -c 'aifabric.lab' "$work/ee-bindep.txt") system requirements," \
  "of which an EE installs: $ee_system"
echo "installed collection: ansible-doc, a module (check mode), a filter, the report's templates and the callback load from $work/collections"
# The README's path for a user of the installed collection: its playbooks by name, with its netns inventory.
installed="$work/collections/ansible_collections/aifabric/lab"
for pb in aifabric.lab.lab_up aifabric.lab.barrier aifabric.lab.demo aifabric.lab.lab_down; do
  ansible-playbook -i "$installed/inventories/netns/hosts.yml" --list-tasks "$pb" > "$work/list.log" 2>&1 \
    || { cat "$work/list.log"; echo "ansible-playbook $pb does not load from the installed collection"; exit 1; }
done
echo "playbooks by name: aifabric.lab.lab_up, barrier, demo and lab_down load from it (--list-tasks)"
# The action groups (meta/runtime.yml): options set once in module_defaults reach each module of the group.
out=$(ansible-playbook -i localhost, -e "state_dir=$work/state flows_token=md-$RANDOM$RANDOM" "$root/tests/build/module_defaults.yml" 2>&1) \
  || { echo "$out" | tail -30; exit 1; }
echo "action groups: group/aifabric.lab.flows and group/aifabric.lab.fabric set their modules' options from module_defaults"
