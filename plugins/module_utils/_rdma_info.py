# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""RDMA facts: port attributes through verbs (pyverbs), identity and the GID table from sysfs."""

from __future__ import annotations

import os

from ._rdma_sysfs import LINK_LAYER, MTU, PHYS_STATE, PORT_STATE, class_dir, device_dir, gid_table, link_rate, require
from ._rdma_sysfs import devices as devices_present
from ._rdma_sysfs import read_text as _read


class PyverbsAdapter:
    """The verbs queries rdma_info needs, through pyverbs (imported by the caller, passed in)."""

    def __init__(self, device_module):
        self.d = device_module

    def ports(self, name):
        ctx = self.d.Context(name=name)
        try:
            count = ctx.query_device().phys_port_cnt
            out = {}
            for port in range(1, count + 1):
                attr = ctx.query_port(port)
                out[port] = {"state": attr.state, "phys_state": attr.phys_state, "link_layer": attr.link_layer,
                             "active_mtu": attr.active_mtu, "max_mtu": attr.max_mtu, "active_speed": attr.active_speed,
                             "active_width": attr.active_width, "gid_tbl_len": attr.gid_tbl_len}
            return out
        finally:
            ctx.close()


def gather(verbs, root="/", devices=None):
    """``{devices: {...}, reason}``. ``verbs.ports(name)`` returns the raw port attributes by port number."""
    present = devices_present(root)
    if not present:
        return {"devices": {}, "reason": "no RDMA device in %s (a kernel without RDMA, or no RDMA driver loaded: "
                                         "for soft-RoCE, modprobe rdma_rxe and rdma link add)"
                                         % class_dir(root)}
    wanted = present if devices is None else list(devices)
    require(wanted, root, parameter="devices")
    out = {}
    for name in wanted:
        base = device_dir(name, root)
        ports = {}
        for port, raw in verbs.ports(name).items():
            gids = gid_table(name, port, root)
            entry = {
                "state": PORT_STATE.get(raw["state"], str(raw["state"])),
                "phys_state": PHYS_STATE.get(raw["phys_state"], str(raw["phys_state"])),
                "link_layer": LINK_LAYER.get(raw["link_layer"], str(raw["link_layer"])),
                "active_mtu": MTU.get(raw["active_mtu"]),
                "max_mtu": MTU.get(raw["max_mtu"]),
                "gid_table_len": raw["gid_tbl_len"],
                "gids": gids,
                "netdevs": sorted({g["netdev"] for g in gids if g.get("netdev")}),
            }
            entry.update(link_rate(raw["active_speed"], raw["active_width"]))
            ports[str(port)] = entry
        out[name] = {"node_guid": _read(os.path.join(base, "node_guid")),
                     "sys_image_guid": _read(os.path.join(base, "sys_image_guid")),
                     "fw_ver": _read(os.path.join(base, "fw_ver")),
                     "node_type": _read(os.path.join(base, "node_type")),
                     "ports": ports}
    return {"devices": out, "reason": None}
