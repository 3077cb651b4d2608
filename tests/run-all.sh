#!/usr/bin/env bash
# `make test`: every tier; stops at the first tier (or lane of tiers side by side) that fails and says which, with its
# log. In this order:
#   Setup: ruff; the ansible-core matrix's venvs, built when their pins or Python changed, else checked (the
#     background and the first phase both use them: built first, none is ever built at idle priority while a unit
#     row waits for it).
#   The background, started then and running beside everything else at idle priority (SCHED_IDLE, nice 19, I/O
#     class idle: it takes only the CPU nothing else wants, so that it disturbs the lab tiers' timing as little as a
#     process can; stopped if make test stops first): the tiers that touch no lab and have no timeout, in two lanes
#     side by side: the matrix's sanity (tests/matrix/run.sh --units none: the other versions' sanity, compile and
#     import on the host Pythons) | ansible-test sanity, ansible-lint, the real-lab inventory and playbook syntax,
#     ansible-doc, the release tier (changelog, docsite).
#   The first phase, in the foreground, three lanes side by side: the matrix's unit tests (--units lean --sanity
#     none: the other versions and the host Pythons) | .venv's unit tests, then the install check (its flows have
#     deadlines) | the integration targets that assert no timing (LANE_TARGETS below), then molecule's netns_lab and
#     fabric_lab scenarios. The unit tests have socket timeouts of seconds: they never run at idle priority, and each
#     unit run is in a network namespace of its own (unshare, no name in `ip netns`), so the lane's targets and
#     scenarios, one at a time, are the only ones to make named namespaces in this phase (bad_input's snapshot of
#     every namespace, "nothing changed", relies on it).
#   The lab tiers, one after another: the other integration targets, the VM lab's guest image (built in a process
#     group of its own since the start), the VM lab. Before each, a line names each tier of the background that ended
#     since; when one failed, make test stops there, with its log.
#   The end: make test waits for the background and prints its tiers' logs, results and when it ended; nothing left
#     behind. The count at the end, "tiers: N passed, M failed", holds every tier of every phase.
# The lanes' and the background's logs are printed whole once their phase ended (a line says when each tier ends).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PATH="$root/.venv/bin:$PATH"
export ANSIBLE_CONFIG="$root/ansible.cfg"
# make test's start (the background, this script again, inherits it): the tiers' ends are told in seconds from it
if [ "${1:-}" != --background ]; then AIFABRIC_TEST_T0=$(date +%s); export AIFABRIC_TEST_T0; fi

# run_lanes DIR NAME COMMAND [NAME COMMAND ...] [-- NAME COMMAND ...]: each lane (the tiers between two --) runs its
# tiers one after another, the lanes side by side; each COMMAND a bash -c string. DIR gets the tiers' names (names, in
# order), each tier's output (N.out), its start (N.start) and its result (N.rc: passed or FAILED, its seconds, when it
# ended in seconds from make test's start). A line as each tier ends.
run_lanes() {
  local dir=$1 i=0 l n start st
  shift
  local names=() cmds=() lanes=() lane=""
  while [ $# -gt 0 ]; do
    if [ "$1" = -- ]; then lanes+=("$lane"); lane=""; shift; continue; fi
    names+=("$1"); cmds+=("$2"); lane+="$i "; i=$((i + 1)); shift 2
  done
  lanes+=("$lane")
  printf '%s\n' "${names[@]}" > "$dir/names.tmp" && mv "$dir/names.tmp" "$dir/names"
  lane_pids=()
  for l in "${lanes[@]}"; do
    [ -n "$l" ] || continue
    ( for n in $l; do
        start=$SECONDS
        echo "$(( $(date +%s) - AIFABRIC_TEST_T0 ))" > "$dir/$n.start"
        if bash -c "${cmds[$n]}" > "$dir/$n.out" 2>&1 < /dev/null; then st=passed; else st=FAILED; fi
        echo "$st $((SECONDS - start)) $(( $(date +%s) - AIFABRIC_TEST_T0 ))" > "$dir/$n.rc.tmp"
        mv "$dir/$n.rc.tmp" "$dir/$n.rc"
        echo "... $st in $((SECONDS - start)) s: ${names[$n]}"
      done ) &
    lane_pids+=($!)
  done
  wait "${lane_pids[@]}" || true
  lane_pids=()
}
lane_pids=()
# kill_tree PID: PID and every process under it (a lane that make test leaves as it stops: Ctrl-C, a kill)
kill_tree() {
  local c
  for c in $(pgrep -P "$1" || true); do kill_tree "$c"; done
  kill "$1" 2>/dev/null || true
}

# The background: this script again, in a session of its own (make test ends it, with everything it
# started, if make test stops first), at idle priority, which its children inherit.
if [ "${1:-}" = --background ]; then
  dir=$2
  shift 2
  {
    prio() { echo "$(chrt -p $$ | sed -n 's/.*scheduling policy: //p'), nice $(awk '{print $19}' /proc/$$/stat), I/O $(ionice -p $$)"; }
    if chrt --idle -p 0 $$ && renice -n 19 -p $$ >/dev/null && ionice -c 3 -p $$; then
      echo "priority: $(prio)"
    else
      echo "priority: WARNING: idle priority could not be set in full ($(prio)): the background competes with the lab tiers"
    fi
  } > "$dir/priority" 2>&1
  run_lanes "$dir" "$@" > "$dir/progress" 2>&1
  echo "$(( $(date +%s) - AIFABRIC_TEST_T0 ))" > "$dir/done"
  exit 0
fi

passed=0
failed=0
stopped=0
bg_dir='' bg_pid=''
tier() {
  local name=$1; shift
  local start=$SECONDS
  bg_check
  echo; echo "##### $name"
  if "$@"; then
    echo "##### $name: passed in $((SECONDS - start)) s"; passed=$((passed + 1))
  else
    echo "##### $name: FAILED"; failed=$((failed + 1)); stop_failed
  fi
}
# report_lanes DIR HOW UNENDED: every tier of DIR in order, its whole output and its result line, counted; a tier
# without a result is counted as UNENDED (FAILED: it should have ended; stopped: make test stopped it).
report_lanes() {
  local dir=$1 how=$2 unended=$3 n=0 name st secs at
  [ -e "$dir/names" ] || return 0
  while IFS= read -r name; do
    if [ -e "$dir/$n.rc" ]; then
      read -r st secs at < "$dir/$n.rc"
      echo; echo "##### $name"; cat "$dir/$n.out"
      if [ "$st" = passed ]; then
        echo "##### $name: passed in $secs s ($how)"; passed=$((passed + 1))
      else
        echo "##### $name: FAILED ($how, after $secs s)"; failed=$((failed + 1))
      fi
    elif [ "$unended" = FAILED ]; then
      echo; echo "##### $name"; cat "$dir/$n.out" 2>/dev/null || true
      echo "##### $name: FAILED ($how: it never $([ -e "$dir/$n.start" ] && echo ended || echo began))"
      failed=$((failed + 1))
    elif [ -e "$dir/$n.start" ]; then
      echo; echo "##### $name: stopped ($how, $(( $(date +%s) - AIFABRIC_TEST_T0 - $(cat "$dir/$n.start") )) s after it began): make test stopped first"
      stopped=$((stopped + 1))
    else
      echo; echo "##### $name: not run ($how): make test stopped first"; stopped=$((stopped + 1))
    fi
    n=$((n + 1))
  done < "$dir/names"
}
count() {
  echo "tiers: $passed passed, $failed failed$([ "$stopped" = 0 ] || echo ", $stopped stopped before they ended")"
}
# bg_check: while the background runs, its tiers that ended since the last look, a line each; when one failed, make
# test stops.
bg_announced=" "
bg_check() {
  local n=0 name st secs at bad=""
  [ -n "$bg_pid" ] && [ -e "$bg_dir/names" ] || return 0
  while IFS= read -r name; do
    if [ -e "$bg_dir/$n.rc" ] && [[ "$bg_announced" != *" $n "* ]]; then
      read -r st secs at < "$bg_dir/$n.rc"
      echo "(background) $name: $st in $secs s, ended $at s into make test"
      bg_announced+="$n "
      [ "$st" = passed ] || bad+="${bad:+; }$name"
    fi
    n=$((n + 1))
  done < "$bg_dir/names"
  if [ -n "$bad" ]; then
    echo; echo "make test stops: a tier of the background FAILED: $bad"
    stop_failed
  fi
}
stop_background() {
  [ -n "$bg_pid" ] || return 0
  if kill -0 "$bg_pid" 2>/dev/null; then kill -- "-$bg_pid" 2>/dev/null || true; fi
  wait "$bg_pid" 2>/dev/null || true
  bg_pid=
}
# stop_failed: a tier failed; the background is stopped, its tiers' logs and results printed (those that had not
# ended, named), and make test exits 1.
stop_failed() {
  if [ -n "$bg_pid" ]; then
    stop_background
    echo; echo "===== the background's tiers (make test stops: those still running are stopped)"
    report_lanes "$bg_dir" "in the background" stopped
  fi
  count; exit 1
}
# wait_background: waits for the background's tiers, prints their logs and results and when they ended.
wait_background() {
  local waited=$SECONDS rc=0
  echo; echo "===== waiting for the background's tiers (idle priority, since $bg_started s into make test)"
  wait "$bg_pid" || rc=$?
  bg_pid=
  local failed_before=$failed
  report_lanes "$bg_dir" "in the background" FAILED
  if [ -e "$bg_dir/done" ]; then
    echo "the background's tiers ended $(cat "$bg_dir/done") s into make test; make test waited $((SECONDS - waited)) s for them"
  else
    echo "the background ended before its tiers did (exit status $rc)"
  fi
  [ "$failed" = "$failed_before" ] || { count; exit 1; }
}
leftovers() {
  local left files procs
  left=$(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^aflt-' || true)
  if [ -n "$left" ]; then echo "namespaces left behind by the tests: $left"; return 1; fi
  files=$(ls -d /run/aifabric-lab/server-198.18.* /run/aifabric-lab/step-* /run/aifabric-lab/shapers/netns-aflt-* \
    /run/aifabric-lab/labs/aflt-* 2>/dev/null || true)
  if [ -n "$files" ]; then echo "background server or step files left behind: $files"; return 1; fi
  procs=$(pgrep -af 'AnsiballZ_flow|aflt-' || true)
  # a step part or background server detaches (double fork): it runs this checkout's Python, its parent is init
  procs+=$(ps -eo pid=,ppid=,args= | awk -v py="$root/.venv/bin/python" '$2 == 1 && index($3, py) == 1' || true)
  if [ -n "$procs" ]; then echo "processes left behind: $procs"; return 1; fi
  echo "no aflt-* namespace, no server, step, shaper or lab record, no flow process, no detached step or server"
}
# The VM tier's guest image (debootstrap: mostly the network and dpkg, not CPU) builds in the background from the start,
# in a process group of its own that is ended if make test stops first; the VM tier waits for it.
export AIFABRIC_VMLAB_CACHE=${AIFABRIC_VMLAB_CACHE:-/var/cache/aifabric-vmlab}
image_log=$(mktemp)
setsid lab/vm/build-image.sh "$AIFABRIC_VMLAB_CACHE" > "$image_log" 2>&1 &
image_pid=$!
image_started=$SECONDS
stop_image() {
  if kill -0 "$image_pid" 2>/dev/null; then kill -- "-$image_pid" 2>/dev/null || true; wait "$image_pid" 2>/dev/null || true; fi
  rm -f "$image_log"
}
cleanup() {
  local p
  for p in "${lane_pids[@]}"; do kill_tree "$p"; done
  stop_background
  stop_image
  [ -z "$bg_dir" ] || rm -rf "$bg_dir"
  [ -z "${fg_dir:-}" ] || rm -rf "$fg_dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
image() {
  local rc=0
  wait "$image_pid" || rc=$?
  cat "$image_log"
  echo "the image was ready $((SECONDS - image_started)) s after make test's first tier began"
  return $rc
}
# The integration targets that assert no timing and make no lab that another tier of the first phase could meet
# (namespaces aflt-bad-*, aflt-conn-*, aflt-tc-*; history and vfio_iommu_off make none): the first phase's lane runs
# them, then molecule's scenarios (aflt-mol-* on 198.18.9.0/24, aflt-molf-* on 198.18.31-32.0/24); the integration
# tier runs the others.
LANE_TARGETS=(bad_input connection_netns history tc_shape vfio_iommu_off)
later_targets=()
for t in "${LANE_TARGETS[@]}"; do
  [ -d "tests/integration/targets/$t" ] || { echo "make test: the first phase's target $t is not in tests/integration/targets"; exit 1; }
done
for d in tests/integration/targets/*/; do
  t=$(basename "$d")
  case " ${LANE_TARGETS[*]} " in *" $t "*) ;; *) later_targets+=("$t") ;; esac
done

# Setup
tier "ruff" ruff check plugins tests benchmarks
tier "ansible-core matrix: the other versions' venvs (built when their pins or Python changed, else checked)" \
  bash tests/matrix/run.sh --skip-current --units none --sanity none

# The background
bg_dir=$(mktemp -d)
bg_started=$SECONDS
setsid bash "$root/tests/run-all.sh" --background "$bg_dir" \
  "ansible-core matrix: sanity (the other versions' on the shipped content; compile and import on host Pythons 3.9, 3.10)" \
    "bash tests/matrix/run.sh --skip-current --units none" \
  -- \
  "ansible-test sanity" "bash tests/sanity/run.sh" \
  "ansible-lint (production profile)" "ansible-lint --profile production roles playbooks tests/vmlab" \
  "real-lab inventory parses, provisioning playbook syntax" \
    "ansible-inventory -i inventories/lab/hosts.yml --graph >/dev/null && ansible-playbook -i inventories/lab/hosts.yml \
     --syntax-check playbooks/lab_provision.yml playbooks/elephant.yml playbooks/barrier.yml >/dev/null" \
  "ansible-doc renders every plugin" "bash tests/sanity/docs.sh" \
  "release: changelog and docs lint, the docsite builds" "bash tests/release/run.sh" \
  < /dev/null > /dev/null 2>&1 &
bg_pid=$!
echo; echo "===== in the background at idle priority from now on (their logs before the last tier): the matrix's sanity;" \
  "ansible-test sanity, ansible-lint, the real-lab inventory, ansible-doc, the release tier"

# The first phase, in the foreground. The unit tests run in a network namespace of their own, like the
# matrix's rows (loopback ports never meet, and no name in ip netns).
units_ns=
if [ "$(id -u)" = 0 ] && unshare --net --mount true 2>/dev/null; then
  units_ns="unshare --net --mount bash -c 'mount -t sysfs sysfs /sys && ip link set lo up && exec \"\$@\"' units"
fi
echo "===== the first phase, three lanes side by side: the matrix's unit tests | .venv's unit tests, the install check |" \
  "the integration targets that assert no timing, molecule"
fg_dir=$(mktemp -d)
start_first=$SECONDS
run_lanes "$fg_dir" \
  "ansible-core matrix: units (the other versions': all once per Python, else those reaching ansible-core; host Pythons 3.9, 3.10)" \
    "bash tests/matrix/run.sh --skip-current --units lean --sanity none" \
  -- \
  "unit tests (those that need root run with the integration targets)" \
    "$units_ns pytest -q -p no:cacheprovider -m 'not needs_root' tests/unit" \
  "build and install the collection" "bash tests/build/install_check.sh" \
  -- \
  "integration targets that assert no timing (${LANE_TARGETS[*]})" "bash tests/integration/run.sh ${LANE_TARGETS[*]}" \
  "molecule (netns_lab)" "cd roles/netns_lab && molecule test" \
  "molecule (fabric_lab)" "cd roles/fabric_lab && molecule test"
failed_before=$failed
report_lanes "$fg_dir" "side by side" FAILED
echo "the first phase ran in $((SECONDS - start_first)) s of wall time"
echo "the background's $(cat "$bg_dir/priority" 2>/dev/null || echo "priority: not known (it wrote none)")"
[ "$failed" = "$failed_before" ] || stop_failed

# The lab tiers
tier "integration targets (the others: the first phase ran ${LANE_TARGETS[*]})" bash tests/integration/run.sh "${later_targets[@]}"
tier "VM lab guest image (built in the background since the first tier)" image
tier "VM lab (QEMU guests: soft-RoCE, netdevsim SR-IOV, vfio-pci)" bash tests/vmlab/run.sh

# The end
wait_background
tier "nothing left behind" leftovers
echo; echo "make test: all tiers passed in $SECONDS s"
count
