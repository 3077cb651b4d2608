# -*- coding: utf-8 -*-
"""The ECN marker on the real kernel (needs root; the integration tier's unit_root target runs it): a veth pair
between two namespaces of its own (aflt-wt-ecn-<pid>-a/-b, removed also on failure), an htb shaper on one end, the
marker on its root (ecn_port.py, shared with benchmarks/marking.py); a burst of UDP datagrams far above the rate,
ECT(0) or not-ECT, and the receiver's own count of the codepoints it got (IP_RECVTOS) against the marker's counters."""
from __future__ import annotations

import time

import pytest
from ecn_port import ADDR_B, PORT, RATE, burst, in_ns, marker_params, receiver_socket, sender_socket, veth_pair


@pytest.mark.needs_root
def test_the_marker_marks_above_k_drops_above_the_buffer_and_counts_what_the_receiver_sees():
    from ansible_collections.aifabric.lab.plugins.module_utils._ecn import Marker, mark
    from pyroute2 import IPRoute

    with veth_pair() as (a, b):
        with IPRoute(netns=a) as ipr:
            first = mark(ipr, marker_params())
            assert first["changed"] and first["applied_by"] == "attached"
            assert first["marker"] == {"mode": "step", "rate": RATE, "buffer": "100KB", "threshold": "30KB",
                                       "non_ect": "drop"}
            assert not mark(ipr, marker_params())["changed"]  # idempotent: the map holds the same configuration
            assert mark(ipr, marker_params(), check_mode=True)["changed"] is False

        rx, tx = in_ns(b, receiver_socket), in_ns(a, sender_socket)
        try:
            ect = burst(tx, rx, 0x02, 400)  # ECT(0)
            with IPRoute(netns=a) as ipr:
                after_ect = Marker(ipr, "ecn0").read()
            not_ect = burst(tx, rx, 0x00, 400)
            with IPRoute(netns=a) as ipr:
                after_all = Marker(ipr, "ecn0").read()
                moved = mark(ipr, marker_params(threshold="50KB"))  # a new K: the map rewritten, the counters go on
                assert moved["applied_by"] == "changed in place" and moved["marker"]["threshold"] == "50KB"
                assert moved["counters"]["marked"] == after_all["marked"]
                assert moved["counters"]["packets"] >= after_all["packets"]
                result = mark(ipr, marker_params(state="absent"))
                assert result["changed"] and Marker(ipr, "ecn0").find() == (None, None)
        finally:
            rx.close()
            tx.close()
        # the ECT burst: 400 x 1442 B = 577 KB at once into a 100 KB buffer that drains 12.5 KB/ms
        assert after_ect["packets"] >= 400 and after_ect["ect"] >= 400
        assert after_ect["marked"] > 0 and after_ect["dropped"] > 0, after_ect
        # only a not-ECT packet is dropped early: none of the burst's; a stray one of the namespace's own (a neighbour
        # probe) that meets the queue above K may be
        assert after_ect["early_dropped"] <= after_ect["not_ect"]
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
            mark(ipr, marker_params())
        engine = TcpEngine()
        server_spec = FlowSpec(role="server", address=ADDR_B, port=PORT, token="t", expected_clients=1, timeout=30,
                               ecn="accept")
        client_spec = FlowSpec(role="client", address=ADDR_B, port=PORT, token="t", flow_id="w1",
                               volume=8_000_000, timeout=30, ecn="on", congestion="reno")
        listener = in_ns(b, lambda: engine.listen(server_spec))
        before = in_ns(b, tcp_info.ip_ecn_counters)
        served = {}
        thread = threading.Thread(target=lambda: served.update(engine.serve(server_spec, listener)), daemon=True)
        thread.start()
        client = engine.client(client_spec)
        assert in_ns(a, lambda: client.arm(time.monotonic() + 10)), client.result
        try:
            result = client.fire(time.time() + 0.1)
        finally:
            client.close()
        thread.join(timeout=30)
        after = in_ns(b, tcp_info.ip_ecn_counters)
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
