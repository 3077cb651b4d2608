#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: fabric_topology
short_description: A leaf-spine fabric of network namespaces that route, with ECMP
version_added: 0.4.0
description:
  - Creates (or removes) a leaf-spine fabric on this machine. Every switch is a network namespace that routes (IPv4
    forwarding, rp_filter off); a leaf holds a bridge with its hosts' gateway and one routed /31 link per spine, and
    reaches every other leaf's subnet by one multipath route through all spines. Every host is a namespace behind a
    port of its leaf.
  - Sets each switch's multipath hash (O(hash), O(seed)) and shapes every link to its rate (htb; a leaf's host port
    shapes what the host sends through an ifb), so the fabric's links are the step's bottlenecks.
  - Talks netlink through pyroute2 only; the per-namespace sysctls are written from a process inside the namespace.
  - Used by the C(aifabric.lab.fabric_lab) role, which derives the fabric from the inventory.
author:
  - aifabric.lab contributors (@aifabric)
requirements:
  - pyroute2
  - Linux 6.11 or later for O(seed)
extends_documentation_fragment:
  - aifabric.lab.attributes
  - aifabric.lab.fabric
  - aifabric.lab.attributes.action_group_fabric
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: The diff lists what is missing (present) or the namespaces to delete (absent).
  idempotent:
    support: full
options:
  state:
    description:
      - V(present) builds the fabric (or changes what differs, such as the hash); V(absent) stops the processes still
        running inside its namespaces and deletes every namespace it names.
    type: str
    default: present
    choices: [present, absent]
  state_dir:
    description: With O(state=absent), where flow servers keep their files (the M(aifabric.lab.flow) option).
    type: path
    default: /run/aifabric-lab
seealso:
  - module: aifabric.lab.fabric_paths_info
  - module: aifabric.lab.netns_topology
"""

EXAMPLES = r"""
- name: Two leaves, two spines, a host on each leaf, five-tuple hashing with a fixed seed
  aifabric.lab.fabric_topology:
    leaves:
      - {name: leaf1, namespace: aff-leaf1, gateway: 198.18.1.254/24}
      - {name: leaf2, namespace: aff-leaf2, gateway: 198.18.2.254/24}
    spines:
      - {name: spine1, namespace: aff-spine1}
      - {name: spine2, namespace: aff-spine2}
    hosts:
      - {name: worker1, namespace: aff-worker1, leaf: leaf1, address: 198.18.1.11/24}
      - {name: worker2, namespace: aff-worker2, leaf: leaf2, address: 198.18.2.11/24}
    hash: l4
    seed: 7
    host_rate: 1gbit
    uplink_rate: 1gbit
"""

RETURN = r"""
changes:
  description: What was (or, in check mode, would be) created, changed or removed.
  returned: always
  type: list
  elements: str
  sample: [namespace aff-leaf1, sysctl net.ipv4.fib_multipath_hash_policy=3 (is 0) in aff-leaf1]
namespaces:
  description: Every namespace of the fabric, hosts first.
  returned: always
  type: list
  elements: str
links:
  description: Every link by name (C(leaf1->spine2)), with the switch and port that send into it and its rate.
  returned: always
  type: dict
  sample: {"leaf1->spine2": {"switch": leaf1, "interface": s2, "rate": 1gbit, "tier": uplink}}
hash:
  description: The hash the switches use.
  returned: always
  type: str
seed:
  description: The hash seed the switches use (null when not set).
  returned: always
  type: int
sysctls:
  description: The sysctls every switch holds.
  returned: always
  type: dict
stopped_processes:
  description: With O(state=absent), processes that were still running inside the fabric, by namespace.
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aifabric.lab.plugins.module_utils._fabric.topology_module import module_args, run_module


def main():
    run_module(AnsibleModule(**module_args()))


if __name__ == "__main__":
    main()
