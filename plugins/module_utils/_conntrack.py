# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A census of the connections a host's conntrack table tracks, in bounded memory.

The table's size and limit come from pyroute2's conntrack socket (``Conntrack.count()``, ``conntrack_max_size()``).
The entries are read from a ctnetlink dump (``IPCTNL_MSG_CT_GET`` with ``NLM_F_DUMP``) 64 KiB at a time and folded
into counters as they arrive: by protocol, by TCP state, by destination port, the top N by bytes (a heap of N), and
the elephant/mice split. pyroute2 0.9.7's own dump holds the whole answer before it yields (measured: +22 MB of
resident memory per 100,000 entries), so the census parses the attributes it needs itself (a few lines of struct:
type-length-value, nested). Memory is bounded by the counters (at most 65,536 ports) and N, never by the table.

A namespace tracks nothing until something in it uses conntrack (an nftables or iptables rule with ``ct``
expressions, NAT); bytes and packets are counted only with ``net.netfilter.nf_conntrack_acct = 1``.
"""

from __future__ import annotations

import heapq
import os
import socket
import struct

__all__ = ["CensusError", "census", "parse_entries", "read_table", "TCP_STATES", "dump_request", "loaded",
           "accounting_on", "tracking_state", "set_tracking", "TRACK_TABLE"]

NETLINK_NETFILTER = 12
NFNL_SUBSYS_CTNETLINK = 1
IPCTNL_MSG_CT_GET = 1
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLA_TYPE_MASK = 0x3FFF  # without NLA_F_NESTED and NLA_F_NET_BYTEORDER

# include/uapi/linux/netfilter/nfnetlink_conntrack.h
CTA_TUPLE_ORIG, CTA_STATUS, CTA_PROTOINFO, CTA_COUNTERS_ORIG, CTA_COUNTERS_REPLY = 1, 3, 4, 9, 10
CTA_TUPLE_IP, CTA_TUPLE_PROTO = 1, 2
CTA_IP_V4_SRC, CTA_IP_V4_DST, CTA_IP_V6_SRC, CTA_IP_V6_DST = 1, 2, 3, 4
CTA_PROTO_NUM, CTA_PROTO_SRC_PORT, CTA_PROTO_DST_PORT = 1, 2, 3
CTA_PROTOINFO_TCP, CTA_PROTOINFO_TCP_STATE = 1, 1
CTA_COUNTERS_PACKETS, CTA_COUNTERS_BYTES = 1, 2

PROTOCOLS = {1: "icmp", 6: "tcp", 17: "udp", 33: "dccp", 58: "icmpv6", 132: "sctp", 136: "udplite"}
TCP_STATES = {0: "NONE", 1: "SYN_SENT", 2: "SYN_RECV", 3: "ESTABLISHED", 4: "FIN_WAIT", 5: "CLOSE_WAIT",
              6: "LAST_ACK", 7: "TIME_WAIT", 8: "CLOSE", 9: "SYN_SENT2"}
_PORTED = {6, 17, 33, 132, 136}
COUNT = "sys/net/netfilter/nf_conntrack_count"
ACCT = "sys/net/netfilter/nf_conntrack_acct"


class CensusError(ValueError):
    pass


def _attrs(data, start=0, end=None):
    """``{type: (offset, length)}`` of the attributes in data[start:end] (the last of a type wins)."""
    end = len(data) if end is None else end
    out = {}
    pos = start
    while pos + 4 <= end:
        length, kind = struct.unpack_from("=HH", data, pos)
        if length < 4:
            break
        out[kind & NLA_TYPE_MASK] = (pos + 4, length - 4)
        pos += (length + 3) & ~3
    return out


def _nested(data, where, kind):
    if kind not in where:
        return {}
    offset, length = where[kind]
    return _attrs(data, offset, offset + length)


def parse_entries(buffer):
    """The entries of one recv()'d buffer of ctnetlink messages: ``[(proto, dport, src, dst, state, bytes, packets)]``
    (``bytes``/``packets``: both directions, None without accounting), and whether the dump ended; raises CensusError
    on an error message."""
    entries, done, pos = [], False, 0
    while pos + 16 <= len(buffer):
        length, kind, _flags, _seq, _pid = struct.unpack_from("=IHHII", buffer, pos)
        if length < 16:
            break
        if kind == NLMSG_DONE:
            done = True
        elif kind == NLMSG_ERROR:
            code = struct.unpack_from("=i", buffer, pos + 16)[0]
            if code:
                raise CensusError("the kernel refused the conntrack dump: %s" % os.strerror(-code))
        elif kind & 0xFF == 0 and kind >> 8 == NFNL_SUBSYS_CTNETLINK:  # IPCTNL_MSG_CT_NEW: an entry
            top = _attrs(buffer, pos + 20, pos + length)
            tup = _nested(buffer, top, CTA_TUPLE_ORIG)
            ip = _nested(buffer, tup, CTA_TUPLE_IP)
            proto_attrs = _nested(buffer, tup, CTA_TUPLE_PROTO)
            proto = buffer[proto_attrs[CTA_PROTO_NUM][0]] if CTA_PROTO_NUM in proto_attrs else None
            dport = None
            if proto in _PORTED and CTA_PROTO_DST_PORT in proto_attrs:
                dport = struct.unpack_from("!H", buffer, proto_attrs[CTA_PROTO_DST_PORT][0])[0]
            src = dst = None
            for s_kind, d_kind, family in ((CTA_IP_V4_SRC, CTA_IP_V4_DST, socket.AF_INET),
                                           (CTA_IP_V6_SRC, CTA_IP_V6_DST, socket.AF_INET6)):
                if s_kind in ip:
                    (so, sl), (do, dl) = ip[s_kind], ip.get(d_kind, ip[s_kind])
                    src = socket.inet_ntop(family, bytes(buffer[so:so + sl]))
                    dst = socket.inet_ntop(family, bytes(buffer[do:do + dl]))
            state = None
            if proto == 6:
                tcp = _nested(buffer, _nested(buffer, top, CTA_PROTOINFO), CTA_PROTOINFO_TCP)
                if CTA_PROTOINFO_TCP_STATE in tcp:
                    state = buffer[tcp[CTA_PROTOINFO_TCP_STATE][0]]
            total_bytes = total_packets = None
            for direction in (CTA_COUNTERS_ORIG, CTA_COUNTERS_REPLY):
                counters = _nested(buffer, top, direction)
                if CTA_COUNTERS_BYTES in counters:
                    total_bytes = (total_bytes or 0) + struct.unpack_from("!Q", buffer,
                                                                          counters[CTA_COUNTERS_BYTES][0])[0]
                    total_packets = (total_packets or 0) + struct.unpack_from(
                        "!Q", buffer, counters[CTA_COUNTERS_PACKETS][0])[0] if CTA_COUNTERS_PACKETS in counters else 0
            entries.append((proto, dport, src, dst, state, total_bytes, total_packets))
        pos += (length + 3) & ~3
    return entries, done


def dump_request(seq=1, family=socket.AF_UNSPEC):
    """An IPCTNL_MSG_CT_GET dump request of every family's entries."""
    body = struct.pack("=BBH", family, 0, 0)
    return struct.pack("=IHHII", 16 + len(body), (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_GET,
                       NLM_F_REQUEST | NLM_F_DUMP, seq, 0) + body


def read_table(sock=None, chunk=65536):
    """Every entry of the table, one buffer at a time (a generator: nothing is kept)."""
    own = sock is None
    if own:
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    try:
        sock.bind((0, 0))
        sock.send(dump_request())
        buffer = bytearray(chunk)
        while True:
            size = sock.recv_into(buffer)
            entries, done = parse_entries(memoryview(buffer)[:size])
            yield from entries
            if done or size == 0:
                return
    finally:
        if own:
            sock.close()


def loaded(proc="/proc"):
    """Whether conntrack is loaded on this host (procfs has its ``nf_conntrack_count``)."""
    return os.path.exists(os.path.join(proc, COUNT))


def accounting_on(proc="/proc"):
    """Whether conntrack counts bytes and packets (``net.netfilter.nf_conntrack_acct = 1``)."""
    return _read_int(os.path.join(proc, ACCT)) == 1


def _read_int(path):
    try:
        with open(path) as handle:
            return int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def census(entries, top=10, elephant_bytes=10 * 1000 * 1000, accounting=None):
    """Fold ``entries`` (``read_table``'s tuples) into the census: counts by protocol, TCP state and destination port,
    the ``top`` largest by bytes, and the elephant/mice split (entries of ``elephant_bytes`` or more are elephants),
    by count and by bytes. ``accounting``: whether the kernel counts bytes (None: as the entries show)."""
    by_proto, by_state, by_port = {}, {}, {}
    heap = []  # (bytes, n, entry) of the largest ``top``
    count = 0
    counted = 0
    elephants = [0, 0]
    mice = [0, 0]
    for n, (proto, dport, src, dst, state, nbytes, packets) in enumerate(entries):
        count += 1
        name = PROTOCOLS.get(proto, str(proto))
        by_proto[name] = by_proto.get(name, 0) + 1
        if state is not None:
            key = TCP_STATES.get(state, str(state))
            by_state[key] = by_state.get(key, 0) + 1
        if dport is not None:
            key = "%s/%d" % (name, dport)
            by_port[key] = by_port.get(key, 0) + 1
        if nbytes is None:
            continue
        counted += 1
        side = elephants if nbytes >= elephant_bytes else mice
        side[0] += 1
        side[1] += nbytes
        item = (nbytes, -n, {"protocol": name, "src": src, "dst": dst, "dport": dport, "bytes": nbytes,
                             "packets": packets})
        if len(heap) < top:
            heapq.heappush(heap, item)
        elif item[:2] > heap[0][:2]:
            heapq.heapreplace(heap, item)
    accounting = bool(counted) if accounting is None else accounting
    out = {"entries": count, "by_protocol": dict(sorted(by_proto.items(), key=lambda kv: -kv[1])),
           "tcp_states": dict(sorted(by_state.items(), key=lambda kv: -kv[1])),
           "top_ports": dict(sorted(by_port.items(), key=lambda kv: (-kv[1], kv[0]))[:top]),
           "distinct_ports": len(by_port), "accounting": accounting, "elephant_bytes": elephant_bytes}
    if accounting and counted:
        total = elephants[1] + mice[1]
        out["top_by_bytes"] = [item[2] for item in sorted(heap, reverse=True)]
        out["elephants"] = {"count": elephants[0], "bytes": elephants[1],
                            "count_share": round(elephants[0] / float(counted), 6),
                            "bytes_share": round(elephants[1] / float(total), 6) if total else None}
        out["mice"] = {"count": mice[0], "bytes": mice[1], "count_share": round(mice[0] / float(counted), 6),
                       "bytes_share": round(mice[1] / float(total), 6) if total else None}
    return out


# --------------------------------------------------------------------- making a namespace track its connections
TRACK_TABLE = "aifabric_census"
TRACK_CHAINS = (("track_in", "prerouting", -300), ("track_out", "output", -300))


def _has_table(nft):
    return any(t.get_attr("NFTA_TABLE_NAME") == TRACK_TABLE for t in nft.get_tables())


def _track_rule():
    """A rule that loads the connection's state (``ct state``) into a register: an expression that needs conntrack,
    so the kernel tracks every packet the chain sees (it matches nothing and drops nothing)."""
    from pyroute2.nftables.expressions import genex

    return [genex("ct", {"dreg": 1, "key": 0})]  # NFT_REG_1, NFT_CT_STATE


def tracking_state(nft, proc="/proc"):
    """``{tracking: bool, accounting: bool}``: whether the census table is there, whether bytes are counted."""
    return {"tracking": _has_table(nft), "accounting": accounting_on(proc)}


def set_tracking(nft, present=True, accounting=True, proc="/proc"):
    """Create (or remove) the table whose chains make the namespace track its connections, and turn byte accounting
    on (``accounting``; it is left as it is on removal)."""
    if present:
        if not _has_table(nft):
            nft.table("add", name=TRACK_TABLE)
            for name, hook, priority in TRACK_CHAINS:
                nft.chain("add", table=TRACK_TABLE, name=name, hook=hook, priority=priority, type="filter")
                nft.rule("add", table=TRACK_TABLE, chain=name, expressions=(_track_rule(),))
        if accounting:
            with open(os.path.join(proc, ACCT), "w") as handle:
                handle.write("1\n")
    elif _has_table(nft):
        nft.table("del", name=TRACK_TABLE)
