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
# The stand-in for get-pip, under every name ansible-test may ask for.
pip_version=$(python -c "import ansible_test._internal.constants as c; print(getattr(c, 'PIP_VERSION', ''))" 2>/dev/null || true)
pip_version=${pip_version:-$(grep -rhoE "pip_version = '[0-9.]+'|PIP_VERSION = '[0-9.]+'" \
  "$(python -c 'import ansible_test, os; print(os.path.dirname(ansible_test.__file__))')" | head -n1 | grep -oE "[0-9.]+" || true)}
mkdir -p ~/.ansible/test/cache
for v in $pip_version 24.2 24.3.1 25.0.1; do
  cp "$root/tests/sanity/get_pip_standin.py" ~/.ansible/test/cache/get_pip_${v//./_}.py
done
exec ansible-test sanity --python 3.11 --local --color no "$@"
