#!/usr/bin/env bash
# The VM tier: build the guest image (cached), boot two guests, prove RDMA/SR-IOV/VFIO over SSH with Ansible, stop
# them; then a guest that cannot boot is reported by name with its console. Nothing is left: no qemu, no open port.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export AIFABRIC_VMLAB_CACHE=${AIFABRIC_VMLAB_CACHE:-/var/cache/aifabric-vmlab}
export AIFABRIC_VMLAB_SSH_BASE=${AIFABRIC_VMLAB_SSH_BASE:-22300}
inv=inventories/vmlab/hosts.yml
# Every playbook's task times (ansible-core's junit callback) in the cache, summed up at the end: where the minutes of
# this tier go (tests/slowest_tasks.py)
export JUNIT_OUTPUT_DIR=$AIFABRIC_VMLAB_CACHE/junit JUNIT_HIDE_TASK_ARGUMENTS=true
export ANSIBLE_CALLBACKS_ENABLED=aifabric.lab.barrier_report,ansible.builtin.junit
rm -rf "$JUNIT_OUTPUT_DIR"
# The runs the tier's playbooks make (those with flows: vmlab_proof, perftest_faults) go to the cache, not to the
# checkout's runs/ (ansible.cfg): every report.json there is validated against docs/report.schema.json after the last
# of them (tests/integration/validate_reports.py); the demo's run has a directory of its own, validated after it.
export AIFABRIC_RUNS_DIR=$AIFABRIC_VMLAB_CACHE/runs
rm -rf "$AIFABRIC_RUNS_DIR"
# The fact cache of the lab_host step's three runs (pf_prepare below): the guests booted anew, so none from before.
pf_facts=$AIFABRIC_VMLAB_CACHE/facts
rm -rf "$pf_facts"
down() { ansible-playbook -i "$inv" playbooks/vmlab_down.yml > /dev/null 2>&1 || lab/vm/vm.sh stop || true; }
trap down EXIT
nothing_left() {
  if pgrep -f 'qemu-system-x86_64 -name aifabric-vm' >/dev/null; then echo "qemu left running"; return 1; fi
  for p in 1 2; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$((AIFABRIC_VMLAB_SSH_BASE + p))") 2>/dev/null; then echo "port still open"; return 1; fi
  done
}

t0=$SECONDS
lab/vm/build-image.sh "$AIFABRIC_VMLAB_CACHE"
t1=$SECONDS
ansible-playbook -i "$inv" playbooks/vmlab_up.yml | grep -E "answers SSH|started|failed=" || true
t2=$SECONDS
ansible-playbook -i "$inv" playbooks/vmlab_proof.yml > "$AIFABRIC_VMLAB_CACHE/proof.log" 2>&1 \
  || { tail -40 "$AIFABRIC_VMLAB_CACHE/proof.log"; exit 1; }
grep -oE '"msg": "vm[12] .*"' "$AIFABRIC_VMLAB_CACHE/proof.log"
# The seed's barrier step with real verbs (make vmlab-demo): the report must match the shaping. The guests are up:
# the playbook's import of vmlab_up.yml (tagged vmlab_up) is skipped here, as in the job's run below.
ts=$SECONDS
demo_runs=$(mktemp -d)
AIFABRIC_RUNS_DIR="$demo_runs" ansible-playbook -i "$inv" playbooks/vmlab_demo.yml --skip-tags vmlab_up \
  > "$AIFABRIC_VMLAB_CACHE/demo.log" 2>&1 \
  || { tail -40 "$AIFABRIC_VMLAB_CACHE/demo.log"; exit 1; }
python3 tests/vmlab/check_demo.py "$(ls -d "$demo_runs"/*/report.json | head -n1)" \
  || { sed -n '/BARRIER REPORT/,$p' "$AIFABRIC_VMLAB_CACHE/demo.log"; exit 1; }
python3 tests/integration/validate_reports.py "$demo_runs"
rm -rf "$demo_runs"
echo "vmlab: playbooks/vmlab_demo.yml passed in $((SECONDS - ts)) s"
# A job over RDMA verbs (pyverbs RC queue pairs) and the same over TCP, beside perftest's transfers of one iteration
# (make vmlab-job): the guests are both ranks (inventories/vmlab-job). Its three experiments skip the leftovers' check
# (experiment_leftovers=ignore: 9-13 s each on the guests); the demo above runs it, its removal included.
ts=$SECONDS
job_runs=$(mktemp -d)
AIFABRIC_RUNS_DIR="$job_runs" ansible-playbook -i inventories/vmlab-job/hosts.yml playbooks/vmlab_job.yml --skip-tags vmlab_up \
  -e vmlab_job_size=8MB -e vmlab_job_chunks=8 -e vmlab_job_iterations=3 -e experiment_leftovers=ignore \
  > "$AIFABRIC_VMLAB_CACHE/job.log" 2>&1 \
  || { tail -60 "$AIFABRIC_VMLAB_CACHE/job.log"; exit 1; }
python3 tests/vmlab/check_job.py "$(ls -d "$job_runs"/*/report.json | head -n1)" 8000000 8 3 \
  || { sed -n '/BARRIER REPORT/,$p' "$AIFABRIC_VMLAB_CACHE/job.log" | head -80; exit 1; }
python3 tests/integration/validate_reports.py "$job_runs"
rm -rf "$job_runs"
echo "vmlab: playbooks/vmlab_job.yml passed in $((SECONDS - ts)) s"
# The hardware modules against the guests' real kernels, each with its log kept in the cache on failure.
run_pb() {
  local pb=$1 name ts=$SECONDS
  name=$(basename "$pb" .yml)
  ansible-playbook -i "$inv" "$pb" > "$AIFABRIC_VMLAB_CACHE/$name.log" 2>&1 \
    || { tail -40 "$AIFABRIC_VMLAB_CACHE/$name.log"; exit 1; }
  echo "vmlab: $pb passed in $((SECONDS - ts)) s"
}
# vm1's VFIO tests (the module, then the vfio_host role's molecule scenario) and vm2's SR-IOV tests (the module, then
# sriov_host's scenario) touch one guest each, and each guest is one emulated CPU: the two lanes run side by side, each
# lane's lines printed once both have ended.
molecule_of() {
  local r=$1 ts=$SECONDS
  (cd "roles/$r" && molecule test -s vmlab) > "$AIFABRIC_VMLAB_CACHE/molecule-$r.log" 2>&1 \
    || { grep -E "fatal|FAILED|ERROR" -A5 "$AIFABRIC_VMLAB_CACHE/molecule-$r.log" | tail -40; exit 1; }
  echo "vmlab: molecule scenario of role $r passed in $((SECONDS - ts)) s"
}
lanes=$(mktemp -d)
tl=$SECONDS
( run_pb tests/vmlab/vfio.yml; molecule_of vfio_host ) > "$lanes/vm1" 2>&1 & vm1_lane=$!
( run_pb tests/vmlab/sriov.yml; molecule_of sriov_host ) > "$lanes/vm2" 2>&1 & vm2_lane=$!
lanes_rc=0
wait "$vm1_lane" || lanes_rc=1
wait "$vm2_lane" || lanes_rc=1
cat "$lanes/vm1" "$lanes/vm2"; rm -rf "$lanes"
[ "$lanes_rc" = 0 ] || exit 1
echo "vmlab: vm1's VFIO lane and vm2's SR-IOV lane side by side in $((SECONDS - tl)) s"
for role in roles/*/molecule/vmlab; do   # a role's VM scenario not in a lane above still runs, alone
  [ -d "$role" ] || continue
  r=$(basename "$(dirname "$(dirname "$role")")")
  case "$r" in vfio_host|sriov_host) continue ;; esac
  molecule_of "$r"
done
# Hosts prepared and checked: the lab_host role on the guests as they booted from the bare image (the guests reach no
# index, so the wheels come from the controller): check mode first, then applied, then again with no change. The
# preflight passes them and prints its table under the venv's Python; then vm2 is broken (data0 at MTU 1400, a
# throttle no run removed) and the table, in --check, names it with the failing checks; vm2 is mended for what
# follows. The guests' clocks start from the RTC's whole seconds and run no NTP: hundreds of ms apart, which the
# synchronized start measures and corrects, so the clock threshold here is 2 s (docs/hosts.md).
ts=$SECONDS
pf_log=$AIFABRIC_VMLAB_CACHE/preflight
preflight=(ansible-playbook -i "$inv" playbooks/preflight.yml -e preflight_hosts=vmlab
           -e ansible_python_interpreter=/opt/aifabric-lab/venv/bin/python
           -e '{"preflight_expect": {"mtu": 1500, "rdma": true, "perftest": true, "clock_tolerance_s": 2}}')
pf_table() { sed -n '/"msg": \[/,/^ *\]/p' "$1" | sed -n 's/^ *"\(.*\)",\{0,1\}$/  \1/p'; }
pf_guests() {  # pf_guests STEP LABEL [ansible-playbook options]
  local step=$1 label=$2; shift 2
  ansible-playbook -i "$inv" tests/vmlab/preflight_guests.yml -e vmlab_preflight="$step" "$@" > "$pf_log-$label.log" 2>&1 \
    || { tail -40 "$pf_log-$label.log"; exit 1; }
}
# The three runs of lab_host share a fact cache: the first (check mode) reads each guest's distribution and Python
# (interpreter discovery), the next two find them there and skip both; the third is still the role's full run, whose
# changed=0 is checked.
pf_prepare() {  # pf_prepare LABEL [ansible-playbook options]
  ANSIBLE_CACHE_PLUGIN=ansible.builtin.jsonfile ANSIBLE_CACHE_PLUGIN_CONNECTION="$pf_facts" pf_guests prepare "$@"
}
pf_prepare prepare-check --check
pf_prepare prepare
pf_prepare prepare-again
if [ "$(grep -cE '^vm[12] +: ok=[0-9]+ +changed=0 ' "$pf_log-prepare-again.log")" != 2 ]; then
  echo "lab_host changed something on its second run:"; grep -B3 -E '^changed:' "$pf_log-prepare-again.log" | tail -20; exit 1
fi
echo "vmlab: lab_host on the bare guests: check mode, applied, a second run without change ($((SECONDS - ts)) s)"
tp=$SECONDS
"${preflight[@]}" > "$pf_log-good.log" 2>&1 || { tail -60 "$pf_log-good.log"; exit 1; }
echo "vmlab: preflight of the prepared guests:"; pf_table "$pf_log-good.log"
pf_guests break break
set +e
"${preflight[@]}" --check > "$pf_log-broken.log" 2>&1
rc=$?
set -e
pf_guests mend mend
echo "vmlab: preflight of the broken guest (--check):"; pf_table "$pf_log-broken.log"
test "$rc" -ne 0 || { echo "the preflight passed a broken guest"; exit 1; }
grep -q "FAIL vm2 mtu: data0 has MTU 1400, the experiment expects 1500" "$pf_log-broken.log"
grep -qE "FAIL vm2 leftovers: [0-9]+ left by earlier runs: .*shaper" "$pf_log-broken.log"
grep -q "FAIL vm2 paths: the path vm1 <-> vm2 carries 1500 at vm1 and 1400 at vm2" "$pf_log-broken.log"
if grep -q "FAIL vm1" "$pf_log-broken.log"; then echo "the preflight blamed vm1 for vm2's faults"; exit 1; fi
echo "vmlab: the preflight passed the prepared guests and named the broken one in $((SECONDS - tp)) s; step $((SECONDS - ts)) s"
# Last: perftest killed mid-flow (a crash, a timeout) can wedge the 6.1 guest kernel's soft-RoCE and the data link
# with it (rxe_pool cleanup warning), so nothing that needs the link runs after this.
run_pb tests/vmlab/perftest_faults.yml
# every report the tier's runs wrote (in the cache: kept there) against docs/report.schema.json
if [ -n "$(find "$AIFABRIC_RUNS_DIR" -name report.json -print -quit 2>/dev/null)" ]; then
  python3 tests/integration/validate_reports.py "$AIFABRIC_RUNS_DIR"
else
  echo "vmlab: the tier's playbooks wrote no report.json beside the demo's (validated above)"
fi
t3=$SECONDS
ansible-playbook -i "$inv" playbooks/vmlab_down.yml > /dev/null
nothing_left
echo "vmlab: image $((t1 - t0)) s (cached when unchanged), boot to SSH $((t2 - t1)) s, proofs $((t3 - t2)) s"
python3 tests/slowest_tasks.py "$JUNIT_OUTPUT_DIR" 20 || true

# A guest that cannot boot: the play fails at once, names the guest and shows its console; the log is kept.
set +e
AIFABRIC_VMLAB_EXTRA_APPEND=init=/bin/false ansible-playbook -i "$inv" playbooks/vmlab_up.yml > "$AIFABRIC_VMLAB_CACHE/badboot.log" 2>&1
rc=$?
set -e
test "$rc" -ne 0
grep -q "vm1 died while booting" "$AIFABRIC_VMLAB_CACHE/badboot.log"
grep -q "Kernel panic" "$AIFABRIC_VMLAB_CACHE/run/vm1.console"
ansible-playbook -i "$inv" playbooks/vmlab_down.yml > /dev/null
nothing_left
echo "vmlab: a guest that cannot boot is reported by name ('vm1 died while booting', console kept); nothing left"
echo "vmlab tier: $((SECONDS - t0)) s"
