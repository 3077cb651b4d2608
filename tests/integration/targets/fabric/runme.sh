#!/usr/bin/env bash
# The fabric lab, small (inventories/fabric_small: 2 leaves, 2 spines, 2 workers per leaf, namespaces aflt-fab-*):
# built twice (the second run changes nothing), the shift pattern with the hash deciding and with ports chosen to
# spread, every path proved by the switches' counters; then a run record whose plan says one flow went another way
# must be reported as a disagreement. The fabric is removed also when anything fails; nothing is left behind.
set -euo pipefail
. "$(dirname "$0")/../../lab-target.sh"
root=$(cd "$here/../../../.." && pwd)
export AIFABRIC_RUNS_DIR="$work/runs"
export AIFABRIC_HISTORY_DB="$work/history.sqlite"
export ANSIBLE_FORKS=20
inv="$root/inventories/fabric_small"
cleanup() { lab_cleanup aflt-fab- -i "$inv" aifabric.lab.fabric_down; }
trap cleanup EXIT

ansible-playbook -i "$inv" aifabric.lab.fabric_up > "$work/up1.txt"
grep -q 'changed=1' "$work/up1.txt"
ansible-playbook -i "$inv" aifabric.lab.fabric_up > "$work/up2.txt"
grep -q 'changed=0' "$work/up2.txt" || { cat "$work/up2.txt"; echo "fabric_up is not idempotent"; exit 1; }
ansible-playbook -i "$inv" aifabric.lab.fabric -e experiment_progress=false -e fabric_volume=100MB \
  -e '{"fabric_variants": ["l4-hash", "l4-spread"]}' > "$work/out.txt"
run=$(ls -d "$AIFABRIC_RUNS_DIR"/*/ | head -n1)
python3 "$here/check_fabric.py" "$run" "$work/out.txt"
# the run's report.json against docs/report.schema.json
python3 "$here/../../validate_reports.py" "$AIFABRIC_RUNS_DIR"
echo "fabric: OK"
