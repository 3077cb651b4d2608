#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: lab_leftovers
short_description: Find what killed runs left on a lab host, with its owner, and remove what no live owner holds
version_added: 0.5.0
description:
  - A controller killed mid-step (Ctrl-C twice, SIGKILL, a dead laptop) leaves behind what it made on the hosts. This
    module lists it, by the marks the collection puts on everything it makes, with the owner each one records and
    whether that owner is still live; with O(remove=true) it removes what belongs to no live owner.
  - "Step and server daemons (M(aifabric.lab.flow_step), M(aifabric.lab.flow)): their PID files in O(state_dir),
    running or stale. A PID is trusted only when the process is the one the file names (PID, start time and boot id;
    a file without a start time is matched by its C(started_at) against the process's start, and one with neither is
    never signalled). A daemon is ended with SIGTERM, then SIGKILL after O(grace) seconds, each signal sent only
    after checking again that the process is still that one."
  - "Results never collected: a host's C(step-RUN-PARTY.json), the coordinator's C(step-RUN.rendezvous.json) and
    C(step-RUN.results/PARTY.json), a server's C(server-*.json). They are moved aside to C(STATE_DIR/orphaned/)
    (O(results=move)): nothing measured is lost. A result whose step still runs is kept; one without an owner is kept
    while younger than O(min_age)."
  - "Shapers and ifb devices in the network namespace the task runs in: a root qdisc with the collection's mark (an
    htb C(1:) with C(r2q 44971)) or a record in O(state_dir) (C(shapers/NETNS/DEVICE.json), written by
    M(aifabric.lab.tc_shape) and M(aifabric.lab.throttle)); ifb devices named C(ifb-*) or with the alias
    C(aifabric.lab: ingress of DEVICE). A qdisc without the mark is never touched. Records whose shaper or namespace
    is gone are removed."
  - "Labs of network namespaces that M(aifabric.lab.netns_topology) recorded (C(labs/SWITCH.json)), by owner: a lab
    built without an owner is up on purpose and always kept; one whose owner is gone is taken down (its processes
    stopped, its namespaces deleted), unless the task runs inside it."
  - Half-written files of the atomic writer, older than O(min_age).
  - "What goes: whatever belongs to no live owner. An owner is live while its lease runs and, when its controller is
    on this machine (the netns lab), while that controller process runs. What a live owner holds, and what O(owner)
    (the caller's own experiment) holds, is always kept. What records no owner is kept unless O(unowned=remove): it
    may be another experiment's, made before owners were recorded."
  - Several hosts of one machine (the netns lab's namespaces) share one O(state_dir); their tasks take turns on it,
    so each leftover is removed once (another host's task reports it C(gone)). With O(namespaces), one task does it
    for them all - the state directory and the labs looked at once, each namespace's qdiscs and ifb devices from a
    process inside it.
author:
  - aifabric.lab contributors (@aifabric)
requirements:
  - pyroute2 (for qdiscs, ifb devices and labs; without it only the files are looked at)
  - root, to signal daemons and change qdiscs
extends_documentation_fragment:
  - aifabric.lab.attributes
  - aifabric.lab.owner
  - aifabric.lab.state_dir
attributes:
  check_mode:
    support: full
    details: Lists what would go (actions C(would end), C(would remove), C(would move)); changes nothing.
  diff_mode:
    support: full
    details: Before, every leftover found; after, what stays.
  idempotent:
    support: full
    details: A second run with O(remove=true) finds nothing more to remove.
options:
  remove:
    description:
      - Remove what belongs to no live owner. Without it the module only lists (and reports no change).
    type: bool
    default: false
  unowned:
    description:
      - What to do with a running daemon, a shaper or an ifb device that records no owner. V(keep) lists it;
        V(remove) takes it as well.
    type: str
    choices: [keep, remove]
    default: keep
  results:
    description:
      - What to do with results never collected whose owner is gone (or that record none and are older than
        O(min_age)). V(move) puts them in C(STATE_DIR/orphaned/); V(delete) deletes them; V(keep) leaves them.
    type: str
    choices: [move, delete, keep]
    default: move
  min_age:
    description:
      - Seconds a result without owner, or a half-written file, must be old before it counts as left behind (a
        running experiment may still collect a younger one).
    type: float
    default: 900.0
  grace:
    description: Seconds a daemon gets to end after SIGTERM before SIGKILL; also the grace of a lab's processes.
    type: float
    default: 10.0
  namespaces:
    description:
      - Network namespaces of this machine (names under C(/run/netns)) whose shapers, ifb devices and shaper records
        are looked at - each by a forked process inside it, side by side - instead of those of the namespace the task
        runs in. One task for every host of the netns lab (the C(aifabric.lab.experiment) role gives its hosts'), which
        share this machine's O(state_dir). A lab of any of them is never taken down (as from inside it).
      - "Their items' names start with the namespace's (C(afl-worker3: eth0 htb 2gbit)), and carry it as C(netns)."
    type: list
    elements: str
notes:
  - "The C(playbooks/lab_check.yml) playbook runs this module on every lab host and prints one table per host
    (C(-e remove=true) to remove); the C(aifabric.lab.experiment) role runs it on the experiment's hosts before the
    first step (C(experiment_leftovers))."
seealso:
  - module: aifabric.lab.tc_shape
  - module: aifabric.lab.throttle
  - module: aifabric.lab.flow_step
  - module: aifabric.lab.netns_topology
"""

EXAMPLES = r"""
- name: What earlier runs left on the lab's hosts
  aifabric.lab.lab_leftovers:
  register: leftovers

- name: Print it
  ansible.builtin.debug:
    msg: "{{ leftovers.table }}"

- name: Remove what no live experiment holds, results moved aside
  aifabric.lab.lab_leftovers:
    remove: true

- name: Remove it all, also what records no owner (nothing else runs on these hosts)
  aifabric.lab.lab_leftovers:
    remove: true
    unowned: remove
"""

RETURN = r"""
leftovers:
  description: Everything of the collection's found on the host (what is kept included), with what was done.
  returned: always
  type: list
  elements: dict
  contains:
    kind:
      description:
        - V(daemon) (a running step or server process), V(pidfile) (a PID file whose process is gone), V(result)
          (never collected), V(shaper), V(ifb), V(record) (a shaper's record whose shaper or namespace is gone),
          V(lab), V(tempfile).
      type: str
    name:
      description: What it is, such as C(step-3f2a9c0d11e4b7a2-worker1), C(eth0 htb 2gbit), C(afl-switch (6/6
        namespaces up)).
      type: str
    owner:
      description: The id of the experiment that owns it; null when it records none.
      type: str
    live:
      description:
        - Whether a live owner holds it (true; also a running step's results and a lab up on purpose), whether its
          owner is gone or nothing runs (false), or null when no owner is recorded.
      type: bool
    action:
      description:
        - V(kept), V(ended), V(removed), V(moved), V(deleted), V(gone) (another task took it first), V(failed); without
          O(remove), or in check mode, C(would end), C(would remove), C(would move), C(would delete).
      type: str
    reason:
      description: Why, in words (the owner and its liveness, the process, the age).
      type: str
    scope:
      description: V(machine) (the state directory, shared by every namespace of the machine) or V(netns) (this
        namespace's qdiscs and devices, or with O(namespaces) the one named in RV(leftovers[].netns)).
      type: str
    netns:
      description: With O(namespaces), the namespace a V(netns) item is in.
      type: str
      returned: with O(namespaces), for the items of a namespace
  sample:
    - {kind: daemon, name: step-3f2a9c0d11e4b7a2-worker1, owner: barrier-7f3a, live: false, action: ended,
       reason: "pid 4242 (start time matches); experiment barrier-7f3a (controller lab1 pid 917): its controller
       (pid 917 on this machine) has ended; ended (SIGTERM)", scope: machine}
    - {kind: shaper, name: eth0 htb 2gbit, owner: null, live: null, action: kept,
       reason: "no owner recorded: a shaper may be another experiment's; unowned=remove takes it", scope: netns}
table:
  description: The leftovers as text lines, a header first (what the lab_check playbook prints).
  returned: always
  type: list
  elements: str
summary:
  description: Counts - C(found), C(removed), C(would_remove), C(kept), C(failed).
  returned: always
  type: dict
machine:
  description: The host's hostname and boot id (hosts of one machine share the state directory).
  returned: always
  type: dict
netns:
  description: The network namespace the task ran in (C(host), C(netns-NAME), C(ns-INODE)).
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aifabric.lab.plugins.module_utils._lab_leftovers_module import module_args, run_module


def main():
    run_module(AnsibleModule(**module_args()))


if __name__ == "__main__":
    main()
