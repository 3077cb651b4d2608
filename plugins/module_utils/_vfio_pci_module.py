# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vfio_pci module's glue: its arguments, and ``run_module`` (what the host uses, ``_vfio.net_use``; the plan,
``_vfio.VfioBinder``; apply with rollback)."""

from __future__ import annotations

import os

from ._pci import PciError, PciSysfs, hostdev_xml, iommu_state
from ._pyroute2 import IPRoute, require_pyroute2
from ._vfio import VfioBinder, container_check, net_use


def module_args():
    """AnsibleModule's keyword arguments for vfio_pci."""
    return dict(
        argument_spec=dict(
            devices=dict(type="list", elements="str", required=True),
            state=dict(type="str", default="bound", choices=["bound", "unbound"]),
            group=dict(type="str", default="refuse", choices=["refuse", "bind_all"]),
            force=dict(type="bool", default=False),
            persistent=dict(type="bool", default=False),
            driver=dict(type="str"),
            verify=dict(type="bool", default=True),
            timeout=dict(type="float", default=30.0),
        ),
        supports_check_mode=True,
    )


def _diff(devices, state):
    before = {d["address"]: d["driver_before"] or "none" for d in devices}
    after = {d["address"]: ("vfio-pci" if state == "bound" else (d["original_driver"] or "kernel's match"))
             if d["action"] != "none" else d["driver_before"] or "none" for d in devices}
    return {"before": _lines(before), "after": _lines(after), "before_header": "drivers", "after_header": "drivers"}


def _lines(mapping):
    return "".join("%s: %s\n" % item for item in sorted(mapping.items()))


def run_module(module, root="/"):
    params = module.params
    sysfs = PciSysfs(root)
    binder = VfioBinder(sysfs, root=root, timeout=params["timeout"])
    iommu = iommu_state(root)
    try:
        targets = sysfs.resolve(params["devices"], remembered=binder.remembered_netdevs())
        net = None
        if params["state"] == "bound" and not params["force"]:
            require_pyroute2(module)
            with IPRoute() as ipr:
                net = net_use(ipr, root=root)
        plan = binder.plan(targets, params["state"], group_policy=params["group"], force=params["force"], net=net,
                           persist=params["persistent"], restore_driver=params["driver"])
    except PciError as exc:
        module.fail_json(msg=str(exc), iommu=iommu)
    devices = plan["devices"]
    changed = bool(plan["changes"])
    result = dict(changed=changed, iommu=iommu)
    if module._diff:
        result["diff"] = _diff(devices, params["state"])
    if changed and not module.check_mode:
        if params["state"] == "bound" and not os.path.isdir(os.path.join(root, "sys/bus/pci/drivers/vfio-pci")):
            rc, out, err = module.run_command(["modprobe", "vfio-pci"])
            if rc != 0:
                module.fail_json(msg="vfio-pci is not available: modprobe vfio-pci failed (rc %s): %s. Install the "
                                     "kernel's modules or build vfio-pci in." % (rc, (err or out).strip()), **result)
        done = []
        try:
            for entry in devices:
                if entry["action"] == "bind":
                    binder.bind(entry)
                    done.append(entry)
                elif entry["action"] == "unbind":
                    binder.unbind(entry)
            reload_udev = False
            for entry in devices:
                reload_udev = binder.write_persistence(entry) or reload_udev
        except (PciError, OSError) as exc:
            undone = []
            for entry in reversed(done):
                try:
                    binder.unbind(entry)
                    undone.append(entry["address"])
                except (PciError, OSError) as undo_exc:
                    module.warn("could not give %s back to %s: %s"
                                % (entry["address"], entry["original_driver"], undo_exc))
            tail = "; undone: %s back on their drivers" % ", ".join(undone) if undone else ""
            module.fail_json(msg="%s%s" % (exc, tail), **result)
        if reload_udev:
            udevadm = module.get_bin_path("udevadm")
            if udevadm:
                module.run_command([udevadm, "control", "--reload"])
            else:
                module.warn("udevadm not found: the udev rule takes effect from the next boot")
    out = []
    for entry in devices:
        item = {k: entry[k] for k in ("address", "id", "iommu_group", "driver_before", "original_driver", "netdevs",
                                      "rdma_devices")}
        item["changed"] = entry["address"] in plan["changes"]
        item["driver"] = sysfs.driver(entry["address"]) if not module.check_mode else (
            ("vfio-pci" if params["state"] == "bound" else entry["original_driver"]) if item["changed"]
            else entry["driver_before"])
        item["persistent_files"] = sorted(entry["persist_wanted"])
        if params["state"] == "bound":
            item["vfio_device"] = "/dev/vfio/%s" % entry["iommu_group"]
            item["hostdev_xml"] = hostdev_xml(entry["address"])
            if params["verify"] and not module.check_mode:
                try:
                    item["container"] = container_check(entry["iommu_group"], root)
                except (PciError, OSError) as exc:
                    module.fail_json(msg="devices: %s is on vfio-pci but a VFIO container does not attach: %s"
                                         % (entry["address"], exc), devices=out + [item], **result)
        out.append(item)
    result["devices"] = out
    module.exit_json(**result)
