#!/usr/bin/env bash
# End to end on a lab of its own (namespaces aflt-e2e-*): lab up, elephant, barrier step with one worker throttled,
# report JSON checked against the shaping, lab down (also when anything fails), nothing left behind.
set -euo pipefail
. "$(dirname "$0")/../../lab-target.sh"
export AIFABRIC_RUNS_DIR="$work/runs"
export ANSIBLE_FORKS=20
inv="$work/hosts.yml"
bash "$here/../../lab-inventory.sh" aflt-e2e- 7 > "$inv"
cleanup() { lab_cleanup aflt-e2e- -i "$inv" aifabric.lab.lab_down; }
trap cleanup EXIT

ansible-playbook -i "$inv" aifabric.lab.lab_up
ansible-playbook -i "$inv" aifabric.lab.elephant aifabric.lab.barrier \
  -e elephant_volume=1GB -e barrier_volume=750MB -e '{"barrier_throttles": {"worker3": "2gbit"}}' | tee "$work/out.txt"
report=$(ls -d "$AIFABRIC_RUNS_DIR"/*/report.json | head -n1)
python3 "$here/check_report.py" "$report" "$work/out.txt"
# The same run's report.html in a real browser (headless Chromium; make setup-test installs it): no console error, no
# request, a bar per flow as wide as its completion, the idle times, the straggler marked; report.png beside it
# (AIFABRIC_E2E_ARTIFACTS=DIR keeps the page and its screenshot, the run directory goes with the lab).
python3 "$here/../../../browser/check_html.py" "$(dirname "$report")"
if [ -n "${AIFABRIC_E2E_ARTIFACTS:-}" ]; then
  mkdir -p "$AIFABRIC_E2E_ARTIFACTS" && cp "$(dirname "$report")"/report.{html,png} "$AIFABRIC_E2E_ARTIFACTS"/
fi

# A gate broken on purpose, in a step whose throttled flow runs about 8 s (2 GB at 2 Gb/s; the others idle from about
# 5.3 s, a third of the step): the play fails after the step with the gate's figure, value and limit; junit.xml fails
# the step's case; the report shows the gate; and while the flows ran, the controller printed their progress (bytes so
# far and rate per flow, the time left: a line about every 1.2 s, 17 in a 20 s step).
set +e
ansible-playbook -i "$inv" aifabric.lab.barrier -e barrier_volume=2GB -e barrier_timeout=40 \
  -e '{"barrier_throttles": {"worker3": "2gbit"}, "barrier_expect": {"healthy_idle_share": 0.05, "step_vs_predicted": 1.5}}' \
  > "$work/gate.txt" 2>&1
rc=$?
set -e
test "$rc" -ne 0
grep -q 'fatal: .*"msg": "step barrier: gate healthy_idle_share [0-9.]*% > 5.0% (mean idle share of the unthrottled workers; the straggler worker3: throttled to 2gbit' "$work/gate.txt"
grep -q "  gate                   held   step_vs_predicted" "$work/gate.txt"
grep -q "=== gates: 1 BROKEN" "$work/gate.txt"
gate_run=$(dirname "$(grep -o 'report: .*report.json' "$work/gate.txt" | awk '{print $2}')")
python3 - "$gate_run/junit.xml" "$work/gate.txt" <<'PY'
import re, sys
from xml.etree import ElementTree
case = ElementTree.parse(sys.argv[1]).getroot().find("testsuite").find("testcase")
failure = case.find("failure")
assert failure is not None and failure.get("type") == "gate_broken", ElementTree.tostring(case)
assert "healthy_idle_share" in failure.get("message")
# progress: lines while the step ran, each flow's bytes growing (worker3's, the 8 s flow, until its end)
lines = re.findall(r"^\[barrier +([0-9.]+) s\] (.*)$", open(sys.argv[2]).read(), re.M)
w3 = [float(m.group(1)) * {"MB": 1e6, "GB": 1e9}[m.group(2)] for _, text in lines
      for m in [re.search(r"worker3 ([0-9.]+) (MB|GB) [0-9.]+ Gb/s", text)] if m]
assert len(w3) >= 3 and w3 == sorted(w3) and w3[-1] > w3[0], lines
assert any("left at these rates" in text for _, text in lines), lines
print("gate OK; %d progress lines over %s s, worker3 %.2f GB at the last" % (len(lines), lines[-1][0], w3[-1] / 1e9))
PY

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
  -e experiment_progress=false | tee "$work/streams.txt"
if grep -q '^\[barrier ' "$work/streams.txt"; then echo "experiment_progress=false still printed progress"; exit 1; fi
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
# the throttled worker is the straggler whatever the machine's speed, never faster than its throttle allows (the
# others may beat their fair share when it lags); the rates are this machine's (printed)
assert step["straggler"]["host"] == "worker3" and w["worker3"]["completion_s"] > 0.985 * w["worker3"]["predicted_s"]
print("streams OK: %s Gb/s (completion vs prediction %s)" % ({h: round(x["gbps"], 3) for h, x in w.items()},
      {h: "%+.1f%%" % (x["prediction_error"] * 100) for h, x in w.items()}))
PY

# Re-render the first run's report from its files alone: the same report.json as the callback's, byte for byte.
first_run=$(dirname "$report")
cp "$first_run/report.json" "$work/callback-report.json"
cp "$first_run/report.html" "$work/callback-report.html"
rm "$first_run/report.json" "$first_run/report.txt" "$first_run/report.html"
ansible-playbook aifabric.lab.render_report -e run_dir="$first_run" > "$work/render.txt"
cmp "$work/callback-report.json" "$first_run/report.json"
cmp "$work/callback-report.html" "$first_run/report.html"
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
# Every report this target's runs wrote (the steps that passed, the broken gate's, the failed step's, the re-rendered
# one) against docs/report.schema.json
python3 "$here/../../validate_reports.py" "$AIFABRIC_RUNS_DIR"
echo "barrier_e2e: OK"
