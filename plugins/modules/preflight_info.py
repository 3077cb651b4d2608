#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: preflight_info
short_description: What a lab host has for an experiment (links, RDMA, GID, MTU to each peer, perftest, leftovers)
version_added: 0.5.0
description:
  - Reads, and never changes, what an experiment needs from one host. The data interface through netlink (MTU,
    state) and sysfs (speed, the NIC's NUMA node, driver, the device it sits on). The RDMA device on it from sysfs
    (each port's state, physical state, link layer, rate, and the RoCE v2 GID index that carries O(address), the index
    perftest's C(-x) takes). The route to each of O(peers) through netlink (egress interface, its MTU, the route's
    own MTU). The perftest tools' versions. What earlier runs left (the M(aifabric.lab.lab_leftovers) scan, listing
    only).
  - The NIC's IEEE DCB settings through dcbnl (which priorities PFC pauses, and whether it trusts DSCP or the VLAN
    priority), where the NIC reports them; virtio, veth and most software netdevs answer that they have none.
  - The action plugin of the same name also measures the host's clock against the controller's, with a few C(date)
    round trips over the connection, the one with the shortest round trip kept (offset = host time minus the
    round trip's midpoint, give or take half of it), returned as RV(clock).
  - The checks and the one table for all hosts are the controller's (the C(aifabric.lab.preflight_report) filter,
    C(playbooks/preflight.yml)); this module only gathers.
author:
  - aifabric.lab contributors (@aifabric)
requirements:
  - pyroute2
extends_documentation_fragment:
  - aifabric.lab.attributes
  - aifabric.lab.attributes.info_module
  - aifabric.lab.state_dir
options:
  interface:
    description: The host's data interface (the inventory's C(lab_interface)).
    type: str
    required: true
  address:
    description: The host's lab address (C(lab_address)); the RoCE v2 GID that carries it is looked for.
    type: str
  rdma_device:
    description:
      - The RDMA device to read (C(lab_rdma_device)). Without it, the devices that ride on O(interface) (the NIC's
        own, and soft-RoCE devices whose GIDs name it).
    type: str
  peers:
    description: Addresses of the hosts this one shares a path with; the route and MTU towards each are read.
    type: list
    elements: str
    default: []
  perftest_tools:
    description: perftest tools whose C(--version) is read (missing ones are returned as null).
    type: list
    elements: str
    default: [ib_write_bw]
  leftovers:
    description:
      - List what earlier runs left (as M(aifabric.lab.lab_leftovers) lists it, never removing anything).
    type: bool
    default: true
seealso:
  - module: aifabric.lab.lab_leftovers
  - module: aifabric.lab.rdma_info
  - name: Preparing and checking real hosts
    description: The preflight playbook, its table's columns and thresholds.
    link: https://github.com/aifabric/aifabric.lab/blob/main/docs/hosts.md
"""

EXAMPLES = r"""
- name: Read what the host has for the experiment
  aifabric.lab.preflight_info:
    interface: "{{ lab_interface }}"
    address: "{{ lab_address }}"
    rdma_device: "{{ lab_rdma_device | default(omit) }}"
    peers: "{{ groups['sinks'] | map('extract', hostvars, 'lab_address') | list }}"
  register: preflight

- name: The RoCE v2 GID index perftest would use
  ansible.builtin.debug:
    msg: "{{ preflight.rdma[0].ports['1'].roce_v2_gid_index }}"
"""

RETURN = r"""
interface:
  description: The data interface; C(present) false (and nothing else) when it does not exist.
  returned: always
  type: dict
  sample: {name: data0, present: true, mtu: 1500, operstate: UP, speed_mbps: null, numa_node: null,
           driver: virtio_net, device: virtio1}
address:
  description: O(address), as given.
  returned: always
  type: str
rdma:
  description:
    - One entry per RDMA device read; C(present) false (with C(devices), those present) when O(rdma_device) is not
      here. Each port's C(state) and C(phys_state) as sysfs names them (C(ACTIVE), C(LinkUp)), C(rate) as sysfs
      writes it, C(roce_v2_gid_index) null when no RoCE v2 GID carries O(address) on O(interface).
  returned: always
  type: list
  elements: dict
  sample: [{device: rxe0, present: true, ports: {"1": {state: ACTIVE, phys_state: LinkUp, link_layer: Ethernet,
            rate: "10 Gb/sec (1X QDR)", roce_v2_gid_index: 1, roce_v2_gid: "::ffff:c612:6401", netdevs: [data0]}}}]
paths:
  description: One entry per peer, in O(peers)' order; C(error) instead when there is no route.
  returned: always
  type: list
  elements: dict
  sample: [{peer: 198.18.100.2, interface: data0, interface_mtu: 1500, route_mtu: null, mtu: 1500, gateway: null}]
dcb:
  description:
    - The data interface's DCB settings. C(reported) false (with C(reason)) when the netdev has no DCB. Otherwise
      C(pfc_priorities) (the priorities PFC pauses), C(pfc_cap), and C(trust) (V(dscp) when the NIC's APP table maps
      DSCP values, as mlx5 fills it under C(trust dscp); V(pcp) otherwise) with C(dscp_entries).
    - Null when the interface is missing.
  returned: always
  type: dict
  sample: {reported: true, pfc_cap: 8, pfc_priorities: [3], trust: dscp, dscp_entries: 64}
perftest:
  description: Each of O(perftest_tools)' version (C(Version:) in its C(--version) output), null when missing.
  returned: always
  type: dict
  sample: {ib_write_bw: "6.06"}
leftovers:
  description: What earlier runs left, as M(aifabric.lab.lab_leftovers) lists it; null with O(leftovers=false).
  returned: always
  type: list
  elements: dict
kernel:
  description: The host's kernel release.
  returned: always
  type: str
clock:
  description:
    - The host's clock against the controller's, measured by the action plugin. C(offset_s) is host minus
      controller, C(uncertainty_s) half the best round trip, C(samples) how many round trips were usable. Null when
      the host's C(date) could not be read.
  returned: always
  type: dict
  sample: {offset_s: -0.0021, uncertainty_s: 0.0134, rtt_s: 0.0268, samples: 5}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aifabric.lab.plugins.module_utils._preflight_info_module import module_args, run_module


def main():
    run_module(AnsibleModule(**module_args()))


if __name__ == "__main__":
    main()
