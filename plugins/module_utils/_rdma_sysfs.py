# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""RDMA facts that sysfs holds (``root=`` for fixture trees), and the IB encodings pyverbs returns as numbers."""

from __future__ import annotations

import ipaddress
import os

# IB active_width enum -> lanes; active_speed enum -> (name, signalling Gb/s per lane, data Gb/s per lane).
WIDTH_LANES = {1: 1, 2: 4, 4: 8, 8: 12, 16: 2}
SPEED = {1: ("SDR", 2.5, 2.0), 2: ("DDR", 5.0, 4.0), 4: ("QDR", 10.0, 8.0), 8: ("FDR10", 10.3125, 10.0),
         16: ("FDR", 14.0625, 13.64), 32: ("EDR", 25.78125, 25.0), 64: ("HDR", 53.125, 50.0),
         128: ("NDR", 106.25, 100.0), 256: ("XDR", 212.5, 200.0)}
MTU = {1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096}
PORT_STATE = {0: "NOP", 1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}
PHYS_STATE = {1: "SLEEP", 2: "POLLING", 3: "DISABLED", 4: "PORT_CONFIGURATION_TRAINING", 5: "LINK_UP",
              6: "LINK_ERROR_RECOVERY", 7: "PHY_TEST"}
LINK_LAYER = {0: "unspecified", 1: "InfiniBand", 2: "Ethernet"}


def class_dir(root="/"):
    """Where the kernel lists RDMA devices (under ``root``: fixture trees in tests)."""
    return os.path.join(root, "sys/class/infiniband")


def devices(root="/"):
    """The RDMA devices present, by name."""
    base = class_dir(root)
    return sorted(os.listdir(base)) if os.path.isdir(base) else []


def device_dir(device, root="/"):
    return os.path.join(class_dir(root), str(device))


def port_dir(device, port, root="/"):
    return os.path.join(device_dir(device, root), "ports", str(port))


def under_device(device_path):
    """The RDMA devices a PCI function (or any sysfs device directory) carries: its ``infiniband/`` children."""
    base = os.path.join(device_path, "infiniband")
    return sorted(os.listdir(base)) if os.path.isdir(base) else []


def under_netdev(netdev, root="/"):
    """The RDMA devices of the hardware NIC under ``netdev`` (soft-RoCE, which rides on the netdev, has none here)."""
    return under_device(os.path.join(root, "sys/class/net", netdev, "device"))


def require(wanted, root="/", parameter="rdma_devices"):
    """Raise KeyError naming ``parameter`` and what is present when a device of ``wanted`` is not here."""
    present = devices(root)
    missing = [d for d in wanted if d not in present]
    if missing:
        raise KeyError("%s: no RDMA device %s here (present: %s)"
                       % (parameter, ", ".join(missing), ", ".join(present) or "none"))
    return present


def read_text(path):
    """A sysfs attribute's text, or None when it cannot be read (absent, EINVAL, permissions)."""
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return None


def link_rate(speed, width):
    """``{speed, width, signalling_gbps, data_gbps}`` from the enums (4X SDR: 10 Gb/s signalling, 8 Gb/s data)."""
    name, signal, data = SPEED.get(speed, ("unknown(%s)" % speed, 0.0, 0.0))
    lanes = WIDTH_LANES.get(width, 0)
    return {"speed": name, "width": "%dX" % lanes if lanes else "unknown(%s)" % width,
            "signalling_gbps": signal * lanes, "data_gbps": round(data * lanes, 4)}


def gid_table(device, port, root="/"):
    """The port's non-empty GIDs: ``[{index, gid, type, netdev}]`` (entries whose type the kernel refuses are empty)."""
    base = port_dir(device, port, root)
    if not os.path.isdir(base):
        raise KeyError("no RDMA device %s with port %s (no %s)" % (device, port, base))
    table = []
    names = [n for n in os.listdir(os.path.join(base, "gids")) if n.isdigit()]
    for name in sorted(names, key=int):
        try:
            with open(os.path.join(base, "gids", name)) as handle:
                gid = ipaddress.IPv6Address(handle.read().strip())
            with open(os.path.join(base, "gid_attrs", "types", name)) as handle:
                kind = handle.read().strip()
        except (OSError, ValueError):
            continue
        if gid.packed == bytes(16):
            continue
        try:
            with open(os.path.join(base, "gid_attrs", "ndevs", name)) as handle:
                netdev = handle.read().strip()
        except OSError:
            netdev = None
        entry = {"index": int(name), "gid": _gid_text(gid), "type": kind, "netdev": netdev}
        if gid.ipv4_mapped:
            entry["ipv4"] = str(gid.ipv4_mapped)
        table.append(entry)
    return table


def _gid_text(gid):
    """A GID as text, the same on every Python: an IPv4-mapped GID in hex groups (``::ffff:c612:6401``, as Python
    before 3.13 and the kernel's own tools write it; 3.13 writes ``::ffff:198.18.100.1``)."""
    if gid.ipv4_mapped is None:
        return str(gid)
    value = int(gid)
    return "::ffff:%x:%x" % (value >> 16 & 0xFFFF, value & 0xFFFF)
