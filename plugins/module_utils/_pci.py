# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""PCI devices as sysfs shows them (``root=`` for fixture trees): ids, drivers, IOMMU groups, SR-IOV, what sits on top.

Layout this reads (a real host's):
  sys/bus/pci/devices/<bdf> -> ../../../devices/pci0000:00/.../<bdf>
      vendor device class numa_node driver_override  driver -> .../bus/pci/drivers/<name>
      iommu_group -> .../kernel/iommu_groups/<n>     sriov_totalvfs sriov_numvfs virtfn<i> -> ../<vf>  physfn -> ../<pf>
      net/<netdev>  infiniband/<rdma dev>  virtio<n>/net/<netdev>
  sys/kernel/iommu_groups/<n>/devices/<bdf>   sys/class/iommu/<unit>   sys/firmware/acpi/tables/{DMAR,IVRS}
"""

from __future__ import annotations

import os
import re
import threading

from ._rdma_sysfs import read_text, under_device

BDF_RE = re.compile(r"^(?:([0-9a-fA-F]{4}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$")
ID_RE = re.compile(r"^([0-9a-fA-F]{4}):([0-9a-fA-F]{4})$")
BDF_IN_PATH = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")

# PCI class (base, sub) -> name; enough for the devices an AI-fabric host has.
CLASS_NAMES = {
    0x0100: "SCSI storage controller", 0x0106: "SATA controller", 0x0108: "Non-Volatile memory controller",
    0x0200: "Ethernet controller", 0x0207: "Infiniband controller", 0x0280: "Network controller",
    0x0300: "VGA compatible controller", 0x0302: "3D controller", 0x0600: "Host bridge", 0x0601: "ISA bridge",
    0x0604: "PCI bridge", 0x0c05: "SMBus", 0x1200: "Processing accelerators", 0x0880: "System peripheral",
}
BRIDGE_CLASSES = (0x0600, 0x0601, 0x0604)
# Drivers a VFIO group tolerates on its other members (the kernel's own allow list), besides none and vfio-pci.
GROUP_SAFE_DRIVERS = ("vfio-pci", "pci-stub")
BRIDGE_SAFE_DRIVERS = ("pcieport", "shpchp")


class PciError(Exception):
    """A request that cannot be met; the message names the parameter and what to do."""


def write_attr(path, text, timeout=30.0):
    """Write a sysfs attribute, bounded: a driver that blocks in remove() or probe() makes this raise, not hang."""
    outcome = {}

    def work():
        try:
            with open(path, "w") as handle:
                handle.write(text)
        except OSError as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise PciError("writing %r to %s did not return within %.0f s (a driver blocks in the kernel; see dmesg)"
                       % (text.strip(), path, timeout))
    if "error" in outcome:
        exc = outcome["error"]
        raise PciError("writing %r to %s failed: %s" % (text.strip(), path, exc.strerror or exc))


def normalize_bdf(text, param="devices"):
    """``3b:00.0`` or ``0000:3B:00.0`` -> ``0000:3b:00.0``; anything else raises PciError naming ``param``."""
    match = BDF_RE.match(str(text).strip())
    if not match:
        raise PciError("%s: %r is not a PCI address; write it as 0000:3b:00.0 (domain:bus:slot.function, domain "
                       "optional), as a vendor:device id such as 15b3:101b, or as a netdev name" % (param, text))
    domain, bus, slot, func = match.groups()
    return ("%s:%s:%s.%s" % (domain or "0000", bus, slot, func)).lower()


class PciSysfs:
    """Reads one host's (or fixture's) PCI view."""

    def __init__(self, root="/"):
        self.root = root

    def _p(self, *parts):
        return os.path.join(self.root, *parts)

    def dev_path(self, bdf):
        return self._p("sys/bus/pci/devices", bdf)

    def exists(self, bdf):
        return os.path.isdir(self.dev_path(bdf))

    def addresses(self):
        base = self._p("sys/bus/pci/devices")
        return sorted(os.listdir(base)) if os.path.isdir(base) else []

    def _link_name(self, bdf, name):
        path = os.path.join(self.dev_path(bdf), name)
        return os.path.basename(os.readlink(path)) if os.path.islink(path) else None

    def attr(self, bdf, name):
        return read_text(os.path.join(self.dev_path(bdf), name))

    def driver(self, bdf):
        return self._link_name(bdf, "driver")

    def driver_override(self, bdf):
        value = self.attr(bdf, "driver_override")
        return None if value in (None, "", "(null)") else value

    def iommu_group(self, bdf):
        name = self._link_name(bdf, "iommu_group")
        return int(name) if name is not None and name.isdigit() else None

    def group_members(self, group):
        base = self._p("sys/kernel/iommu_groups", str(group), "devices")
        return sorted(os.listdir(base)) if os.path.isdir(base) else []

    def class_code(self, bdf):
        value = self.attr(bdf, "class")
        try:
            return int(value, 16) >> 8 if value else None
        except ValueError:
            return None

    def pci_id(self, bdf):
        vendor, device = self.attr(bdf, "vendor"), self.attr(bdf, "device")
        if not vendor or not device:
            return None
        return "%s:%s" % (vendor.lower().replace("0x", ""), device.lower().replace("0x", ""))

    def netdevs(self, bdf):
        """Netdevs on the device: ``net/*``, and those of a virtio child (``virtio<n>/net/*``)."""
        found = []
        base = self.dev_path(bdf)
        for sub in sorted(os.listdir(base)) if os.path.isdir(base) else []:
            if sub == "net" or (sub.startswith("virtio") and sub[6:].isdigit()):
                net = os.path.join(base, sub) if sub == "net" else os.path.join(base, sub, "net")
                if os.path.isdir(net):
                    found.extend(sorted(os.listdir(net)))
        return found

    def rdma_devices(self, bdf):
        return under_device(self.dev_path(bdf))

    def virtfns(self, bdf):
        base = self.dev_path(bdf)
        if not os.path.isdir(base):
            return []
        names = [n for n in os.listdir(base) if n.startswith("virtfn") and n[6:].isdigit()]
        return [os.path.basename(os.readlink(os.path.join(base, n))) for n in sorted(names, key=lambda n: int(n[6:]))]

    def physfn(self, bdf):
        return self._link_name(bdf, "physfn")

    def _int_attr(self, bdf, name):
        value = self.attr(bdf, name)
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None

    def sriov(self, bdf):
        """``{total_vfs, num_vfs, vfs}`` for a PF (``total_vfs`` None where the driver has no such file), else None."""
        total, current = self._int_attr(bdf, "sriov_totalvfs"), self._int_attr(bdf, "sriov_numvfs")
        if total is None and current is None:
            return None
        return {"total_vfs": total, "num_vfs": current, "vfs": self.virtfns(bdf)}

    def device(self, bdf):
        """Everything a user asks about one device."""
        code = self.class_code(bdf)
        group = self.iommu_group(bdf)
        numa = self._int_attr(bdf, "numa_node")
        return {
            "address": bdf,
            "id": self.pci_id(bdf),
            "class": "0x%04x" % code if code is not None else None,
            "class_name": CLASS_NAMES.get(code, "class 0x%04x" % code if code is not None else "unknown"),
            "driver": self.driver(bdf),
            "driver_override": self.driver_override(bdf),
            "iommu_group": group,
            "iommu_group_members": self.group_members(group) if group is not None else [],
            "numa_node": numa if numa is not None and numa >= 0 else None,
            "sriov": self.sriov(bdf),
            "physfn": self.physfn(bdf),
            "netdevs": self.netdevs(bdf),
            "rdma_devices": self.rdma_devices(bdf),
        }

    def netdev_address(self, netdev):
        """The PCI address under a netdev (walking up through virtio and the like), or None (virtual, absent)."""
        link = self._p("sys/class/net", netdev)
        if not os.path.lexists(link):
            return None
        real = os.path.realpath(link)
        found = None
        for part in real.split(os.sep):
            if BDF_IN_PATH.match(part):
                found = part
        return found

    def by_id(self, pci_id):
        want = pci_id.lower()
        return [bdf for bdf in self.addresses() if self.pci_id(bdf) == want]

    def resolve(self, names, param="devices", remembered=None):
        """PCI addresses for names given as addresses, vendor:device ids or netdevs (``remembered`` maps netdevs that
        are gone, because their device is on vfio-pci now, to their address)."""
        out = []
        for name in names:
            text = str(name).strip()
            if BDF_RE.match(text):
                bdf = normalize_bdf(text, param)
                if not self.exists(bdf):
                    raise PciError("%s: no PCI device %s on this host (see aifabric.lab.pci_info for the list)"
                                   % (param, bdf))
                found = [bdf]
            elif ID_RE.match(text):
                found = self.by_id(text)
                if not found:
                    raise PciError("%s: no PCI device with id %s on this host" % (param, text.lower()))
            else:
                bdf = self.netdev_address(text) or (remembered or {}).get(text)
                if bdf is None:
                    if os.path.lexists(self._p("sys/class/net", text)):
                        raise PciError("%s: netdev %s is not on a PCI device (virtual interface)" % (param, text))
                    raise PciError("%s: %r is neither a PCI address (0000:3b:00.0), a vendor:device id (15b3:101b) "
                                   "nor a netdev on this host" % (param, text))
                found = [bdf]
            out.extend(b for b in found if b not in out)
        return out

    def is_bridge(self, bdf):
        return self.class_code(bdf) in BRIDGE_CLASSES


def read_cmdline(root="/"):
    return read_text(os.path.join(root, "proc/cmdline")) or ""


def cmdline_args(text):
    """``{key: value}`` of a kernel command line (flags map to None)."""
    args = {}
    for word in text.split():
        key, sep, value = word.partition("=")
        args[key] = value if sep else None
    return args


def iommu_state(root="/"):
    """Whether the kernel runs with an IOMMU, and why (or why not): groups, units, ACPI table, command line."""
    groups_dir = os.path.join(root, "sys/kernel/iommu_groups")
    groups = [g for g in os.listdir(groups_dir) if g.isdigit()] if os.path.isdir(groups_dir) else []
    units_dir = os.path.join(root, "sys/class/iommu")
    units = sorted(os.listdir(units_dir)) if os.path.isdir(units_dir) else []
    tables_dir = os.path.join(root, "sys/firmware/acpi/tables")
    tables = [t for t in ("DMAR", "IVRS") if os.path.exists(os.path.join(tables_dir, t))]
    args = cmdline_args(read_cmdline(root))
    relevant = {k: v for k, v in args.items() if k in ("intel_iommu", "amd_iommu", "iommu", "vfio-pci.ids")}
    enabled = bool(groups) and bool(units)
    if enabled:
        reason = "IOMMU on: %d groups, unit %s" % (len(groups), ", ".join(units))
    elif args.get("intel_iommu") == "off" or args.get("amd_iommu") == "off":
        reason = "the kernel command line turns the IOMMU off (%s)" % " ".join(
            "%s=%s" % (k, v) for k, v in relevant.items())
    elif not tables:
        reason = ("no DMAR or IVRS ACPI table: VT-d/AMD-Vi is off in the firmware (BIOS/UEFI) or absent; "
                  "turn it on there first")
    elif "DMAR" in tables and args.get("intel_iommu") != "on":
        reason = "the firmware has a DMAR table but the kernel runs without intel_iommu=on; add it (and iommu=pt)"
    else:
        reason = "the firmware has an %s table but the kernel made no IOMMU groups; check dmesg for DMAR/AMD-Vi" % (
            tables[0])
    return {"enabled": enabled, "groups": len(groups), "units": units, "acpi_tables": tables,
            "cmdline": relevant, "reason": reason}


def hostdev_xml(bdf, managed=False):
    """The libvirt ``<hostdev>`` element that hands this device to a guest."""
    domain, bus, rest = bdf.split(":")
    slot, func = rest.split(".")
    return ("<hostdev mode='subsystem' type='pci' managed='%s'><source><address domain='0x%s' bus='0x%s' "
            "slot='0x%s' function='0x%s'/></source></hostdev>" % ("yes" if managed else "no", domain, bus, slot, func))
