#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: netns_topology
short_description: A lab of network namespaces wired to one bridge
version_added: 0.1.0
description:
  - Creates (or removes) a star of Linux network namespaces, one namespace per lab host, each with a veth whose peer
    is a port of a bridge in a switch namespace. Sets the MTU everywhere, the hosts' addresses, and brings links up.
  - Used by the C(aifabric.lab.netns_lab) role, which derives the hosts from the inventory. Rate limits (the shared
    bottleneck, throttles) are separate, through M(aifabric.lab.tc_shape) in the switch or host namespaces.
  - Talks netlink through pyroute2 only.
  - "The lab is recorded in O(state_dir) (C(labs/SWITCH_NAMESPACE.json): its namespaces, its topology and its
    O(owner)), so that M(aifabric.lab.lab_leftovers) tells the lab, up on purpose, from a stray one. A lab built
    without O(owner) is up on purpose and never removed by it; one with an owner is held while that owner is live,
    and a task with another owner neither changes it (it fails naming the owner) nor removes it (it warns)."
author:
  - aifabric.lab contributors (@aifabric)
requirements:
  - pyroute2
extends_documentation_fragment:
  - aifabric.lab.attributes
  - aifabric.lab.owner
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: The diff lists what is missing (present) or the namespaces to delete (absent).
  idempotent:
    support: full
options:
  switch_namespace:
    description: The namespace that holds the bridge.
    type: str
    required: true
  bridge:
    description: The bridge's name in the switch namespace.
    type: str
    default: br0
  mtu:
    description: The MTU of the bridge, its ports and the hosts' interfaces.
    type: int
    default: 9000
  hosts:
    description: The lab hosts.
    type: list
    elements: dict
    required: true
    suboptions:
      namespace:
        description: The host's namespace.
        type: str
        required: true
      interface:
        description: The host's interface name inside its namespace.
        type: str
        default: eth0
      port:
        description: The name of the host's bridge port in the switch namespace (at most 15 characters).
        type: str
        required: true
      address:
        description: The host's address with prefix, like C(198.18.0.11/24).
        type: str
        required: true
  process_grace:
    description:
      - With O(state=absent), seconds to let processes still inside the lab's namespaces end by themselves before they
        are stopped (SIGTERM, then SIGKILL). Ansible's async watchdog outlives a finished job by up to 5 seconds.
    type: float
    default: 6.0
  state_dir:
    description:
      - With O(state=absent), where background flow servers keep their files (the M(aifabric.lab.flow) option of the
        same name); the files of the lab's addresses are removed.
      - Where the lab's record is kept (C(labs/SWITCH_NAMESPACE.json)).
    type: path
    default: /run/aifabric-lab
  state:
    description:
      - V(present) builds the lab; V(absent) stops the processes running inside the lab's namespaces and deletes every
        namespace it names, with their links and qdiscs.
    type: str
    default: present
    choices: [present, absent]
seealso:
  - module: aifabric.lab.tc_shape
  - plugin: aifabric.lab.netns
    plugin_type: connection
"""

EXAMPLES = r"""
- name: Two workers and a sink around one bridge
  aifabric.lab.netns_topology:
    switch_namespace: afl-switch
    mtu: 9000
    hosts:
      - {namespace: afl-sink, port: p-sink, address: 198.18.0.1/24}
      - {namespace: afl-worker1, port: p-worker1, address: 198.18.0.11/24}
      - {namespace: afl-worker2, port: p-worker2, address: 198.18.0.12/24}

- name: Tear it down
  aifabric.lab.netns_topology:
    switch_namespace: afl-switch
    hosts:
      - {namespace: afl-sink, port: p-sink, address: 198.18.0.1/24}
    state: absent
"""

RETURN = r"""
changes:
  description: What was (or, in check mode, would be) created or removed.
  returned: always
  type: list
  elements: str
  sample: [namespace afl-switch, link p-sink]
namespaces:
  description: Every namespace of the topology, the switch's first.
  returned: always
  type: list
  elements: str
record:
  description: The lab's record in O(state_dir).
  returned: always
  type: str
  sample: /run/aifabric-lab/labs/afl-switch.json
  version_added: 0.5.0
held_by:
  description: With O(state=absent), the live owner whose lab was left in place.
  returned: when another live owner holds the lab
  type: dict
  version_added: 0.5.0
stopped_processes:
  description:
    - With O(state=absent), the processes that were still running inside the lab's namespaces (for example the flow
      servers of an interrupted step), by namespace. They are sent SIGTERM, then SIGKILL after 3 seconds, before the
      namespaces are deleted, because a deleted namespace lives on while a process holds it.
  returned: always
  type: dict
  sample: {afl-sink: [4242]}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aifabric.lab.plugins.module_utils._netns_topology_module import module_args, run_module


def main():
    run_module(AnsibleModule(**module_args()))


if __name__ == "__main__":
    main()
