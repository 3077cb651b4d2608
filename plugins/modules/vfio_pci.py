#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: vfio_pci
short_description: Bind PCI devices to vfio-pci (whole IOMMU groups, safely, optionally for good) and give them back
version_added: 0.2.0
description:
  - Moves PCI devices to C(vfio-pci) so a VM (QEMU, libvirt) or a user-space driver can own them, the way the seed
    lab hands its ConnectX-6 cards and SR-IOV VFs to its VMs; and gives them back to their host driver.
  - "Binding follows the kernel's documented sequence: write C(vfio-pci) to the device's C(driver_override), unbind
    it from its current driver, write its address to C(/sys/bus/pci/drivers_probe). The module loads C(vfio-pci) if
    needed, waits until the device is bound and C(/dev/vfio/GROUP) exists, and then (O(verify)) proves it by doing
    what a VMM does: it opens the group, checks that it is viable and attaches it to a type-1 IOMMU container."
  - "A VFIO group is usable only when every endpoint in it is on C(vfio-pci) (or has no driver, or C(pci-stub));
    bridges may stay on C(pcieport). When a device shares its IOMMU group with other endpoints, the module refuses
    and lists the group's members with their drivers, unless they are all named in O(devices) or O(group=bind_all)."
  - The driver each device had is written to C(/var/lib/aifabric-lab/vfio/ADDRESS.json), so O(state=unbound) gives
    the device back to that driver even in a later run, and a device named by its netdev can still be found after
    binding (when the netdev is gone).
  - "Safety: the module refuses, unless O(force=true), to take a device whose netdev carries the default route, holds
    the address this Ansible session is connected through (C(SSH_CONNECTION)), is up with a global address or is
    enslaved to a bridge or bond; and to release a device whose C(/dev/vfio/GROUP) is open (a running VM)."
  - "The same holds for a device under such a netdev, at any depth: the parent of a VLAN, macvlan, macvtap or
    ipvlan, a bond's slave, a bridge's port (found through netlink's C(IFLA_LINK) and C(IFLA_MASTER) and sysfs's
    C(lower_*) links, C(bonding/slaves) and C(brif/)). The error names the chain, for example
    C(eth0 is under mgmt0 (eth0 -> bond0 -> bond0.10 -> mgmt0), and mgmt0 carries the default route)."
  - "A device that fails mid-bind (taken off its driver, then refused by vfio-pci or never bound in O(timeout)) is
    given back: C(driver_override) cleared, bound again through its old driver's C(bind) file (or
    C(drivers_probe)), and the error names the device, the step that failed and how the restore went."
  - "O(persistent=true) keeps the binding across reboots, keyed by PCI address (never by IOMMU group number, which
    can change across boots): a udev rule C(/etc/udev/rules.d/70-aifabric-vfio-ADDRESS.rules) that sets
    C(driver_override) and re-probes the device on every C(add) event (the boot's coldplug), and a modprobe.d
    C(softdep) that loads C(vfio-pci) before the host driver. O(state=unbound) removes both."
  - If binding one of several devices fails, the ones already moved are given back before the module fails.
  - The IOMMU itself must be on (kernel arguments C(intel_iommu=on) or C(amd_iommu=on), and VT-d/AMD-Vi in the
    firmware); when it is not, the error says which of these is missing. The M(aifabric.lab.kernel_cmdline) module and
    the C(aifabric.lab.vfio_host) role set the arguments.
author:
  - aifabric.lab contributors (@aifabric)
requirements:
  - pyroute2 (to check the host's routes and addresses before taking a network device; not needed with O(force=true))
  - root, and the kernel's C(vfio-pci) module
extends_documentation_fragment:
  - aifabric.lab.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: Shows each device's driver before and after.
  idempotent:
    support: full
options:
  devices:
    description:
      - The devices, each as a PCI address (V(0000:3b:00.0), domain optional), a V(vendor:device) id (every device
        with that id, for example V(15b3:101c) for all ConnectX-6 VFs), or the name of a netdev on the device.
    type: list
    elements: str
    required: true
  state:
    description:
      - V(bound) puts the devices on C(vfio-pci); V(unbound) gives them back to their original driver (the one
        remembered, or O(driver), or whichever driver the kernel matches).
    type: str
    choices: [bound, unbound]
    default: bound
  group:
    description:
      - What to do when a device's IOMMU group holds other endpoints on host drivers. V(refuse) fails and lists them;
        V(bind_all) binds them too.
    type: str
    choices: [refuse, bind_all]
    default: refuse
  force:
    description:
      - Take devices even when their netdev carries the default route, the SSH session or traffic, and release devices
        whose group is open. This can cut the connection to the host.
    type: bool
    default: false
  persistent:
    description:
      - With O(state=bound), write the udev rule and modprobe C(softdep) that bind the devices again at every boot.
        With O(state=unbound) the files are always removed.
    type: bool
    default: false
  driver:
    description:
      - With O(state=unbound), the driver to give the devices to, when none was remembered.
    type: str
  verify:
    description:
      - After binding, attach each group to a VFIO container (type-1 IOMMU) and report it in RV(devices[].container).
        Fails when the group is busy or not viable.
    type: bool
    default: true
  timeout:
    description:
      - Seconds to wait for each sysfs write (a driver can block in its remove or probe) and for the bind to settle.
    type: float
    default: 30.0
notes:
  - Devices bound by a VMM itself (libvirt's C(managed='yes')) need no module; use this one for C(managed='no')
    hostdevs, for user-space drivers, and to prepare hosts that must keep their devices on C(vfio-pci) across reboots.
seealso:
  - module: aifabric.lab.pci_info
  - module: aifabric.lab.kernel_cmdline
  - name: The kernel's VFIO documentation
    description: Groups, containers and viability.
    link: https://docs.kernel.org/driver-api/vfio.html
"""

EXAMPLES = r"""
- name: Hand the far ConnectX-6 to vfio-pci, for good
  aifabric.lab.vfio_pci:
    devices: ["0000:3b:00.0"]
    persistent: true
  register: far_card

- name: Give every ConnectX-6 VF to vfio-pci (by vendor:device id)
  aifabric.lab.vfio_pci:
    devices: ["15b3:101c"]

- name: Attach the cards to a libvirt domain
  ansible.builtin.debug:
    msg: "{{ far_card.devices | map(attribute='hostdev_xml') | list }}"

- name: Give the card back to mlx5_core
  aifabric.lab.vfio_pci:
    devices: ["0000:3b:00.0"]
    state: unbound
"""

RETURN = r"""
devices:
  description: One entry per device acted on (with group members added by O(group=bind_all)).
  returned: success
  type: list
  elements: dict
  contains:
    address:
      description: PCI address.
      type: str
      sample: "0000:3b:00.0"
    id:
      description: vendor:device id.
      type: str
      sample: "15b3:101b"
    iommu_group:
      description: The device's IOMMU group.
      type: int
    driver_before:
      description: The driver before this run.
      type: str
    driver:
      description: The driver now (in check mode, the one it would have).
      type: str
    original_driver:
      description: The host driver remembered for the device.
      type: str
    changed:
      description: Whether this device changed.
      type: bool
    netdevs:
      description: Netdevs that were on the device.
      type: list
      elements: str
    rdma_devices:
      description: RDMA devices that were on the device.
      type: list
      elements: str
    persistent_files:
      description: The udev rule and modprobe.d files that keep the binding across reboots.
      type: list
      elements: str
    vfio_device:
      description: The group's character device.
      type: str
      returned: O(state=bound)
      sample: /dev/vfio/38
    hostdev_xml:
      description: The libvirt C(<hostdev>) element for the device (C(managed='no')).
      type: str
      returned: O(state=bound)
    container:
      description: The result of attaching the group to a VFIO container.
      type: dict
      returned: O(state=bound) and O(verify) and not check mode
      sample: {api_version: 0, viable: true, container_attached: true, iommu_type: type1v2}
iommu:
  description: The host's IOMMU state (see M(aifabric.lab.pci_info)).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aifabric.lab.plugins.module_utils._vfio_pci_module import module_args, run_module


def main():
    run_module(AnsibleModule(**module_args()))


if __name__ == "__main__":
    main()
