# -*- coding: utf-8 -*-
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.counters import (
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


@pytest.mark.parametrize("slower, said", [(0.32, "step 32% slower than fair share"),
                                          (-0.04, "step 4% faster than fair share"),
                                          (0.002, "step as fast as fair share")])
def test_the_step_against_fair_share_says_which_way(slower, said):
    assert verdict({"errors": {}, "congestion": {}}, slower) == "all error counters zero, " + said


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
    """worker3 of a real `make demo` run (its counter files, as the callback wrote them): 2 GB of payload. By hand:
    netdev eth0 tx moved 2002109839 - 586 = 2002109253 bytes in 31965 - 7 = 31958 (GSO) packets; payload + 66 B per
    packet = 2000000000 + 66 x 31958 = 2002109228, 25 bytes off (1.25e-8). The htb qdisc counted 2014752741 bytes in
    223526 segments: 2000000000 + 66 x 223526 = 2014752716, 25 bytes off too."""
    import json
    import os

    from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.counters import step_counters
    path = os.path.join(os.path.dirname(__file__), "..", "fixtures", "run-v1-demo", "counters", "barrier",
                        "worker3.json")
    snaps = {"worker3": json.load(open(path))}
    step = {"status": "ok", "step_s": 8.06, "bottleneck_gbps": 8.0, "fair_step_s": 6.04,
            "workers": [{"host": "worker3", "bytes": 2000000000}]}
    section = step_counters(step, snaps)
    assert section["disagreements"] == []
    netdev, qdisc = section["hosts"]["worker3"]["checks"]
    assert (netdev["counter"], netdev["bytes"], netdev["packets"], netdev["expected_bytes"]) == (
        "netdev eth0 tx", 2002109253, 31958, 2002109228)
    assert (qdisc["counter"], qdisc["bytes"], qdisc["packets"], qdisc["expected_bytes"]) == (
        "qdisc eth0", 2014752741, 223526, 2014752716)
    assert netdev["agrees"] and qdisc["agrees"]
    # the htb throttled the flow (overlimits moved: congestion, not an error); the step 8.06 s against 6.04 s fair
    assert section["verdict"].startswith("all error counters zero; congestion counters moved: ")
    assert section["verdict"].endswith("step 33% slower than fair share")


def test_books_that_disagree_are_named():
    from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.counters import step_counters
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
    from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.counters import step_counters
    section = step_counters({"status": "failed", "workers": []}, {"worker2": {"before": _snap(0, 0, 0)}})
    assert section["hosts"]["worker2"] == {"missing": "only one of the two snapshots arrived"}


def test_many_congestion_counters_are_summed_by_name():
    """A fabric has dozens of shaped queues: beyond eight, the verdict sums each counter name and says how many."""
    few = {"leaf1:qdisc/s1/qdisc/overlimits": 5, "leaf1:qdisc/s1/qdisc/drops": 2}
    assert verdict({"errors": {}, "congestion": few}) == (
        "all error counters zero; congestion counters moved: leaf1:qdisc/s1/qdisc/drops +2, "
        "leaf1:qdisc/s1/qdisc/overlimits +5")
    many = {"leaf1:qdisc/s%d/qdisc/overlimits" % i: 10 for i in range(12)}
    many["spine1:qdisc/l1/qdisc/drops"] = 3
    assert verdict({"errors": {}, "congestion": many}) == (
        "all error counters zero; congestion counters moved: drops +3 over 1 counters, overlimits +120 over 12 "
        "counters (each one listed in the report's JSON)")


def test_retransmissions_balance_the_books_and_side_traffic_still_does_not():
    """The issue's baseline: 4,000,000,000 bytes of payload, 3,676 segments retransmitted (32,892,848 bytes, 8,948
    each at MTU 9000): the netdev counted payload + 66 B per packet + the retransmitted payload. Without the
    retransmissions the check cried wolf (+0.82%); with them it balances. 20 MB of someone else's traffic on top is
    still a disagreement."""
    from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.counters import step_counters
    payload, retrans, packets = 4_000_000_000, 3676 * 8948, 66_000
    counted = payload + retrans + packets * 66
    snaps = {"worker1": {"interface": "eth0", "engine": "tcp", "before": _snap(0, 0, 0),
                         "after": _snap(5, counted, packets)}}
    without = step_counters({"status": "ok", "step_s": 5.0, "workers": [{"host": "worker1", "bytes": payload}]},
                            snaps)
    assert without["disagreements"] and 0.0081 < without["hosts"]["worker1"]["checks"][0]["difference"] < 0.0083
    step = {"status": "ok", "step_s": 5.0, "workers": [{"host": "worker1", "bytes": payload, "retrans_bytes": retrans}]}
    section = step_counters(step, snaps)
    (check,) = section["hosts"]["worker1"]["checks"]
    assert check["agrees"] and check["difference"] == 0.0 and check["retrans_bytes"] == 32_892_848
    assert section["disagreements"] == []
    snaps["worker1"]["after"] = _snap(5, counted + 40_000_000, packets + 5000)
    section = step_counters(step, snaps)
    assert section["disagreements"] and section["disagreements"][0].endswith(
        "with 66 bytes of headers per packet and 32892848 bytes retransmitted)")


def test_rdma_retransmission_counters_are_named_as_such():
    delta = {"errors": {"worker3:rdma/rxe0/1/hw_counters/completer_retry_err": 12,
                        "worker3:rdma/mlx5_0/1/hw_counters/local_ack_timeout_err": 2},
             "congestion": {"worker3:rdma/mlx5_0/1/hw_counters/roce_adp_retrans": 40}}
    text = verdict(delta)
    assert text.startswith("error counters moved: ")
    assert text.endswith("; the transport retransmitted (worker3:rdma/mlx5_0/1/hw_counters/local_ack_timeout_err +2, "
                         "worker3:rdma/mlx5_0/1/hw_counters/roce_adp_retrans +40, "
                         "worker3:rdma/rxe0/1/hw_counters/completer_retry_err +12): losses or timeouts on the path")


def _qos(t, rx_pause=0, rx_us=0, tx_pause=0, tx_us=0, marked=0, cnp_sent=0, handled=0):
    """worker3's snapshot with the QoS books of an mlx5 port: ethtool's per-priority PFC counters (PFC on priority
    3 only, so only its counters exist) and DCQCN's RDMA hw_counters."""
    return {"taken_at": t,
            "rdma": {"mlx5_0": {"1": {"counters": {}, "hw_counters": {
                "np_ecn_marked_roce_packets": marked, "np_cnp_sent": cnp_sent, "rp_cnp_handled": handled,
                "rp_cnp_ignored": 0}}}},
            "netdev": {"ens1f0np0": {"tx_bytes": 0}},
            "ethtool": {"ens1f0np0": {"rx_prio3_pause": rx_pause, "rx_prio3_pause_duration": rx_us,
                                      "tx_prio3_pause": tx_pause, "tx_prio3_pause_duration": tx_us,
                                      "rx_prio3_pause_transition": rx_pause, "rx_pause_ctrl_phy": rx_pause}}}


def test_the_nic_says_how_often_and_how_long_it_was_paused():
    from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.counters import nic_sentences
    # by hand: 5204 - 4000 = 1,204 pauses received; 120112 - 82000 = 38112 us = 38 ms; 17 sent, 2104 us = 2.1 ms;
    # 9,410 marked packets arrived, 812 CNPs went back; 640 CNPs came in and were handled
    d = diff(_qos(0, 4000, 82000), _qos(9, 5204, 120112, 17, 2104, 9410, 812, 640))
    assert nic_sentences("worker3", d["deltas"]) == [
        "worker3's port ens1f0np0 was paused 1,204 times on priority 3, 38 ms in all",
        "worker3's port ens1f0np0 paused its peer 17 times on priority 3, 2.1 ms in all",
        "worker3's mlx5_0 port 1 received 9,410 ECN-marked RoCE packets and sent 812 CNPs",
        "worker3's mlx5_0 port 1 handled 640 CNPs (DCQCN slowed its queue pairs down)"]
    # the pauses are congestion evidence, not errors
    assert d["errors"] == {} and d["congestion"]["ethtool/ens1f0np0/rx_prio3_pause"] == 1204


def test_a_single_short_pause_and_nothing_else():
    from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.counters import nic_sentences
    d = diff(_qos(0), _qos(1, 1, 420))
    assert nic_sentences("worker1", d["deltas"]) == [
        "worker1's port ens1f0np0 was paused once on priority 3, 0.420 ms in all"]
    assert nic_sentences("worker1", diff(_qos(0), _qos(1))["deltas"]) == []


def test_the_step_section_names_the_pauses_only_when_they_moved():
    from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.counters import step_counters
    step = {"status": "ok", "workers": []}
    section = step_counters(step, {"worker3": {"interface": "ens1f0np0", "before": _qos(0),
                                               "after": _qos(9, 1204, 38112)}})
    assert section["nic"] == ["worker3's port ens1f0np0 was paused 1,204 times on priority 3, 38 ms in all"]
    assert section["verdict"].startswith("all error counters zero; congestion counters moved: ")
    quiet = step_counters(step, {"worker3": {"interface": "ens1f0np0", "before": _qos(0), "after": _qos(9)}})
    assert "nic" not in quiet
