#!/usr/bin/env bash
# `make test`: every tier, in order of speed; stops at the first tier that fails and says which.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PATH="$root/.venv/bin:$PATH"
export ANSIBLE_CONFIG="$root/ansible.cfg"
passed=0
tier() {
  local name=$1; shift
  local start=$SECONDS
  echo; echo "##### $name"
  if "$@"; then
    echo "##### $name: passed in $((SECONDS - start)) s"; passed=$((passed + 1))
  else
    echo "##### $name: FAILED"; echo "tiers: $passed passed, 1 failed"; exit 1
  fi
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
trap stop_image EXIT
image() {
  local rc=0
  wait "$image_pid" || rc=$?
  cat "$image_log"
  echo "the image was ready $((SECONDS - image_started)) s after make test's first tier began"
  return $rc
}
tier "ruff" ruff check plugins tests benchmarks
# The tiers that touch no lab (no namespace of the lab's, no qdisc, no VM) run side by side, two at a time (TIER_JOBS):
# each is one process on a 2-core machine, and the matrix's rows wait on their tests' sockets and timers more than they
# compute. Their outputs are printed whole, in this order, once they have all ended (a line says when each ends).
# The unit tests, like the matrix's rows, run in a network namespace of their own (loopback ports never meet).
units_ns=
if [ "$(id -u)" = 0 ] && unshare --net --mount true 2>/dev/null; then
  units_ns="unshare --net --mount bash -c 'mount -t sysfs sysfs /sys && ip link set lo up && exec \"\$@\"' units"
fi
side_by_side() {   # side_by_side NAME COMMAND [NAME COMMAND ...] (each COMMAND a bash -c string)
  local dir i=0 n pids=() names=() failed=0 st secs
  dir=$(mktemp -d)
  while [ $# -gt 0 ]; do
    while [ "$(for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && echo "$p"; done | wc -l)" -ge "${TIER_JOBS:-2}" ]
    do sleep 1; done
    names+=("$1")
    ( start=$SECONDS
      if bash -c "$2" > "$dir/$i.out" 2>&1; then st=passed; else st=FAILED; fi
      echo "$st $((SECONDS - start))" > "$dir/$i.rc"
      echo "... $st in $((SECONDS - start)) s: $1" ) &
    pids+=($!); i=$((i + 1)); shift 2
  done
  wait "${pids[@]}" || true
  for n in "${!names[@]}"; do
    echo; echo "##### ${names[$n]}"; cat "$dir/$n.out"
    read -r st secs < "$dir/$n.rc" || st=FAILED
    if [ "$st" = passed ]; then
      echo "##### ${names[$n]}: passed in $secs s (side by side)"; passed=$((passed + 1))
    else
      echo "##### ${names[$n]}: FAILED"; failed=$((failed + 1))
    fi
  done
  rm -rf "$dir"
  if [ "$failed" -gt 0 ]; then echo "tiers: $passed passed, $failed failed"; exit 1; fi
}
start_static=$SECONDS
side_by_side \
  "ansible-core matrix (the other versions' units: all once per Python, else those reaching ansible-core; sanity on the shipped content; host Pythons 3.9, 3.10)" \
    "bash tests/matrix/run.sh --skip-current --units lean" \
  "ansible-test sanity" "bash tests/sanity/run.sh" \
  "ansible-lint (production profile)" "ansible-lint --profile production roles playbooks tests/vmlab" \
  "real-lab inventory parses, provisioning playbook syntax" \
    "ansible-inventory -i inventories/lab/hosts.yml --graph >/dev/null && ansible-playbook -i inventories/lab/hosts.yml \
     --syntax-check playbooks/lab_provision.yml playbooks/elephant.yml playbooks/barrier.yml >/dev/null" \
  "ansible-doc renders every plugin" "bash tests/sanity/docs.sh" \
  "build and install the collection" "bash tests/build/install_check.sh" \
  "unit tests (those that need root run with the integration targets)" \
    "$units_ns pytest -q -p no:cacheprovider -m 'not needs_root' tests/unit" \
  "release: changelog and docs lint, the docsite builds" "bash tests/release/run.sh"
echo "the tiers without a lab ran in $((SECONDS - start_static)) s of wall time"
tier "integration targets" bash tests/integration/run.sh
tier "molecule (netns_lab)" bash -c "cd roles/netns_lab && molecule test"
tier "molecule (fabric_lab)" bash -c "cd roles/fabric_lab && molecule test"
tier "VM lab guest image (built in the background since the first tier)" image
tier "VM lab (QEMU guests: soft-RoCE, netdevsim SR-IOV, vfio-pci)" bash tests/vmlab/run.sh
tier "nothing left behind" leftovers
echo; echo "make test: all tiers passed in $SECONDS s"
echo "tiers: $passed passed, 0 failed"
