#!/usr/bin/env bash
# The census story on a lab of its own (namespaces aflt-cen-*): the barrier step with mice beside it, the sink's
# conntrack table counted (tracking and accounting turned on by conntrack_track), the step again without mice. The
# mice must be nearly all the flows and the elephants nearly all the bytes; the lab goes, also when anything fails.
set -euo pipefail
. "$(dirname "$0")/../../lab-target.sh"
export AIFABRIC_RUNS_DIR="$work/runs"
export AIFABRIC_HISTORY_DB="$work/history.sqlite"
inv="$work/hosts.yml"
cat > "$inv" <<INV
all:
  vars:
    ansible_connection: aifabric.lab.netns
    ansible_netns_prefix: aflt-cen-
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
    lab_namespace_prefix: aflt-cen-
    lab_subnet: 198.18.7.0/24
    lab_mtu: 9000
    lab_line_rate: 8gbit
  children:
    switches: {hosts: {switch: {}}}
    sinks: {hosts: {sink: {lab_address: 198.18.7.1}}}
    workers:
      hosts:
        worker1: {lab_address: 198.18.7.11}
        worker2: {lab_address: 198.18.7.12}
        worker3: {lab_address: 198.18.7.13}
INV
cleanup() { lab_cleanup aflt-cen- -i "$inv" aifabric.lab.lab_down; }
trap cleanup EXIT

ansible-playbook -i "$inv" aifabric.lab.lab_up > /dev/null
ansible-playbook -i "$inv" aifabric.lab.census -e experiment_progress=false -e census_volume=500MB \
  -e census_seconds=8 -e census_rate=100 > "$work/out.txt"
python3 - "$work/out.txt" <<'PY'
import re
import sys

text = open(sys.argv[1]).read()
mice = re.search(r"mice \(under 10MB\): (\d+) connections =\s+([\d.]+)% of the flows", text)
elephants = re.search(r"elephants: (\d+) connections = [\d.]+%\s+of the flows, (\d+) bytes = ([\d.]+)%", text)
sent = re.search(r"the mice sent: (\d+) connections, (\d+) failed", text)
step = re.search(r"the step with mice ([\d.]+) s, without ([\d.]+) s", text)
if not (mice and elephants and sent and step):
    sys.exit("census: the summary is missing:\n" + text[-3000:])
if int(sent.group(2)) or int(sent.group(1)) != 1800:  # 100 a second x (8 - 2) s x 3 workers
    sys.exit("census: mice sent %s, failed %s" % sent.groups())
if float(mice.group(2)) < 99.0 or int(elephants.group(1)) != 3 or float(elephants.group(3)) < 95.0:
    sys.exit("census: mice %s%% of the flows, %s elephants with %s%% of the bytes" % (
        mice.group(2), elephants.group(1), elephants.group(3)))
print("census: %s mice = %s%% of the flows; 3 elephants = %s%% of the bytes; step %s s with mice, %s s without" % (
    mice.group(1), mice.group(2), elephants.group(3), step.group(1), step.group(2)))
PY
# the run's report.json against docs/report.schema.json
python3 "$here/../../validate_reports.py" "$AIFABRIC_RUNS_DIR"
echo "census: OK"
