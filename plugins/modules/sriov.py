#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: sriov
short_description: Create SR-IOV virtual functions on one PF and configure them through netlink
version_added: 0.2.0
description:
  - Sets the number of VFs of one physical function (through C(sriov_numvfs)) and each VF's MAC, VLAN and priority,
    spoof checking, trust, link state, minimum and maximum transmit rate, and for InfiniBand VFs the node and port
    GUIDs (through netlink, with pyroute2).
  - "The count goes through 0 (the kernel refuses a change from N to M VFs), is checked against C(sriov_totalvfs)
    where the driver has it, the sysfs write is bounded by O(timeout) (drivers block in it), and the module waits
    until every VF exists in netlink and, on PCI, as a PCI function: a count that the driver reports but does not
    deliver in time is an error, not a silent short count. When the kernel refuses the new count (after the old
    VFs were removed), the old count is written back and the error says both what was refused and whether the
    restore worked (the restored VFs carry the driver's default settings)."
  - Every setting is validated before anything changes (a bad MAC, GUID, VLAN, priority, rate or a VF index out of
    range fails with the parameter named and the host untouched). Settings are applied one at a time and read back;
    if the driver refuses one, those already applied in this run are put back and the error says which setting and
    why (for example that the driver does not support it).
  - Refuses, unless O(force=true), to change the count while a VF is bound to vfio-pci or its netdev is in use.
  - "A VF's C(max_tx_rate) is the one shaping knob that bites RDMA traffic on real NICs (tc never sees it): the
    C(aifabric.lab.experiment) role's throttle uses it for VFs."
  - "O(persistent=true) keeps the VFs across reboots and driver reloads: a udev rule on the PF's netdev (keyed by its
    PCI address) runs a small script, C(/usr/local/sbin/aifabric-sriov-PF), that sets the count and the settings
    whenever the PF appears."
  - "mlx5 (ConnectX): the firmware decides C(sriov_totalvfs). Enabling SR-IOV in the firmware (mlxconfig
    C(SRIOV_EN=1 NUM_OF_VFS=N)) is out of scope; when the firmware is the limit, the error says what to check.
    InfiniBand VFs need node and port GUIDs before their port comes up."
author:
  - aifabric.lab contributors (@aifabric)
requirements:
  - pyroute2
  - root
extends_documentation_fragment:
  - aifabric.lab.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: The count and each VF setting before and after.
  idempotent:
    support: full
    details: Settings are compared with what netlink reports; IB GUIDs that a driver does not report are compared with
      what the module applied last.
options:
  pf:
    description: The physical function, by netdev name (V(ens1f0np0), V(ib0)) or PCI address (V(0000:3b:00.0)).
    type: str
    required: true
  num_vfs:
    description: The number of VFs. Unchanged when omitted; V(0) removes them all.
    type: int
  vfs:
    description: Settings per VF. Settings not given are left as they are.
    type: list
    elements: dict
    default: []
    suboptions:
      index:
        description: The VF's index, from 0.
        type: int
        required: true
      mac:
        description: A unicast MAC address.
        type: str
      vlan:
        description: VLAN id (0 = untagged).
        type: int
      qos:
        description: 802.1p priority (0..7), with O(vfs[].vlan).
        type: int
      spoofchk:
        description: Drop frames whose source MAC is not the VF's.
        type: bool
      trust:
        description: Let the VF change its MAC, enter promiscuous mode, and so on.
        type: bool
      link_state:
        description: V(auto) follows the PF's link; V(enable) and V(disable) force it.
        type: str
        choices: [auto, enable, disable]
      min_tx_rate:
        description: Guaranteed transmit rate, Mb/s (0 = none).
        type: int
      max_tx_rate:
        description: Transmit rate limit, Mb/s (0 = none).
        type: int
      node_guid:
        description: InfiniBand node GUID, eight hex pairs (V(00:11:22:33:44:55:66:77)).
        type: str
      port_guid:
        description: InfiniBand port GUID, eight hex pairs.
        type: str
  force:
    description: Change the count even while VFs are bound to vfio-pci or in use.
    type: bool
    default: false
  persistent:
    description: Write the udev rule and script that re-create the VFs and their settings at every boot. With
      O(num_vfs=0) they are removed.
    type: bool
    default: false
  timeout:
    description: Seconds to allow the C(sriov_numvfs) write and the VFs' appearance.
    type: float
    default: 60.0
notes:
  - On netdevsim (the VM lab) there is no C(sriov_totalvfs), the VFs have no netdevs or PCI functions, and IB GUIDs
    are not supported; everything else works as on a real NIC.
seealso:
  - module: aifabric.lab.sriov_info
  - module: aifabric.lab.vfio_pci
  - name: The kernel's PCI SR-IOV HOWTO
    description: sriov_numvfs, sriov_totalvfs and the VF links.
    link: https://docs.kernel.org/PCI/pci-iov-howto.html
"""

EXAMPLES = r"""
- name: Four VFs on the worker's ConnectX-6, the third one throttled to 2 Gb/s
  aifabric.lab.sriov:
    pf: ens1f0np0
    num_vfs: 4
    vfs:
      - {index: 0, mac: "02:00:5e:10:00:01", trust: true, spoofchk: false}
      - {index: 2, mac: "02:00:5e:10:00:03", max_tx_rate: 2000}
    persistent: true

- name: InfiniBand VFs need GUIDs before their port comes up
  aifabric.lab.sriov:
    pf: ib0
    num_vfs: 2
    vfs:
      - {index: 0, node_guid: "00:11:22:33:44:55:00:01", port_guid: "00:11:22:33:44:55:01:01", link_state: auto}
      - {index: 1, node_guid: "00:11:22:33:44:55:00:02", port_guid: "00:11:22:33:44:55:01:02", link_state: auto}
"""

RETURN = r"""
pf:
  description: The PF.
  returned: success
  type: dict
  sample: {name: ens1f0np0, netdev: ens1f0np0, address: "0000:3b:00.0", total_vfs: 8, num_vfs: 4}
vfs:
  description: Each VF as the kernel reports it after the run.
  returned: success
  type: list
  elements: dict
  sample:
    - {index: 2, mac: "02:00:5e:10:00:03", vlan: 0, qos: 0, spoofchk: true, trust: false, link_state: auto,
       min_tx_rate: 0, max_tx_rate: 2000, pci_address: "0000:3b:00.3", pci_driver: mlx5_core, netdevs: [ens1f0v2]}
changes:
  description: The settings changed (or that would change, in check mode).
  returned: success
  type: list
  elements: dict
  sample: [{vf: 2, setting: max_tx_rate, before: 0, after: 2000}]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aifabric.lab.plugins.module_utils._sriov_module import module_args, run_module


def main():
    run_module(AnsibleModule(**module_args()))


if __name__ == "__main__":
    main()
