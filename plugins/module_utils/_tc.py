# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rate shaping through netlink (pyroute2 only; ``tc`` output is never parsed).

The shaper's layout, on the device (egress) or on an ifb device that the device's ingress is redirected to:

* ``htb``: qdisc ``1:`` with class ``1:1`` at ``rate`` (64-bit rates: 1kbit..400gbit). With ``fair_share_sources``,
  one child class per source (``1:11``, ``1:12``...) plus ``1:10`` for other traffic, each guaranteed an equal share
  and allowed to borrow up to ``rate``: max-min fair arbitration between sources, like a switch's per-port arbiter.
  u32 filters on the IPv4/IPv6 source pick the class. ``fair_share_destinations`` does the same by destination (a
  sender's port shared fairly between the peers it sends to, like a NIC's arbiter between its queue pairs).
  With ``ack_priority``, a class ``1:2`` beside ``1:1`` takes the host's small TCP segments (its ACKs for the flows
  it receives) ahead of the queued data and outside the rate: a throttle slows what the host sends, not the flows
  it receives (without it, their ACKs wait behind a queue of the host's own data, hundreds of milliseconds at a
  throttled rate, and those flows crawl).
  With ``fair_share_ports`` (K, a power of two), one child class per bucket of the TCP source port (``sport mod K``,
  u32 on the IPv4 TCP header, classes ``1:11``...): max-min fair between flows whose source ports fall in distinct
  buckets, as the fabric lab chooses them (every stream of a step in a bucket of its own), so that the flows that an
  ECMP hash puts on one link share it as the fair-share model says, whoever sends them.
* ``tbf``: a single token bucket. Its netlink message carries a 32-bit byte rate, so it stops at 34.3gbit.

``Shaper.read`` returns the same shape as ``desired_shaper`` builds, so ``changed`` is one comparison; any other root
(the kernel's default fq_codel, mq, noqueue or pfifo_fast, handle ``0:``, or someone's qdisc) reads as
``{qdisc, foreign: True, handle, default}``, which ``state: absent`` leaves alone.

Changes replace rather than delete then add (``Shaper.apply``); every netlink refusal is a ShapeError that names the
parameter it came from (rate, qdisc, fair_share_sources[i], ifb_device, ...) and how the device was left.

Marks (what ``aifabric.lab.lab_leftovers`` recognises): an htb root of ours has r2q ``R2Q_MARK``; the ifb devices are
named ``ifb-DEVICE`` (by default) and carry the alias ``aifabric.lab: ingress of DEVICE``; with ``state_dir`` each
shaper has a record, ``<state_dir>/shapers/<netns>/<shaped device>.json`` (the device, or for its ingress the ifb),
with its owner (_host_state.py).
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import struct
import time

from . import _host_state, _rdma_sysfs
from ._units import UnitError, format_rate, format_size, parse_rate, parse_size

try:
    from pyroute2.netlink.exceptions import NetlinkError
except ImportError:  # the module fails earlier with missing_required_lib; this keeps the name defined

    class NetlinkError(Exception):
        code = 0

HTB_HANDLE = 0x10000  # 1:
ROOT_CLASS = 0x10001  # 1:1
OTHER_CLASS = 0x10010  # 1:10
FIRST_SOURCE_CLASS = 0x10011  # 1:11
ACK_CLASS = 0x10002  # 1:2: small TCP segments (ACKs) beside the rate, with ack_priority
# an IPv4 TCP packet of less than 128 bytes: a pure ACK (or SYN/FIN), never a data segment of a bulk flow
ACK_KEYS = ["0x00060000/0x00ff0000+8", "0x00000000/0x0000ff80+0"]
TCP_KEY = "0x00060000/0x00ff0000+8"  # IPv4 protocol TCP
PORT_OFFSET = 20  # the TCP ports (source, destination) of an IPv4 header without options
INGRESS_HANDLE = 0xFFFF0000
TC_H_ROOT = 0xFFFFFFFF
TC_H_INGRESS = 0xFFFFFFF1
# The mark of an htb root this collection made: its r2q (rate to quantum), a field htb uses only for classes given
# without a quantum, which ours never are. `tc -d qdisc show` prints it: "r2q 44971".
R2Q_MARK = 0xAFAB
# The alias (IFLA_IFALIAS) of an ifb device made for a device's ingress
IFB_ALIAS = "aifabric.lab: ingress of %s"
IFB_PREFIX = "ifb-"
TBF_MAX_BPS = (2**32 - 1) * 8
QUANTUM = 131072
ETH_P_ALL = 0x0003
ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD


def ticks_to_bytes(ticks, rate_bytes):
    """A qdisc's buffer (psched ticks, as the kernel keeps it) back to bytes at ``rate_bytes`` per second."""
    from pyroute2.netlink.rtnl.tcmsg.common import tick_in_usec

    return int(round(ticks / tick_in_usec * rate_bytes / 1e6))


def same_shaper(current, desired):
    """Equal for the kernel: qdisc, rate, sources, and burst within 1% (it is stored in ticks, rounded)."""
    if not current or current.get("foreign"):
        return False
    for key in ("qdisc", "rate"):
        if current.get(key) != desired.get(key):
            return False
    for key in FAIR_KEYS:
        if (current.get(key) or []) != (desired.get(key) or []):
            return False
    if (current.get("fair_share_ports") or 0) != (desired.get("fair_share_ports") or 0):
        return False
    if bool(current.get("ack_priority")) != bool(desired.get("ack_priority")):
        return False
    if current.get("burst") is not None and abs(current["burst"] - desired["burst"]) > max(64, desired["burst"] * 0.01):
        return False
    return True


class ShapeError(ValueError):
    """Bad input or a device the shaper cannot use; the message names the parameter and the fix."""


def default_burst(rate_bps, mtu=1500):
    """At least 1 ms of tokens and ten frames: tc's own rate/HZ default under-delivers ~5-17% on veth at Gb/s rates,
    and at Mb/s rates in a VM a burst of a frame or two loses tokens to timer slack. Below 1 Mb/s two frames (ten would
    be minutes of tokens, beyond what tbf's 32-bit buffer holds)."""
    frames = 10 if rate_bps >= 10**6 else 2
    return max(int(rate_bps / 8 * 0.001), frames * (mtu + 14))


def ifb_name_for(device):
    return (IFB_PREFIX + device)[:15]


def desired_shaper(params, mtu=1500):
    """Validate parameters and return the shaper as the kernel should hold it (rates in bit/s, sizes in bytes)."""
    qdisc = params["qdisc"]
    try:
        rate = parse_rate(params["rate"], "rate")
        burst = parse_size(params["burst"], "burst", minimum=64) if params.get("burst") is not None else None
    except UnitError as exc:
        raise ShapeError(str(exc)) from None
    if qdisc == "tbf" and rate > TBF_MAX_BPS:
        raise ShapeError(
            "rate: %s is above what tbf can encode (%s, a 32-bit byte rate); use qdisc: htb, which carries 64-bit "
            "rates up to 400gbit" % (format_rate(rate), format_rate(TBF_MAX_BPS)))
    fair = {}
    for key, what in (("fair_share_sources", "source"), ("fair_share_destinations", "destination")):
        fair[key] = _networks(params.get(key) or [], key, what, qdisc)
    if fair["fair_share_sources"] and fair["fair_share_destinations"]:
        raise ShapeError("fair_share_sources and fair_share_destinations: give one (a port's arbiter shares it by "
                         "who sends or by whom it sends to, not both)")
    ports = params.get("fair_share_ports") or 0
    if ports:
        if qdisc != "htb" or ports & (ports - 1) or not 2 <= ports <= 256:
            raise ShapeError("fair_share_ports: %r; give a power of two from 2 to 256 (buckets of the source port), "
                             "with qdisc: htb" % (ports,))
        if any(fair.values()):
            raise ShapeError("fair_share_ports: not with fair_share_sources or fair_share_destinations; give one")
    burst = burst or default_burst(rate, mtu)
    shaper = {"qdisc": qdisc, "rate": rate, "burst": burst}
    if qdisc == "tbf":
        latency = params.get("latency") or 0.05
        shaper["limit"] = int(rate / 8 * latency + burst)
    else:
        shaper.update(fair)
        if ports:
            shaper["fair_share_ports"] = ports
        if params.get("ack_priority"):
            shaper["ack_priority"] = True
    if params.get("ack_priority") and qdisc != "htb":
        raise ShapeError("ack_priority: needs qdisc: htb (tbf has a single queue)")
    return shaper


def _networks(given, key, what, qdisc):
    if given and qdisc != "htb":
        raise ShapeError("%s: needs qdisc: htb (tbf has a single queue and no classes)" % key)
    networks = []
    for net in given:
        try:
            networks.append(str(ipaddress.ip_network(net, strict=False)))
        except ValueError:
            raise ShapeError(
                "%s: %r is not an address or prefix (e.g. 198.18.0.11 or 10.0.1.0/24)" % (key, net)) from None
    if len(set(networks)) != len(networks):
        raise ShapeError("%s: %s lists a %s twice" % (key, networks, what))
    if len(networks) > 200:
        raise ShapeError("%s: at most 200 %ss (got %d)" % (key, what, len(networks)))
    return networks


def describe(shaper):
    """Human-readable form for diff output."""
    if not shaper:
        return {}
    out = {"qdisc": shaper["qdisc"], "rate": format_rate(shaper["rate"])}
    for key in FAIR_KEYS:
        if shaper.get(key):
            out[key] = list(shaper[key])
    if shaper.get("ack_priority"):
        out["ack_priority"] = True
    if shaper.get("fair_share_ports"):
        out["fair_share_ports"] = shaper["fair_share_ports"]
    if shaper.get("burst"):
        out["burst"] = format_size(shaper["burst"])
    return out


FAIR_KEYS = ("fair_share_sources", "fair_share_destinations")
# where the address starts in the IP header: IPv4 source 12, destination 16; IPv6 source 8, destination 24
_OFFSET = {(4, "fair_share_sources"): 12, (4, "fair_share_destinations"): 16,
           (6, "fair_share_sources"): 8, (6, "fair_share_destinations"): 24}


def _u32_key(network, key="fair_share_sources"):
    """(protocol, u32 key strings) matching the source (or, for fair_share_destinations, the destination) of
    ``network``."""
    net = ipaddress.ip_network(network)
    base = _OFFSET[(net.version, key)]
    if net.version == 4:
        return ETH_P_IP, ["0x%08x/0x%08x+%d" % (int(net.network_address), int(net.netmask), base)]
    keys = []
    addr, mask = net.network_address.packed, net.netmask.packed
    for i in range(4):
        m = struct.unpack("!I", mask[4 * i:4 * i + 4])[0]
        if m:
            keys.append("0x%08x/0x%08x+%d" % (struct.unpack("!I", addr[4 * i:4 * i + 4])[0], m, base + 4 * i))
    return ETH_P_IPV6, keys or ["0x0/0x0+%d" % base]


def decode_u32_keys(sel):
    """[(val, mask, off)] from a decoded TCA_U32_SEL.

    pyroute2 0.9.7 decodes ``struct tc_u32_key`` one field off (its ``key_val`` holds the mask, ``key_off`` the
    value read little-endian, ``key_offmask`` the offset); later releases may fix it, so both layouts are read.
    """
    out = []
    for key in sel.get("keys", []):
        # a key this module writes always has a mask: pyroute2 0.9.7's layout shows it as key_val, with key_mask 0
        if key.get("key_mask"):
            out.append((key["key_val"] & 0xFFFFFFFF, key["key_mask"] & 0xFFFFFFFF, key["key_off"]))
        else:
            val = struct.unpack("!I", struct.pack("<I", key.get("key_off", 0) & 0xFFFFFFFF))[0]
            out.append((val, key.get("key_val", 0) & 0xFFFFFFFF, key.get("key_offmask", 0)))
    return out


def _network_from_keys(protocol, keys):
    """(key, network) of a fair-share filter: which of FAIR_KEYS it serves (by the header offset) and its network."""
    if protocol == ETH_P_IP and len(keys) == 1 and keys[0][2] in (12, 16):
        val, mask, off = keys[0]
        key = "fair_share_sources" if off == 12 else "fair_share_destinations"
        return key, str(ipaddress.ip_network("%s/%s" % (ipaddress.IPv4Address(val), ipaddress.IPv4Address(mask))))
    if protocol == ETH_P_IPV6 and keys:
        base = 8 if keys[0][2] < 24 else 24
        key = "fair_share_sources" if base == 8 else "fair_share_destinations"
        addr, mask = bytearray(16), bytearray(16)
        for val, m, off in keys:
            i = (off - base) // 4
            if 0 <= i < 4:
                addr[4 * i:4 * i + 4] = struct.pack("!I", val)
                mask[4 * i:4 * i + 4] = struct.pack("!I", m)
        prefix = bin(int.from_bytes(mask, "big")).count("1")
        return key, str(ipaddress.ip_network((bytes(addr), prefix), strict=False))
    return None, None


def _stats(msg):
    s2 = msg.get_attr("TCA_STATS2")
    basic = dict(s2.get_attr("TCA_STATS_BASIC") or {}) if s2 else {}
    queue = dict(s2.get_attr("TCA_STATS_QUEUE") or {}) if s2 else {}
    return {
        "bytes": basic.get("bytes", 0),
        "packets": basic.get("packets", 0),
        "drops": queue.get("drops", 0),
        "overlimits": queue.get("overlimits", 0),
        "requeues": queue.get("requeues", 0),
        "backlog_bytes": queue.get("backlog", 0),
        "qlen": queue.get("qlen", 0),
    }


def handle_text(handle):
    """A tc handle as tc prints it: ``1:``, ``8001:``, ``0:``, ``1:11``."""
    major, minor = handle >> 16, handle & 0xFFFF
    return "%x:%s" % (major, "%x" % minor if minor else "")


def netlink_reason(exc):
    """What a NetlinkError (or an OSError) means, in words, with its errno name."""
    code = getattr(exc, "code", None)
    if code is None and isinstance(exc, OSError):
        code = exc.errno
    if not isinstance(code, int) or code <= 0:
        return str(exc)
    name = "EOPNOTSUPP" if code == errno.EOPNOTSUPP else errno.errorcode.get(code, str(code))
    hint = {
        errno.EPERM: "not permitted: tc needs root (CAP_NET_ADMIN in this network namespace)",
        errno.EACCES: "not permitted: tc needs root (CAP_NET_ADMIN in this network namespace)",
        errno.EINVAL: "the kernel refused the value",
        errno.ENOENT: "no such qdisc, class or scheduler in the kernel",
        errno.EEXIST: "it exists already",
        errno.ENODEV: "the device went away",
        errno.EOPNOTSUPP: "the device or the kernel does not support it",
        errno.ENOMEM: "the kernel is out of memory",
        errno.ENOBUFS: "the kernel is out of buffer space",
        errno.EBUSY: "the device is busy",
    }.get(code, os.strerror(code))
    return "%s (%s)" % (hint, name)


class Shaper:
    """Reads and writes one device's shaper through an ``IPRoute``-like object (injected for tests)."""

    def __init__(self, ipr, device):
        self.ipr = ipr
        self.device = device
        found = ipr.link_lookup(ifname=device)
        if not found:
            names = sorted(link.get_attr("IFLA_IFNAME") for link in ipr.get_links())
            raise ShapeError("device: no interface named %r here (interfaces: %s)" % (device, ", ".join(names)))
        self.index = found[0]
        link = ipr.get_links(self.index)[0]
        self.mtu = link.get_attr("IFLA_MTU") or 1500
        info = link.get_attr("IFLA_LINKINFO")
        self.kind = info.get_attr("IFLA_INFO_KIND") if info else None

    # ---------------------------------------------------------------- reading
    def root_qdisc(self, index=None):
        for q in self.ipr.get_qdiscs(index=self.index if index is None else index):
            if q["parent"] == TC_H_ROOT:
                return q
        return None

    def ingress_qdisc(self):
        for q in self.ipr.get_qdiscs(index=self.index):
            if q["parent"] == TC_H_INGRESS:
                return q
        return None

    def has_ingress(self):
        return self.ingress_qdisc() is not None

    def read(self, index=None):
        """The shaper on ``index`` (default: the device) in desired_shaper()'s shape when it is ours (handle ``1:``,
        htb with class ``1:1`` or tbf); any other root as ``{qdisc, foreign: True, handle, default}`` (``default``: the
        kernel's own root, handle ``0:``, such as fq_codel, mq, noqueue or pfifo_fast); None without a root qdisc."""
        index = self.index if index is None else index
        root = self.root_qdisc(index)
        if root is None:
            return None
        kind = root.get_attr("TCA_KIND")
        if root["handle"] != HTB_HANDLE or kind not in ("htb", "tbf"):
            return {"qdisc": kind, "foreign": True, "handle": handle_text(root["handle"]),
                    "default": root["handle"] == 0}
        if kind == "tbf":
            parms = root.get_attr("TCA_OPTIONS").get_attr("TCA_TBF_PARMS")
            return {"qdisc": "tbf", "rate": parms["rate"] * 8, "burst": ticks_to_bytes(parms["buffer"], parms["rate"]),
                    "limit": parms["limit"]}
        classes = {c["handle"]: c for c in self.ipr.get_classes(index=index)}
        if ROOT_CLASS not in classes:
            return {"qdisc": "htb", "foreign": True, "handle": "1:", "default": False}
        rate = self._class_rate(classes[ROOT_CLASS])
        fair = {key: [] for key in FAIR_KEYS}
        buckets = set()
        for f in self.ipr.get_filters(index=index, parent=HTB_HANDLE):
            opts = f.get_attr("TCA_OPTIONS")
            if not opts or f.get_attr("TCA_KIND") != "u32" or opts.get_attr("TCA_U32_CLASSID") is None:
                continue
            sel = opts.get_attr("TCA_U32_SEL")
            protocol = socket.ntohs(f["info"] & 0xFFFF)
            if opts.get_attr("TCA_U32_CLASSID") == ACK_CLASS:
                continue
            keys = decode_u32_keys(sel or {})
            # the source port's low bits: at offset 20 (as written), or 21 (as the kernel keeps a one-byte mask)
            port_key = [(v >> shift, m >> shift) for v, m, off in keys
                        for shift in ({PORT_OFFSET: 16, PORT_OFFSET + 1: 24}.get(off),) if shift is not None]
            if protocol == ETH_P_IP and port_key:
                buckets.add((port_key[0][1], port_key[0][0]))
                continue
            key, network = _network_from_keys(protocol, keys)
            fair.setdefault(key, []).append((opts.get_attr("TCA_U32_CLASSID"), network))
        buffer_ticks = classes[ROOT_CLASS].get_attr("TCA_OPTIONS").get_attr("TCA_HTB_PARMS")["buffer"]
        out = {"qdisc": "htb", "rate": rate, "burst": ticks_to_bytes(buffer_ticks, rate // 8)}
        for key in FAIR_KEYS:
            out[key] = [network for _classid, network in sorted(fair[key])]
        if ACK_CLASS in classes:
            out["ack_priority"] = True
        if buckets:
            k = max(mask for mask, _value in buckets) + 1
            if buckets == {(k - 1, b) for b in range(k)}:
                out["fair_share_ports"] = k
            else:
                out["fair_share_ports"] = -1  # not a layout this module makes: replaced
        return out

    def marked(self, index=None):
        """Whether the root qdisc carries this collection's mark: htb ``1:`` with r2q R2Q_MARK (tbf has no field for
        one: its record in the state directory is its mark)."""
        root = self.root_qdisc(self.index if index is None else index)
        if root is None or root["handle"] != HTB_HANDLE or root.get_attr("TCA_KIND") != "htb":
            return False
        opts = root.get_attr("TCA_OPTIONS")
        init = opts.get_attr("TCA_HTB_INIT") if opts else None
        return bool(init) and init.get("rate2quantum") == R2Q_MARK

    @staticmethod
    def _class_rate(msg):
        opts = msg.get_attr("TCA_OPTIONS")
        rate64 = opts.get_attr("TCA_HTB_RATE64")
        return (rate64 or opts.get_attr("TCA_HTB_PARMS")["rate"]) * 8

    def counters(self, index=None):
        index = self.index if index is None else index
        root = self.root_qdisc(index)
        out = {"qdisc": _stats(root) if root is not None else None, "classes": {}}
        if root is not None and root.get_attr("TCA_KIND") == "htb":
            for c in self.ipr.get_classes(index=index):
                out["classes"]["%x:%x" % (c["handle"] >> 16, c["handle"] & 0xFFFF)] = _stats(c)
        return out

    # ---------------------------------------------------------------- writing
    def _tc(self, param, what, *args, **kwargs):
        """One netlink request; a refusal becomes a ShapeError naming the parameter that caused it."""
        try:
            return self.ipr.tc(*args, **kwargs)
        except (NetlinkError, OSError) as exc:
            raise ShapeError("%s: %s on %s: %s" % (param, what, self.device, netlink_reason(exc))) from None

    def steps(self, shaper, index, classes_only=False):
        """The netlink requests that build ``shaper`` on ``index``, in order, as ``(param, what, args, kwargs)``:
        the qdisc by "replace" (NLM_F_CREATE|NLM_F_REPLACE: a foreign or default root is swapped for it in one
        step), then its classes and filters. ``classes_only``: the classes alone, by "replace-class", to change the
        rates of a shaper that already has this layout (htb cannot change a qdisc in place, but it changes a class)."""
        rate_bytes = shaper["rate"] // 8
        burst = shaper["burst"]
        rate_text = "%s (burst %s)" % (format_rate(shaper["rate"]), format_size(burst))
        if shaper["qdisc"] == "tbf":
            return [("rate", "tbf %s" % rate_text, ("replace", "tbf", index, HTB_HANDLE),
                     dict(rate=rate_bytes, burst=burst, limit=shaper["limit"]))]
        key = next((k for k in FAIR_KEYS if shaper.get(k)), FAIR_KEYS[0])
        sources = shaper.get(key) or []
        if shaper.get("fair_share_ports"):
            sources = list(range(shaper["fair_share_ports"]))
        cls = "replace-class" if classes_only else "add-class"
        out = []
        if not classes_only:
            out.append(("qdisc", "htb qdisc 1: at the root", ("replace", "htb", index, HTB_HANDLE),
                        dict(default=(OTHER_CLASS & 0xFFFF) if sources else 1, r2q=R2Q_MARK)))
        out.append(("rate", "htb class 1:1 at %s" % rate_text, (cls, "htb", index, ROOT_CLASS),
                    dict(parent=HTB_HANDLE, rate=rate_bytes, ceil=rate_bytes, burst=burst, cburst=burst,
                         quantum=QUANTUM)))
        if shaper.get("ack_priority"):
            # a class of its own under the qdisc (a root class: it cannot borrow, so its rate is its ceiling), at
            # the rate itself: ACKs are 0.5-2% of the data they acknowledge, and the filter admits only IPv4 TCP
            # packets under 128 bytes, so this class never carries the host's data
            ack_rate = max(1000, rate_bytes)
            out.append(("ack_priority", "htb class 1:2 for ACKs at %s" % rate_text, (cls, "htb", index, ACK_CLASS),
                        dict(parent=HTB_HANDLE, rate=ack_rate, ceil=ack_rate, burst=burst, cburst=burst,
                             quantum=QUANTUM, prio=0)))
            if not classes_only:
                out.append(("ack_priority", "the u32 filter of small TCP segments to 1:2",
                            ("add-filter", "u32", index), dict(parent=HTB_HANDLE, prio=1, protocol=ETH_P_IP,
                                                               target=ACK_CLASS, keys=ACK_KEYS)))
        if not sources:
            return out
        share = max(1, rate_bytes // (len(sources) + 1))
        param_of = "fair_share_ports" if shaper.get("fair_share_ports") else key
        out.append((param_of, "htb class 1:10 (other traffic) at %s of %s" % (
            format_rate(share * 8), format_rate(shaper["rate"])), (cls, "htb", index, OTHER_CLASS),
            dict(parent=ROOT_CLASS, rate=share, ceil=rate_bytes, burst=burst, cburst=burst, quantum=QUANTUM)))
        for i, network in enumerate(sources):
            classid = FIRST_SOURCE_CLASS + i
            if shaper.get("fair_share_ports"):
                param = "fair_share_ports"
                label = "source-port bucket %d of %d" % (network, shaper["fair_share_ports"])
            else:
                param = "%s[%d]" % (key, i)
                label = network
            out.append((param, "htb class %s for %s at %s" % (handle_text(classid), label, format_rate(share * 8)),
                        (cls, "htb", index, classid),
                        dict(parent=ROOT_CLASS, rate=share, ceil=rate_bytes, burst=burst, cburst=burst,
                             quantum=QUANTUM)))
            if classes_only:
                continue
            if shaper.get("fair_share_ports"):
                mask = shaper["fair_share_ports"] - 1
                port_key = "0x%08x/0x%08x+%d" % (network << 16, mask << 16, PORT_OFFSET)
                out.append((param, "the u32 filter of %s" % label, ("add-filter", "u32", index),
                            dict(parent=HTB_HANDLE, prio=10 + i + 1, protocol=ETH_P_IP, target=classid,
                                 keys=[TCP_KEY, port_key])))
            else:
                protocol, keys = _u32_key(network, key)
                out.append((param, "the u32 filter of %s" % label, ("add-filter", "u32", index),
                            dict(parent=HTB_HANDLE, prio=10 + i + 1, protocol=protocol, target=classid, keys=keys)))
        return out

    def _run(self, steps):
        for param, what, args, kwargs in steps:
            self._tc(param, what, *args, **kwargs)

    def apply(self, shaper, index=None):
        """Put ``shaper`` on ``index``, replacing, not deleting then adding, wherever the kernel allows:

        * the same layout (qdisc, classes, filters) at other rates: tbf by "replace" of the qdisc (tbf changes in
          place), htb by "replace-class" of each class; a refusal puts the classes already changed back;
        * a new shaper over a foreign or default root (another handle than ``1:``): "replace" swaps the root for the
          new qdisc in one request, then the classes and filters follow;
        * a new layout where a root ``1:`` is (ours, or anyone's: the kernel neither changes an htb qdisc nor swaps
          kinds under one handle): that root is deleted first.

        A refusal part-way leaves no half shaper: what was built is deleted, and a shaper of ours that was there is
        built again. The ShapeError names the parameter, the device and how the device was left. Returns how it was
        done: ``"replaced"`` (in place) or ``"rebuilt"``."""
        index = self.index if index is None else index
        root = self.root_qdisc(index)
        current = self.read(index)
        ours = current if current and not current.get("foreign") else None
        if ours and same_layout(ours, shaper):
            self._replace_in_place(shaper, ours, index)
            return "replaced"
        if root is not None and root["handle"] == HTB_HANDLE:
            self.remove(index)
        try:
            self._run(self.steps(shaper, index))
        except ShapeError as exc:
            raise ShapeError("%s; %s" % (exc, self._undo_rebuild(index, ours, current))) from None
        return "rebuilt"

    def _replace_in_place(self, shaper, current, index):
        if shaper["qdisc"] == "tbf":
            try:
                self._run(self.steps(shaper, index))
            except ShapeError as exc:
                raise ShapeError("%s; the kernel kept the tbf as it was (%s)"
                                 % (exc, format_rate(current["rate"]))) from None
            return
        steps = self.steps(shaper, index, classes_only=True)
        undo = self.steps(current, index, classes_only=True)
        done = 0
        try:
            for step in steps:
                self._run([step])
                done += 1
        except ShapeError as exc:
            try:
                self._run(undo[:done])
                note = "the classes already changed were put back: the shaper is as it was (%s)" % format_rate(
                    current["rate"])
            except ShapeError as undo_exc:
                self.remove(index)
                note = ("putting the classes back failed too (%s), so the shaper was removed: %s has its default "
                        "qdisc, no half shaper" % (undo_exc, self.device))
            raise ShapeError("%s; %s" % (exc, note)) from None

    def _undo_rebuild(self, index, ours, before):
        """After a refusal while building: delete what was built, rebuild ``ours`` (the shaper that was there).
        Returns what the device holds now, in words."""
        try:
            self.remove(index)
        except ShapeError as exc:
            return ("removing the part built failed too (%s): %s may hold half a shaper; remove it with state: absent"
                    % (exc, self.device))
        if ours:
            try:
                self._run(self.steps(ours, index))
                return "the shaper that was there (%s %s) was put back" % (ours["qdisc"], format_rate(ours["rate"]))
            except ShapeError as exc:
                self.remove(index)
                return ("putting the earlier shaper (%s %s) back failed too (%s): %s has its default qdisc, no half "
                        "shaper" % (ours["qdisc"], format_rate(ours["rate"]), exc, self.device))
        now = self.read(index)
        if before and before.get("foreign") and not before.get("default"):
            if now and now.get("handle") == before["handle"] and now.get("qdisc") == before["qdisc"]:
                return "nothing of the new shaper is left; the %s %s root is still there" % (
                    before["qdisc"], before["handle"])
            return ("nothing of the new shaper is left; the %s %s root it replaced is gone: %s has its default qdisc"
                    % (before["qdisc"], before["handle"], self.device))
        return "nothing of the new shaper is left: %s has its default qdisc, as before" % self.device

    def remove(self, index=None):
        """Delete our root (handle ``1:``) from ``index``, if it is there; the kernel puts its default qdisc back."""
        index = self.index if index is None else index
        root = self.root_qdisc(index)
        if root is not None and root["handle"] == HTB_HANDLE:
            self._tc("device", "deleting the root qdisc 1:", "del", index=index, handle=HTB_HANDLE, parent=TC_H_ROOT)

    # ---------------------------------------------------------------- ingress via ifb
    def ifb_index(self, name):
        found = self.ipr.link_lookup(ifname=name)
        return found[0] if found else None

    def ingress_redirect_target(self):
        """The ifindex the device's ingress is redirected to, or None."""
        for f in self.ipr.get_filters(index=self.index, parent=INGRESS_HANDLE):
            opts = f.get_attr("TCA_OPTIONS")
            act = opts.get_attr("TCA_U32_ACT") if opts else None
            if not act:
                continue
            for _name, prio in act.get("attrs", []):
                for key, value in prio.get("attrs", []):
                    if key == "TCA_ACT_OPTIONS":
                        for k2, v2 in value.get("attrs", []):
                            if k2 == "TCA_MIRRED_PARMS":
                                return v2["ifindex"]
        return None

    def setup_ifb(self, name):
        """The ifb device (created with the collection's alias, ``aifabric.lab: ingress of DEVICE``) and the
        device's ingress redirected to it. Returns ``(ifb index, what was created: {"ifb", "ingress"})``."""
        created = set()
        index = self.ifb_index(name)
        try:
            if index is None:
                try:
                    self.ipr.link("add", ifname=name, kind="ifb")
                except (NetlinkError, OSError) as exc:
                    raise ShapeError("ifb_device: creating the ifb device %s for %s's ingress: %s" % (
                        name, self.device, netlink_reason(exc))) from None
                created.add("ifb")
                index = self.ifb_index(name)
            try:
                self.ipr.link("set", index=index, state="up", mtu=self.mtu, ifalias=IFB_ALIAS % self.device)
            except (NetlinkError, OSError) as exc:
                raise ShapeError("ifb_device: bringing %s up at MTU %d: %s" % (name, self.mtu, netlink_reason(exc))) \
                    from None
            if self.ingress_redirect_target() != index:
                ingress = self.ingress_qdisc()
                if ingress is not None and ingress.get_attr("TCA_KIND") != "ingress":
                    raise ShapeError("direction: ingress: %s has a %s qdisc at its ingress (someone else's filters or "
                                     "BPF programs); tc_shape would replace it. Remove it first, or shape egress"
                                     % (self.device, ingress.get_attr("TCA_KIND")))
                if ingress is not None:
                    self._tc("direction", "deleting the ingress qdisc to redirect it to %s" % name, "del",
                             index=self.index, handle=INGRESS_HANDLE, parent=TC_H_INGRESS)
                self._tc("direction", "adding the ingress qdisc", "add", "ingress", self.index, INGRESS_HANDLE)
                created.add("ingress")
                self._tc("direction", "redirecting the ingress to %s" % name, "add-filter", "u32", self.index,
                         parent=INGRESS_HANDLE, prio=1, protocol=ETH_P_ALL, target=0, keys=["0x0/0x0+0"],
                         action=[{"kind": "mirred", "direction": "egress", "action": "redirect", "ifindex": index}])
        except ShapeError as exc:
            raise ShapeError("%s; %s" % (exc, self.undo_ifb(name, created))) from None
        return index, created

    def undo_ifb(self, name, created):
        """Take away what ``setup_ifb`` created in this run; returns it in words."""
        notes = []
        if "ingress" in created and self.ingress_qdisc() is not None:
            try:
                self.ipr.tc("del", index=self.index, handle=INGRESS_HANDLE, parent=TC_H_INGRESS)
                notes.append("the ingress qdisc added was removed")
            except (NetlinkError, OSError) as exc:
                notes.append("removing the ingress qdisc added failed (%s)" % netlink_reason(exc))
        if "ifb" in created and self.ifb_index(name) is not None:
            try:
                self.ipr.link("del", index=self.ifb_index(name))
                notes.append("the ifb device %s created was removed" % name)
            except (NetlinkError, OSError) as exc:
                notes.append("removing the ifb device %s failed (%s)" % (name, netlink_reason(exc)))
        return "; ".join(notes) if notes else "nothing was left half made"

    def teardown_ifb(self, name):
        """Remove the device's ingress redirect to ``name`` (only an ``ingress`` qdisc that redirects there, or to an
        ifb that is gone) and the ifb device."""
        index = self.ifb_index(name)
        ingress = self.ingress_qdisc()
        target = self.ingress_redirect_target()
        if ingress is not None and ingress.get_attr("TCA_KIND") == "ingress" and target is not None and (
                target == index or not self._link_exists(target)):
            self._tc("direction", "deleting the ingress qdisc that redirects to %s" % name, "del", index=self.index,
                     handle=INGRESS_HANDLE, parent=TC_H_INGRESS)
        if index is not None:
            try:
                self.ipr.link("del", index=index)
            except (NetlinkError, OSError) as exc:
                raise ShapeError("ifb_device: deleting %s: %s" % (name, netlink_reason(exc))) from None

    def _link_exists(self, index):
        try:
            return bool(self.ipr.get_links(index))
        except (NetlinkError, OSError):
            return False


def same_layout(current, desired):
    """Whether ``desired`` is ``current`` at other rates: the same qdisc, classes and filters."""
    if not current or current.get("foreign") or current.get("qdisc") != desired.get("qdisc"):
        return False
    if desired["qdisc"] == "tbf":
        return True
    return (all((current.get(k) or []) == (desired.get(k) or []) for k in FAIR_KEYS)
            and (current.get("fair_share_ports") or 0) == (desired.get("fair_share_ports") or 0)
            and bool(current.get("ack_priority")) == bool(desired.get("ack_priority")))


def hardware_rdma_on(device, root="/"):
    """RDMA devices of a hardware NIC under this netdev (tc never sees their verbs traffic); soft-RoCE has none."""
    return _rdma_sysfs.under_netdev(device, root)


def _foreign_text(current):
    return "%s %s" % (current["qdisc"], current.get("handle", ""))


def shape(ipr, params, check_mode=False, warn=None, maker="tc_shape"):
    """Read, compare, apply one shaper (check and diff mode from the same comparison); returns the result dict.
    Raises ShapeError for input the kernel or this host cannot take, and for a device another live owner's shaper
    holds (``present``); on ``absent`` such a shaper is left, with a warning. ``params``: the tc_shape options
    (``state_dir`` None: no record; ``owner`` None: recorded without an owner); ``check_mode``: compare only, change
    nothing; ``warn``: called with each warning for the user (None: they are dropped); ``maker``: the module, for the
    record."""
    warn = warn or (lambda _msg: None)
    device = params["device"]
    ingress = params["direction"] == "ingress"
    ifb = params.get("ifb_device") or ifb_name_for(device)
    state_dir = params.get("state_dir")
    owner = params.get("owner")
    shaper = Shaper(ipr, device)
    if ingress and shaper.kind == "ifb":
        raise ShapeError(
            "device: %s is an ifb device; shape its egress, or name the real device for ingress" % device)
    desired = desired_shaper(params, shaper.mtu) if params["state"] == "present" else None
    rdma = hardware_rdma_on(device)
    if rdma and params["state"] == "present":
        warn("tc on %s shapes only its kernel-stack traffic: the verbs traffic of %s bypasses the kernel and "
             "is not shaped (use the VF's max_tx_rate or perftest's rate limit; aifabric.lab.throttle chooses)"
             % (device, ", ".join(rdma)))
    # one record per shaped device: the device's own egress, and its ingress under its ifb's name (one record for both
    # directions made each direction's task see the other's record as a change: never idempotent)
    record_path = (_host_state.shaper_record_path(state_dir, _host_state.netns_key(), ifb if ingress else device)
                   if state_dir else None)
    record = _host_state.read_record(record_path) if record_path else None
    target = shaper.ifb_index(ifb) if ingress else shaper.index
    redirected = ingress and target is not None and shaper.ingress_redirect_target() == target
    current = shaper.read(target) if target is not None and (redirected or not ingress) else None
    ours = current if current and not current.get("foreign") else None
    result = {"device": device, "direction": params["direction"], "shaped_device": ifb if ingress else device}
    held = _host_state.held_by_another(record, owner) if ours or (ingress and target is not None) else None
    if held and params["state"] == "present" and not (ours and same_shaper(ours, desired) and
                                                      (redirected or not ingress)):
        raise ShapeError("device: %s is shaped by %s, which is live (%s); this task's shaper would change it. Wait "
                         "for that experiment to end, or remove it with aifabric.lab.lab_leftovers once its owner is "
                         "gone" % (device, _host_state.owner_text(held[0]), held[1]))
    if params["state"] == "present":
        if current and current.get("foreign") and not current.get("default"):
            warn("tc_shape: replacing a %s root qdisc on %s that this module did not make"
                 % (_foreign_text(current), result["shaped_device"]))
        changed = not (same_shaper(ours, desired) and (redirected or not ingress))
    elif held:
        warn("tc_shape: leaving the shaper on %s: it belongs to %s, which is live (%s)"
             % (device, _host_state.owner_text(held[0]), held[1]))
        changed = False
    else:
        changed = ours is not None or (ingress and (target is not None or redirected))
    how = None
    if changed and not check_mode:
        if params["state"] == "present":
            created = set()
            if ingress:
                target, created = shaper.setup_ifb(ifb)
            try:
                how = shaper.apply(desired, target)
            except ShapeError as exc:
                if created:
                    raise ShapeError("%s; %s" % (exc, shaper.undo_ifb(ifb, created))) from None
                raise
        elif ingress:
            shaper.teardown_ifb(ifb)
        elif ours is not None:
            shaper.remove()
    record_changed = False
    if record_path and not held:
        record_changed = _shaper_record(record_path, record, params, desired, shaper, ifb, ingress, maker, owner,
                                        write=not check_mode)
    if held and params["state"] == "absent":
        result["held_by"] = held[0]
    result.update({
        "changed": changed or record_changed,
        "shaper": describe(desired) if desired else {},
        "diff": {"before": describe(ours) if ours else ({"root": _foreign_text(current)} if current else {}),
                 "after": describe(desired) if desired else (
                     {"root": _foreign_text(current)} if current and current.get("foreign") else {})},
    })
    if how:
        result["applied_by"] = how
    if record_path:
        result["record"] = record_path
    index = shaper.ifb_index(ifb) if ingress else shaper.index
    result["counters"] = shaper.counters(index) if index is not None else {"qdisc": None, "classes": {}}
    return result


def _shaper_record(path, record, params, desired, shaper, ifb, ingress, maker, owner, write=True):
    """The shaper's marker record beside the device's state: kept while a shaper of ours is there, removed with it.
    Returns whether it changes beyond bookkeeping (a renewed lease, a timestamp); ``write`` False (check mode):
    only says so. A record that cannot be written is an error only when an owner must be recorded."""
    if params["state"] == "absent":
        if write:
            try:
                _host_state.remove_record(path)
            except OSError:
                pass
        return False
    new = {"kind": "shaper", "maker": maker, "netns": os.path.basename(os.path.dirname(path)),
           "device": shaper.device, "ifindex": shaper.index, "direction": params["direction"],
           "shaped_device": ifb if ingress else shaper.device, "ifb": ifb if ingress else None,
           "qdisc": desired["qdisc"], "handle": "1:", "rate": format_rate(desired["rate"]), "owner": owner,
           "created_at": (record or {}).get("created_at") or time.time(), "updated_at": time.time()}
    changed = not _host_state.same_record(record, new)
    if write and (changed or (record or {}).get("owner") != owner):
        try:
            _host_state.write_record(path, new)
        except OSError as exc:
            if owner:
                raise ShapeError("state_dir: cannot record the owner of %s's shaper in %s: %s" % (
                    shaper.device, path, exc.strerror or exc)) from None
            return False
    return changed
