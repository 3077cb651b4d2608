#!/usr/bin/env bash
# `make docs`: the collection's docsite, rendered by antsibull-docs from the plugins' and roles' documentation (as
# docs.ansible.com renders collections) and built with Sphinx, warnings as errors, into build/docsite/build/html.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dest="$root/build/docsite"
rm -rf "$dest"
mkdir -p "$root/build" && mkdir -m 700 "$dest"   # antsibull-docs wants its directory writable by its owner only
export ANSIBLE_COLLECTIONS_PATH="$root/.collections"
unset ANSIBLE_CONFIG
antsibull-docs sphinx-init --use-current --fail-on-error --dest-dir "$dest" aifabric.lab > "$dest/init.log"
# Offline: no intersphinx inventories (docs.ansible.com is out of reach at build time), so the few links into
# Ansible's own documentation stay text. Every other warning fails the build.
cat >> "$dest/conf.py" <<'PY'

intersphinx_mapping = {}
PY
cd "$dest"
chmod og-w rst 2>/dev/null || { mkdir -m 700 rst; }
antsibull-docs --config-file antsibull-docs.cfg collection --cleanup everything --use-current --fail-on-error \
  --dest-dir rst aifabric.lab > "$dest/render.log" 2>&1 || { tail -40 "$dest/render.log"; exit 1; }
sphinx-build -M html rst build -c . --keep-going -q > "$dest/build.log" 2>&1 || { tail -40 "$dest/build.log"; exit 1; }
ansible_docs_labels="common_return_values|ansible_configuration_settings|action_plugins|callback_plugins"
unexpected=$(grep -E "WARNING|ERROR" "$dest/build.log" \
  | grep -vE "undefined label: '($ansible_docs_labels)'|'envvar' reference target not found: ANSIBLE_" || true)
if [ -n "$unexpected" ]; then echo "docsite: Sphinx warned:"; echo "$unexpected" | head -30; exit 1; fi
html="$dest/build/html"
missing=()
for f in "$root"/plugins/modules/*.py; do
  page="$html/collections/aifabric/lab/$(basename "$f" .py)_module.html"
  [ -s "$page" ] || missing+=("$(basename "$page")")
done
for r in "$root"/roles/*/meta/argument_specs.yml; do
  page="$html/collections/aifabric/lab/$(basename "$(dirname "$(dirname "$r")")")_role.html"
  [ -s "$page" ] || missing+=("$(basename "$page")")
done
[ ${#missing[@]} -eq 0 ] || { echo "docsite: pages missing: ${missing[*]}"; exit 1; }
echo "docsite: $(find "$html" -name '*.html' | wc -l) pages, every module and role among them: $html/index.html"
