# -*- coding: utf-8 -*-
"""A step's congestion books: the marked ports' deltas, the hosts' TCP, the receivers' CE counts, the checks, the
verdict (plugin_utils/_analysis/ecn.py). The figures are hand-made so each one can be checked by eye."""
from __future__ import annotations

from types import SimpleNamespace

from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.ecn import step_ecn

ZERO = dict(packets=0, bytes=0, ect=0, not_ect=0, ce_in=0, marked=0, dropped=0, early_dropped=0, dropped_bytes=0,
            segs=0, ect_segs=0, marked_segs=0, dropped_segs=0)


def port(**counts):
    return dict(ZERO, **counts)


def queue(peak, ect=None, marked=None, limit=160_000):
    return {"limit_bytes": limit, "min_threshold_bytes": 60_000, "max_threshold_bytes": 60_000, "backlog_bytes": 0,
            "max_backlog_bytes": peak, "hist_ect": ect or [0] * 16, "hist_marked": marked or [0] * 16}


def switch(before, after, qdisc=None):
    """The switch's snapshots: ``before``/``after`` {port: (counters, queue)}; ``qdisc`` {port: (drops before,
    after)}."""
    snaps = {}
    for when, ports in (("before", before), ("after", after)):
        snaps[when] = {"taken_at": 0, "rdma": {}, "netdev": {}, "qdisc": {},
                       "ecn": {p: c for p, (c, _q) in ports.items()},
                       "ecn_queue": {p: q for p, (_c, q) in ports.items()}}
        for name, drops in (qdisc or {}).items():
            snaps[when]["qdisc"][name] = {"qdisc": {"drops": drops[0 if when == "before" else 1]}, "classes": {}}
    return snaps


def receiver(ce_before, ce_after):
    return {"before": {"ipext": {"InNoECTPkts": 10, "InECT0Pkts": 0, "InECT1Pkts": 0, "InCEPkts": ce_before}},
            "after": {"ipext": {"InNoECTPkts": 12, "InECT0Pkts": 3, "InECT1Pkts": 0, "InCEPkts": ce_after}}}


def flow(host, retrans, rto, delivered_ce):
    return SimpleNamespace(host=host, extra={"tcp": {"total_retrans": retrans, "rto_timeouts": rto,
                                                     "delivered_ce": delivered_ce, "ecn_negotiated": True}})


def report(*completions):
    return {"workers": [{"host": "w%d" % i, "completion_s": c} for i, c in enumerate(completions, 1)],
            "counters": {"hosts": {}}}


def test_a_marked_incast_step_adds_up_and_the_receivers_agree_with_the_marker():
    """Two senders into p-sink: 1,000 segments of 1,100 ECT arrived in the step, 600 of them marked, 40 dropped
    (4 packets of 10 segments by the marker, and the qdisc counted those 4 drops). The sink's InCEPkts moved by
    exactly 600."""
    ect_hist_after = [100] * 10 + [0] * 6
    marked_hist_after = [0] * 6 + [100] * 4 + [0] * 6
    counters = {
        "switch": switch(
            {"p-sink": (port(segs=100, ect_segs=100), queue(50_000))},
            {"p-sink": (port(segs=1_100, ect_segs=1_100, marked_segs=600, dropped_segs=40, dropped=4, marked=60,
                             packets=110), queue(158_000, ect_hist_after, marked_hist_after))},
            qdisc={"p-sink": (7, 11)}),
        "sink": receiver(5, 605),
    }
    step = SimpleNamespace(counters=counters, flows=[flow("w1", 22, 1, 300), flow("w2", 18, 0, 290)])
    books = step_ecn(report(1.0, 2.0), step)
    p = books["switches"]["switch"]["p-sink"]
    assert (p["segs"], p["ect_segs"], p["marked_segs"], p["dropped_segs"]) == (1_000, 1_000, 600, 40)
    assert p["marking_ratio"] == 0.6
    assert p["peak_queue_bytes"] == 158_000 and p["peak_queue_in_step"] is True
    assert p["qdisc_drops"] == 4
    # the histogram's deltas: buckets 0-9 saw 100 ECT packets each, 6-9 marked all of theirs
    assert [(b["ect"], b["marked"]) for b in p["marking_by_queue"]] == [(100, 0)] * 6 + [(100, 100)] * 4
    assert p["marking_by_queue"][6]["from_bytes"] == 6 * 160_001 // 16
    assert books["retransmits"] == 40 and books["rto_timeouts"] == 1
    assert books["fct_s"]["p50"] == 1.5
    marks, drops = books["checks"]
    assert (marks["marker"], marks["receivers"], marks["agrees"]) == (600, 600, True)
    assert (drops["marker"], drops["qdisc"], drops["agrees"]) == (4, 4, True)
    assert books["lossless"] is False
    assert books["verdict"] == ("lossy: 40 segments dropped (switch p-sink 40); 600 segments marked CE (60.0% of "
                                "ECT); the flows retransmitted 40 segments, 1 RTO expiries")


def test_receivers_that_counted_fewer_marks_than_the_marker_set_disagree():
    counters = {"switch": switch({"p": (port(), queue(0))}, {"p": (port(segs=10_000, ect_segs=10_000,
                                                                        marked_segs=5_000), queue(0))}),
                "sink": receiver(0, 4_980)}
    books = step_ecn(report(1.0), SimpleNamespace(counters=counters, flows=[]))
    (marks,) = books["checks"]
    assert marks["difference"] == -20 and marks["tolerance"] == 10 and marks["agrees"] is False
    assert "DISAGREE by -20" in marks["text"]
    assert books["lossless"] is True  # nothing dropped: the marks are congestion, not loss
    assert books["verdict"].startswith("lossless: no packet dropped at a marked port; 5000 segments marked CE")


def test_within_the_slack_the_windows_difference_is_tolerated():
    counters = {"switch": switch({"p": (port(), queue(0))}, {"p": (port(ect_segs=200, marked_segs=100), queue(0))}),
                "sink": receiver(0, 109)}
    (marks,) = step_ecn(report(1.0), SimpleNamespace(counters=counters, flows=[]))["checks"]
    assert marks["agrees"] is True  # 9 apart, within the 10 packets the snapshots' windows may differ by


def test_a_qdisc_that_dropped_more_than_the_marker_is_loss_beyond_it_and_fewer_is_a_disagreement():
    more = {"switch": switch({"p": (port(), queue(0))}, {"p": (port(segs=50), queue(0))}, qdisc={"p": (0, 3)})}
    books = step_ecn(report(1.0), SimpleNamespace(counters=more, flows=[]))
    assert books["checks"][0]["agrees"] is True and books["lossless"] is False
    assert "3 more at the qdisc" in books["checks"][0]["text"]
    fewer = {"switch": switch({"p": (port(), queue(0))}, {"p": (port(segs=50, dropped=2, dropped_segs=2), queue(0))},
                              qdisc={"p": (0, 1)})}
    assert step_ecn(report(1.0), SimpleNamespace(counters=fewer, flows=[]))["checks"][0]["agrees"] is False


def test_a_marker_put_on_anew_counts_from_zero_and_a_port_without_a_before_is_left_out():
    counters = {"switch": switch({"old": (port(segs=900, marked_segs=800, ect_segs=900), queue(100))},
                                 {"old": (port(segs=30, ect_segs=30, marked_segs=3), queue(100)),
                                  "new": (port(segs=5), queue(0))})}
    books = step_ecn(report(1.0), SimpleNamespace(counters=counters, flows=[]))
    assert list(books["switches"]["switch"]) == ["old"]
    assert books["total"]["segs"] == 30 and books["total"]["marked_segs"] == 3
    assert books["switches"]["switch"]["old"]["peak_queue_in_step"] is False


def test_a_host_drop_counter_makes_the_step_lossy_too():
    counters = {"switch": switch({"p": (port(), queue(0))}, {"p": (port(segs=50), queue(0))})}
    rep = report(1.0)
    rep["counters"]["hosts"] = {"w1": {"errors": {"netdev/eth0/rx_dropped": 3}}}
    assert step_ecn(rep, SimpleNamespace(counters=counters, flows=[]))["lossless"] is False


def test_without_a_marked_port_there_are_no_books():
    counters = {"w1": {"before": {"netdev": {}}, "after": {"netdev": {}}}, "sink": receiver(0, 0)}
    assert step_ecn(report(1.0), SimpleNamespace(counters=counters, flows=[])) is None
