# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a TCP connection says about its congestion: ``struct tcp_info`` decoded, the host's ECN setting, the
congestion control of a socket, and the namespace's own count of the ECN codepoints it received.

``struct tcp_info`` (include/uapi/linux/tcp.h) has grown at its end with the kernel; ``getsockopt`` returns as many
bytes as the kernel has (and we ask for), so a field is decoded only when the kernel filled it and is None otherwise.
``LAYOUT`` lists every field up to Linux 6.18 (280 bytes) with its offset and the kernel that added it:

* 2.6: the first 104 bytes (state, ca_state, retransmits, probes, backoff, options, rto, snd_mss, lost, retrans,
  rtt, rttvar, snd_cwnd, total_retrans ...); ``options`` has TCPI_OPT_ECN (ECN negotiated) and TCPI_OPT_ECN_SEEN
  (an ECT packet was received);
* 4.1-4.19: bytes_acked, bytes_received, segs, min_rtt, delivery_rate, delivered and delivered_ce (4.18: the
  sender's count of the packets it got ECE for, RFC 3168's echo, or AccECN's exact count), bytes_sent,
  bytes_retrans;
* 5.4-6.2: rcv_ooopack, snd_wnd, rcv_wnd, rehash;
* 6.7: total_rto (every RTO expiry, SYNs included), total_rto_recoveries, total_rto_time;
* 6.18 (AccECN, RFC 9768): received_ce (CE-marked segments received, in every ECN mode: measured on the lab's
  kernel with RFC 3168 ECN), the byte counts by codepoint (AccECN only), accecn_fail_mode and accecn_opt_seen
  (u16 each: the struct is 280 bytes, as getsockopt returns it on the lab's kernel).

Which of them this kernel fills is measured, not assumed: docs/congestion.md has the table of the lab's kernel.
"""

from __future__ import annotations

import os
import re
import socket
import struct

from .engine import FlowError

TCP_INFO_MAX = 280
TCPI_OPT_ECN, TCPI_OPT_ECN_SEEN = 0x08, 0x10
CA_STATES = ("open", "disorder", "cwr", "recovery", "loss")
TCP_CONGESTION = getattr(socket, "TCP_CONGESTION", 13)
# (name, struct format, offset) in struct tcp_info, x86-64 and every other Linux ABI (naturally aligned)
LAYOUT = (
    ("state", "B", 0), ("ca_state", "B", 1), ("retransmits", "B", 2), ("probes", "B", 3), ("backoff", "B", 4),
    ("options", "B", 5),
    ("rto_us", "I", 8), ("ato_us", "I", 12), ("snd_mss", "I", 16), ("rcv_mss", "I", 20),
    ("unacked", "I", 24), ("sacked", "I", 28), ("lost", "I", 32), ("retrans", "I", 36), ("fackets", "I", 40),
    ("last_data_sent_ms", "I", 44), ("last_ack_sent_ms", "I", 48), ("last_data_recv_ms", "I", 52),
    ("last_ack_recv_ms", "I", 56),
    ("pmtu", "I", 60), ("rcv_ssthresh", "I", 64), ("rtt_us", "I", 68), ("rttvar_us", "I", 72),
    ("snd_ssthresh", "I", 76), ("snd_cwnd", "I", 80), ("advmss", "I", 84), ("reordering", "I", 88),
    ("rcv_rtt_us", "I", 92), ("rcv_space", "I", 96), ("total_retrans", "I", 100),
    ("pacing_rate", "Q", 104), ("max_pacing_rate", "Q", 112), ("bytes_acked", "Q", 120),
    ("bytes_received", "Q", 128), ("segs_out", "I", 136), ("segs_in", "I", 140),
    ("notsent_bytes", "I", 144), ("min_rtt_us", "I", 148), ("data_segs_in", "I", 152), ("data_segs_out", "I", 156),
    ("delivery_rate", "Q", 160), ("busy_time_us", "Q", 168), ("rwnd_limited_us", "Q", 176),
    ("sndbuf_limited_us", "Q", 184), ("delivered", "I", 192), ("delivered_ce", "I", 196),
    ("bytes_sent", "Q", 200), ("bytes_retrans", "Q", 208), ("dsack_dups", "I", 216), ("reord_seen", "I", 220),
    ("rcv_ooopack", "I", 224), ("snd_wnd", "I", 228), ("rcv_wnd", "I", 232), ("rehash", "I", 236),
    ("total_rto", "H", 240), ("total_rto_recoveries", "H", 242), ("total_rto_time_ms", "I", 244),
    ("received_ce", "I", 248), ("delivered_e1_bytes", "I", 252), ("delivered_e0_bytes", "I", 256),
    ("delivered_ce_bytes", "I", 260), ("received_e1_bytes", "I", 264), ("received_e0_bytes", "I", 268),
    ("received_ce_bytes", "I", 272), ("accecn_fail_mode", "H", 276), ("accecn_opt_seen", "H", 278),
)
# net.ipv4.tcp_ecn (Documentation/networking/ip-sysctl.rst): 0 off, 1 request and accept, 2 accept only (the
# default); AccECN's 3-5 are the kernel's from 6.18 (3: AccECN both ways)
ECN_SYSCTL = {"off": 0, "on": 1, "accept": 2, "accecn": 3}
SYSCTL_ECN = "proc/sys/net/ipv4/tcp_ecn"
SYSCTL_CC = "proc/sys/net/ipv4/tcp_available_congestion_control"
NETSTAT = "proc/thread-self/net/netstat"  # this thread's namespace (/proc/net is the process leader's)


_CONGESTION_NAME = re.compile(r"^[a-z0-9_]{1,15}$")


def options(value, engine):
    """``{ecn, congestion}`` for every tcp server and client of the part (FlowSpec's fields); only with the tcp
    engine. The congestion control is checked against the kernel when the first socket takes it."""
    value = {k: v for k, v in (value or {}).items() if v is not None}
    if value and engine != "tcp":
        raise FlowError("tcp: %s is the tcp engine's (the kernel's TCP); the %s engine's transport is the NIC's"
                        % (", ".join("tcp.%s" % k for k in sorted(value)), engine))
    congestion = value.get("congestion")
    if congestion is not None and not _CONGESTION_NAME.match(congestion):
        raise FlowError("tcp.congestion: %r is not a congestion control's name (e.g. cubic, reno, bbr)" % (congestion,))
    return {"ecn": value.get("ecn"), "congestion": congestion}


def decode(raw):
    """``struct tcp_info`` from its bytes: every field the kernel filled (the others None), plus ``ecn_negotiated``
    and ``ecn_seen`` (from ``options``) and ``ca_state_name``."""
    out = {}
    for name, fmt, offset in LAYOUT:
        size = struct.calcsize(fmt)
        out[name] = struct.unpack_from("<" + fmt, raw, offset)[0] if len(raw) >= offset + size else None
    options = out["options"] or 0
    out["ecn_negotiated"] = bool(options & TCPI_OPT_ECN)
    out["ecn_seen"] = bool(options & TCPI_OPT_ECN_SEEN)
    state = out["ca_state"]
    out["ca_state_name"] = CA_STATES[state] if state is not None and state < len(CA_STATES) else None
    return out


def read(sock):
    """The socket's tcp_info, decoded."""
    return decode(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_MAX))


def congestion_of(sock):
    """The congestion control the socket runs (``cubic``, ``bbr``, ``reno``...)."""
    return sock.getsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, 16).split(b"\0", 1)[0].decode("ascii", "replace")


def available_congestion(root="/"):
    """The congestion controls this kernel has (loaded or built in), in its order."""
    with open(os.path.join(root, SYSCTL_CC)) as f:
        return f.read().split()


def set_congestion(sock, name, root="/"):
    """Run ``name`` on the socket (TCP_CONGESTION); a ValueError naming ``tcp.congestion`` and what the kernel has."""
    try:
        sock.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, name.encode("ascii"))
    except OSError as exc:
        try:
            have = ", ".join(available_congestion(root))
        except OSError:
            have = "unknown"
        raise ValueError("tcp.congestion: %r is not a congestion control this host's kernel runs (%s; it has: %s)"
                         % (name, os.strerror(exc.errno) if exc.errno else exc, have)) from None


def set_ecn(mode, root="/"):
    """Set net.ipv4.tcp_ecn of the namespace this process is in to ``mode`` (``ECN_SYSCTL``'s names); returns
    ``{"before", "after"}`` as the sysctl's numbers (no write when it holds the value already)."""
    if mode not in ECN_SYSCTL:
        raise ValueError("tcp.ecn: %r; use one of %s" % (mode, ", ".join(ECN_SYSCTL)))
    path = os.path.join(root, SYSCTL_ECN)
    with open(path) as f:
        before = int(f.read().strip())
    want = ECN_SYSCTL[mode]
    if before != want:
        try:
            with open(path, "w") as f:
                f.write("%d\n" % want)
        except OSError as exc:
            raise ValueError("tcp.ecn: cannot set net.ipv4.tcp_ecn to %d (%s): %s" % (
                want, mode, exc.strerror or exc)) from None
    return {"before": before, "after": want}


def ip_ecn_counters(root="/"):
    """The namespace's IP counters of the ECN codepoints received (``IpExt`` in /proc/net/netstat: InNoECTPkts,
    InECT1Pkts, InECT0Pkts, InCEPkts) as ``{no_ect, ect1, ect0, ce}``; None when the kernel has no such line. They
    count IP packets after GRO: a coalesced burst of CE segments is one packet here."""
    with open(os.path.join(root, NETSTAT)) as f:
        lines = f.read().splitlines()
    for names, values in zip(lines, lines[1:]):
        if names.startswith("IpExt:") and values.startswith("IpExt:"):
            row = dict(zip(names.split()[1:], (int(v) for v in values.split()[1:])))
            if "InCEPkts" not in row:
                return None
            return {"no_ect": row["InNoECTPkts"], "ect1": row["InECT1Pkts"], "ect0": row["InECT0Pkts"],
                    "ce": row["InCEPkts"]}
    return None


def summary(infos, congestion=None):
    """A flow's evidence over its connections (one tcp_info each): sums of the counts, the largest RTT, what every
    connection negotiated. The kernel's counts that a kernel lacks stay None."""

    def total(key):
        values = [i[key] for i in infos]
        return None if not values or any(v is None for v in values) else sum(values)

    def largest(key):
        values = [i[key] for i in infos if i[key] is not None]
        return max(values) if values else None

    return {
        "congestion": congestion,
        "ecn_negotiated": bool(infos) and all(i["ecn_negotiated"] for i in infos),
        "ecn_seen": any(i["ecn_seen"] for i in infos),
        "total_retrans": total("total_retrans"),
        "rto_timeouts": total("total_rto"),
        "backoff": largest("backoff"),
        "lost": total("lost"),
        "rtt_us": largest("rtt_us"),
        "rttvar_us": largest("rttvar_us"),
        "min_rtt_us": min((i["min_rtt_us"] for i in infos if i["min_rtt_us"] is not None), default=None),
        "snd_cwnd": total("snd_cwnd"),
        "delivered": total("delivered"),
        "delivered_ce": total("delivered_ce"),
        "received_ce": total("received_ce"),
        "bytes_retrans": total("bytes_retrans"),
        "dsack_dups": total("dsack_dups"),
    }
