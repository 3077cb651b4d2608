#!/usr/bin/env bash
# The rail-optimized fabric with the in-host relay (inventories/fabric-rails, namespaces aflt-rr-*: 4 machines of 2
# NICs, lab_rail_relay: true), one ring step through the experiment role: every rail-1 NIC forwards its rail-2 sibling's
# flow into rail 1 (m1r2 -> m1r1 -> rail1 -> m2r1) while its own flow leaves by its relay link. The report must prove
# every path (the relay ports' counters too) and balance every NIC's books: a relaying NIC's eth0 counter carries the
# flow it forwarded (issue 28). The fabric is removed also when anything fails; nothing is left behind.
set -euo pipefail
. "$(dirname "$0")/../../lab-target.sh"
root=$(cd "$here/../../../.." && pwd)
export AIFABRIC_RUNS_DIR="$work/runs"
export AIFABRIC_HISTORY_DB="$work/history.sqlite"
export ANSIBLE_FORKS=20
inv="$root/inventories/fabric-rails"
prefix=aflt-rr-
cleanup() { lab_cleanup "$prefix" -i "$inv" -e lab_namespace_prefix=$prefix aifabric.lab.fabric_down; }
trap cleanup EXIT

ansible-playbook -i "$inv" -e lab_namespace_prefix=$prefix aifabric.lab.fabric_up > "$work/up.txt"
ansible-playbook -i "$inv" -e lab_namespace_prefix=$prefix "$here/relay_ring.yml" -e experiment_progress=false \
  > "$work/out.txt" || { cat "$work/out.txt"; exit 1; }
run=$(ls -d "$AIFABRIC_RUNS_DIR"/*/ | head -n1)
python3 "$here/check_rails.py" "$run"
# the run's report.json against docs/report.schema.json
python3 "$here/../../validate_reports.py" "$AIFABRIC_RUNS_DIR"
echo "fabric_rails: OK"
