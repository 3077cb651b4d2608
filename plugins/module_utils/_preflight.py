# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one lab host has for an experiment, read and never changed: the data interface (netlink: MTU, state; sysfs:
speed, NUMA node, driver), the RDMA port on it (sysfs: state, rate, the RoCE v2 GID that carries the lab address),
the route and MTU towards each peer (netlink), the perftest tools' versions, and the leftovers of earlier runs
(``_leftovers.Scanner``, listing only). The controller's checks and table are ``plugin_utils/_preflight``.

Readers take ``root=`` (fixture trees shaped like real sysfs) and an ``ipr`` (pyroute2's IPRoute, or any object with
its ``link``/``route``/``link_lookup`` methods)."""

from __future__ import annotations

import os
import re

from . import _rdma_sysfs as _rdma
from ._pyroute2 import nla

# RoCE's headers inside the netdev's MTU (GRH 40, UDP 8, BTH 12, the largest extended headers 28+4, ICRC 4: the
# kernel's iboe_get_mtu): the largest IB MTU that fits in what is left is the port's active MTU.
ROCE_OVERHEAD = 40 + 8 + 12 + 4 + 28 + 4
IB_MTUS = (4096, 2048, 1024, 512, 256)
PERFTEST_VERSION = re.compile(r"Version:\s*([0-9][0-9.]*)")


class PreflightError(Exception):
    """A parameter the preflight cannot use; the message names it and the fix."""


def roce_mtu(netdev_mtu):
    """The RoCE active MTU a netdev MTU gives (1500 -> 1024, 4200 -> 4096, 9000 -> 4096), None below 256."""
    if netdev_mtu is None:
        return None
    for mtu in IB_MTUS:
        if netdev_mtu - ROCE_OVERHEAD >= mtu:
            return mtu
    return None


def _int(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def interface(name, ipr, root="/"):
    """``{name, present, mtu, operstate, speed_mbps, numa_node, driver, device}`` of a netdev (``device``: what it
    sits on, a PCI address or virtioN). speed and NUMA node are None where the kernel has none (virtio: speed -1; a
    NIC without a node: -1)."""
    index = ipr.link_lookup(ifname=name)
    if not index:
        return {"name": name, "present": False}
    link = ipr.link("get", index=index[0])[0]
    base = os.path.join(root, "sys/class/net", name)
    speed = _int(_rdma.read_text(os.path.join(base, "speed")))
    numa = _int(_rdma.read_text(os.path.join(base, "device", "numa_node")))
    driver = os.path.join(base, "device", "driver")
    device = os.path.join(base, "device")
    return {"name": name, "present": True, "mtu": nla(link, "IFLA_MTU"), "operstate": nla(link, "IFLA_OPERSTATE"),
            "speed_mbps": speed if speed is not None and speed > 0 else None,
            "numa_node": numa if numa is not None and numa >= 0 else None,
            "driver": os.path.basename(os.path.realpath(driver)) if os.path.islink(driver) else None,
            "device": os.path.basename(os.path.realpath(device)) if os.path.islink(device) else None}


def _state(text):
    """``4: ACTIVE`` -> ``ACTIVE``, ``5: LinkUp`` -> ``LinkUp``."""
    return text.split(":", 1)[1].strip() if text and ":" in text else text


def rdma_port(device, address, netdev, root="/"):
    """The RDMA device's ports: state, physical state, link layer, rate, and the RoCE v2 GID that carries ``address``
    on ``netdev`` (its index is what perftest's ``-x`` takes). ``present`` false when the device is not here."""
    present = _rdma.devices(root)
    if device not in present:
        return {"device": device, "present": False, "devices": present}
    ports = {}
    for port in sorted(os.listdir(os.path.join(_rdma.device_dir(device, root), "ports")), key=int):
        pdir = _rdma.port_dir(device, port, root)
        gids = _rdma.gid_table(device, port, root)
        v2 = [g for g in gids if g["type"] == "RoCE v2" and g.get("ipv4") == address
              and (netdev is None or g["netdev"] == netdev)]
        ports[port] = {"state": _state(_rdma.read_text(os.path.join(pdir, "state"))),
                       "phys_state": _state(_rdma.read_text(os.path.join(pdir, "phys_state"))),
                       "link_layer": _rdma.read_text(os.path.join(pdir, "link_layer")),
                       "rate": _rdma.read_text(os.path.join(pdir, "rate")),
                       "roce_v2_gid_index": v2[0]["index"] if v2 else None,
                       "roce_v2_gid": v2[0]["gid"] if v2 else None,
                       "netdevs": sorted({g["netdev"] for g in gids if g["netdev"]})}
    return {"device": device, "present": True, "ports": ports}


def rdma_devices_on(netdev, root="/"):
    """The RDMA devices that ride on ``netdev``: a NIC's own (under its PCI function) and soft-RoCE's (whose GIDs
    name the netdev)."""
    found = set(_rdma.under_netdev(netdev, root))
    for device in _rdma.devices(root):
        ports = os.path.join(_rdma.device_dir(device, root), "ports")
        for port in os.listdir(ports) if os.path.isdir(ports) else []:
            try:
                if any(g["netdev"] == netdev for g in _rdma.gid_table(device, port, root)):
                    found.add(device)
            except KeyError:
                continue
    return sorted(found)


def path(peer, ipr):
    """The route to ``peer``: ``{peer, interface, interface_mtu, route_mtu, mtu, gateway}`` (``mtu`` what a packet
    to the peer may carry: the route's MTU when it has one, else the egress interface's); ``error`` when there is no
    route."""
    try:
        route = ipr.route("get", dst=peer)[0]
    except Exception as exc:  # pyroute2's NetlinkError: no route (ENETUNREACH), a bad address (EINVAL)
        return {"peer": peer, "error": "no route to %s (%s)" % (peer, exc)}
    oif = nla(route, "RTA_OIF")
    link = ipr.link("get", index=oif)[0] if oif else None
    metrics = nla(route, "RTA_METRICS") or {}
    route_mtu = nla(metrics, "RTAX_MTU") if metrics else None
    dev_mtu = nla(link, "IFLA_MTU") if link is not None else None
    mtus = [m for m in (dev_mtu, route_mtu) if m]
    return {"peer": peer, "interface": nla(link, "IFLA_IFNAME") if link is not None else None,
            "interface_mtu": dev_mtu, "route_mtu": route_mtu or None, "mtu": min(mtus) if mtus else None,
            "gateway": nla(route, "RTA_GATEWAY")}


def perftest_version(text):
    """The version in ``ib_write_bw --version``'s output (``Version: 6.06``), or None."""
    match = PERFTEST_VERSION.search(text or "")
    return match.group(1) if match else None


def gather(params, ipr, version=None, scanner=None, dcb=None, root="/"):
    """Everything the preflight reads on this host. ``version(tool) -> (rc, out, err)`` runs a perftest tool's
    ``--version``; ``scanner`` is a ``_leftovers.Scanner`` (None: leftovers not looked at); ``dcb(ifname)`` reads the
    NIC's DCB settings (``_dcb.read``; None: not looked at)."""
    name = params["interface"]
    if not name:
        raise PreflightError("interface: give the host's data interface (lab_interface), e.g. interface: ens1f0np0")
    facts = {"interface": interface(name, ipr, root), "address": params.get("address")}
    wanted = params.get("rdma_device")
    devices = [wanted] if wanted else rdma_devices_on(name, root)
    facts["rdma"] = [rdma_port(d, params.get("address"), name, root) for d in devices]
    facts["paths"] = [path(peer, ipr) for peer in params.get("peers") or []]
    facts["dcb"] = dcb(name) if dcb is not None and facts["interface"]["present"] else None
    facts["perftest"] = {}
    for tool in params.get("perftest_tools") or []:
        if version is None:
            break
        try:
            rc, out, err = version(tool)
        except OSError:
            rc, out, err = 127, "", ""
        facts["perftest"][tool] = perftest_version(out + "\n" + err) if rc in (0, 1) else None
    if scanner is not None:
        items, _changed, _errors = scanner.run(remove=False, check_mode=True)
        facts["leftovers"] = [item.to_dict() for item in items]
    else:
        facts["leftovers"] = None
    facts["kernel"] = os.uname().release
    return facts
