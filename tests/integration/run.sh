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
# Each target's task times (ansible-core's junit callback, beside the targets' own), its slowest tasks printed after it:
# where the tier's minutes go (tests/slowest_tasks.py). AIFABRIC_TASK_TIMES=0 leaves them out.
junit_root=
if [ "${AIFABRIC_TASK_TIMES:-1}" = 1 ]; then
  junit_root=$(mktemp -d)
  trap 'rm -rf "$junit_root"' EXIT
  export AIFABRIC_EXTRA_CALLBACKS=ansible.builtin.junit JUNIT_HIDE_TASK_ARGUMENTS=true
  export ANSIBLE_CALLBACKS_ENABLED=aifabric.lab.barrier_report,ansible.builtin.junit
fi
for t in "${names[@]}"; do
  dir="$targets_dir/$t"
  grep -qx disabled "$dir/aliases" 2>/dev/null && continue
  echo "=== integration target: $t"
  start=$(date +%s)
  [ -z "$junit_root" ] || export JUNIT_OUTPUT_DIR="$junit_root/$t"
  if [ -x "$dir/runme.sh" ]; then
    (cd "$dir" && ./runme.sh) && ok=1 || ok=0
  else
    pb=$(mktemp --suffix=.yml)
    printf -- '- name: Target %s\n  hosts: localhost\n  connection: local\n  gather_facts: false\n  roles:\n    - %s\n' "$t" "$t" > "$pb"
    # its runs (the report callback writes one for a step it sees) in a directory of its own, not the checkout's
    # runs/; every report it wrote is checked against docs/report.schema.json, then the directory is removed
    runs=$(mktemp -d)
    AIFABRIC_RUNS_DIR=$runs ansible-playbook -i localhost, -e 'ansible_python_interpreter={{ ansible_playbook_python }}' \
      "$pb" && ok=1 || ok=0
    if [ "$ok" = 1 ] && [ -n "$(find "$runs" -name report.json -print -quit)" ]; then
      python3 "$root/tests/integration/validate_reports.py" "$runs" || ok=0
    fi
    rm -rf "$pb" "$runs"
  fi
  if [ "$ok" = 1 ]; then passed=$((passed+1)); else failed=$((failed+1)); echo "FAILED: $t"; fi
  [ -z "$junit_root" ] || python3 "$root/tests/slowest_tasks.py" "$junit_root/$t" 8 | sed "s/^/  [$t] /" || true
  echo "=== $t: $([ "$ok" = 1 ] && echo ok || echo FAILED) in $(( $(date +%s) - start )) s"
done
echo "integration: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
