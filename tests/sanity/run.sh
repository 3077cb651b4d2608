#!/usr/bin/env bash
# ansible-test sanity on a copy of the checkout laid out as ansible_collections/aifabric/lab (ansible-test requires
# that path), with the ansible-test of the ansible-core first on PATH (.venv's, or a matrix venv's). No test is skipped
# and there is no ignore file.
#   run.sh [ansible-test options]                every sanity test, on the controller Python that ansible-test runs on
#   run.sh --host-python 3.9 [options]           the tests that run on a lab host's Python: compile and import of the
#                                                modules and module_utils, on Python 3.9 (found by
#                                                tests/matrix/find-python.sh; exit 3 when this machine lacks it)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
host_python=
if [ "${1:-}" = --host-python ]; then
  host_python=${2:?--host-python needs a version, like 3.9}; shift 2
fi
# The Python the tests run on: a host's (--host-python), or the controller's that ansible-test runs on.
py=${host_python:-$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')}
# One sanity run at a time per Python on this checkout (make test's sanity tier and the matrix's rows run side by side):
# runs on one Python share ansible-test's virtual environments for it (~/.ansible/test/venv/<test>/<Python>/, which
# ansible-test removes and makes again when it finds one half made), so they wait for each other; runs on different
# Pythons share none and go on at once, each in a copy of its own.
mkdir -p "$root/build"
exec 9> "$root/build/.sanity-$py.lock"
flock 9
work="$root/build/ansible-test-$py"
dest="$work/ansible_collections/aifabric/lab"
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
  cp "$root/tests/sanity/get_pip_standin.py" ~/.ansible/test/cache/.get_pip.$$ && mv -f ~/.ansible/test/cache/.get_pip.$$ ~/.ansible/test/cache/get_pip_${v//./_}.py
done
if [ -z "$host_python" ]; then
  exec ansible-test sanity --python "$py" --local \
    --color no "$@"
fi
# A lab host's Python: ansible-test finds python3.X by that name on PATH, so a directory holding only that name goes
# first (a pyenv shim of the same name fails unless pyenv selected that version).
found=$(bash "$root/tests/matrix/find-python.sh" "$host_python") \
  || { echo "sanity: no Python $host_python on this machine (pyenv's versions, /usr/bin, PATH): skipped"; exit 3; }
bin="$work/python-$host_python"
mkdir -p "$bin" && ln -sfn "$found" "$bin/python$host_python"
echo "sanity on a host's Python: $found"
PATH="$bin:$PATH" exec ansible-test sanity --python "$host_python" --local --color no --test compile --test import "$@"
