#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: fabric_paths_info
short_description: Each flow's path through the fabric, by the kernel's own route lookups, and the fabric's counters
version_added: 0.5.0
description:
  - Named C(aifabric.lab.fabric_paths) before 0.5.0; that name still works (redirected here), deprecated, until
    1.0.0.
  - For each flow (a five-tuple), asks every switch on its way which next hop it takes, as the forwarding path would
    for the flow's packets arriving on that switch's input port (RTM_GETROUTE with input interface, addresses,
    protocol and ports), from the source's leaf to the destination's. Returns the links the flow crosses.
  - With O(counters), also reads the byte, packet, error and drop counters of every fabric port and its qdisc
    (through netlink in each switch's namespace); before and after a step, they prove where the bytes went.
author:
  - aifabric.lab contributors (@aifabric)
requirements:
  - pyroute2
extends_documentation_fragment:
  - aifabric.lab.attributes
  - aifabric.lab.attributes.info_module
  - aifabric.lab.fabric
  - aifabric.lab.attributes.action_group_fabric
options:
  flows:
    description: The flows to look up.
    type: list
    elements: dict
    default: []
    suboptions:
      id:
        description: The flow's name in the answer (default its index).
        type: str
      src:
        description: Source address (a fabric host's).
        type: str
        required: true
      dst:
        description: Destination address (a fabric host's).
        type: str
        required: true
      sport:
        description: Source port.
        type: int
        required: true
      dport:
        description: Destination port.
        type: int
        required: true
      proto:
        description: The protocol.
        type: str
        default: tcp
        choices: [tcp, udp]
  counters:
    description: Also return every fabric port's counters.
    type: bool
    default: false
  step:
    description:
      - With O(counters), the step the snapshot belongs to; the C(aifabric.lab.barrier_report) callback keeps the
        V(before) and V(after) snapshots of a step (O(label)) in the run's counters, one file per switch.
    type: str
  label:
    description: With O(step), which snapshot this is.
    type: str
    default: before
    choices: [before, after]
seealso:
  - module: aifabric.lab.fabric_topology
"""

EXAMPLES = r"""
- name: Which spine carries worker1's flow to worker5 from port 20001?
  aifabric.lab.fabric_paths_info:
    leaves: "{{ fabric.leaves }}"
    spines: "{{ fabric.spines }}"
    hosts: "{{ fabric.hosts }}"
    flows:
      - {id: worker1, src: 198.18.1.11, dst: 198.18.2.11, sport: 20001, dport: 18600}
  register: lookup
"""

RETURN = r"""
paths:
  description: Per flow, the switches it crosses (with the port each chose) and the links, in order; or an error.
  returned: always
  type: list
  elements: dict
  sample:
    - id: worker1
      links: [worker1->leaf1, leaf1->spine3, spine3->leaf2, leaf2->worker5]
      hops: [{switch: leaf1, in: br0, out: s3, next: spine3}]
      error: null
counters:
  description: With O(counters), per switch a snapshot of its ports (C(netdev) statistics, C(qdisc) counters).
  returned: when counters is true
  type: dict
fabric_counters:
  description: With O(counters) and O(step), the same snapshots with the step and the label, for the callback.
  returned: when counters is true and step is given
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aifabric.lab.plugins.module_utils._fabric.paths_info_module import module_args, run_module


def main():
    run_module(AnsibleModule(**module_args()))


if __name__ == "__main__":
    main()
