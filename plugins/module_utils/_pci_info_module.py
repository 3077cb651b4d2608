# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pci_info module's glue: its arguments, and ``run_module`` (the PCI devices as sysfs shows them, ``_pci``)."""

from __future__ import annotations

from ._pci import PciError, PciSysfs, iommu_state


def module_args():
    """AnsibleModule's keyword arguments for pci_info."""
    return dict(
        argument_spec=dict(devices=dict(type="list", elements="str"), network_only=dict(type="bool", default=False)),
        supports_check_mode=True,
    )


def run_module(module, root="/"):
    sysfs = PciSysfs(root)
    try:
        wanted = sysfs.resolve(module.params["devices"]) if module.params["devices"] else sysfs.addresses()
    except PciError as exc:
        module.fail_json(msg=str(exc))
    devices = {bdf: sysfs.device(bdf) for bdf in wanted}
    if module.params["network_only"]:
        devices = {k: v for k, v in devices.items() if (v["class"] or "").startswith("0x02")}
    vfio = [{"address": k, "iommu_group": v["iommu_group"], "vfio_device": "/dev/vfio/%s" % v["iommu_group"]}
            for k, v in devices.items() if v["driver"] == "vfio-pci"]
    module.exit_json(changed=False, devices=devices, iommu=iommu_state(root), vfio=vfio)
