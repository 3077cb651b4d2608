# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Moving PCI devices to vfio-pci and back: plan (group, safety), bind, restore, persist, prove a container attaches.

Binding is the kernel's documented sequence: ``driver_override`` = vfio-pci, unbind from the current driver, then
``drivers_probe``. Every endpoint of the IOMMU group must end on vfio-pci (or no driver, or pci-stub) for the group to
be viable. The driver a device had is written to a state file, so ``unbound`` gives it back even runs later
(the bug in sriov-network-operator #802 is a rebind that forgets it). Persistence is keyed by PCI address, never by
IOMMU group number (group numbers change across boots: sriov-network-device-plugin #451).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import struct
import time

from ._atomic import write_json, write_text
from ._pci import BRIDGE_SAFE_DRIVERS, GROUP_SAFE_DRIVERS, PciError, iommu_state, write_attr
from ._pyroute2 import nla

STATE_DIR = "var/lib/aifabric-lab/vfio"
RULES_FILE = "etc/udev/rules.d/70-aifabric-vfio-%s.rules"
MODPROBE_FILE = "etc/modprobe.d/aifabric-vfio-%s.conf"

# <linux/vfio.h>: _IO(';', 100 + n)
VFIO_GET_API_VERSION = 0x3B64
VFIO_CHECK_EXTENSION = 0x3B65
VFIO_SET_IOMMU = 0x3B66
VFIO_GROUP_GET_STATUS = 0x3B67
VFIO_GROUP_SET_CONTAINER = 0x3B68
VFIO_TYPE1_IOMMU, VFIO_TYPE1v2_IOMMU = 1, 3
VFIO_GROUP_FLAGS_VIABLE, VFIO_GROUP_FLAGS_CONTAINER_SET = 1, 2


class NetUse:
    """Why a netdev must not be taken away: it carries the default route, the address Ansible came in through, or
    traffic (up with a global address, or enslaved to a bridge/bond); or it is a lower device (the parent of a VLAN,
    macvlan/macvtap or ipvlan, a bond's slave, a bridge's port, at any depth) of a netdev that does. Built by the
    module from netlink and sysfs. ``lowers``: ``{upper: [lower, ...]}``."""

    def __init__(self, default_route=(), ssh=(), active=None, lowers=None):
        self.default_route = set(default_route)
        self.ssh = set(ssh)
        self.active = dict(active or {})
        self.lowers = {upper: set(found) for upper, found in (lowers or {}).items()}

    def _direct(self, netdev):
        out = []
        if netdev in self.default_route:
            out.append("%s carries the default route" % netdev)
        if netdev in self.ssh:
            out.append("%s holds the address this Ansible session is connected through" % netdev)
        if netdev in self.active:
            out.append("%s is in use (%s)" % (netdev, self.active[netdev]))
        return out

    def uppers(self, netdev):
        """Every netdev stacked on ``netdev``, nearest first, each with its chain (``[netdev, ..., upper]``)."""
        above = {}
        for upper, found in self.lowers.items():
            for lower in found:
                above.setdefault(lower, set()).add(upper)
        out, queue, seen = [], [[netdev]], {netdev}
        while queue:
            chain = queue.pop(0)
            for upper in sorted(above.get(chain[-1], ())):
                if upper not in seen:
                    seen.add(upper)
                    out.append((upper, chain + [upper]))
                    queue.append(chain + [upper])
        return out

    def reasons(self, netdev):
        out = self._direct(netdev)
        for upper, chain in self.uppers(netdev):
            out.extend("%s is under %s (%s), and %s" % (netdev, upper, " -> ".join(chain), reason)
                       for reason in self._direct(upper))
        return out


def sysfs_lowers(root="/"):
    """``{upper: {lower, ...}}`` from sysfs: the ``lower_<dev>`` links the kernel makes for every stacked device (VLAN,
    macvlan/macvtap, ipvlan, bond, bridge, team), a bond's ``bonding/slaves`` and a bridge's ``brif/``."""
    base = os.path.join(root, "sys/class/net")
    out = {}
    for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        path = os.path.join(base, name)
        try:
            entries = os.listdir(path)
        except OSError:
            continue
        found = set()
        for entry in entries:
            if entry.startswith("lower_"):
                target = os.path.join(path, entry)
                found.add(os.path.basename(os.path.realpath(target)) if os.path.islink(target) else entry[6:])
        try:
            with open(os.path.join(path, "bonding", "slaves")) as handle:
                found.update(handle.read().split())
        except OSError:
            pass
        brif = os.path.join(path, "brif")
        if os.path.isdir(brif):
            found.update(os.listdir(brif))
        found.discard(name)
        if found:
            out[name] = found
    return out


# a veth's IFLA_LINK names its peer, not a device under it
_NOT_STACKED = ("veth", "netkit")


def netlink_lowers(links):
    """``{upper: {lower}}`` from RTM_NEWLINK messages: IFLA_LINK (the parent of a VLAN, macvlan/macvtap, ipvlan or
    tunnel, in this namespace) and IFLA_MASTER (a bond's slaves, a bridge's ports)."""
    names = {link["index"]: nla(link, "IFLA_IFNAME") for link in links}
    out = {}
    for link in links:
        name = nla(link, "IFLA_IFNAME")
        info = nla(link, "IFLA_LINKINFO")
        kind = nla(info, "IFLA_INFO_KIND") if info else None
        parent = nla(link, "IFLA_LINK")
        if (parent and parent != link["index"] and parent in names and kind not in _NOT_STACKED
                and nla(link, "IFLA_LINK_NETNSID") is None):
            out.setdefault(name, set()).add(names[parent])
        master = nla(link, "IFLA_MASTER")
        if master in names:
            out.setdefault(names[master], set()).add(name)
    return out


def net_use(ipr, environ=None, root="/"):
    """NetUse from netlink and sysfs: default-route devices, the device holding the SSH server address, busy devices,
    and what is stacked on what (so the parent of a VLAN that carries the management address is protected too)."""
    environ = os.environ if environ is None else environ
    links = list(ipr.get_links())
    names = {link["index"]: nla(link, "IFLA_IFNAME") for link in links}
    default = set()
    for family in (socket.AF_INET, socket.AF_INET6):
        for route in ipr.get_default_routes(family=family):
            oif = nla(route, "RTA_OIF")
            if oif in names:
                default.add(names[oif])
            for hop in nla(route, "RTA_MULTIPATH") or []:
                if hop.get("oif") in names:
                    default.add(names[hop["oif"]])
    ssh = set()
    server = (environ.get("SSH_CONNECTION") or "").split()
    addrs = list(ipr.get_addr())
    if len(server) >= 3:
        for addr in addrs:
            if server[2] in (nla(addr, "IFA_ADDRESS"), nla(addr, "IFA_LOCAL")):
                ssh.add(names.get(addr["index"]))
    active = {}
    for addr in addrs:
        name = names.get(addr["index"])
        if addr.get("scope", 0) == 0 and name and name != "lo":
            active.setdefault(name, "up with address %s" % nla(addr, "IFA_ADDRESS"))
    for link in links:
        master = nla(link, "IFLA_MASTER")
        if master:
            active[nla(link, "IFLA_IFNAME")] = "enslaved to %s" % names.get(master, master)
    lowers = netlink_lowers(links)
    for upper, found in sysfs_lowers(root).items():
        lowers.setdefault(upper, set()).update(found)
    return NetUse(default_route=default, ssh=ssh, active=active, lowers=lowers)


def group_openers(group, root="/"):
    """Processes holding /dev/vfio/<group> open (a running VM, a DPDK app): ``["pid 123 (qemu-system-x86)"]``."""
    target = "/dev/vfio/%s" % group
    proc = os.path.join(root, "proc")
    found = []
    for pid in os.listdir(proc) if os.path.isdir(proc) else []:
        if not pid.isdigit():
            continue
        fd_dir = os.path.join(proc, pid, "fd")
        try:
            links = [os.readlink(os.path.join(fd_dir, fd)) for fd in os.listdir(fd_dir)]
        except OSError:
            continue
        if target in links:
            try:
                with open(os.path.join(proc, pid, "comm")) as handle:
                    comm = handle.read().strip()
            except OSError:
                comm = "?"
            found.append("pid %s (%s)" % (pid, comm))
    return found


def container_check(group, root="/"):
    """Open the group, check it is viable, attach it to a new container and set a type-1 IOMMU: what a VMM does."""
    container = os.open(os.path.join(root, "dev/vfio/vfio"), os.O_RDWR)
    try:
        api = fcntl.ioctl(container, VFIO_GET_API_VERSION)
        type1v2 = fcntl.ioctl(container, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU)
        try:
            fd = os.open(os.path.join(root, "dev/vfio", str(group)), os.O_RDWR)
        except OSError as exc:
            if exc.errno == errno.EBUSY:
                raise PciError("/dev/vfio/%s is busy: another process holds the group" % group) from None
            raise
        try:
            status = fcntl.ioctl(fd, VFIO_GROUP_GET_STATUS, struct.pack("II", 8, 0))
            flags = struct.unpack("II", status)[1]
            if not flags & VFIO_GROUP_FLAGS_VIABLE:
                raise PciError("IOMMU group %s is not viable: a member is still on a host driver" % group)
            fcntl.ioctl(fd, VFIO_GROUP_SET_CONTAINER, struct.pack("i", container))
            kind = VFIO_TYPE1v2_IOMMU if type1v2 else VFIO_TYPE1_IOMMU
            fcntl.ioctl(container, VFIO_SET_IOMMU, kind)
        finally:
            os.close(fd)
    finally:
        os.close(container)
    return {"api_version": api, "viable": True, "container_attached": True,
            "iommu_type": "type1v2" if kind == VFIO_TYPE1v2_IOMMU else "type1"}


def rules_text(bdf, pci_id, original):
    """A udev rule that puts the device on vfio-pci whenever it is added (every boot's coldplug)."""
    dev = "/sys/bus/pci/devices/%k"
    return (
        "# aifabric.lab.vfio_pci: keep %s (%s, host driver %s) on vfio-pci at every boot. Keyed by PCI address.\n"
        'ACTION=="add", SUBSYSTEM=="pci", KERNEL=="%s", ATTR{driver_override}="vfio-pci", '
        "RUN+=\"/bin/sh -c '/sbin/modprobe vfio-pci; "
        "[ -e %s/driver ] && echo %%k > %s/driver/unbind; echo %%k > /sys/bus/pci/drivers_probe'\"\n"
        % (bdf, pci_id or "unknown id", original or "none", bdf, dev, dev))


def modprobe_text(bdf, original):
    return ("# aifabric.lab.vfio_pci: load vfio-pci before %s, whose device %s goes to vfio-pci\n"
            "softdep %s pre: vfio-pci\n" % (original, bdf, original))


class VfioBinder:
    """Plans and applies ``bound``/``unbound`` for a set of devices on one host (or fixture tree)."""

    def __init__(self, sysfs, root="/", timeout=30.0):
        self.sysfs = sysfs
        self.root = root
        self.timeout = timeout

    # ----- remembered original drivers -----
    def _state_path(self, bdf):
        return os.path.join(self.root, STATE_DIR, "%s.json" % bdf)

    def remembered(self):
        base = os.path.join(self.root, STATE_DIR)
        out = {}
        for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
            try:
                with open(os.path.join(base, name)) as handle:
                    entry = json.load(handle)
                out[entry["address"]] = entry
            except (OSError, ValueError, KeyError):
                continue
        return out

    def remembered_netdevs(self):
        return {netdev: bdf for bdf, entry in self.remembered().items() for netdev in entry.get("netdevs", [])}

    # ----- planning -----
    def _tolerable(self, bdf):
        driver = self.sysfs.driver(bdf)
        if driver is None or driver in GROUP_SAFE_DRIVERS:
            return True
        return self.sysfs.is_bridge(bdf) and driver in BRIDGE_SAFE_DRIVERS

    def plan(self, targets, state, group_policy="refuse", force=False, net=None, persist=False, restore_driver=None):
        """``{"devices": [...], "changes": [...]}``; raises PciError for what it must refuse (nothing changed)."""
        net = net or NetUse()
        targets = list(targets)
        if state == "bound":
            iommu = None
            for bdf in list(targets):
                group = self.sysfs.iommu_group(bdf)
                if group is None:
                    iommu = iommu or iommu_state(self.root)
                    raise PciError("devices: %s has no IOMMU group, so vfio-pci cannot take it (%s). The "
                                   "aifabric.lab.vfio_host role adds the kernel arguments (intel_iommu=on or "
                                   "amd_iommu=on, iommu=pt) and reboots." % (bdf, iommu["reason"]))
                others = [m for m in self.sysfs.group_members(group) if m not in targets and not self._tolerable(m)]
                if others:
                    if group_policy != "bind_all":
                        members = ", ".join(
                            "%s (%s, %s)" % (m, self.sysfs.pci_id(m), self.sysfs.driver(m) or "no driver")
                            for m in self.sysfs.group_members(group))
                        raise PciError(
                            "devices: IOMMU group %s of %s is not viable unless all its endpoints go to vfio-pci; it "
                            "holds %s. List them all in devices, set group: bind_all, or move the card to a slot "
                            "with its own group (ACS)." % (group, bdf, members))
                    targets.extend(m for m in others if not self.sysfs.is_bridge(m))
        devices, changes, refusals = [], [], []
        remembered = self.remembered()
        for bdf in targets:
            driver = self.sysfs.driver(bdf)
            override = self.sysfs.driver_override(bdf)
            group = self.sysfs.iommu_group(bdf)
            entry = {"address": bdf, "id": self.sysfs.pci_id(bdf), "driver_before": driver, "iommu_group": group,
                     "netdevs": self.sysfs.netdevs(bdf), "rdma_devices": self.sysfs.rdma_devices(bdf)}
            files = self._persist_files(bdf, entry["id"], remembered.get(bdf, {}).get("original_driver") or driver)
            if state == "bound":
                original = (driver if driver not in (None, "vfio-pci")
                            else remembered.get(bdf, {}).get("original_driver"))
                entry["original_driver"] = original
                entry["action"] = "none" if driver == "vfio-pci" and override == "vfio-pci" else "bind"
                if entry["action"] == "bind" and driver not in (None, "vfio-pci", "pci-stub"):
                    reasons = [r for n in entry["netdevs"] for r in net.reasons(n)]
                    if reasons and not force:
                        refusals.append("%s: %s" % (bdf, "; ".join(reasons)))
                wanted = self._persist_wanted(bdf, entry["id"], original) if persist else {}
            else:
                original = restore_driver or remembered.get(bdf, {}).get("original_driver")
                entry["original_driver"] = original
                entry["action"] = "unbind" if driver == "vfio-pci" or override == "vfio-pci" else "none"
                if entry["action"] == "unbind" and group is not None:
                    users = group_openers(group, self.root)
                    if users and not force:
                        refusals.append("%s: /dev/vfio/%s is open by %s" % (bdf, group, ", ".join(users)))
                wanted = {}
            entry["persist_changes"] = sorted(p for p in set(files) | set(wanted) if files.get(p) != wanted.get(p))
            if not persist and state == "bound":
                entry["persist_changes"] = []  # persist: false leaves existing files alone
            entry["persist_wanted"] = wanted
            if entry["action"] != "none" or entry["persist_changes"]:
                changes.append(bdf)
            devices.append(entry)
        if refusals:
            raise PciError("devices: refusing to take devices from the host (set force: true if you mean it): "
                           + " | ".join(refusals))
        return {"devices": devices, "changes": changes}

    def _persist_paths(self, bdf):
        return [os.path.join(self.root, RULES_FILE % bdf), os.path.join(self.root, MODPROBE_FILE % bdf)]

    def _persist_files(self, bdf, pci_id, original):
        out = {}
        for path in self._persist_paths(bdf):
            try:
                with open(path) as handle:
                    out[path] = handle.read()
            except OSError:
                pass
        return out

    def _persist_wanted(self, bdf, pci_id, original):
        rules, modprobe = self._persist_paths(bdf)
        wanted = {rules: rules_text(bdf, pci_id, original)}
        if original:
            wanted[modprobe] = modprobe_text(bdf, original)
        return wanted

    # ----- applying -----
    def _wait(self, what, check):
        deadline = time.monotonic() + self.timeout
        while not check():
            if time.monotonic() > deadline:
                raise PciError("timed out after %.0f s waiting for %s" % (self.timeout, what))
            time.sleep(0.05)

    def _dev(self, bdf, *parts):
        return os.path.join(self.sysfs.dev_path(bdf), *parts)

    def bind(self, entry):
        """driver_override, unbind, probe, wait. A failure after the device left its driver gives it back (override
        cleared, the old driver's bind file or drivers_probe) and the error names the device, the step and the
        restore."""
        bdf = entry["address"]
        before = self.sysfs.driver(bdf)
        step = "setting driver_override to vfio-pci"
        try:
            write_attr(self._dev(bdf, "driver_override"), "vfio-pci", self.timeout)
            if self.sysfs.driver(bdf) not in (None, "vfio-pci"):
                step = "unbinding it from %s" % before
                write_attr(self._dev(bdf, "driver", "unbind"), bdf, self.timeout)
            if self.sysfs.driver(bdf) is None:
                step = "binding it to vfio-pci (drivers_probe)"
                write_attr(os.path.join(self.root, "sys/bus/pci/drivers_probe"), bdf, self.timeout)
            step = "waiting for vfio-pci to take it"
            self._wait("%s to bind to vfio-pci" % bdf, lambda: self.sysfs.driver(bdf) == "vfio-pci")
            node = os.path.join(self.root, "dev/vfio", str(entry["iommu_group"]))
            step = "waiting for %s" % node
            self._wait("%s to appear" % node, lambda: os.path.exists(node))
        except (PciError, OSError) as exc:
            restored = self.restore(bdf, before)
            raise PciError("devices: %s: binding to vfio-pci failed while %s: %s; %s"
                           % (bdf, step, exc, restored)) from None
        self._remember(entry)

    def restore(self, bdf, driver):
        """Give a device that failed mid-bind back to ``driver`` (None: whatever the kernel matches): clear
        driver_override (written ``\\n``), unbind it from where it is, bind it through the driver's bind file or
        drivers_probe. Returns what happened, for the error message; never raises."""
        override = self._dev(bdf, "driver_override")
        try:
            write_attr(override, "\n", self.timeout)
        except (PciError, OSError) as exc:
            tail = " driver: %s" % driver if driver else ""
            return ("restoring it failed: driver_override could not be cleared (%s); it stays vfio-pci, with driver "
                    "%s: clear it with state: unbound%s" % (exc, self.sysfs.driver(bdf) or "none", tail))
        now = self.sysfs.driver(bdf)
        if now == driver:
            return "driver_override cleared; it is still on %s" % (driver or "no driver")
        how = "drivers_probe"
        try:
            if now is not None:
                write_attr(self._dev(bdf, "driver", "unbind"), bdf, self.timeout)
            bind_file = os.path.join(self.root, "sys/bus/pci/drivers", driver or "-", "bind")
            if driver and os.path.exists(bind_file):
                try:
                    write_attr(bind_file, bdf, self.timeout)
                    how = "%s's bind file" % driver
                except PciError as exc:
                    how = "drivers_probe (%s's bind file refused: %s)" % (driver, exc)
                    write_attr(os.path.join(self.root, "sys/bus/pci/drivers_probe"), bdf, self.timeout)
            else:
                write_attr(os.path.join(self.root, "sys/bus/pci/drivers_probe"), bdf, self.timeout)
            if driver:
                self._wait("%s to return to %s" % (bdf, driver), lambda: self.sysfs.driver(bdf) == driver)
        except (PciError, OSError) as exc:
            return ("driver_override cleared, but giving it back to %s failed: %s; it is on %s now: give it back with "
                    "state: unbound%s" % (driver or "a host driver", exc, self.sysfs.driver(bdf) or "no driver",
                                          " driver: %s" % driver if driver else ""))
        if driver:
            return "restored: driver_override cleared, back on %s (through %s)" % (driver, how)
        return "restored: driver_override cleared, re-probed (it had no driver before; now %s)" % (
            self.sysfs.driver(bdf) or "none")

    def _remember(self, entry):
        path = self._state_path(entry["address"])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        old = self.remembered().get(entry["address"], {})
        record = {"address": entry["address"], "id": entry["id"],
                  "original_driver": entry["original_driver"] or old.get("original_driver"),
                  "netdevs": entry["netdevs"] or old.get("netdevs", []), "bound": entry.get("bound", True)}
        write_json(path, record)

    def unbind(self, entry):
        bdf = entry["address"]
        write_attr(self._dev(bdf, "driver_override"), "\n", self.timeout)
        if self.sysfs.driver(bdf) is not None:
            write_attr(self._dev(bdf, "driver", "unbind"), bdf, self.timeout)
        original = entry["original_driver"]
        bind_file = os.path.join(self.root, "sys/bus/pci/drivers", original or "-", "bind")
        if original and os.path.exists(bind_file):
            try:
                write_attr(bind_file, bdf, self.timeout)
            except PciError:
                write_attr(os.path.join(self.root, "sys/bus/pci/drivers_probe"), bdf, self.timeout)
        else:
            # the original driver's module is not loaded (or unknown): let the kernel match one
            write_attr(os.path.join(self.root, "sys/bus/pci/drivers_probe"), bdf, self.timeout)
        if original:
            self._wait("%s to return to %s" % (bdf, original), lambda: self.sysfs.driver(bdf) == original)
        # keep the record: a device named by a netdev is still found (its name may differ on the host driver)
        self._remember(dict(entry, bound=False))

    def write_persistence(self, entry):
        """Write (or remove) this device's udev rule and modprobe softdep; returns True when udev must reload."""
        wanted = entry["persist_wanted"]
        for path in entry["persist_changes"]:
            if path in wanted:
                write_text(path, wanted[path], mode=0o644)
            else:
                os.unlink(path)
        return bool(entry["persist_changes"])
