#!/usr/bin/env bash
# Runs every integration target the way `ansible-test integration` would: role-style targets (tasks/main.yml)
# through a generated playbook on localhost, runme.sh targets directly. `run.sh TARGET...` runs a subset.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
targets_dir="$root/tests/integration/targets"
export ANSIBLE_CONFIG="$root/ansible.cfg"
export ANSIBLE_ROLES_PATH="$targets_dir"
cd "$root"
names=("$@")
if [ ${#names[@]} -eq 0 ]; then names=($(ls "$targets_dir")); fi
passed=0; failed=0
for t in "${names[@]}"; do
  dir="$targets_dir/$t"
  grep -qx disabled "$dir/aliases" 2>/dev/null && continue
  echo "=== integration target: $t"
  start=$(date +%s)
  if [ -x "$dir/runme.sh" ]; then
    (cd "$dir" && ./runme.sh) && ok=1 || ok=0
  else
    pb=$(mktemp --suffix=.yml)
    printf -- '- name: Target %s\n  hosts: localhost\n  connection: local\n  gather_facts: false\n  roles:\n    - %s\n' "$t" "$t" > "$pb"
    ansible-playbook -i localhost, -e 'ansible_python_interpreter={{ ansible_playbook_python }}' "$pb" && ok=1 || ok=0
    rm -f "$pb"
  fi
  if [ "$ok" = 1 ]; then passed=$((passed+1)); else failed=$((failed+1)); echo "FAILED: $t"; fi
  echo "=== $t: $([ "$ok" = 1 ] && echo ok || echo FAILED) in $(( $(date +%s) - start )) s"
done
echo "integration: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
