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

``read_shaper`` returns the same shape as ``desired_shaper`` builds, so ``changed`` is one comparison.
"""

from __future__ import annotations

import ipaddress
import socket
import struct

from . import _rdma_sysfs
from ._units import UnitError, format_rate, format_size, parse_rate, parse_size

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
    return ("ifb-" + device)[:15]


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

    def has_ingress(self):
        return any(q["parent"] == 0xFFFFFFF1 for q in self.ipr.get_qdiscs(index=self.index))

    def read(self, index=None):
        """The shaper on ``index`` (default: the device) in desired_shaper()'s shape, or None for the default qdisc."""
        index = self.index if index is None else index
        root = self.root_qdisc(index)
        if root is None or root["handle"] != HTB_HANDLE or root.get_attr("TCA_KIND") not in ("htb", "tbf"):
            return None if root is None or root.get_attr("TCA_KIND") in ("noqueue", "pfifo_fast", "mq", None) \
                else {"qdisc": root.get_attr("TCA_KIND"), "foreign": True}
        kind = root.get_attr("TCA_KIND")
        if kind == "tbf":
            parms = root.get_attr("TCA_OPTIONS").get_attr("TCA_TBF_PARMS")
            return {"qdisc": "tbf", "rate": parms["rate"] * 8, "burst": ticks_to_bytes(parms["buffer"], parms["rate"]),
                    "limit": parms["limit"]}
        classes = {c["handle"]: c for c in self.ipr.get_classes(index=index)}
        if ROOT_CLASS not in classes:
            return {"qdisc": "htb", "foreign": True}
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
    def apply(self, shaper, index=None):
        index = self.index if index is None else index
        root = self.root_qdisc(index)
        if root is not None and root.get_attr("TCA_KIND") != "noqueue":
            try:
                self.ipr.tc("del", index=index, handle=0, parent=TC_H_ROOT)
            except Exception:  # noqa: BLE001  pfifo_fast/mq defaults cannot always be deleted; replaced below
                pass
        rate_bytes = shaper["rate"] // 8
        burst = shaper["burst"]
        if shaper["qdisc"] == "tbf":
            self.ipr.tc("add", "tbf", index, HTB_HANDLE, rate=rate_bytes, burst=burst, limit=shaper["limit"])
            return
        key = next((k for k in FAIR_KEYS if shaper.get(k)), FAIR_KEYS[0])
        sources = shaper.get(key) or []
        if shaper.get("fair_share_ports"):
            sources = list(range(shaper["fair_share_ports"]))
        self.ipr.tc("add", "htb", index, HTB_HANDLE, default=(OTHER_CLASS & 0xFFFF) if sources else 1)
        self.ipr.tc("add-class", "htb", index, ROOT_CLASS, parent=HTB_HANDLE, rate=rate_bytes, ceil=rate_bytes,
                    burst=burst, cburst=burst, quantum=QUANTUM)
        if shaper.get("ack_priority"):
            # a class of its own under the qdisc (a root class: it cannot borrow, so its rate is its ceiling), at
            # the rate itself: ACKs are 0.5-2% of the data they acknowledge, and the filter admits only IPv4 TCP
            # packets under 128 bytes, so this class never carries the host's data
            ack_rate = max(1000, rate_bytes)
            self.ipr.tc("add-class", "htb", index, ACK_CLASS, parent=HTB_HANDLE, rate=ack_rate, ceil=ack_rate,
                        burst=burst, cburst=burst, quantum=QUANTUM, prio=0)
            self.ipr.tc("add-filter", "u32", index, parent=HTB_HANDLE, prio=1, protocol=ETH_P_IP, target=ACK_CLASS,
                        keys=ACK_KEYS)
        if not sources:
            return
        share = max(1, rate_bytes // (len(sources) + 1))
        for i, network in enumerate([None] + sources):
            classid = OTHER_CLASS if network is None else FIRST_SOURCE_CLASS + i - 1
            self.ipr.tc("add-class", "htb", index, classid, parent=ROOT_CLASS, rate=share, ceil=rate_bytes,
                        burst=burst, cburst=burst, quantum=QUANTUM)
            if network is not None and shaper.get("fair_share_ports"):
                mask = shaper["fair_share_ports"] - 1
                port_key = "0x%08x/0x%08x+%d" % (network << 16, mask << 16, PORT_OFFSET)
                self.ipr.tc("add-filter", "u32", index, parent=HTB_HANDLE, prio=10 + i, protocol=ETH_P_IP,
                            target=classid, keys=[TCP_KEY, port_key])
            elif network is not None:
                protocol, keys = _u32_key(network, key)
                self.ipr.tc("add-filter", "u32", index, parent=HTB_HANDLE, prio=10 + i, protocol=protocol,
                            target=classid, keys=keys)

    def remove(self, index=None):
        index = self.index if index is None else index
        root = self.root_qdisc(index)
        if root is not None and root["handle"] == HTB_HANDLE:
            self.ipr.tc("del", index=index, handle=HTB_HANDLE, parent=TC_H_ROOT)

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
        index = self.ifb_index(name)
        if index is None:
            self.ipr.link("add", ifname=name, kind="ifb")
            index = self.ifb_index(name)
        self.ipr.link("set", index=index, state="up", mtu=self.mtu)
        if self.ingress_redirect_target() != index:
            if self.has_ingress():
                self.ipr.tc("del", index=self.index, handle=INGRESS_HANDLE, parent=0xFFFFFFF1)
            self.ipr.tc("add", "ingress", self.index, INGRESS_HANDLE)
            self.ipr.tc("add-filter", "u32", self.index, parent=INGRESS_HANDLE, prio=1, protocol=ETH_P_ALL, target=0,
                        keys=["0x0/0x0+0"],
                        action=[{"kind": "mirred", "direction": "egress", "action": "redirect", "ifindex": index}])
        return index

    def teardown_ifb(self, name):
        if self.has_ingress():
            self.ipr.tc("del", index=self.index, handle=INGRESS_HANDLE, parent=0xFFFFFFF1)
        index = self.ifb_index(name)
        if index is not None:
            self.ipr.link("del", index=index)


def hardware_rdma_on(device, root="/"):
    """RDMA devices of a hardware NIC under this netdev (tc never sees their verbs traffic); soft-RoCE has none."""
    return _rdma_sysfs.under_netdev(device, root)


def shape(module, ipr, params):
    """Read, compare, apply one shaper (check and diff mode from the same comparison); returns the result dict.
    Raises ShapeError for input the kernel or this host cannot take."""
    device = params["device"]
    ingress = params["direction"] == "ingress"
    ifb = params.get("ifb_device") or ifb_name_for(device)
    shaper = Shaper(ipr, device)
    if ingress and shaper.kind == "ifb":
        raise ShapeError(
            "device: %s is an ifb device; shape its egress, or name the real device for ingress" % device)
    desired = desired_shaper(params, shaper.mtu) if params["state"] == "present" else None
    rdma = hardware_rdma_on(device)
    if rdma and params["state"] == "present":
        module.warn("tc on %s shapes only its kernel-stack traffic: the verbs traffic of %s bypasses the kernel and "
                    "is not shaped (use the VF's max_tx_rate or perftest's rate limit; aifabric.lab.throttle chooses)"
                    % (device, ", ".join(rdma)))
    target = shaper.ifb_index(ifb) if ingress else shaper.index
    redirected = ingress and target is not None and shaper.ingress_redirect_target() == target
    current = shaper.read(target) if target is not None and (redirected or not ingress) else None
    if current and current.get("foreign") and params["state"] == "present":
        module.warn("tc_shape: replacing a %s root qdisc on %s that this module did not make"
                    % (current["qdisc"], device))
    if params["state"] == "present":
        changed = not (same_shaper(current, desired) and (redirected or not ingress))
    else:
        changed = current is not None or (ingress and (target is not None or shaper.has_ingress()))
    if changed and not module.check_mode:
        if params["state"] == "present":
            if ingress:
                target = shaper.setup_ifb(ifb)
            shaper.apply(desired, target)
        elif ingress:
            shaper.teardown_ifb(ifb)
        elif current is not None:
            shaper.remove()
    result = {
        "changed": changed,
        "device": device,
        "direction": params["direction"],
        "shaped_device": ifb if ingress else device,
        "shaper": describe(desired) if desired else {},
        "diff": {"before": describe(current) if current and not current.get("foreign") else (current or {}),
                 "after": describe(desired) if desired else {}},
    }
    index = shaper.ifb_index(ifb) if ingress else shaper.index
    result["counters"] = shaper.counters(index) if index is not None else {"qdisc": None, "classes": {}}
    return result


def run(module, ipr):
    """The tc_shape module."""
    try:
        result = shape(module, ipr, module.params)
    except ShapeError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)
