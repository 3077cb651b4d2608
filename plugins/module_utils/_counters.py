# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One snapshot of the wire's own books: RDMA port counters, hw_counters, netdev statistics, qdisc statistics, and a
NIC's own QoS counters from its ethtool statistics.

Readers take ``root=`` so tests hand them fixture trees shaped like real ones. IB ``port_xmit_data`` and
``port_rcv_data`` count 4-byte words; the snapshot adds ``port_xmit_bytes``/``port_rcv_bytes`` (x4). ``lifespan`` in
hw_counters is a setting (how long the kernel caches them, in ms), not a counter, and is left out. The RDMA
hw_counters hold DCQCN's books on mlx5: ``np_ecn_marked_roce_packets`` (RoCE packets that arrived ECN-marked),
``np_cnp_sent`` (CNPs this port sent for them) and ``rp_cnp_handled`` (CNPs it received and slowed down for).

Per-priority PFC counters (mlx5: ``rx_prio3_pause``, ``rx_prio3_pause_duration`` in microseconds,
``rx_prio3_pause_transition``, their ``tx_`` twins; only for the priorities with PFC on) are driver statistics, the
``ETH_SS_STATS`` string set of ``ethtool -S``. They come through the ethtool ioctl (SIOCETHTOOL: ETHTOOL_GSSET_INFO,
ETHTOOL_GSTRINGS, ETHTOOL_GSTATS, with pyroute2's ``IoctlEthtool``), because ethtool netlink carries no driver
statistics: ETHTOOL_MSG_STATS_GET has only the standard groups (IEEE 802.3 PHY, MAC, control, RMON) and
ETHTOOL_MSG_PAUSE_GET's statistics count link-level pause frames without their priority. Only the QoS counters
(``QOS_STATS``) are kept of the hundreds mlx5 has.
"""

from __future__ import annotations

import errno
import os
import re
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


# mlx5's QoS statistics (en_stats.c: pport_per_prio_pfc, pport_per_prio_traffic, pport_per_tc_congest, the global
# pause and pause-storm counters; docs: Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst)
QOS_STATS = re.compile(r"^((rx|tx)_prio[0-7]_(pause|pause_duration|pause_transition|discards|buf_discard|"
                       r"cong_discard|marked)|(rx|tx)_global_pause(_duration|_transition)?|(rx|tx)_pause_ctrl_phy|"
                       r"tx_pause_storm_(warning|error)_events|rx_discards_phy)$")


class EthtoolError(Exception):
    """A netdev that has no ethtool statistics; names it."""


def _ioctl_ethtool(name):
    from pyroute2.ethtool.ioctl import IoctlEthtool

    return IoctlEthtool(name)


def read_ethtool(names, ethtool=_ioctl_ethtool, keep=QOS_STATS):
    """``{netdev: {statistic: value}}``, the driver statistics whose names ``keep`` matches. ``ethtool(name)`` gives
    an object with ``get_statistics()`` (``[(name, value)]``) and ``close()``."""
    out = {}
    for name in names:
        try:
            handle = ethtool(name)
        except OSError as exc:
            raise EthtoolError("ethtool: %s: %s" % (name, os.strerror(exc.errno))) from None
        try:
            stats = handle.get_statistics()
        except Exception as exc:  # pyroute2's NotSupportedError, NoSuchDevice; an OSError
            code = getattr(exc, "errno", None)
            reason = {None: "its driver has no ethtool statistics (lo, and other software devices)"}.get(
                code, os.strerror(code) if isinstance(code, int) else str(exc))
            if type(exc).__name__ == "NoSuchDevice" or code == errno.ENODEV:
                reason = "there is no such interface here"
            raise EthtoolError("ethtool: %s: %s" % (name, reason)) from None
        finally:
            handle.close()
        out[name] = {k: int(v) for k, v in stats if keep.search(k)}
    return out


def read_qdiscs(ipr, names):
    """Root qdisc and class counters of each device, through netlink (the tc_shape module's reader)."""
    from ._tc import Shaper

    return {name: Shaper(ipr, name).counters() for name in names}


def marked_ports(ipr):
    """The devices of this namespace whose root htb carries the collection's ECN marker (``_ecn``), by name."""
    from ._ecn import Marker

    out = []
    for link in ipr.get_links():
        name = link.get_attr("IFLA_IFNAME")
        try:
            found = Marker(ipr, name).find()[1] is not None
        except Exception:  # noqa: BLE001  EcnError, pyroute2's NetlinkError: a device without an htb of ours
            found = False
        if found:
            out.append(name)
    return sorted(out)


def read_ecn(ipr, names):
    """``({device: counters}, {device: queue})`` of the ECN markers on ``names``: the marker's cumulative counters
    (packets, bytes, by codepoint on arrival, marked, dropped, early_dropped, and per wire segment: segs,
    ect_segs, marked_segs, dropped_segs), and apart from them what is not a counter (the configuration, the queue's
    backlog and its peak since the marker was put on, the marking histogram by queue depth as two lists). A device
    without a marker fails, naming it."""
    from ._ecn import COUNTERS, HIST_BUCKETS, EcnError, Marker

    counters, queues = {}, {}
    for name in names:
        try:
            values = Marker(ipr, name).read()
        except EcnError as exc:
            raise KeyError("ecn: %s" % exc) from None
        if not values or values.get("foreign"):
            raise KeyError("ecn: %s carries no ECN marker of aifabric.lab.ecn_marker (%s)" % (
                name, "a foreign one" if values else "none"))
        counters[name] = {k: values[k] for k in COUNTERS if k != "max_backlog"}
        queues[name] = {"limit_bytes": values["limit"], "min_threshold_bytes": values["min_threshold"],
                        "max_threshold_bytes": values["max_threshold"], "backlog_bytes": values["backlog"],
                        "max_backlog_bytes": values["max_backlog"],
                        "hist_ect": [values["hist_ect_%d" % b] for b in range(HIST_BUCKETS)],
                        "hist_marked": [values["hist_marked_%d" % b] for b in range(HIST_BUCKETS)]}
    return counters, queues


IPEXT_ECN = ("InNoECTPkts", "InECT1Pkts", "InECT0Pkts", "InCEPkts")


def read_ipext(root="/"):
    """The namespace's IP packets received by ECN codepoint (``IpExt`` of ``/proc/net/netstat``, per segment: the
    IP layer counts a GRO packet's ``gso_segs``); ``{}`` on a kernel without them."""
    try:
        with open(os.path.join(root, "proc/net/netstat")) as handle:
            lines = [line.split() for line in handle if line.startswith("IpExt:")]
    except OSError:
        return {}
    if len(lines) < 2:
        return {}
    values = dict(zip(lines[0][1:], lines[1][1:]))
    return {k: int(values[k]) for k in IPEXT_ECN if k in values}


def snapshot(root="/", rdma=None, netdevs=None, qdiscs=None, ipr=None, clock=time.time, ethtool=None,
             ethtool_reader=_ioctl_ethtool, ecn=None, ethtool_optional=False, ipext=False):
    """One snapshot. ``rdma``/``netdevs``: lists of names, or None for all; ``qdiscs``: device names (needs ipr);
    ``ethtool``: netdevs whose QoS statistics to read (the key is there only when asked, so older snapshots compare
    as before; with ``ethtool_optional`` a device without them reads as ``{}``, for a step's own snapshots, which
    must not fail on a NIC's driver); ``ecn``: devices whose ECN marker to read (needs ipr; the counters under
    ``ecn``, the queue under ``ecn_queue``)."""
    taken = clock()
    out = {"taken_at": taken, "rdma": read_rdma(root, rdma), "netdev": read_netdevs(root, netdevs), "qdisc": {}}
    if qdiscs:
        out["qdisc"] = read_qdiscs(ipr, qdiscs)
    if ethtool:
        if ethtool_optional:
            out["ethtool"] = {}
            for name in ethtool:
                try:
                    out["ethtool"].update(read_ethtool([name], ethtool_reader))
                except (EthtoolError, ImportError):
                    out["ethtool"][name] = {}
        else:
            out["ethtool"] = read_ethtool(ethtool, ethtool_reader)
    if ecn:
        out["ecn"], out["ecn_queue"] = read_ecn(ipr, ecn)
    if ipext:
        out["ipext"] = read_ipext(root)
    return out
