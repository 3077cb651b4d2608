#!/usr/bin/env bash
# The chaos tier (issue 24 item 8): every attack and fault against a real barrier step on a lab of its own
# (namespaces aflt-chs-*). For each case: the step completed or failed naming the cause, no measured result was lost,
# nothing was left behind. Attacks come from a lab host (worker1's namespace) at the sink's rendezvous port (18599)
# and its flow server (18600) at once; every attacker ends by itself (bounded in count and time). Prints the table.
set -euo pipefail
. "$(dirname "$0")/../../lab-target.sh"
P=aflt-chs-
OCTET=8
SINK=198.18.$OCTET.1
W1=198.18.$OCTET.11
export ANSIBLE_FORKS=20
inv="$work/hosts.yml"
bash "$here/../../lab-inventory.sh" $P $OCTET 3 > "$inv"
state=/run/aifabric-lab
own_pids=()
tmpfs_dir=""
orphans_before=""
cleanup() {
  # what the cases moved aside (results of a killed run, kept: nothing measured is lost) goes with the test's lab
  if [ -d "$state/orphaned" ]; then
    comm -13 <(echo "$orphans_before") <(ls "$state/orphaned") | while read -r f; do rm -rf "${state:?}/orphaned/$f"; done
  fi
  for pid in "${own_pids[@]}"; do kill -CONT "$pid" 2>/dev/null || true; kill "$pid" 2>/dev/null || true; done
  lab_down_quiet -i "$inv" aifabric.lab.lab_down
  if [ -n "$tmpfs_dir" ] && mountpoint -q "$tmpfs_dir"; then umount "$tmpfs_dir" || true; fi
  lab_gone "$P"
}
trap cleanup EXIT
table=()
lab_pids() { for h in sink worker1 worker2 worker3; do ip netns pids "$P$h" 2>/dev/null; done; }
lab_empty() { [ -z "$(lab_pids)" ]; }
wait_for() {  # wait_for SECONDS COMMAND...: until the command succeeds
  local end=$((SECONDS + $1)); shift
  until "$@"; do [ $SECONDS -lt $end ] || return 1; sleep 0.1; done
}
listening() { [ -n "$(ip netns exec "${P}sink" ss -Hltn "( sport = :$1 )" 2>/dev/null)" ]; }
tx_bytes() { ip netns exec "$P$1" cat /sys/class/net/eth0/statistics/tx_bytes; }
payload_flowing() { [ $(( $(tx_bytes "$1") - $2 )) -gt 100000000 ]; }
count_orphaned() { if [ -d "$state/orphaned" ]; then find "$state/orphaned" -mindepth 1 -maxdepth 1 | wc -l; else echo 0; fi; }
step_files() { ls -d "$state"/step-* 2>/dev/null || true; }
no_leftovers() {  # nothing of this lab's steps left: no throttle, no process inside the lab, no step file
  local h
  for h in worker1 worker2 worker3; do
    if tc -n "$P$h" -j qdisc show dev eth0 | grep -q '"kind":"htb"'; then echo "qdisc left on $h"; return 1; fi
  done
  wait_for 20 lab_empty || { echo "processes left inside the lab: $(lab_pids | paste -sd, -)"; return 1; }
  local now; now=$(step_files)
  if [ "$now" != "$files_before" ]; then echo "step files left: $(comm -13 <(echo "$files_before") <(echo "$now"))"; \
    return 1; fi
}
run_step() {  # run_step NAME EXTRA-ARGS...: the barrier step in the background; sets $pb and $runs
  runs="$work/runs-$1"; shift
  AIFABRIC_RUNS_DIR="$runs" ansible-playbook -i "$inv" "$here/step.yml" "$@" > "$runs.log" 2>&1 &
  pb=$!
}
run_dir() { ls -d "$runs"/*/ | head -n1; }
row() {  # row CASE WHAT-THE-STEP-DID-ARGS... (check_chaos.py's) ; the leftovers column is filled by no_leftovers
  local case=$1; shift
  local out; out=$(python3 "$here/check_chaos.py" "$@")
  no_leftovers
  table+=("| $case | $out | none |"); echo "case ok: $case"
}

want() { [ -z "${CHAOS_ONLY:-}" ] || [[ " $CHAOS_ONLY " == *" $1 "* ]]; }  # CHAOS_ONLY="attacks coordinator ...": some

ansible-playbook -i "$inv" aifabric.lab.lab_up > /dev/null
files_before=$(step_files)
orphans_before=$(ls "$state/orphaned" 2>/dev/null || true)
# 1-1 GB a worker, worker3 at 2 Gb/s: a step of about 4 s; the attack starts as soon as the rendezvous listens and
# goes on past the fire, at the rendezvous and at the flow server together
if want attacks; then
  for attack in malformed huge trickle flood token silent; do
    run_step "$attack" -e barrier_volume=1GB
    wait_for 60 listening 18599
    for port in 18599 18600; do
      ip netns exec "${P}worker1" python3 "$here/attack.py" "$attack" $SINK $port 14 > "$work/attack-$attack-$port.txt" 2>&1 &
      own_pids+=($!)
    done
    wait "$pb" || { tail -30 "$runs.log"; echo "the step failed under the $attack attack"; exit 1; }
    wait "${own_pids[@]: -2}" || true
    refused=(--refused $W1)
    row "$attack (rendezvous and flow server): $(cat "$work/attack-$attack-18599.txt" | cut -c1-60)" \
      "$(run_dir)" ok --kept worker1,worker2,worker3 "${refused[@]}"
  done
fi

# 7. The coordinating host's step process killed (SIGKILL) after two of the three workers' results were stored:
# worker3 at 500 Mb/s is still sending. Those two results survive (written before they were acknowledged); worker3's
# flow is cut with the sink's server and its own account is collected from it by the clean-up. worker3's flow needs
# 6.4 s (400 MB at 500 Mb/s) and the kill comes after the others' (about a second): a timeout of 15 s and a result
# grace of 5 (not the default 30) leave it room, and bound the case when something hangs.
if want coordinator; then
  run_step coordinator -e barrier_volume=400MB -e '{"barrier_throttles": {"worker3": "500mbit"}}' -e barrier_timeout=15 \
    -e barrier_result_grace=5
  stored_two() { [ "$(ls "$state"/step-*.results/host-worker[12].json 2>/dev/null | wc -l)" -ge 2 ]; }
  wait_for 60 stored_two
  sink_pid=$(python3 -c "import json,glob,sys; print(json.load(open(sorted(glob.glob(sys.argv[1] + '/step-*-sink.pid'))[-1]))['pid'])" "$state")
  kill -9 "$sink_pid"
  wait "$pb" && { echo "a step whose coordinator died passed"; exit 1; } || true
  row "the coordinating host's step process killed (SIGKILL) after 2 of 3 results" "$(run_dir)" failed \
    --kept worker1,worker2 --survived worker1,worker2 --named worker3=
fi

# 8. One worker's step process stopped (SIGSTOP) mid-transfer: the step fails naming it at its timeout (plus a 5 s
# result grace, not the default 30: the healthy workers' results are in long before); the others' flows are kept; the
# clean-up ends the stopped process (SIGKILL reaches a stopped process).
if want sigstop; then
  tx0=$(tx_bytes worker2)
  run_step sigstop -e barrier_volume=1GB -e barrier_timeout=10 -e barrier_result_grace=5
  wait_for 60 payload_flowing worker2 "$tx0"
  w2_pid=$(python3 -c "import json,glob,sys; print(json.load(open(sorted(glob.glob(sys.argv[1] + '/step-*-worker2.pid'))[-1]))['pid'])" "$state")
  kill -STOP "$w2_pid"; own_pids+=("$w2_pid")
  wait "$pb" && { echo "a step with a stopped worker passed"; exit 1; } || true
  row "worker2's step process stopped (SIGSTOP) mid-transfer" "$(run_dir)" failed --kept worker1,worker3 --named worker2=
fi

# 9. A 1 MB tmpfs as worker2's state directory, full but for two pages (its PID file): worker2 cannot write its
# result file, still reports it over the network, and the step completes with nothing lost.
if want tmpfs; then
  tmpfs_dir="$work/state-worker2"
  mkdir -p "$tmpfs_dir" && mount -t tmpfs -o size=1m tmpfs "$tmpfs_dir"
  head -c $((1024 * 1024 - 8192)) /dev/zero > "$tmpfs_dir/filler" 2>/dev/null || true
  run_step tmpfs -e barrier_volume=1GB -e barrier_batch_start=false -e chaos_state_dir_worker2="$tmpfs_dir"
  in_tmpfs() { ls "$tmpfs_dir"/step-*-worker2.pid >/dev/null 2>&1; }
  wait_for 60 in_tmpfs || { echo "worker2's step process does not keep its state in the tmpfs"; exit 1; }
  df -k "$tmpfs_dir" | awk 'NR == 2 && $4 > 8 {print "the tmpfs is not full: " $4 " KB free"; exit 1}'
  wait "$pb" || { tail -30 "$runs.log"; echo "the step failed with a full state directory on worker2"; exit 1; }
  # worker2 could not keep its own copy (no space for it), and its result reached the report over the network
  ! ls "$tmpfs_dir"/step-*-worker2.json >/dev/null 2>&1 || { echo "worker2 wrote its result: the tmpfs was not full"; exit 1; }
  umount "$tmpfs_dir"; tmpfs_dir=""
  row "a 1 MB tmpfs, full, as worker2's state directory" "$(run_dir)" ok --kept worker1,worker2,worker3
fi

# 10. ansible-playbook killed (SIGKILL) mid-step, then a new experiment on the same hosts: the new run finds what
# the killed one left (its step daemons, worker3's throttle) by their owner, gone with its controller, and removes it;
# the results it never collected are kept aside (orphaned/); the new step then runs on clean hosts.
if want killed; then
  orphaned_before=$(count_orphaned)
  tx0=$(tx_bytes worker1)
  run_step killed -e barrier_volume=3GB -e barrier_timeout=60
  wait_for 60 payload_flowing worker1 "$tx0"
  kill -9 "$pb"; wait "$pb" 2>/dev/null || true
  tc -n ${P}worker3 -j qdisc show dev eth0 | grep -q '"kind":"htb"' || { echo "the killed run's throttle is not there"; exit 1; }
  run_step after-kill -e barrier_volume=1GB
  wait "$pb" || { tail -30 "$runs.log"; echo "the experiment after a killed one failed"; exit 1; }
  grep -q "daemon" "$runs.log" && grep -q "shaper" "$runs.log" \
    || { grep -n "leftover\|Say what earlier" -A12 "$runs.log" | head -40; echo "the killed run's daemons and throttle were not named"; exit 1; }
  orphaned_after=$(count_orphaned)
  # the killed run's results: on the hosts' state directory (orphaned/), or the step was still running and its daemons
  # were ended by the new run, each writing what it had before it went
  [ "$orphaned_after" -ge "$orphaned_before" ] || { echo "orphaned results disappeared"; exit 1; }
  row "ansible-playbook killed (SIGKILL) mid-step, then a new experiment on the same hosts" "$(run_dir)" ok \
    --kept worker1,worker2,worker3
fi

echo
echo "| case | what the step did | results kept | leftovers found after |"
echo "|---|---|---|---|"
printf '%s\n' "${table[@]}"
echo "chaos: OK"
