# -*- coding: utf-8 -*-
"""The ECN marker on the real kernel (needs root; the integration tier's unit_root target runs it): a veth pair
between two namespaces of its own (aflt-wt-ecn-<pid>-a/-b, removed also on failure), an htb shaper on one end, the
marker on its root; a burst of UDP datagrams far above the rate, ECT(0) or not-ECT, and the receiver's own count of
the codepoints it got (IP_RECVTOS) against the marker's counters."""
from __future__ import annotations

import contextlib
import os
import socket
import time

import pytest

RATE = "100mbit"
ADDR_A, ADDR_B = "198.51.100.1", "198.51.100.2"
PORT = 40999
PAYLOAD = 1400  # bytes; 1442 on the wire (UDP 8, IPv4 20, Ethernet 14)


def _params(**kw):
    base = {"device": "ecn0", "state": "present", "mode": "step", "buffer": "100KB", "threshold": "30KB",
            "min_threshold": None, "max_threshold": None, "max_probability": None, "non_ect": "drop", "rate": None}
    base.update(kw)
    return base


def _in(name, fn):
    from pyroute2 import netns

    netns.pushns(name)
    try:
        return fn()
    finally:
        netns.popns()


def _burst(sender, receiver, tos, count):
    """``count`` datagrams with TOS ``tos`` as fast as the socket takes them; the TOS bytes the receiver got."""
    sender.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
    payload = b"\0" * PAYLOAD
    for _i in range(count):
        while True:
            try:
                sender.sendto(payload, (ADDR_B, PORT))
                break
            except OSError:  # ENOBUFS: the socket's buffer is full; the qdisc takes more in a moment
                time.sleep(0.0005)
    got = []
    receiver.settimeout(0.5)
    while True:
        try:
            _data, anc, _flags, _addr = receiver.recvmsg(2048, socket.CMSG_SPACE(4))
        except socket.timeout:
            return got
        for level, kind, value in anc:
            if level == socket.IPPROTO_IP and kind == socket.IP_TOS:
                got.append(value[0])


SHAPER = {"device": "ecn0", "direction": "egress", "qdisc": "htb", "rate": RATE, "burst": None, "latency": 0.05,
          "fair_share_sources": [], "fair_share_destinations": [], "ack_priority": True, "fair_share_ports": None,
          "ifb_device": None, "state": "present", "state_dir": None, "owner": None}


@contextlib.contextmanager
def veth_pair():
    """Namespaces aflt-wt-ecn-<pid>-a and -b, a veth between them (ecn0 in a, ecn1 in b), an htb shaper at RATE on
    ecn0; removed on the way out, whatever happened."""
    from ansible_collections.aifabric.lab.plugins.module_utils._tc import shape
    from pyroute2 import IPRoute, netns

    a, b = "aflt-wt-ecn-%d-a" % os.getpid(), "aflt-wt-ecn-%d-b" % os.getpid()
    netns.create(a)
    netns.create(b)
    try:
        with IPRoute(netns=a) as ipr:
            ipr.link("add", ifname="ecn0", kind="veth", peer={"ifname": "ecn1", "net_ns_fd": b})
            index = ipr.link_lookup(ifname="ecn0")[0]
            ipr.addr("add", index=index, address=ADDR_A, prefixlen=24)
            ipr.link("set", index=index, state="up")
        with IPRoute(netns=b) as ipr:
            index = ipr.link_lookup(ifname="ecn1")[0]
            ipr.addr("add", index=index, address=ADDR_B, prefixlen=24)
            ipr.link("set", index=index, state="up")
        with IPRoute(netns=a) as ipr:
            shape(ipr, SHAPER)
        yield a, b
    finally:
        for name in (a, b):
            try:
                netns.remove(name)
            except OSError:
                pass


@pytest.mark.needs_root
def test_the_marker_marks_above_k_drops_above_the_buffer_and_counts_what_the_receiver_sees():
    from ansible_collections.aifabric.lab.plugins.module_utils._ecn import Marker, mark
    from pyroute2 import IPRoute

    with veth_pair() as (a, b):
        with IPRoute(netns=a) as ipr:
            first = mark(ipr, _params())
            assert first["changed"] and first["applied_by"] == "attached"
            assert first["marker"] == {"mode": "step", "rate": RATE, "buffer": "100KB", "threshold": "30KB",
                                       "non_ect": "drop"}
            assert not mark(ipr, _params())["changed"]  # idempotent: the map holds the same configuration
            assert mark(ipr, _params(), check_mode=True)["changed"] is False

        def receiver():
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
            s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
            s.bind((ADDR_B, PORT))
            return s

        def sender():
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
            s.bind((ADDR_A, 0))
            return s

        rx, tx = _in(b, receiver), _in(a, sender)
        try:
            ect = _burst(tx, rx, 0x02, 400)  # ECT(0)
            with IPRoute(netns=a) as ipr:
                after_ect = Marker(ipr, "ecn0").read()
            not_ect = _burst(tx, rx, 0x00, 400)
            with IPRoute(netns=a) as ipr:
                after_all = Marker(ipr, "ecn0").read()
                moved = mark(ipr, _params(threshold="50KB"))  # a new K: the map rewritten, the counters go on
                assert moved["applied_by"] == "changed in place" and moved["marker"]["threshold"] == "50KB"
                assert moved["counters"]["marked"] == after_all["marked"]
                assert moved["counters"]["packets"] >= after_all["packets"]
                result = mark(ipr, _params(state="absent"))
                assert result["changed"] and Marker(ipr, "ecn0").find() == (None, None)
        finally:
            rx.close()
            tx.close()
        # the ECT burst: 400 x 1442 B = 577 KB at once into a 100 KB buffer that drains 12.5 KB/ms
        assert after_ect["packets"] >= 400 and after_ect["ect"] >= 400
        assert after_ect["marked"] > 0 and after_ect["dropped"] > 0, after_ect
        assert after_ect["early_dropped"] == 0
        # what reached the receiver: every packet not dropped; CE exactly on those the marker marked
        assert len(ect) == after_ect["ect"] - after_ect["dropped"]
        assert sum(1 for tos in ect if tos & 3 == 3) == after_ect["marked"]
        assert sum(1 for tos in ect if tos & 3 == 2) == after_ect["ect"] - after_ect["dropped"] - after_ect["marked"]
        assert after_ect["max_backlog"] <= 100_000
        # the not-ECT burst: dropped where it would have been marked (RED's rule), nothing marked
        delta = {k: after_all[k] - after_ect[k] for k in ("not_ect", "marked", "dropped", "early_dropped")}
        assert delta["not_ect"] >= 400 and delta["marked"] == 0 and delta["early_dropped"] > 0, delta
        assert sum(1 for tos in not_ect if tos & 3) == 0
        assert len(not_ect) == 400 - delta["dropped"] - delta["early_dropped"]
        # the marking against the queue found: none below K (30 KB: buckets of 6,250 bytes), all from K's bucket on
        from ansible_collections.aifabric.lab.plugins.module_utils._ecn import marking_by_queue
        by_queue = marking_by_queue(after_ect)
        assert all(b["marked"] == 0 for b in by_queue if b["to_bytes"] < 30_000), by_queue
        assert all(b["ratio"] == 1.0 for b in by_queue if b["from_bytes"] >= 30_000), by_queue
        print("ECT burst: %s; not-ECT burst: %s; marking by queue: %s" % (
            {k: after_ect[k] for k in ("packets", "marked", "dropped", "max_backlog")}, delta, by_queue))


@pytest.mark.needs_root
def test_a_tcp_flow_with_ecn_through_the_marker_is_marked_and_its_sender_sees_the_echo():
    """The tcp engine with tcp.ecn on at both ends and tcp.congestion reno: ECN negotiated, the marker's marks
    arrive as CE at the receiver (its namespace's InCEPkts), the sender counts ECE-acknowledged packets
    (tcpi_delivered_ce). What this kernel fills of the rest is printed for docs/congestion.md."""
    import threading

    from ansible_collections.aifabric.lab.plugins.module_utils._ecn import Marker, mark
    from ansible_collections.aifabric.lab.plugins.module_utils._flow import tcp_info
    from ansible_collections.aifabric.lab.plugins.module_utils._flow.engine import FlowSpec
    from ansible_collections.aifabric.lab.plugins.module_utils._flow.tcp import TcpEngine
    from pyroute2 import IPRoute

    with veth_pair() as (a, b):
        with IPRoute(netns=a) as ipr:
            mark(ipr, _params())
        engine = TcpEngine()
        server_spec = FlowSpec(role="server", address=ADDR_B, port=PORT, token="t", expected_clients=1, timeout=30,
                               ecn="accept")
        client_spec = FlowSpec(role="client", address=ADDR_B, port=PORT, token="t", flow_id="w1",
                               volume=8_000_000, timeout=30, ecn="on", congestion="reno")
        listener = _in(b, lambda: engine.listen(server_spec))
        before = _in(b, tcp_info.ip_ecn_counters)
        served = {}
        thread = threading.Thread(target=lambda: served.update(engine.serve(server_spec, listener)), daemon=True)
        thread.start()
        client = engine.client(client_spec)
        assert _in(a, lambda: client.arm(time.monotonic() + 10)), client.result
        try:
            result = client.fire(time.time() + 0.1)
        finally:
            client.close()
        thread.join(timeout=30)
        after = _in(b, tcp_info.ip_ecn_counters)
        with IPRoute(netns=a) as ipr:
            port = Marker(ipr, "ecn0").read()
        assert result["status"] == "ok", result
        assert result["tcp_ecn_sysctl"] == {"before": 2, "after": 1}
        sender, receiver = result["tcp"], served["flows"][0]["tcp"]
        assert sender["congestion"] == "reno" and sender["ecn_negotiated"] and receiver["ecn_negotiated"]
        assert port["marked_segs"] > 0 and sender["delivered_ce"] > 0, (port, sender)
        ce = after["ce"] - before["ce"]
        # every segment the marker marked reached the receiver as CE (nothing else marks on this path)
        assert ce == port["marked_segs"], (ce, port)
        print("8 MB at %s, K 30KB, buffer 100KB: marker %s; receiver InCEPkts +%d; sender %s; receiver %s" % (
            RATE, {k: port[k] for k in ("packets", "segs", "ect_segs", "marked", "marked_segs", "dropped",
                                        "dropped_segs", "max_backlog")}, ce, sender, receiver))
