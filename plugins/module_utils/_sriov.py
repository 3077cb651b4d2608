# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""SR-IOV: the VF count through sysfs (``root=`` for fixtures), every VF setting through netlink (pyroute2).

A PF is named by its netdev or its PCI address. Its device directory is wherever ``/sys/class/net/PF/device``
resolves: a PCI function on real NICs, ``/sys/devices/netdevsimN`` on netdevsim (which has no ``sriov_totalvfs``
and whose VFs have neither PCI functions nor netdevs). Counts change through 0 (the kernel refuses N -> M directly).
"""

from __future__ import annotations

import errno
import json
import os
import re
import time

from ._atomic import write_json
from ._pci import BDF_RE, PciError, PciSysfs, normalize_bdf, write_attr
from ._pyroute2 import nla

MAC_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")
GUID_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){7}$")
LINK_STATES = {"auto": 0, "enable": 1, "disable": 2}
LINK_STATE_NAMES = {v: k for k, v in LINK_STATES.items()}
SETTINGS = ("mac", "vlan", "qos", "spoofchk", "trust", "link_state", "min_tx_rate", "max_tx_rate", "node_guid",
            "port_guid")
STATE_DIR = "var/lib/aifabric-lab/sriov"
RULES_FILE = "etc/udev/rules.d/70-aifabric-sriov-%s.rules"
SCRIPT_FILE = "usr/local/sbin/aifabric-sriov-%s"

FIRMWARE_HINT = ("For ConnectX (mlx5) the firmware sets the limit: check 'mlxconfig -d %s query SRIOV_EN NUM_OF_VFS', "
                 "set SRIOV_EN=1 NUM_OF_VFS=<n> and reset the card; the BIOS must enable SR-IOV too.")


class SriovError(PciError):
    pass


class PF:
    """One physical function: its netdev, device directory, PCI address (None on netdevsim)."""

    def __init__(self, name, root="/"):
        self.root = root
        self.pci = PciSysfs(root)
        text = str(name).strip()
        if BDF_RE.match(text):
            self.address = normalize_bdf(text, "pf")
            if not self.pci.exists(self.address):
                raise SriovError("pf: no PCI device %s on this host" % self.address)
            self.dir = self.pci.dev_path(self.address)
            nets = self.pci.netdevs(self.address)
            self.netdev = nets[0] if nets else None
        else:
            link = os.path.join(root, "sys/class/net", text)
            if not os.path.lexists(link):
                raise SriovError("pf: %r is neither a PCI address (0000:3b:00.0) nor a netdev on this host" % text)
            self.netdev = text
            self.dir = os.path.join(link, "device")
            self.address = self.pci.netdev_address(text)
            if not os.path.exists(self.dir):
                raise SriovError("pf: %s is a virtual interface, not a device with SR-IOV" % text)
        if not os.path.exists(os.path.join(self.dir, "sriov_numvfs")):
            vf_of = self.pci.physfn(self.address) if self.address else None
            if vf_of:
                raise SriovError("pf: %s is itself a VF (of %s); name the PF" % (text, vf_of))
            raise SriovError("pf: %s has no SR-IOV capability (no sriov_numvfs): the device or its driver does not "
                             "support SR-IOV, or SR-IOV is off in the firmware/BIOS" % text)
        self.name = text

    @property
    def key(self):
        return self.address or self.netdev

    def _int(self, attr):
        try:
            with open(os.path.join(self.dir, attr)) as handle:
                return int(handle.read().strip())
        except (OSError, ValueError):
            return None

    def num_vfs(self):
        return self._int("sriov_numvfs")

    def total_vfs(self):
        return self._int("sriov_totalvfs")

    def vf_addresses(self):
        return self.pci.virtfns(self.address) if self.address else []

    def vf_device(self, index):
        """``{address, driver, netdevs}`` of VF ``index`` (empty on netdevsim, whose VFs have no device)."""
        addresses = self.vf_addresses()
        if index >= len(addresses):
            return {"address": None, "driver": None, "netdevs": []}
        bdf = addresses[index]
        return {"address": bdf, "driver": self.pci.driver(bdf), "netdevs": self.pci.netdevs(bdf)}

    def set_count(self, count, timeout):
        """Write the count through 0, each write bounded. When the kernel refuses the new count, the old one is
        written back (the VFs come back, with the driver's default settings), and the error says both what was
        refused and how the restore went; messages say what limits the count."""
        path = os.path.join(self.dir, "sriov_numvfs")
        old = self.num_vfs() or 0
        if old == count:
            return
        if old:
            try:
                write_attr(path, "0", timeout)
            except PciError as exc:
                raise SriovError("num_vfs: could not remove the %d VFs of %s before creating %d (writing 0 to "
                                 "sriov_numvfs): %s. Nothing changed: a VF may be in use (a VM, a bound driver)"
                                 % (old, self.name, count, exc)) from None
        if not count:
            return
        try:
            write_attr(path, str(count), timeout)
        except PciError as exc:
            hint = FIRMWARE_HINT % (self.address or self.name) if self.address else ""
            if not old:
                restored = "%s has 0 VFs, as before" % self.name
            else:
                try:
                    write_attr(path, str(old), timeout)
                    restored = ("its %d VFs were created again (with the driver's default MAC, VLAN and rates)"
                                % old)
                except PciError as undo:
                    restored = ("restoring its %d VFs failed too: %s; %s has 0 VFs now" % (old, undo, self.name))
            raise SriovError("num_vfs: the kernel refused %d VFs on %s: %s; %s. %s"
                             % (count, self.name, exc, restored, hint)) from None


def check_count(pf, count):
    if count < 0:
        raise SriovError("num_vfs: %d is negative; give 0 to remove every VF" % count)
    total = pf.total_vfs()
    if total is not None and count > total:
        raise SriovError("num_vfs: %d is above sriov_totalvfs (%d) of %s. %s"
                         % (count, total, pf.name, FIRMWARE_HINT % (pf.address or pf.name)))


def in_use(pf, count, net):
    """Why the VFs must not be destroyed now: bound to vfio-pci (a VM may hold them) or their netdevs busy."""
    reasons = []
    for index in range(count or 0):
        dev = pf.vf_device(index)
        if dev["driver"] == "vfio-pci":
            reasons.append("VF %d (%s) is bound to vfio-pci (a VM may hold it)" % (index, dev["address"]))
        for netdev in dev["netdevs"]:
            reasons.extend("VF %d: %s" % (index, r) for r in net.reasons(netdev))
    return reasons


def validate_vfs(vfs, count):
    """Reject bad VF settings before anything changes; returns them normalised (lowercase MACs and GUIDs)."""
    out = []
    seen = set()
    for pos, vf in enumerate(vfs):
        where = "vfs[%d]" % pos
        index = vf.get("index")
        if index is None or index < 0:
            raise SriovError("%s.index: required, 0 or more" % where)
        if index in seen:
            raise SriovError("%s.index: VF %d is listed twice" % (where, index))
        seen.add(index)
        if index >= count:
            raise SriovError("%s.index: VF %d is out of range: the PF has %d VF%s (indexes 0..%d); raise num_vfs or "
                             "drop the entry" % (where, index, count, "" if count == 1 else "s", count - 1))
        clean = {"index": index}
        for key in SETTINGS:
            value = vf.get(key)
            if value is None:
                continue
            if key == "mac":
                if not MAC_RE.match(value):
                    raise SriovError("%s.mac: %r is not a MAC address; write it as 02:00:5e:10:00:01" % (where, value))
                if int(value[:2], 16) & 1:
                    raise SriovError("%s.mac: %s is a multicast address; a VF needs a unicast one (even first "
                                     "octet, e.g. 02:...)" % (where, value))
                value = value.lower()
            elif key in ("node_guid", "port_guid"):
                if not GUID_RE.match(value):
                    raise SriovError("%s.%s: %r is not a GUID; write it as eight hex pairs, 00:11:22:33:44:55:66:77"
                                     % (where, key, value))
                value = value.lower()
            elif key == "vlan" and not 0 <= value <= 4095:
                raise SriovError("%s.vlan: %d is not a VLAN id (0..4095; 0 means untagged)" % (where, value))
            elif key == "qos" and not 0 <= value <= 7:
                raise SriovError("%s.qos: %d is not an 802.1p priority (0..7)" % (where, value))
            elif key in ("min_tx_rate", "max_tx_rate") and value < 0:
                raise SriovError("%s.%s: rates are Mb/s, 0 or more (0 = no limit)" % (where, key))
            elif key == "link_state" and value not in LINK_STATES:
                raise SriovError("%s.link_state: %r is not one of auto, enable, disable" % (where, value))
            clean[key] = value
        if "qos" in clean and clean["qos"] and not clean.get("vlan"):
            raise SriovError("%s.qos: a priority needs a VLAN (set vlan too)" % where)
        low, high = clean.get("min_tx_rate"), clean.get("max_tx_rate")
        if low and high and low > high:
            raise SriovError("%s.min_tx_rate: %d Mb/s is above max_tx_rate %d Mb/s" % (where, low, high))
        out.append(clean)
    return out


def parse_vfinfo(link):
    """``[{index, mac, vlan, qos, spoofchk, trust, link_state, min_tx_rate, max_tx_rate[, node_guid, port_guid]}]``
    from one RTM_NEWLINK message dumped with RTEXT_FILTER_VF."""
    out = []
    vflist = nla(link, "IFLA_VFINFO_LIST")
    if not vflist:
        return out
    infos = [v for k, v in vflist["attrs"] if k == "IFLA_VF_INFO"]
    for info in infos:
        attrs = dict((k, v) for k, v in info["attrs"])
        vf = {"index": attrs["IFLA_VF_MAC"]["vf"], "mac": attrs["IFLA_VF_MAC"]["mac"].lower()}
        if "IFLA_VF_VLAN" in attrs:
            vf["vlan"], vf["qos"] = attrs["IFLA_VF_VLAN"]["vlan"], attrs["IFLA_VF_VLAN"]["qos"]
        if "IFLA_VF_SPOOFCHK" in attrs:
            vf["spoofchk"] = attrs["IFLA_VF_SPOOFCHK"]["spoofchk"] == 1
        if "IFLA_VF_TRUST" in attrs:
            vf["trust"] = attrs["IFLA_VF_TRUST"]["trust"] == 1
        if "IFLA_VF_LINK_STATE" in attrs:
            vf["link_state"] = LINK_STATE_NAMES.get(attrs["IFLA_VF_LINK_STATE"]["link_state"], "unknown")
        if "IFLA_VF_RATE" in attrs:
            vf["min_tx_rate"] = attrs["IFLA_VF_RATE"]["min_tx_rate"]
            vf["max_tx_rate"] = attrs["IFLA_VF_RATE"]["max_tx_rate"]
        for attr_name, key in (("IFLA_VF_IB_NODE_GUID", "node_guid"), ("IFLA_VF_IB_PORT_GUID", "port_guid")):
            if attr_name in attrs:
                vf[key] = attrs[attr_name][("ib_" + key)].lower()
        out.append(vf)
    return sorted(out, key=lambda v: v["index"])


def netlink_request(index, key, value, current):
    """The ``vf=`` argument of ``IPRoute.link('set')`` for one setting (VLAN and QoS, and the two rates, travel
    together, so the other half comes from ``current``)."""
    if key in ("vlan", "qos"):
        return {"vf": index, "vlan": {"vlan": current.get("vlan", 0) if key == "qos" else value,
                                      "qos": value if key == "qos" else current.get("qos", 0)}}
    if key in ("min_tx_rate", "max_tx_rate"):
        rate = {"min_tx_rate": current.get("min_tx_rate", 0), "max_tx_rate": current.get("max_tx_rate", 0)}
        rate[key] = value
        return {"vf": index, "rate": rate}
    if key in ("spoofchk", "trust"):
        return {"vf": index, key: 1 if value else 0}
    if key == "link_state":
        return {"vf": index, "link_state": LINK_STATES[value]}
    if key in ("node_guid", "port_guid"):
        return {"vf": index, "ib_" + key: value}
    return {"vf": index, key: value}


def plan_settings(wanted, current, remembered):
    """``[(index, key, old, new)]`` to apply. GUIDs the kernel does not report are compared with what this module
    applied last (``remembered``)."""
    by_index = {vf["index"]: vf for vf in current}
    changes = []
    for vf in wanted:
        have = by_index.get(vf["index"], {})
        for key in SETTINGS:
            if key not in vf:
                continue
            old = have.get(key, remembered.get(str(vf["index"]), {}).get(key))
            if old != vf[key]:
                changes.append((vf["index"], key, old, vf[key]))
    return changes


def errno_reason(exc):
    code = getattr(exc, "code", None) or (exc.args[0] if exc.args and isinstance(exc.args[0], int) else None)
    if code == errno.EOPNOTSUPP:
        return "the PF's driver does not support this setting (EOPNOTSUPP)"
    if code == errno.EINVAL:
        return "the driver rejected the value (EINVAL)"
    if code == errno.EPERM:
        return "not permitted (EPERM: root, or the VF is trusted by another mechanism)"
    return str(exc)


class SriovState:
    """What this module applied, per PF: for settings the kernel does not report back (IB GUIDs on some drivers)."""

    def __init__(self, root, key):
        self.path = os.path.join(root, STATE_DIR, "%s.json" % key.replace("/", "_"))

    def load(self):
        try:
            with open(self.path) as handle:
                return json.load(handle)
        except (OSError, ValueError):
            return {}

    def save(self, data):
        write_json(self.path, data)


def ip_link_args(vf):
    """``ip link set dev PF vf N ...`` arguments reproducing one VF's settings (for the boot-time script)."""
    words = ["vf", str(vf["index"])]
    if "mac" in vf:
        words += ["mac", vf["mac"]]
    if "vlan" in vf:
        words += ["vlan", str(vf["vlan"])] + (["qos", str(vf["qos"])] if vf.get("qos") else [])
    if "min_tx_rate" in vf:
        words += ["min_tx_rate", str(vf["min_tx_rate"])]
    if "max_tx_rate" in vf:
        words += ["max_tx_rate", str(vf["max_tx_rate"])]
    for key in ("spoofchk", "trust"):
        if key in vf:
            words += [key, "on" if vf[key] else "off"]
    if "link_state" in vf:
        words += ["state", vf["link_state"]]
    if "node_guid" in vf:
        words += ["node_guid", vf["node_guid"]]
    if "port_guid" in vf:
        words += ["port_guid", vf["port_guid"]]
    return words


def persistence(pf, count, vfs, root="/"):
    """``{path: text}`` that re-create the VFs and their settings whenever the PF's netdev is added (every boot,
    every driver reload): a udev rule keyed by the PF's device (its PCI address; netdevsimN on netdevsim), never by the
    netdev's name (an add event still carries the kernel's first name, eth0, before udev renames it), and a script
    that finds the netdev's current name under the device."""
    key = pf.key
    device = os.path.basename(os.path.realpath(pf.dir))
    script = os.path.join(root, SCRIPT_FILE % key)
    rule = ("# aifabric.lab.sriov: %d VFs on %s, set up again whenever its netdev appears (boot, driver reload)\n"
            'ACTION=="add", SUBSYSTEM=="net", KERNELS=="%s", ATTR{device/sriov_numvfs}=="?*", RUN+="%s"\n'
            % (count, key, device, "/" + (SCRIPT_FILE % key)))
    lines = ["#!/bin/sh",
             "# aifabric.lab.sriov: VFs of %s (device %s). Written by the module; run by udev." % (key, device),
             "dev=$(readlink -f /sys/bus/*/devices/%s)" % device,
             'pf=$(ls "$dev/net" | head -n1)',
             'f="$dev/sriov_numvfs"',
             'if [ "$(cat "$f")" != %d ]; then' % count,
             '  [ "$(cat "$f")" = 0 ] || echo 0 > "$f"', '  echo %d > "$f"' % count, "fi"]
    for vf in vfs:
        lines.append('ip link set dev "$pf" %s' % " ".join(ip_link_args(vf)))
    return {os.path.join(root, RULES_FILE % key): rule, script: "\n".join(lines) + "\n"}


def read_settings(ipr, netdev):
    """(ifindex, IFLA_NUM_VF, each VF's settings) of the PF's netdev, through netlink."""
    index = ipr.link_lookup(ifname=netdev)
    if not index:
        raise SriovError("pf: netdev %s vanished" % netdev)
    link = ipr.get_links(index[0], ext_mask=1)[0]
    return index[0], link.get_attr("IFLA_NUM_VF"), parse_vfinfo(link)


def describe(pf, settings):
    """Each VF's netlink settings with its PCI function and netdevs (``pci_address``, ``netdevs``, ...)."""
    out = []
    for vf in settings:
        item = dict(vf)
        item.update({"pci_" + k if k != "netdevs" else k: v for k, v in pf.vf_device(vf["index"]).items()})
        out.append(item)
    return out


def wait_for(check, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value is True:
            return
        if time.monotonic() > deadline:
            raise SriovError("timed out after %.0f s waiting for %s (%s)" % (timeout, what, value))
        time.sleep(0.1)
