#!/usr/bin/env bash
# Real faults in the middle of a barrier step, on a lab of its own (namespaces aflt-flt-*): for each, the report names
# the failed host and the cause, the step is marked failed (no step time over the survivors), completed flows stay on
# disk, and afterwards no qdisc or process is left inside the lab. Prints a table line per case.
set -euo pipefail
. "$(dirname "$0")/../../lab-target.sh"
P=aflt-flt-
export ANSIBLE_FORKS=20
inv="$work/hosts.yml"
bash "$here/../../lab-inventory.sh" $P 6 > "$inv"
own_pids=()
payloads_before=""
cleanup() {
  for pid in "${own_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  lab_down_quiet -i "$inv" aifabric.lab.lab_down
  # A module that was killed (cases 1 and 6) cannot remove its unpacked payload; remove the ones these cases made.
  for d in $(ls -d "${TMPDIR:-/tmp}"/ansible_aifabric.lab.flow_payload_* 2>/dev/null || true); do
    grep -qxF "$d" <<<"$payloads_before" || rm -rf "$d"
  done
  lab_gone "$P"
}
trap cleanup EXIT
table=()
lab_pids() { for h in sink worker1 worker2 worker3; do ip netns pids "$P$h" 2>/dev/null; done; }
lab_empty() { [ -z "$(lab_pids)" ]; }
has_pids() { [ -n "$(ip netns pids "$P$1" 2>/dev/null)" ]; }
# a host's flow client connected to its server (it connects while it arms, then waits for the fire)
has_flow() {
  [ -n "$(ip netns exec "$P$1" ss -Htn state established '( dport = :18600 )' 2>/dev/null)" ]
}
wait_for() {  # wait_for SECONDS COMMAND...: until the command succeeds (a function, re-evaluated every time)
  local end=$((SECONDS + $1)); shift
  until "$@"; do [ $SECONDS -lt $end ] || return 1; sleep 0.1; done
}
no_leftovers() {  # no throttle on any worker, no process inside the lab (async watchdogs end within 5 s)
  for h in worker1 worker2 worker3; do
    if tc -n "$P$h" -j qdisc show dev eth0 | grep -q '"kind":"htb"'; then echo "qdisc left on $h"; return 1; fi
  done
  local pids
  pids=$(lab_pids | paste -sd, -)
  [ -z "$pids" ] || ps -o pid=,etimes=,args= -p "$pids" | sed 's/^/  still inside the lab: /' | cut -c1-160 || true
  for jid in $(ps -o args= -p "${pids:-1}" 2>/dev/null | grep -o 'async_wrapper.py j[0-9]*' | awk '{print $2}' | sort -u); do
    for f in ~/.ansible_async/"$jid".*; do
      [ -e "$f" ] && python3 -c "import json,sys,time; d=json.load(open(sys.argv[1])); f=d.get('flow') or {}; \
print('  job', sys.argv[1], 'finished', d.get('finished'), 'status', f.get('status'), 'error', f.get('error'), \
'now', time.time(), 'flows', [(x.get('flow_id'), x.get('status'), x.get('last_byte')) for x in f.get('flows', [])])" "$f" || true
    done
  done
  wait_for 10 lab_empty || { echo "processes left inside the lab: $(lab_pids)"; return 1; }
}
run_step() {  # run_step NAME EXTRA-ARGS...: the barrier step in the background; sets $pb and $runs
  runs="$work/runs-$1"; shift
  AIFABRIC_RUNS_DIR="${RUNS_DIR_OVERRIDE:-$runs}" ansible-playbook -i "$inv" aifabric.lab.barrier "$@" > "$runs.log" 2>&1 &
  pb=$!
}
flows_running() { has_flow worker1 && has_flow worker2; }
tx_bytes() { ip netns exec "$P$1" cat /sys/class/net/eth0/statistics/tx_bytes; }
payload_flowing() { [ $(( $(tx_bytes worker1) - $1 )) -gt 100000000 ]; }  # 100 MB of worker1's flow on the wire
row() { table+=("| $1 | $(python3 "$here/check_fault.py" "${@:2}" | sed 's/^REPORT| //') | none |"); echo "case ok: $1"; }

ansible-playbook -i "$inv" aifabric.lab.lab_up > /dev/null
payloads_before=$(ls -d "${TMPDIR:-/tmp}"/ansible_aifabric.lab.flow_payload_* 2>/dev/null || true)

# 1. A worker's flow process (its part of the step) killed mid-transfer: the others finish, the step fails by name.
run_step kill -e barrier_volume=3GB -e barrier_timeout=30
wait_for 30 flows_running; sleep 3.5
kill -9 $(ip netns pids ${P}worker1)
wait "$pb" && exit 1 || true
row "worker1's flow process killed (SIGKILL) mid-transfer" "$(ls -d "$runs"/*/)" failed \
  worker1="its step process ended without a result" --kept worker2,worker3
no_leftovers

# 2. A worker's link set down mid-transfer: failed at its timeout plus a 5 s result grace (not the default 30: worker2
# writes its timed-out result on its own host at the timeout, and the others' results are in long before).
run_step linkdown -e barrier_volume=3GB -e barrier_timeout=16 -e barrier_result_grace=5
wait_for 30 flows_running; sleep 3.5
ip -n ${P}worker2 link set eth0 down
wait "$pb" && exit 1 || true
ip -n ${P}worker2 link set eth0 up
row "worker2's link set down mid-transfer" "$(ls -d "$runs"/*/)" failed worker2=timeout --kept worker1,worker3
no_leftovers

# 3. The sink's server never started: another process holds its port (accepts, never answers). First with one task
# starting every host's part (the netns lab's default), then with each host starting its own (as over SSH).
hold_port() {
  ip netns exec ${P}sink python3 -c "import socket,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('198.18.6.1',18600)); s.listen(8); time.sleep(120)" &
  impostor=$!; own_pids+=($impostor)
  sleep 0.5
}
hold_port
# two steps: a part that cannot start fails its step, not the play; the second step runs (and fails the same way)
run_step noserver -e barrier_volume=200MB -e barrier_timeout=10 -e barrier_steps=2
wait "$pb" && exit 1 || true
kill "$impostor"; wait "$impostor" 2>/dev/null || true
grep -q "sink (netns ${P}sink): cannot start the tcp server on 198.18.6.1:18600" "$runs.log"
grep -q "step barrier-1 failed: 1 of 4 hosts could not start their part.*step barrier-2 failed: 1 of 4 hosts" "$runs.log"
python3 -c '
import json, os, sys
steps = json.load(open(os.path.join(sys.argv[1], "report.json")))["steps"]
assert [(s["step"], s["status"]) for s in steps] == [("barrier-1", "failed"), ("barrier-2", "failed")], steps
' "$(ls -d "$runs"/*/)"
row "the sink's port held by another process (server never started; one task starts every part)" \
  "$(ls -d "$runs"/*/)" failed worker1="sink could not start its part" \
  worker2="sink could not start its part" worker3="sink could not start its part"
no_leftovers
hold_port
run_step noserver-per-host -e barrier_volume=200MB -e barrier_timeout=10 -e barrier_batch_start=false
wait "$pb" && exit 1 || true
kill "$impostor"; wait "$impostor" 2>/dev/null || true
grep -q "cannot start the tcp server on 198.18.6.1:18600" "$runs.log"
row "the sink's port held by another process (server never started; each host starts its part)" \
  "$(ls -d "$runs"/*/)" failed \
  worker1="the rendezvous on sink is not running" worker2="the rendezvous on sink is not running" \
  worker3="the rendezvous on sink is not running"
no_leftovers

# 4. A worker the controller never reaches (left out of the play): the step is aborted at once, nothing is sent.
run_step absent -e barrier_volume=200MB --limit sink,worker1,worker2
wait "$pb" && exit 1 || true
row "worker3 never started its part (not in the play)" "$(ls -d "$runs"/*/)" failed \
  worker1="worker3 failed before arming" worker2="worker3 failed before arming" worker3="did not arm"
no_leftovers

# 5. The results directory cannot be written: the callback falls back to a temporary directory and says so.
RUNS_DIR_OVERRIDE=/proc/aifabric-runs run_step unwritable -e barrier_volume=200MB
wait "$pb"
fallback=$(grep -o "writing this run's results to [^ ]*" "$runs.log" | awk '{print $NF}')
test -d "$fallback"
row "runs_dir not writable (set to /proc/...)" "$(ls -d "$fallback"/*/)" ok --kept worker1,worker2,worker3
# its report.json against docs/report.schema.json before it goes (the other cases' are checked below, in $work)
python3 "$here/../../validate_reports.py" "$fallback" || { rm -rf "$fallback"; exit 1; }
rm -rf "$fallback"
no_leftovers

# 6. The controller interrupted (SIGINT) mid-step: the hosts finish the step on their own and the coordinating host
# keeps its record (every host's results) in its state directory; lab down then removes what is left.
state=/run/aifabric-lab
records_before=$(ls "$state"/step-*.rendezvous.json 2>/dev/null || true)
tx_before=$(tx_bytes worker1)
run_step sigint -e barrier_volume=2GB -e barrier_timeout=30
# interrupted once the step has fired (its payload is on the wire), not merely armed: a step whose controller never
# came to collect it is not fired, and the rendezvous ends it at its arm timeout (aborted) instead
wait_for 60 payload_flowing "$tx_before"
kill -INT "$pb"; wait "$pb" || true
new_record() { comm -13 <(echo "$records_before") <(ls "$state"/step-*.rendezvous.json 2>/dev/null || true) | grep -q .; }
wait_for 40 new_record
record=$(comm -13 <(echo "$records_before") <(ls "$state"/step-*.rendezvous.json) | head -n1)
python3 - "$record" <<'PY'
import json, sys
record = json.load(open(sys.argv[1]))
assert record["status"] == "ok", record.get("error")
flows = {c["flow_id"]: c for h in record["hosts"].values() for c in h["clients"]}
assert sorted(flows) == ["worker1", "worker2", "worker3"] and all(f["status"] == "ok" for f in flows.values()), flows
PY
table+=("| controller interrupted (SIGINT) mid-step | the step completed on the hosts; the coordinator's record kept on the sink (\`$state\`) with all 3 flows ok | removed by lab down |")
ansible-playbook -i "$inv" aifabric.lab.lab_down > /dev/null
test ! -e "$record"
test -z "$(ip netns list | awk '{print $1}' | grep "^$P" || true)"
# Every report the cases' runs wrote ($work/runs-*: cases 1 to 4, and case 6's if its interrupted controller wrote
# one) against docs/report.schema.json
python3 "$here/../../validate_reports.py" "$work"

echo
echo "| fault | report | leftovers |"
echo "|---|---|---|"
printf '%s\n' "${table[@]}"
echo "faults: OK"
