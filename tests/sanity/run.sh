#!/usr/bin/env bash
# ansible-test sanity on a copy of the checkout laid out as ansible_collections/aifabric/lab (ansible-test requires
# that path). Tests whose tools this machine cannot install offline are listed in SKIP with the reason.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dest="$root/build/ansible-test/ansible_collections/aifabric/lab"
rm -rf "$dest"
mkdir -p "$dest"
cd "$root"
# Tracked files and new files git does not ignore: exactly what a commit would hold.
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
  [ -e "$f" ] || continue
  mkdir -p "$dest/$(dirname "$f")"
  cp -a "$f" "$dest/$f"
done
cd "$dest"
git init -q . && git add -A >/dev/null   # ansible-test lists a collection's files through git when it can
# The stand-in for get-pip, under every name this ansible-test may ask for (each version pins its own pip: a
# constant in newer ones, `pip='23.1.2'` in 2.16's python_requirements.py).
test_dir=$(python -c 'import ansible_test, os; print(os.path.dirname(ansible_test.__file__))')
pip_versions=$(grep -rhoE "(pip_version = |PIP_VERSION = |pip=)'[0-9.]+'" "$test_dir" --include=*.py | grep -oE "[0-9.]+" \
  | sort -u || true)
mkdir -p ~/.ansible/test/cache
for v in $pip_versions 24.2 24.3.1 25.0.1; do
  cp "$root/tests/sanity/get_pip_standin.py" ~/.ansible/test/cache/get_pip_${v//./_}.py
done
exec ansible-test sanity --python 3.11 --local --color no "$@"
