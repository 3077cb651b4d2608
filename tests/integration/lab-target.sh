# shellcheck shell=bash
# What every integration target with a lab (or fabric) of its own starts with: its runme.sh sources this right after
# its `set -euo pipefail`, as `. "$(dirname "$0")/../../lab-target.sh"` (tests/integration/run.sh runs ./runme.sh
# from the target's directory; the targets reach lab-inventory.sh and validate_reports.py the same way). Sourced, $0
# is still the runme.sh, so:
#   here                       the target's directory
#   work                       a directory of the target's own (lab_gone removes it)
#   ANSIBLE_CALLBACKS_ENABLED  the report callback, and run.sh's AIFABRIC_EXTRA_CALLBACKS (its task times) beside it
# The lab's namespace prefix, inventory, runs directory and forks stay each target's own.
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
export ANSIBLE_CALLBACKS_ENABLED=aifabric.lab.barrier_report${AIFABRIC_EXTRA_CALLBACKS:+,$AIFABRIC_EXTRA_CALLBACKS}

# lab_down_quiet ANSIBLE-PLAYBOOK-ARGS...: the lab's (or fabric's) down playbook in a cleanup: silent, never failing
lab_down_quiet() {
  ansible-playbook "$@" >/dev/null 2>&1 || true
}

# lab_gone PREFIX: a cleanup's last step: removes $work, then fails the target (exit 1) naming every namespace PREFIX*
# still there
lab_gone() {
  local left
  left=$(ip netns list | awk '{print $1}' | grep "^$1" || true)
  rm -rf "$work"
  if [ -n "$left" ]; then echo "LEFT BEHIND: $left"; exit 1; fi
}

# lab_cleanup PREFIX ANSIBLE-PLAYBOOK-ARGS...: the whole cleanup of a target that has nothing else to undo (its EXIT
# trap): the down playbook, then lab_gone PREFIX
lab_cleanup() {
  local prefix=$1
  shift
  lab_down_quiet "$@"
  lab_gone "$prefix"
}
