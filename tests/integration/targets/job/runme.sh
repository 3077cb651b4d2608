#!/usr/bin/env bash
# A training job on a lab of its own (namespaces aflt-job-*): 8 workers (and a sink, which the lab needs and the job
# does not use), every switch port at 1 Gb/s both ways, worker8 throttled to a quarter of the line; 20 iterations of
# 5 ms compute and an 8 MB ring AllReduce, run on the hosts from one armed task. The report is checked for every
# iteration measured, its figures beside the prediction (the deviation is printed; only generous structural bounds
# are asserted), one step, nothing left behind.
set -euo pipefail
. "$(dirname "$0")/../../lab-target.sh"
export AIFABRIC_RUNS_DIR="$work/runs"
export ANSIBLE_FORKS=20
inv="$work/hosts.yml"
cat > "$inv" <<INV
all:
  vars:
    ansible_connection: aifabric.lab.netns
    ansible_netns_prefix: aflt-job-
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
    lab_namespace_prefix: aflt-job-
    lab_subnet: 198.18.10.0/24
    lab_mtu: 9000
    lab_line_rate: 1gbit
  children:
    switches: {hosts: {switch: {}}}
    sinks: {hosts: {sink1: {lab_address: 198.18.10.1}}}
    workers:
      hosts:
INV
for i in 1 2 3 4 5 6 7 8; do echo "        worker$i: {lab_address: 198.18.10.$((10 + i))}" >> "$inv"; done
cleanup() { lab_cleanup aflt-job- -i "$inv" aifabric.lab.lab_down; }
trap cleanup EXIT

ansible-playbook -i "$inv" aifabric.lab.lab_up > /dev/null
ansible-playbook -i "$inv" aifabric.lab.job -e job_iterations=20 -e job_size=8MB -e job_compute_ms=5 \
  -e experiment_progress=false > "$work/out.txt" || { cat "$work/out.txt"; exit 1; }
python3 "$here/check_job.py" "$(ls -d "$AIFABRIC_RUNS_DIR"/*/report.json | head -n1)" "$work/out.txt"
# the run's report.json against docs/report.schema.json
python3 "$here/../../validate_reports.py" "$AIFABRIC_RUNS_DIR"
# the throttle was removed after the job (the kernel's own view)
test "$(tc -n aflt-job-worker8 -j qdisc show dev eth0 | python3 -c 'import json,sys; print(any(q["kind"] == "htb" for q in json.load(sys.stdin)))')" = False
echo "job: OK"
