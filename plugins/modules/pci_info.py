#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: pci_info
short_description: PCI devices with their drivers, IOMMU groups, SR-IOV state and what sits on top; the host's IOMMU
version_added: 0.2.0
description:
  - Reads C(/sys/bus/pci/devices) and C(/sys/kernel/iommu_groups) for what VFIO and SR-IOV work needs to know
    before it changes anything.
  - For each device, its vendor:device id, class, driver and C(driver_override), IOMMU group and all the group's
    members, NUMA node, SR-IOV state (total and current VFs and their addresses; the PF of a VF), and the netdevs and
    RDMA devices on top of it (a virtio NIC's netdev sits under its C(virtioN) child and is found there too).
  - The host's IOMMU state with the reason, for example that the firmware has a DMAR table but the kernel runs
    without C(intel_iommu=on).
author:
  - aifabric.lab contributors (@aifabric)
extends_documentation_fragment:
  - aifabric.lab.attributes
  - aifabric.lab.attributes.info_module
options:
  devices:
    description:
      - Devices to report, as PCI addresses, vendor:device ids or netdev names. All devices when omitted.
    type: list
    elements: str
  network_only:
    description: Report only network and InfiniBand controllers (PCI class 0x02).
    type: bool
    default: false
seealso:
  - module: aifabric.lab.vfio_pci
"""

EXAMPLES = r"""
- name: Read the host's PCI devices and IOMMU state
  aifabric.lab.pci_info:
    network_only: true
  register: pci

- name: The IOMMU must be on before anything goes to vfio-pci
  ansible.builtin.assert:
    that: pci.iommu.enabled
    fail_msg: "{{ pci.iommu.reason }}"

- name: Which IOMMU group does the ConnectX-6 sit in, and with whom?
  ansible.builtin.debug:
    msg: "{{ pci.devices['0000:3b:00.0'].iommu_group_members }}"
"""

RETURN = r"""
devices:
  description: Per PCI address, the device.
  returned: always
  type: dict
  sample:
    "0000:3b:00.0":
      address: "0000:3b:00.0"
      id: "15b3:101b"
      class: "0x0207"
      class_name: Infiniband controller
      driver: mlx5_core
      driver_override: null
      iommu_group: 38
      iommu_group_members: ["0000:3b:00.0"]
      numa_node: 0
      sriov: {total_vfs: 8, num_vfs: 2, vfs: ["0000:3b:00.1", "0000:3b:00.2"]}
      physfn: null
      netdevs: [ib0]
      rdma_devices: [mlx5_0]
iommu:
  description: The host's IOMMU.
  returned: always
  type: dict
  contains:
    enabled:
      description: Whether the kernel made IOMMU groups and has an IOMMU unit.
      type: bool
    groups:
      description: Number of IOMMU groups.
      type: int
    units:
      description: IOMMU units (C(dmar0), C(ivhd0)).
      type: list
      elements: str
    acpi_tables:
      description: The firmware's IOMMU tables present (C(DMAR) for Intel VT-d, C(IVRS) for AMD-Vi).
      type: list
      elements: str
    cmdline:
      description: The IOMMU-related kernel arguments of the running kernel.
      type: dict
    reason:
      description: Why the IOMMU is on or off, and what to do.
      type: str
vfio:
  description: Devices on vfio-pci now, and the groups' character devices.
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aifabric.lab.plugins.module_utils._pci_info_module import module_args, run_module


def main():
    run_module(AnsibleModule(**module_args()))


if __name__ == "__main__":
    main()
