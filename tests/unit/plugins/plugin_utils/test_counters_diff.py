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
