# -*- coding: utf-8 -*-
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._counters_diff import (
    diff,
    is_congestion_counter,
    is_error_counter,
    verdict,
)


def snap(t, xmit_words, errors=0, wait=0, drops=0, overlimits=0):
    return {"taken_at": t,
            "rdma": {"mlx5_0": {"1": {"state": "4: ACTIVE",
                                      "counters": {"port_xmit_data": xmit_words, "port_xmit_bytes": xmit_words * 4,
                                                   "port_rcv_errors": errors, "symbol_error": 0,
                                                   "port_xmit_wait": wait},
                                      "hw_counters": {"out_of_buffer": 0}}}},
            "netdev": {"eth0": {"tx_bytes": xmit_words * 4, "rx_dropped": drops}},
            "qdisc": {"eth0": {"qdisc": {"bytes": xmit_words * 4, "drops": 0, "overlimits": overlimits}}}}


def test_the_seeds_green_fabric():
    """The seed: every link up, every error counter zero before and after, and the step still 32% slower."""
    d = diff(snap(10.0, 0), snap(50.75, 2_457_500_000, overlimits=0))
    assert d["seconds"] == pytest.approx(40.75)
    assert d["deltas"]["rdma/mlx5_0/1/counters/port_xmit_bytes"] == 9_830_000_000
    assert d["errors"] == {}
    assert verdict(d, 0.32) == "all error counters zero, step 32% slower than fair share"


def test_errors_and_congestion_are_named():
    d = diff(snap(0, 0), snap(1, 100, errors=3, wait=500, drops=2, overlimits=7))
    assert d["errors"] == {"rdma/mlx5_0/1/counters/port_rcv_errors": 3, "netdev/eth0/rx_dropped": 2}
    assert d["congestion"] == {"rdma/mlx5_0/1/counters/port_xmit_wait": 500, "qdisc/eth0/qdisc/overlimits": 7}
    text = verdict(d)
    assert text.startswith("error counters moved: netdev/eth0/rx_dropped +2, rdma/mlx5_0/1/counters/port_rcv_errors +3")
    assert "congestion counters moved" in text


def test_counters_missing_from_one_side_are_ignored():
    before = snap(0, 0)
    after = snap(1, 10)
    del after["netdev"]["eth0"]["rx_dropped"]
    assert "netdev/eth0/rx_dropped" not in diff(before, after)["deltas"]


@pytest.mark.parametrize("name, error, congestion", [
    ("port_rcv_errors", True, False), ("symbol_error", True, False), ("link_downed", True, False),
    ("port_xmit_discards", True, False), ("out_of_buffer", True, False), ("rnr_nak_retry_err", True, False),
    ("port_xmit_wait", False, True), ("np_cnp_sent", False, True), ("overlimits", False, True),
    ("port_xmit_data", False, False), ("tx_bytes", False, False), ("sent_pkts", False, False),
])
def test_counter_classes(name, error, congestion):
    assert is_error_counter(name) is error
    assert is_congestion_counter(name) is congestion


def _snap(taken, tx_bytes, tx_packets, q_bytes=None, q_packets=None, drops=0):
    snap = {"taken_at": taken, "rdma": {}, "netdev": {"eth0": {"tx_bytes": tx_bytes, "tx_packets": tx_packets,
                                                               "tx_dropped": drops}}, "qdisc": {}}
    if q_bytes is not None:
        snap["qdisc"] = {"eth0": {"qdisc": {"bytes": q_bytes, "packets": q_packets, "drops": 0, "overlimits": 0},
                                  "classes": {}}}
    return snap


def test_books_agree_with_headers_per_packet():
    # worker3 of a real demo run: 2 GB of payload, 33327 GSO packets on the veth, 223526 segments in the htb
    from ansible_collections.aifabric.lab.plugins.plugin_utils._counters_diff import step_counters
    step = {"status": "ok", "step_s": 8.06, "bottleneck_gbps": 8.0, "fair_step_s": 6.04,
            "workers": [{"host": "worker3", "bytes": 2000000000}]}
    snaps = {"worker3": {"interface": "eth0", "engine": "tcp",
                         "before": _snap(0, 1000, 10, 0, 0),
                         "after": _snap(9, 1000 + 2000000000 + 33327 * 66, 10 + 33327,
                                        2000000000 + 223526 * 66, 223526)}}
    section = step_counters(step, snaps)
    assert section["disagreements"] == []
    assert [c["counter"] for c in section["hosts"]["worker3"]["checks"]] == ["netdev eth0 tx", "qdisc eth0"]
    assert all(c["agrees"] and c["difference"] == 0 for c in section["hosts"]["worker3"]["checks"])
    assert section["verdict"] == "all error counters zero, step 33% slower than fair share"


def test_books_that_disagree_are_named():
    from ansible_collections.aifabric.lab.plugins.plugin_utils._counters_diff import step_counters
    step = {"status": "ok", "step_s": 5.0, "workers": [{"host": "worker1", "bytes": 250000000}]}
    # 20 MB of someone else's traffic on the same interface, and a drop
    snaps = {"worker1": {"interface": "eth0", "engine": "tcp", "before": _snap(0, 0, 0),
                         "after": _snap(5, 250000000 + 4000 * 66 + 20000000, 4000 + 2500, drops=3)}}
    section = step_counters(step, snaps)
    (check,) = section["hosts"]["worker1"]["checks"]
    assert not check["agrees"] and 0.07 < check["difference"] < 0.09
    first = section["disagreements"][0]
    assert first.startswith("worker1: the application moved 250000000 bytes but netdev eth0 tx counted")
    assert section["verdict"].startswith("error counters moved: worker1:netdev/eth0/tx_dropped +3")
    assert section["verdict"].endswith("; the books disagree by more than 0.5% (see below)")


def test_a_missing_snapshot_is_said():
    from ansible_collections.aifabric.lab.plugins.plugin_utils._counters_diff import step_counters
    section = step_counters({"status": "failed", "workers": []}, {"worker2": {"before": _snap(0, 0, 0)}})
    assert section["hosts"]["worker2"] == {"missing": "only one of the two snapshots arrived"}
