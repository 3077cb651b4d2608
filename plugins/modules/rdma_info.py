#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: rdma_info
short_description: RDMA devices and ports, through verbs (pyverbs)
version_added: 0.1.0
description:
  - For every RDMA device (or those named), returns the node GUID, firmware, and each port's state, physical state,
    link layer, active and maximum MTU, active speed and width as Gb/s, the GID table with types (RoCE v1, RoCE v2,
    IB) and netdevs, and the netdevs under the port.
  - Port attributes come from verbs through pyverbs. Identity and the GID table come from sysfs, where the GID types
    and netdevs live.
  - pyverbs comes from the distribution (Debian's C(python3-pyverbs)); PyPI's pyverbs needs newer rdma-core
    libraries. When the Python running the module has no pyverbs, the module respawns itself under a system Python
    that has it.
  - A host without RDMA devices (a kernel without RDMA, or no driver loaded) gets an empty result with the reason,
    not an error.
  - The speed is given as the signalling rate and the data rate. 4X SDR is 10 Gb/s signalling but 8 Gb/s of data
    (8b/10b), which is the seed's 7.94 Gb/s elephant.
author:
  - aifabric.lab contributors (@aifabric)
requirements:
  - pyverbs (Debian package python3-pyverbs), when the host has RDMA devices
extends_documentation_fragment:
  - aifabric.lab.attributes
  - aifabric.lab.attributes.info_module
options:
  devices:
    description: RDMA devices to describe (names as in C(/sys/class/infiniband)). All of them when omitted.
    type: list
    elements: str
seealso:
  - module: aifabric.lab.port_counters_info
  - module: aifabric.lab.flow
"""

EXAMPLES = r"""
- name: Describe the RDMA devices
  aifabric.lab.rdma_info:
  register: rdma

- name: The RoCE v2 GID index that carries this host's lab address
  ansible.builtin.debug:
    msg: >-
      {{ rdma.devices.mlx5_0.ports['1'].gids | selectattr('ipv4', 'defined') | selectattr('ipv4', 'eq', lab_address)
         | selectattr('type', 'eq', 'RoCE v2') | map(attribute='index') | first }}
"""

RETURN = r"""
devices:
  description: By device name. Empty when the host has no RDMA device.
  returned: always
  type: dict
  sample:
    rxe0:
      node_guid: 5054:00ff:feaf:0001
      fw_ver: 0.0.0
      ports:
        "1":
          state: ACTIVE
          phys_state: LINK_UP
          link_layer: Ethernet
          active_mtu: 1024
          speed: SDR
          width: 1X
          signalling_gbps: 2.5
          data_gbps: 2.0
          gids: [{index: 1, gid: "::ffff:c612:6401", ipv4: 198.18.100.1, type: RoCE v2, netdev: data0}]
          netdevs: [data0]
reason:
  description: Why RV(devices) is empty, or null.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aifabric.lab.plugins.module_utils._rdma_info_module import module_args, run_module


def main():
    run_module(AnsibleModule(**module_args()))


if __name__ == "__main__":
    main()
