# -*- coding: utf-8 -*-
"""The report's figures from times written by hand: a 2-host ring AllReduce job (20 MB, 2 iterations, 10 ms of
compute, line rate 8 Gb/s) where b's link to a is half as fast, and b's second compute takes 12 ms.

The programs (both hosts): 0 compute, then a: 1 send s0, 2 recv s0, 3 send s1 (after 2), 4 recv s1, 5 join (1, 3,
4); b: 1 recv s0, 2 send s0, 3 recv s1, 4 send s1 (after 1), 5 join (2, 3, 4). Each segment is 10 MB: 10 ms a->b,
20 ms b->a. The times below (ms) are what that gives, worked by hand:

iteration 0: both compute 0-10; a->b s0 10-20, b->a s0 10-30; a forwards s1 when b's s0 is in (30-40); b's s1 may
start at 20 (a's s0 is in) but its bytes follow its s0 on the connection: 30-50. Both end at 50.
iteration 1: a computes 50-60, b 50-62; a->b s0 60-70 (b posts at 62, the bytes were draining: ends at 70); b->a
s0 62-82; a's s1 82-92; b's s1 starts at 70 (a's s0 is in), bytes 82-102. Both end at 102.
"""
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._job.analysis import (
    analyze,
    collectives,
    distribution,
    iteration_times,
    jct,
    prediction_error,
    roofline,
    waiting,
)
from ansible_collections.aifabric.lab.plugins.plugin_utils._job.program import build_programs
from ansible_collections.aifabric.lab.plugins.plugin_utils._job.spec import parse_job
from ansible_collections.aifabric.lab.plugins.plugin_utils._model.dag import predict

N = None
JOB = {"iterations": 2, "compute_ms": 10, "collectives": [{"op": "allreduce", "size": 20_000_000}]}
LINE = 8e9


def ms(row):
    return [None if x is None else x / 1000.0 for x in row]


def host(start, first, end, iteration_end, status="ok"):
    return {"status": status, "error": None, "at": 1795941057.77, "iterations": 2, "ops": 6, "detail": "full",
            "sampled": [0, 1], "t": {"start": [ms(x) for x in start], "first": [ms(x) for x in first],
                                     "end": [ms(x) for x in end]},
            "iteration_end": ms(iteration_end), "bytes_sent": 40_000_000, "bytes_received": 40_000_000,
            "cpu_s": 0.5}


MEASURED = {
    "a": host(start=[[0, 10, 10, 30, 10, 50], [50, 60, 60, 82, 60, 102]],
              first=[[N, 10, 10, 30, 30, N], [N, 60, 62, 82, 82, N]],
              end=[[10, 20, 30, 40, 50, 50], [60, 70, 82, 92, 102, 102]], iteration_end=[50, 102]),
    "b": host(start=[[0, 10, 10, 10, 20, 50], [50, 62, 62, 62, 70, 102]],
              first=[[N, 10, 10, 30, 30, N], [N, 60, 62, 82, 82, N]],
              end=[[10, 20, 30, 40, 50, 50], [62, 70, 82, 92, 102, 102]], iteration_end=[50, 102]),
}


@pytest.fixture(scope="module")
def spec():
    return parse_job(JOB, ["a", "b"])


@pytest.fixture(scope="module")
def programs(spec):
    p = build_programs(spec, {"a": ("198.18.0.1", 18700), "b": ("198.18.0.2", 18700)})
    # the programs the times above were written for
    assert [(op["kind"], op.get("deps")) for op in p["a"]["ops"]] == [
        ("compute", None), ("send", [0]), ("recv", [0]), ("send", [2]), ("recv", [0]), ("compute", [1, 3, 4])]
    assert [(op["kind"], op.get("deps")) for op in p["b"]["ops"]] == [
        ("compute", None), ("recv", [0]), ("send", [0]), ("recv", [0]), ("send", [1]), ("compute", [2, 3, 4])]
    return p


def test_jct_and_iterations():
    assert jct(MEASURED) == pytest.approx(0.102)
    assert iteration_times(MEASURED) == [pytest.approx(0.050), pytest.approx(0.052)]


@pytest.mark.parametrize("series,expected", [
    # nearest rank: p50 of two is the first, p90 and p99 the second; sigma = 1 ms (population), cv = 1/51
    ([0.050, 0.052], {"n": 2, "min": 0.050, "mean": 0.051, "p50": 0.050, "p90": 0.052, "p99": 0.052, "max": 0.052,
                      "stdev": 0.001, "cv": 0.001 / 0.051}),
    # 1..10: p50 the 5th, p90 the 9th, p99 the 10th; sigma = sqrt(8.25)
    (list(range(10, 0, -1)), {"n": 10, "min": 1, "mean": 5.5, "p50": 5, "p90": 9, "p99": 10, "max": 10,
                              "stdev": 8.25 ** 0.5, "cv": 8.25 ** 0.5 / 5.5}),
    ([3.0], {"n": 1, "min": 3.0, "mean": 3.0, "p50": 3.0, "p90": 3.0, "p99": 3.0, "max": 3.0, "stdev": 0.0,
             "cv": 0.0}),
])
def test_distribution(series, expected):
    d = distribution(series)
    assert d["series"] == series
    assert {k: d[k] for k in expected} == {k: pytest.approx(v) for k, v in expected.items()}


def test_waiting_and_who_for(programs):
    # a waits on b's data: it0, a's s1 send from 20 (its s0 had left) to 30 (b's s0 in), its join from 40 (its s1
    # had left) to 50 (b's s1 in): 20 ms; it1, s1 from 70 to 82 and the join from 92 to 102: 22 ms. b never waits:
    # its s1 was always held by its own connection (its s0 still leaving), not by a's data. Root cause of a's waits:
    # b's sends, held by b's connection or (it1's s0) by b's compute, which waited for b's iteration 0, whose last
    # op was held by b's connection: b.
    w = waiting(MEASURED, programs)
    a, b = w["per_host"]["a"], w["per_host"]["b"]
    assert a["idle_s"] == {0: pytest.approx(0.020), 1: pytest.approx(0.022)}
    assert a["idle_total_s"] == pytest.approx(0.042)
    assert a["waited_for"] == {"b": pytest.approx(0.042)} and a["root_cause"] == {"b": pytest.approx(0.042)}
    assert b == {"idle_s": {0: 0.0, 1: 0.0}, "idle_total_s": 0.0, "waited_for": {}, "root_cause": {}}
    assert w["stragglers"] == [{"iteration": 0, "straggler": "b", "blamed_s": {"b": pytest.approx(0.020)}},
                               {"iteration": 1, "straggler": "b", "blamed_s": {"b": pytest.approx(0.022)}}]
    assert w["straggler_count"] == {"b": 2}


def test_collective_figures(spec, programs):
    # it0: the last host entered at 10 and the last left at 50: 40 ms; it1: 62 (b) to 102: 40 ms.
    # algbw = 20 MB / 40 ms = 0.5 GB/s; busbw = 0.5 x 2(2-1)/2 = 0.5 GB/s = 4 Gb/s: half the line.
    (c,) = collectives(MEASURED, programs, spec, LINE)
    assert c["times_s"] == [pytest.approx(0.040), pytest.approx(0.040)]
    assert (c["time_s"], c["algbw_GBps"], c["busbw_GBps"], c["efficiency"], c["bus_factor"]) == \
        (pytest.approx(0.040), pytest.approx(0.5), pytest.approx(0.5), pytest.approx(0.5), 1.0)
    assert c["described"] == "allreduce ring, 1 chunk per message, window 2"


def test_roofline(spec):
    # per iteration 8 x 20e6 x 1 / 8e9 = 20 ms of communication; Roofline_seq = 2 x (10 + 20) ms = 60 ms;
    # JCT Ratio 102 / 60 = 1.7; Overlap_Fraction = 1 - (102 - 20) / 40 = -1.05; Effective_Comm_Overhead 82 ms.
    r = roofline(spec, LINE, 0.102)
    assert r == {"roofline_seq_s": pytest.approx(0.060), "c_total_s": pytest.approx(0.020),
                 "comm_time_s": pytest.approx(0.040), "line_rate_bps": LINE, "jct_s": 0.102,
                 "jct_ratio": pytest.approx(1.7), "overlap_fraction": pytest.approx(-1.05),
                 "effective_comm_overhead_s": pytest.approx(0.082)}
    assert roofline(spec, LINE, None)["jct_ratio"] is None


def test_prediction_error():
    predicted = {h: {"status": "ok", "iterations": 2, "iteration_end": [0.050, 0.100]} for h in ("a", "b")}
    e = prediction_error(MEASURED, predicted)
    # (50 - 50) / 50 = 0; (50 - 52) / 52; JCT (100 - 102) / 102
    assert e["iterations"] == [pytest.approx(0.0), pytest.approx(-2 / 52)]
    assert e["max_abs"] == pytest.approx(2 / 52) and e["jct"] == pytest.approx(-2 / 102)


def test_a_failed_host_keeps_what_was_measured(spec, programs):
    failed = dict(MEASURED)
    failed["b"] = dict(MEASURED["b"], status="error", iteration_end=[0.050, None])
    assert jct(failed) is None and iteration_times(failed) == [pytest.approx(0.050)]
    report = analyze(failed, programs, spec, LINE)
    assert report["complete"] is False and report["status"] == {"a": "ok", "b": "error"}
    assert report["iterations"]["n"] == 1 and report["roofline"]["jct_ratio"] is None


def test_analyze_puts_it_together(spec, programs):
    predicted = {h: {"status": "ok", "iterations": 2, "iteration_end": [0.050, 0.100]} for h in ("a", "b")}
    report = analyze(MEASURED, programs, spec, LINE, predicted=predicted)
    assert report["jct_s"] == pytest.approx(0.102) and report["complete"] is True
    assert set(report) == {"jct_s", "complete", "status", "iterations", "waiting", "collectives", "roofline",
                           "prediction", "predicted_iterations"}
    assert report["predicted_iterations"]["series"] == [pytest.approx(0.05), pytest.approx(0.05)]


def test_a_ring_with_a_throttled_worker_blames_it():
    # 8 workers, w3 throttled to a quarter of the line: every other worker waits on its left neighbour, and every
    # wait traces back to w3; w3 is the straggler of every iteration (the times: the simulator's prediction).
    hosts = ["w%d" % i for i in range(1, 9)]
    spec = parse_job({"iterations": 3, "compute_ms": 5, "collectives": [{"op": "allreduce", "size": "8MB"}]}, hosts)
    programs = build_programs(spec, {h: ("198.18.0.%d" % (i + 1), 18700) for i, h in enumerate(hosts)})

    def paths(src, dst):
        return [(src + "->sw", LINE), ("sw->" + dst, LINE)] + ([("w3 egress", 2e9)] if src == "w3" else [])
    results = predict(programs, paths)["results"]
    w = waiting(results, programs)
    assert [s["straggler"] for s in w["stragglers"]] == ["w3"] * 3 and w["straggler_count"] == {"w3": 3}
    for i, h in enumerate(hosts):
        if h != "w3":
            assert set(w["per_host"][h]["root_cause"]) == {"w3"}, h
            assert set(w["per_host"][h]["waited_for"]) == {hosts[i - 1]}, h
    # busbw at the throttle: a quarter of the line (2 Gb/s = 0.25 GB/s), within the steps' start-up
    (c,) = collectives(results, programs, spec, LINE)
    assert c["busbw_GBps"] == pytest.approx(0.25, rel=0.01)
