#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: sriov_info
short_description: SR-IOV PFs with their VFs' PCI addresses, drivers, netdevs and netlink settings
version_added: 0.2.0
description:
  - For each PF (every netdev with C(sriov_numvfs), or those named), the VF count and limit, and per VF its PCI
    address, driver and netdevs (from sysfs) and its MAC, VLAN, QoS, spoof checking, trust, link state and rates (and
    IB GUIDs where the driver reports them) from netlink.
author:
  - aifabric.lab contributors (@aifabric)
requirements:
  - pyroute2
extends_documentation_fragment:
  - aifabric.lab.attributes
  - aifabric.lab.attributes.info_module
options:
  pfs:
    description: PFs by netdev or PCI address. Every SR-IOV-capable netdev when omitted.
    type: list
    elements: str
seealso:
  - module: aifabric.lab.sriov
  - module: aifabric.lab.pci_info
"""

EXAMPLES = r"""
- name: What VFs does this host have?
  aifabric.lab.sriov_info:
  register: sriov

- name: The VFs' rate limits
  ansible.builtin.debug:
    msg: "{{ sriov.pfs['ens1f0np0'].vfs | map(attribute='max_tx_rate') | list }}"
"""

RETURN = r"""
pfs:
  description: Per PF as named (or its netdev), C(netdev), C(address), C(total_vfs), C(num_vfs) and C(vfs).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aifabric.lab.plugins.module_utils._sriov_info_module import module_args, run_module


def main():
    run_module(AnsibleModule(**module_args()))


if __name__ == "__main__":
    main()
