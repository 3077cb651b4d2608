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
  files=$(ls /run/aifabric-lab/server-198.18.* /run/aifabric-lab/step-* 2>/dev/null || true)
  if [ -n "$files" ]; then echo "background server or step files left behind: $files"; return 1; fi
  procs=$(pgrep -af 'AnsiballZ_flow|aflt-' || true)
  # a step part or background server detaches (double fork): it runs this checkout's Python, its parent is init
  procs+=$(ps -eo pid=,ppid=,args= | awk -v py="$root/.venv/bin/python" '$2 == 1 && index($3, py) == 1' || true)
  if [ -n "$procs" ]; then echo "processes left behind: $procs"; return 1; fi
  echo "no aflt-* namespace, no server or step file, no flow process, no detached step or server"
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
tier "ansible-lint (production profile)" ansible-lint --profile production roles playbooks tests/vmlab
tier "real-lab inventory parses, provisioning playbook syntax" bash -c \
  "ansible-inventory -i inventories/lab/hosts.yml --graph >/dev/null && \
   ansible-playbook -i inventories/lab/hosts.yml --syntax-check playbooks/lab_provision.yml playbooks/elephant.yml \
   playbooks/barrier.yml >/dev/null"
tier "ansible-doc renders every plugin" bash tests/sanity/docs.sh
tier "ansible-test sanity" bash tests/sanity/run.sh
tier "build and install the collection" bash tests/build/install_check.sh
tier "unit tests (those that need root run with the integration targets)" pytest -q -p no:cacheprovider -m "not needs_root" tests/unit
tier "ansible-core matrix (units on the other versions, sanity on the oldest; the hosts' Pythons 3.9 and 3.10)" \
  bash tests/matrix/run.sh --skip-current
tier "release: changelog and docs lint, the docsite builds" bash tests/release/run.sh
tier "integration targets" bash tests/integration/run.sh
tier "molecule (netns_lab)" bash -c "cd roles/netns_lab && molecule test"
tier "molecule (fabric_lab)" bash -c "cd roles/fabric_lab && molecule test"
tier "VM lab guest image (built in the background since the first tier)" image
tier "VM lab (QEMU guests: soft-RoCE, netdevsim SR-IOV, vfio-pci)" bash tests/vmlab/run.sh
tier "nothing left behind" leftovers
echo; echo "make test: all tiers passed in $SECONDS s"
echo "tiers: $passed passed, 0 failed"
