#!/usr/bin/env bash
# End to end on a lab of its own (namespaces aflt-e2e-*): lab up, elephant, barrier step with one worker throttled,
# report JSON checked against the shaping, lab down (also when anything fails), nothing left behind.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
export ANSIBLE_CALLBACKS_ENABLED=aifabric.lab.barrier_report
export AIFABRIC_RUNS_DIR="$work/runs"
export ANSIBLE_FORKS=20
inv="$work/hosts.yml"
bash "$here/../../lab-inventory.sh" aflt-e2e- 7 > "$inv"
cleanup() {
  ansible-playbook -i "$inv" aifabric.lab.lab_down >/dev/null 2>&1 || true
  left=$(ip netns list | awk '{print $1}' | grep '^aflt-e2e-' || true)
  rm -rf "$work"
  if [ -n "$left" ]; then echo "LEFT BEHIND: $left"; exit 1; fi
}
trap cleanup EXIT

ansible-playbook -i "$inv" aifabric.lab.lab_up
ansible-playbook -i "$inv" aifabric.lab.elephant aifabric.lab.barrier \
  -e elephant_volume=1GB -e barrier_volume=750MB -e '{"barrier_throttles": {"worker3": "2gbit"}}' | tee "$work/out.txt"
report=$(ls -d "$AIFABRIC_RUNS_DIR"/*/report.json | head -n1)
python3 "$here/check_report.py" "$report" "$work/out.txt"

# Someone else's traffic on worker1's link during the step: the application's bytes and the interface's books no
# longer agree, and the report says so (8 KB UDP datagrams every 2 ms, about 4 MB/s, beside a 250 MB flow).
ip netns exec aflt-e2e-worker1 python3 -c '
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
end = time.time() + 40
while time.time() < end:
    s.sendto(b"x" * 8000, ("198.18.7.1", 9))
    time.sleep(0.002)
' &
side=$!
ansible-playbook -i "$inv" aifabric.lab.barrier -e barrier_volume=250MB | tee "$work/side.txt"
kill "$side" 2>/dev/null || true
wait "$side" 2>/dev/null || true
grep -q "netdev eth0 tx .* DISAGREES" "$work/side.txt"
grep -q "! worker1: the application moved .* but netdev eth0 tx counted" "$work/side.txt"
grep -q "the books disagree by more than 0.5%" "$work/side.txt"

# A worker whose path is down for the whole step: the step fails, names the host, keeps the others' results.
ip -n aflt-e2e-worker2 link set eth0 down
set +e
ansible-playbook -i "$inv" aifabric.lab.barrier -e barrier_volume=200MB -e barrier_timeout=6 -e barrier_arm_timeout=5 \
  > "$work/fail.txt" 2>&1
rc=$?
set -e
ip -n aflt-e2e-worker2 link set eth0 up
test "$rc" -ne 0
grep -q "STEP FAILED: no step time is computed over the survivors." "$work/fail.txt"
# worker2 never reached the rendezvous: the step was not started at all (no byte sent), and the report says who
grep -qE -- "- worker2 \((error|not_started)\): .*(never reached the rendezvous|no rendezvous answered at 198\.18\.7\.1:18599)" \
  "$work/fail.txt"
grep -qE -- "- worker1 \(not_started\): not started: the step was not started: worker2 did not arm" "$work/fail.txt"
# the throttle was removed by the always section although the step failed (the kernel's own view, read by tc)
qdiscs=$(tc -n aflt-e2e-worker3 -j qdisc show dev eth0)
echo "worker3 eth0 qdiscs after the failed step: $qdiscs"
if grep -q '"kind":"htb"' <<<"$qdiscs"; then echo "the throttle was left on worker3"; exit 1; fi

# Several flows per host at once: two parallel streams per worker (each its own connection), all fired together;
# the sink's server counts 6 connections and every worker's figures hold as with one stream. This step has each host
# start its own part (as over SSH) instead of one task for the whole netns lab: both ways run here.
ansible-playbook -i "$inv" aifabric.lab.barrier -e barrier_volume=400MB -e barrier_streams=2 -e barrier_batch_start=false \
  | tee "$work/streams.txt"
ran() {  # ran FILE TASK-NAME HOST: the task reported ok for the host in that playbook's output
  awk -v t="$2" '/^TASK \[/ {on = index($0, t) > 0} on' "$1" | grep -q "^ok: \[$3"
}
ran "$work/streams.txt" "Start this host's part" worker1
if ran "$work/streams.txt" "Start every host's part" sink; then echo "batch_start=false still batched"; exit 1; fi
ran "$work/out.txt" "Start every host's part" sink
streams_report=$(grep -o 'report: .*report.json' "$work/streams.txt" | awk '{print $2}')
python3 - "$streams_report" <<'PY'
import json, sys
step = json.load(open(sys.argv[1]))["steps"][0]
assert step["status"] == "ok", step.get("failed")
w = {x["host"]: x for x in step["workers"]}
factor = 8948 / 9014
for host, rate in (("worker1", 3), ("worker2", 3), ("worker3", 2)):
    assert abs(w[host]["completion_s"] / w[host]["predicted_s"] - 1) < 0.05, w[host]
print("streams OK: %s" % {h: round(x["gbps"], 3) for h, x in w.items()})
PY

# Re-render the first run's report from its files alone: the same report.json as the callback's, byte for byte.
first_run=$(dirname "$report")
cp "$first_run/report.json" "$work/callback-report.json"
rm "$first_run/report.json" "$first_run/report.txt"
ansible-playbook aifabric.lab.render_report -e run_dir="$first_run" > "$work/render.txt"
cmp "$work/callback-report.json" "$first_run/report.json"
grep -q "straggler              worker3: throttled to 2gbit" "$work/render.txt"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['steps'][1]['straggler']['host']=='worker3'" \
  "$first_run/report.json"

# Interrupt the controller in the middle of a step (SIGINT, as Ctrl-C), then remove the lab: every process that was
# inside the lab's namespaces (the flow server, the clients) must be gone, and no namespace left.
ansible-playbook -i "$inv" aifabric.lab.barrier -e barrier_volume=20GB -e barrier_timeout=60 > "$work/int.txt" 2>&1 &
pb=$!
inside=""
for _ in $(seq 1 100); do
  inside=$(for ns in sink worker1 worker2 worker3; do ip netns pids aflt-e2e-$ns 2>/dev/null; done | sort -u | tr '\n' ' ')
  [ "$(echo "$inside" | wc -w)" -ge 4 ] && break
  sleep 0.2
done
test -n "$inside"
sleep 1
kill -INT "$pb"
wait "$pb" || true
ansible-playbook -i "$inv" aifabric.lab.lab_down > "$work/down.txt"
sleep 0.5
for pid in $inside; do
  # A zombie has already let go of its namespaces; it only waits for its parent to read its exit status.
  state=$(awk '/^State:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
  if [ -n "$state" ] && [ "$state" != Z ]; then
    echo "process $pid from inside the lab survived: $(tr '\0' ' ' < "/proc/$pid/cmdline")"; exit 1
  fi
done
echo "interrupt: the processes that were inside the lab ($inside) are gone"
echo "barrier_e2e: OK"
