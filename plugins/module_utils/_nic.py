# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which NIC a host's step ran on, as the test report identifies it (the BMWG draft's DUT identification): the
interface's driver, its version and the firmware (the kernel's ethtool driver information), its speed and MTU, the
PCI device under it (id, NUMA node) and the RDMA device's firmware and type, where the host has them. ``root=`` for
fixture trees; whatever cannot be read is left out, never guessed."""

from __future__ import annotations

import array
import fcntl
import os
import socket
import struct

from ._pci import PciSysfs
from ._rdma_sysfs import device_dir, read_text

__all__ = ["drvinfo", "identify"]

_SIOCETHTOOL = 0x8946
_ETHTOOL_GDRVINFO = 0x00000003
_DRVINFO_SIZE = 196  # struct ethtool_drvinfo: cmd, driver[32], version[32], fw_version[32], bus_info[32], ...


def _cstr(raw):
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace") or None


def drvinfo(interface):
    """``{driver, version, firmware, bus}`` from the kernel's ethtool driver information of ``interface`` (in this
    process' network namespace), or None when it cannot be asked (no such interface, no ethtool support)."""
    name = str(interface).encode()
    if not name or len(name) >= 16:
        return None
    buf = array.array("B", struct.pack("I", _ETHTOOL_GDRVINFO) + b"\0" * (_DRVINFO_SIZE - 4))
    address, _length = buf.buffer_info()
    request = struct.pack("16sP", name, address).ljust(40, b"\0")
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            fcntl.ioctl(sock.fileno(), _SIOCETHTOOL, request)
    except OSError:
        return None
    raw = buf.tobytes()
    out = {"driver": _cstr(raw[4:36]), "version": _cstr(raw[36:68]), "firmware": _cstr(raw[68:100]),
           "bus": _cstr(raw[100:132])}
    return {k: v for k, v in out.items() if v}


def _int(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def identify(interface, rdma_device=None, root="/", ask_kernel=True):
    """What identifies the NIC under ``interface`` (and ``rdma_device``): ``{interface, driver, driver_version,
    firmware, bus, speed_mbps, mtu, pci: {address, id, numa_node}, rdma: {device, fw_ver, hca_type, board_id}}``,
    each key only when known. ``ask_kernel``: ask ethtool (False for fixture trees)."""
    out = {"interface": interface}
    info = drvinfo(interface) if ask_kernel else None
    if info:
        out.update(driver=info.get("driver"), driver_version=info.get("version"), firmware=info.get("firmware"),
                   bus=info.get("bus"))
    net = os.path.join(root, "sys/class/net", str(interface))
    speed, mtu = _int(read_text(os.path.join(net, "speed"))), _int(read_text(os.path.join(net, "mtu")))
    if speed is not None and speed > 0:
        out["speed_mbps"] = speed
    if mtu is not None:
        out["mtu"] = mtu
    pci = PciSysfs(root)
    bdf = pci.netdev_address(interface)
    if bdf:
        device = pci.device(bdf)
        out["pci"] = {k: device.get(k) for k in ("address", "id", "numa_node") if device.get(k) is not None}
        if not out.get("driver") and device.get("driver"):
            out["driver"] = device["driver"]
    if rdma_device:
        base = device_dir(rdma_device, root)
        rdma = {"device": rdma_device}
        for key in ("fw_ver", "hca_type", "board_id", "node_type"):
            value = read_text(os.path.join(base, key))
            if value:
                rdma[key] = value
        out["rdma"] = rdma
    return {k: v for k, v in out.items() if v is not None}
