#!/usr/bin/env bash
# Every traffic pattern and collective on a lab of its own (namespaces aflt-pat-*): 4 workers and 2 sinks, every
# switch port at 1 Gb/s both ways, worker4 throttled to a quarter of the line; small volumes. Each report is checked
# against the flows the pattern makes and its prediction; lab down also when anything fails, nothing left behind.
# Then the convergence experiment (flows that start late) on the lab's port and on a tail-drop FIFO.
set -euo pipefail
. "$(dirname "$0")/../../lab-target.sh"
export AIFABRIC_RUNS_DIR="$work/runs"
export ANSIBLE_FORKS=20
inv="$work/hosts.yml"
cat > "$inv" <<INV
all:
  vars:
    ansible_connection: aifabric.lab.netns
    ansible_netns_prefix: aflt-pat-
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
    lab_namespace_prefix: aflt-pat-
    lab_subnet: 198.18.9.0/24
    lab_mtu: 9000
    lab_line_rate: 1gbit
    # the patterns' flows are checked, not how closely a loaded CI machine starts its hosts (1% of a 0.5 s step is
    # 5 ms; tests/integration/lab-inventory.sh says the same)
    collective_late_bound: 0.2
  children:
    switches: {hosts: {switch: {}}}
    sinks: {hosts: {sink1: {lab_address: 198.18.9.1}, sink2: {lab_address: 198.18.9.2}}}
    workers:
      hosts:
        worker1: {lab_address: 198.18.9.11}
        worker2: {lab_address: 198.18.9.12}
        worker3: {lab_address: 198.18.9.13}
        worker4: {lab_address: 198.18.9.14}
INV
cleanup() { lab_cleanup aflt-pat- -i "$inv" aifabric.lab.lab_down; }
trap cleanup EXIT

ansible-playbook -i "$inv" aifabric.lab.lab_up > /dev/null
ansible-playbook -i "$inv" aifabric.lab.collective -e collective_volume=64MB > "$work/out.txt"
python3 "$here/check_patterns.py" "$(ls -d "$AIFABRIC_RUNS_DIR"/*/report.json | head -n1)" "$work/out.txt"
# the run's report.json against docs/report.schema.json
python3 "$here/../../validate_reports.py" "$AIFABRIC_RUNS_DIR"
# the throttle was removed after the last pattern (the kernel's own view)
test "$(tc -n aflt-pat-worker4 -j qdisc show dev eth0 | python3 -c 'import json,sys; print(any(q["kind"] == "htb" for q in json.load(sys.stdin)))')" = False
# convergence as an experiment (start_offsets): the lab's port, then one tail-drop FIFO there, put back after it
for queue in fair fifo; do
  rm -rf "$AIFABRIC_RUNS_DIR"
  ansible-playbook -i "$inv" aifabric.lab.convergence -e '{"convergence_ms": [2]}' -e convergence_t0=1 \
    -e convergence_after=2 -e convergence_queue=$queue -e experiment_progress=false > "$work/conv.txt"
  python3 "$here/check_convergence.py" "$(ls -d "$AIFABRIC_RUNS_DIR"/*/report.json | head -n1)" $queue
  python3 "$here/../../validate_reports.py" "$AIFABRIC_RUNS_DIR"
done
# the FIFO was replaced by the lab's port again: its htb with the fair classes (the kernel's own view)
test "$(tc -n aflt-pat-switch -j qdisc show dev p-sink1 | python3 -c 'import json,sys; print([q["kind"] for q in json.load(sys.stdin) if q.get("root")])')" = "['htb']"
echo "patterns: OK"
