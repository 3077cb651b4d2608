# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The conntrack census: ctnetlink messages parsed as the kernel sends them, folded in bounded memory; and a real
table of 100,000 entries in a namespace of the test's own."""

from __future__ import annotations

import socket
import struct
import threading
import tracemalloc

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._conntrack import (
    NETLINK_NETFILTER,
    CensusError,
    census,
    dump_request,
    parse_entries,
    read_table,
)
from ansible_collections.aifabric.lab.plugins.module_utils._fabric.netlink import in_netns_fork

NLA_F_NESTED = 0x8000


def attr(kind, payload):
    size = 4 + len(payload)
    return struct.pack("=HH", size, kind) + payload + b"\0" * ((4 - size % 4) % 4)


def nest(kind, *parts):
    return attr(kind | NLA_F_NESTED, b"".join(parts))


def tup(kind, src, dst, proto, sport=None, dport=None, family=socket.AF_INET):
    ip = (attr(1, socket.inet_pton(family, src)) + attr(2, socket.inet_pton(family, dst))) if family == socket.AF_INET \
        else (attr(3, socket.inet_pton(family, src)) + attr(4, socket.inet_pton(family, dst)))
    proto_attrs = attr(1, struct.pack("B", proto))
    if sport is not None:
        proto_attrs += attr(2, struct.pack("!H", sport)) + attr(3, struct.pack("!H", dport))
    return nest(kind, nest(1, ip), nest(2, proto_attrs))


def entry_msg(src, dst, proto, sport, dport, state=None, counters=None, family=socket.AF_INET, msg_type=0x100,
              flags=0x2, seq=1):
    """One ctnetlink entry as a dump answers it (IPCTNL_MSG_CT_NEW, NLM_F_MULTI)."""
    body = struct.pack("=BBH", family, 0, 0) + tup(1, src, dst, proto, sport, dport, family) \
        + tup(2, dst, src, proto, dport, sport, family) + attr(3, struct.pack("!I", 8))
    if state is not None:
        body += nest(4, nest(1, attr(1, struct.pack("B", state))))
    for kind, (nbytes, packets) in zip((9, 10), counters or ()):
        body += nest(kind, attr(1, struct.pack("!Q", packets)), attr(2, struct.pack("!Q", nbytes)))
    return struct.pack("=IHHII", 16 + len(body), msg_type, flags, seq, 0) + body


DONE = struct.pack("=IHHII", 20, 3, 2, 1, 0) + struct.pack("=i", 0)


def test_a_dump_buffer_is_read_entry_by_entry():
    buffer = (entry_msg("10.0.0.1", "10.0.0.2", 6, 40000, 443, state=3, counters=[(1500, 3), (60, 1)])
              + entry_msg("fd00::1", "fd00::2", 17, 5353, 53, family=socket.AF_INET6)
              + entry_msg("10.0.0.1", "10.0.0.9", 1, None, None) + DONE)
    entries, done = parse_entries(buffer)
    assert done
    assert entries == [(6, 443, "10.0.0.1", "10.0.0.2", 3, 1560, 4), (17, 53, "fd00::1", "fd00::2", None, None, None),
                       (1, None, "10.0.0.1", "10.0.0.9", None, None, None)]


def test_an_error_answer_is_said():
    err = struct.pack("=IHHII", 36, 2, 0, 1, 0) + struct.pack("=i", -1) + b"\0" * 16
    with pytest.raises(CensusError, match="the kernel refused the conntrack dump: Operation not permitted"):
        parse_entries(err)


def test_the_dump_request_asks_every_family():
    msg = dump_request()
    assert struct.unpack_from("=IHH", msg) == (20, 0x101, 0x301) and msg[16] == 0


def test_the_census_splits_elephants_from_mice_and_keeps_only_the_top():
    entries = [(6, 443, "10.0.0.%d" % i, "10.0.1.1", 3, 1000 + i, 2) for i in range(1, 201)]  # 200 mice
    entries += [(6, 18600, "10.0.9.%d" % i, "10.0.1.1", 3, 10**9 + i, 10**5) for i in range(2)]  # 2 elephants
    entries += [(17, 53, "10.0.0.1", "10.0.0.53", None, 80, 1), (1, None, "10.0.0.1", "10.0.0.2", None, 84, 1)]
    out = census(iter(entries), top=3, elephant_bytes=10**7)
    assert out["entries"] == 204 and out["by_protocol"] == {"tcp": 202, "udp": 1, "icmp": 1}
    assert out["tcp_states"] == {"ESTABLISHED": 202}
    assert list(out["top_ports"].items())[:2] == [("tcp/443", 200), ("tcp/18600", 2)]
    assert [e["bytes"] for e in out["top_by_bytes"]] == [10**9 + 1, 10**9, 1200]
    assert out["elephants"]["count"] == 2 and out["mice"]["count"] == 202
    assert out["mice"]["count_share"] == pytest.approx(202 / 204)
    assert out["elephants"]["bytes_share"] > 0.9998
    # without accounting the entries have no bytes: counts only, and no split
    bare = census(iter([e[:5] + (None, None) for e in entries]))
    assert bare["entries"] == 204 and not bare["accounting"] and "elephants" not in bare


def test_memory_is_bounded_by_the_counters_not_the_table():
    def many(n):
        for i in range(n):
            yield (6, 1024 + i % 1000, "10.%d.%d.%d" % (i >> 16 & 255, i >> 8 & 255, i & 255), "10.200.0.1", 3,
                   i, 1)
    peaks = []
    for n in (20_000, 200_000):
        tracemalloc.start()
        out = census(many(n), top=10, elephant_bytes=10**9)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert out["entries"] == n and len(out["top_by_bytes"]) == 10
    # ten times the entries, the same memory: it holds a counter per port (1,000 here, 65,536 at most) and the top 10
    assert peaks[1] < peaks[0] * 1.2 + 50_000, peaks


def _fill_and_count(n):
    """Inside the namespace (``in_netns_fork``'s child): ``n`` entries (one in ten UDP, the rest TCP to port 443)
    added through ctnetlink in batches, then the census and its peak allocations."""
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    sock.bind((0, 0))
    batch = []
    for i in range(n):
        a, b = divmod(i, 50000)
        src = "10.%d.%d.%d" % (1 + a // 62500, (a // 250) % 250, a % 250 + 1)
        proto = 17 if i % 10 == 0 else 6
        body = struct.pack("=BBH", socket.AF_INET, 0, 0) + tup(1, src, "10.200.0.1", proto, 1024 + b, 443) \
            + tup(2, "10.200.0.1", src, proto, 443, 1024 + b) + attr(7, struct.pack("!I", 600))
        # IPCTNL_MSG_CT_NEW, NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL
        batch.append(struct.pack("=IHHII", 16 + len(body), 0x100, 0x601, i + 1, 0) + body)
        if len(batch) == 200 or i == n - 1:
            sock.send(b"".join(batch))
            batch = []
    sock.close()
    tracemalloc.start()
    result = census(read_table(), top=5)
    return {"census": result, "peak": tracemalloc.get_traced_memory()[1]}


@pytest.mark.needs_root
def test_a_table_of_100000_entries_is_counted_in_bounded_memory():
    from pyroute2 import netns

    name = "aflt-ctu-census"
    netns.create(name)
    try:
        answer = in_netns_fork(name, _fill_and_count, 100_000)
        out = answer["census"]
        assert out["entries"] == 100_000
        assert out["by_protocol"] == {"tcp": 90_000, "udp": 10_000}
        assert out["top_ports"] == {"tcp/443": 90_000, "udp/443": 10_000}
        # a stream: the census's own allocations stay at a few megabytes (pyroute2's dump held +22 MB per 100,000)
        assert answer["peak"] < 8_000_000, answer["peak"]
    finally:
        netns.remove(name)


class _FakeTable:
    def __init__(self, name):
        self.name = name

    def get_attr(self, key):
        return self.name


class _FakeNFT:
    def __init__(self):
        self.tables, self.calls = [], []

    def get_tables(self):
        return [_FakeTable(t) for t in self.tables]

    def table(self, cmd, name):
        self.calls.append(("table", cmd, name))
        if cmd == "add":
            self.tables.append(name)
        else:
            self.tables.remove(name)

    def chain(self, cmd, **kw):
        self.calls.append(("chain", cmd, kw["name"], kw["hook"]))

    def rule(self, cmd, **kw):
        self.calls.append(("rule", cmd, kw["chain"]))


def test_tracking_adds_its_table_once_and_turns_accounting_on(tmp_path):
    from ansible_collections.aifabric.lab.plugins.module_utils._conntrack import set_tracking, tracking_state

    (tmp_path / "sys/net/netfilter").mkdir(parents=True)
    (tmp_path / "sys/net/netfilter/nf_conntrack_acct").write_text("0\n")
    nft = _FakeNFT()
    assert tracking_state(nft, str(tmp_path)) == {"tracking": False, "accounting": False}
    set_tracking(nft, True, True, str(tmp_path))
    assert tracking_state(nft, str(tmp_path)) == {"tracking": True, "accounting": True}
    assert nft.calls == [("table", "add", "aifabric_census"), ("chain", "add", "track_in", "prerouting"),
                         ("rule", "add", "track_in"), ("chain", "add", "track_out", "output"),
                         ("rule", "add", "track_out")]
    set_tracking(nft, True, True, str(tmp_path))
    assert len(nft.calls) == 5  # already there: nothing added
    set_tracking(nft, False, True, str(tmp_path))
    assert nft.tables == [] and (tmp_path / "sys/net/netfilter/nf_conntrack_acct").read_text() == "1\n"


def _track_and_count():
    """Inside the namespace: tracking on, one 20 MB connection and 50 mice over loopback, then the census."""
    from ansible_collections.aifabric.lab.plugins.module_utils._conntrack import set_tracking
    from ansible_collections.aifabric.lab.plugins.module_utils._mice import generate, serve
    from pyroute2 import IPRoute
    from pyroute2.nftables.main import NFTables

    with IPRoute() as ipr:
        ipr.link("set", index=ipr.link_lookup(ifname="lo")[0], state="up")
    with NFTables() as nft:
        set_tracking(nft, True, True)
    server = threading.Thread(target=serve, args=("127.0.0.1", 18777, 2.0, 0.5))
    server.start()
    generate("127.0.0.1", 18777, rate=50, duration=1.0, size_min=1000, size_max=20_000, seed=1)
    generate("127.0.0.1", 18777, rate=1, duration=1.0, size_min=20_000_000, size_max=20_000_000)
    server.join()
    return census(read_table(), elephant_bytes=10_000_000)


@pytest.mark.needs_root
def test_a_tracked_namespace_counts_its_elephant_and_its_mice():
    """In a namespace of its own: tracking on (nftables through pyroute2, accounting), one 20 MB connection and 50
    small ones over loopback; the census splits them."""
    from pyroute2 import netns

    name = "aflt-ctu-track"
    netns.create(name)
    try:
        out = in_netns_fork(name, _track_and_count)
    finally:
        netns.remove(name)
    assert out["accounting"] and out["by_protocol"]["tcp"] == 51
    assert out["elephants"]["count"] == 1 and out["mice"]["count"] == 50
    assert out["mice"]["count_share"] == pytest.approx(50 / 51)
    assert out["elephants"]["bytes_share"] > 0.97
