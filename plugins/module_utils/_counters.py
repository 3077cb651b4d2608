# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One snapshot of the wire's own books: RDMA port counters, hw_counters, netdev statistics, qdisc statistics.

Readers take ``root=`` so tests hand them fixture trees shaped like real ones. IB ``port_xmit_data`` and
``port_rcv_data`` count 4-byte words; the snapshot adds ``port_xmit_bytes``/``port_rcv_bytes`` (x4). ``lifespan`` in
hw_counters is a setting (how long the kernel caches them, in ms), not a counter, and is left out.
"""

from __future__ import annotations

import os
import time

from . import _rdma_sysfs as _rdma
from ._rdma_sysfs import read_text as _read_text

_NOT_COUNTERS = {"lifespan"}


def _read_int_dir(path):
    out = {}
    if not os.path.isdir(path):
        return out
    for name in sorted(os.listdir(path)):
        if name in _NOT_COUNTERS:
            continue
        try:
            with open(os.path.join(path, name)) as handle:
                out[name] = int(handle.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # unreadable (permissions, EINVAL) or not a number
    return out


def read_rdma(root="/", devices=None):
    """``{device: {port: {state, rate, link_layer, counters, hw_counters}}}``; unknown devices raise KeyError."""
    wanted = _rdma.devices(root) if devices is None else list(devices)
    _rdma.require(wanted, root)
    out = {}
    for device in wanted:
        ports_dir = os.path.join(_rdma.device_dir(device, root), "ports")
        out[device] = {}
        for port in sorted(os.listdir(ports_dir)):
            pdir = os.path.join(ports_dir, port)
            counters = _read_int_dir(os.path.join(pdir, "counters"))
            for word, byte in (("port_xmit_data", "port_xmit_bytes"), ("port_rcv_data", "port_rcv_bytes")):
                if word in counters:
                    counters[byte] = counters[word] * 4
            out[device][port] = {
                "state": _read_text(os.path.join(pdir, "state")),
                "rate": _read_text(os.path.join(pdir, "rate")),
                "link_layer": _read_text(os.path.join(pdir, "link_layer")),
                "counters": counters,
                "hw_counters": _read_int_dir(os.path.join(pdir, "hw_counters")),
            }
    return out


def read_netdevs(root="/", names=None):
    base = os.path.join(root, "sys/class/net")
    present = sorted(os.listdir(base)) if os.path.isdir(base) else []
    wanted = present if names is None else list(names)
    missing = [n for n in wanted if n not in present]
    if missing:
        raise KeyError("netdevs: no interface %s here (present: %s)" % (", ".join(missing), ", ".join(present)))
    return {name: _read_int_dir(os.path.join(base, name, "statistics")) for name in wanted}


def read_qdiscs(ipr, names):
    """Root qdisc and class counters of each device, through netlink (the tc_shape module's reader)."""
    from ._tc import Shaper

    return {name: Shaper(ipr, name).counters() for name in names}


def snapshot(root="/", rdma=None, netdevs=None, qdiscs=None, ipr=None, clock=time.time):
    """One snapshot. ``rdma``/``netdevs``: lists of names, or None for all; ``qdiscs``: device names (needs ipr)."""
    taken = clock()
    out = {"taken_at": taken, "rdma": read_rdma(root, rdma), "netdev": read_netdevs(root, netdevs), "qdisc": {}}
    if qdiscs:
        out["qdisc"] = read_qdiscs(ipr, qdiscs)
    return out
