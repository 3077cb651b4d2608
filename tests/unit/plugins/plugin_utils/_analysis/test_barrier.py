# -*- coding: utf-8 -*-
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.barrier import BarrierInputError, analyze_records

SEED_VOLUME = 9_830_000_000


def worker(host, completion, throttle=None, status="ok", gbps=None, start=1000.0, path=True):
    ann = {"step": "barrier", "mtu": 9000, "bottleneck": "8gbit"}
    if path:
        ann["path"] = [{"link": "sw->sink", "rate": "8gbit"}] + (
            [{"link": "%s egress" % host, "rate": throttle}] if throttle else [])
    if throttle:
        ann["throttle"] = throttle
    rec = {"host": host, "status": status, "completion_s": completion, "bytes": SEED_VOLUME,
           "volume_bytes": SEED_VOLUME, "start": start, "annotations": ann}
    rec["gbps"] = gbps if gbps is not None else (SEED_VOLUME * 8 / completion / 1e9 if completion else None)
    if status != "ok":
        rec["error"] = "boom"
    return rec


def test_seed_figures():
    """The seed: 27.6, 27.6 and 40.75 s -> step 40.75 s, the unthrottled workers idle 13.15 s = 32% of the step."""
    report = analyze_records([worker("w1", 27.6), worker("w2", 27.6), worker("w3", 40.75, "2gbit")])
    assert report["status"] == "ok"
    assert report["step_s"] == 40.75
    by = {w["host"]: w for w in report["workers"]}
    assert by["w1"]["idle_s"] == pytest.approx(13.15)
    assert by["w1"]["idle_share"] == pytest.approx(13.15 / 40.75, abs=1e-6)
    assert round(by["w1"]["idle_share"] * 100) == 32
    assert by["w3"]["idle_s"] == 0.0
    assert report["mean_completion_s"] == pytest.approx((27.6 * 2 + 40.75) / 3)
    assert report["mean_understates_s"] == pytest.approx(40.75 - (27.6 * 2 + 40.75) / 3)
    assert report["straggler"]["host"] == "w3"
    assert report["straggler"]["cause"] == "throttled to 2gbit"
    assert report["straggler"]["behind_next_s"] == pytest.approx(13.15)
    assert report["unthrottled_idle_share"] == pytest.approx(13.15 / 40.75, abs=1e-6)
    assert report["throttled_idle_share"] is None  # the only throttled worker is the straggler
    assert report["idle_worker_seconds"] == pytest.approx(26.3)


def test_a_second_throttled_worker_is_not_counted_as_unthrottled():
    """4 workers on a 6 Gb/s line, worker3 at 1 Gb/s, worker4 at 1.6 Gb/s. By hand (max-min): worker3 1, worker4 1.6,
    the rest (3.4) shared by worker1 and worker2, 1.7 each. With T = 10 s for worker3 (the straggler): worker1 and
    worker2 finish at 10/1.7 = 5.882353 s, worker4 at 10/1.6 = 6.25 s. Unthrottled idle: 1 - 1/1.7 = 41.2%; worker4
    (throttled) idle 37.5%. Mixed together they were the misleading "healthy workers idle 40%"."""
    report = analyze_records([worker("worker1", 10 / 1.7), worker("worker2", 10 / 1.7),
                              worker("worker3", 10.0, "1gbit"), worker("worker4", 6.25, "1600mbit")])
    assert report["straggler"]["host"] == "worker3"
    assert report["unthrottled_idle_share"] == pytest.approx(1 - 1 / 1.7, abs=1e-6)
    assert report["throttled_idle_share"] == pytest.approx(0.375, abs=1e-6)
    assert report["verdict"].endswith("the unthrottled workers sat idle 41% of the step, the other throttled "
                                      "workers 38%")


def test_seed_prediction_and_bottleneck_share():
    report = analyze_records([worker("w1", 27.6), worker("w2", 27.6), worker("w3", 40.75, "2gbit")], baseline_gbps=7.94)
    by = {w["host"]: w for w in report["workers"]}
    factor = 8948 / 9014
    assert by["w1"]["predicted_s"] == pytest.approx(SEED_VOLUME * 8 / (3e9 * factor), rel=1e-6)
    assert by["w3"]["predicted_s"] == pytest.approx(SEED_VOLUME * 8 / (2e9 * factor), rel=1e-6)
    assert report["bottleneck_gbps"] == 8.0
    # the three flows' own rates: 78.64 Gb / 27.6 s = 2.849275 twice, 78.64 Gb / 40.75 s = 1.929816; 7.628367 Gb/s
    # in all, 96.08% of the 7.94 Gb/s baseline
    assert report["sum_of_flow_gbps"] == pytest.approx(7.628367, abs=1e-6)
    assert report["sum_of_flow_vs_baseline"] == pytest.approx(0.960752, abs=1e-6)


def test_failed_worker_fails_the_step_and_keeps_survivors():
    report = analyze_records([worker("w1", 27.6), worker("w2", None, status="timeout"), worker("w3", 40.75, "2gbit")])
    assert report["status"] == "failed"
    assert report["step_s"] is None and report["straggler"] is None
    assert report["failed"] == [{"host": "w2", "status": "timeout", "cause": "boom"}]
    assert report["workers_completed"] == 2
    kept = {w["host"]: w for w in report["workers"]}
    assert kept["w1"]["bytes"] == SEED_VOLUME and kept["w1"]["status"] == "ok"
    assert "w2 boom" in report["verdict"]


def test_unthrottled_straggler_is_explained_by_the_prediction():
    report = analyze_records([worker("w1", 27.6), worker("w2", 33.0)])
    assert report["straggler"]["host"] == "w2"
    assert "no throttle applied" in report["straggler"]["cause"]
    assert "slower than its fair share predicts" in report["straggler"]["cause"]


def test_without_paths_there_is_no_prediction():
    report = analyze_records([worker("a", 2.0, path=False), worker("b", 4.0, path=False)])
    assert all(w["predicted_s"] is None for w in report["workers"])
    assert report["straggler"]["cause"] == "no throttle applied"
    assert report["idle_worker_seconds"] == pytest.approx(2.0)


def late(rec, late_s, bound=None):
    rec["late_s"] = late_s
    if bound is not None:
        rec["annotations"]["late_bound"] = bound
    return rec


def test_start_skew_is_the_spread_of_lateness_each_in_its_own_clock():
    """Two hosts whose clocks differ by a second: their start timestamps are a second apart, their lateness against
    the instant (each in its own clock) says how far apart they really started."""
    report = analyze_records([late(worker("a", 2.0, start=100.0001), 0.0001),
                              late(worker("b", 2.0, start=101.0004), 0.0004)])
    assert report["start_skew_s"] == pytest.approx(0.0003)
    assert report["late_max_s"] == pytest.approx(0.0004) and report["late_p50_s"] == pytest.approx(0.00025)


def test_lateness_within_the_bound_is_recorded_and_the_step_stands():
    # the seed's step: predicted 40.75 s for the throttled worker; 1% of it is 0.396 s
    report = analyze_records([late(worker("w1", 27.6), 0.3), late(worker("w2", 27.6), 0.0),
                              late(worker("w3", 40.75, "2gbit"), 0.001)])
    assert report["status"] == "ok"
    predicted = SEED_VOLUME * 8 / (2e9 * 8948 / 9014)
    assert report["late_bound_s"] == pytest.approx(0.01 * predicted, rel=1e-6)
    assert report["late_bound_basis"] == "1%% of the predicted step %.3f s" % predicted


def test_a_start_later_than_the_bound_fails_the_step_and_says_by_how_much():
    report = analyze_records([late(worker("w1", 27.6), 0.5), late(worker("w2", 27.6), 0.0),
                              late(worker("w3", 40.75, "2gbit"), 0.001)])
    assert report["status"] == "failed" and report["step_s"] is None
    (failed,) = report["failed"]
    assert failed["host"] == "w1" and failed["status"] == "late"
    assert failed["cause"].startswith("started 0.500000 s after the common instant, more than the lateness bound "
                                      "0.396")


def test_the_bound_may_be_a_duration_and_without_a_prediction_it_is_relative_to_the_step():
    report = analyze_records([late(worker("a", 2.0, path=False), 0.004, "5ms"), late(worker("b", 4.0, path=False), 0)])
    assert report["status"] == "ok" and report["late_bound_s"] == 0.005 and report["late_bound_basis"] == "5ms, as set"
    report = analyze_records([late(worker("a", 2.0, path=False), 0.05), late(worker("b", 4.0, path=False), 0)])
    assert report["status"] == "failed"
    assert report["late_bound_basis"] == "1% of the measured step 4.000 s"


def test_a_host_with_several_flows_completes_with_its_last():
    """w1 sends two flows (to two sinks over their own 8gbit links), w2 one; hand-computed: w1's flows get 8 and 4
    Gb/s (the second shares sink2's link with w2), so 1e9 bytes take 1.0 s and 2.0 s."""
    def flow(host, flow_id, link, completion):
        return {"host": host, "flow_id": flow_id, "status": "ok", "completion_s": completion, "bytes": 10**9,
                "volume_bytes": 10**9, "gbps": 8.0 / completion, "late_s": 0.0,
                "annotations": {"path": [{"link": link, "rate": "8gbit"}]}}

    report = analyze_records([flow("w1", "w1->sink1", "sw->sink1", 1.0), flow("w1", "w1->sink2", "sw->sink2", 2.01),
                              flow("w2", "w2", "sw->sink2", 2.0)])
    by = {w["host"]: w for w in report["workers"]}
    assert by["w1"]["completion_s"] == 2.01 and by["w1"]["bytes"] == 2 * 10**9
    assert by["w1"]["predicted_s"] == pytest.approx(2.0)
    assert [(f["flow_id"], f["predicted_s"]) for f in by["w1"]["flows"]] == [("w1->sink1", 1.0), ("w1->sink2", 2.0)]
    assert report["straggler"]["host"] == "w1" and report["step_s"] == 2.01
    assert "flows" not in by["w2"]


def test_one_failed_flow_fails_its_host():
    ok = {"host": "w1", "flow_id": "a", "status": "ok", "completion_s": 1.0, "bytes": 1, "annotations": {}}
    bad = {"host": "w1", "flow_id": "b", "status": "timeout", "error": "flow did not complete", "annotations": {}}
    report = analyze_records([ok, bad])
    assert report["status"] == "failed"
    assert report["failed"] == [{"host": "w1", "status": "timeout", "cause": "flow b: flow did not complete"}]


@pytest.mark.parametrize(
    "records, message",
    [
        ([], "no flow results"),
        ([{"status": "ok"}], "has no 'host'"),
        ([{"host": "a", "flow_id": "x"}, {"host": "a", "flow_id": "x"}], "flow x of host a appears twice"),
        ([worker("a", 1.0), worker("a", 2.0)], "appears twice"),
    ],
)
def test_bad_input(records, message):
    with pytest.raises(BarrierInputError, match=message):
        analyze_records(records)


def test_contradicting_link_rates_are_reported_not_raised():
    a = worker("a", 1.0)
    b = worker("b", 1.0)
    b["annotations"]["path"] = [{"link": "sw->sink", "rate": "4gbit"}]
    report = analyze_records([a, b])
    assert "two rates" in report["prediction_unavailable"]
    assert report["status"] == "ok"


def test_a_hop_without_a_rate_is_reported_as_the_prediction_always_said_it():
    """A flow's annotations are user input: a hop without 'rate' leaves the step unpredicted, its message naming the
    hop as it was given (the text the reports carried before the paths were typed)."""
    a, b = worker("a", 1.0), worker("b", 1.0)
    b["annotations"]["path"] = [{"link": "sw->sink", "rate": "8gbit"}, {"link": "b egress"}]
    report = analyze_records([a, b])
    assert report["prediction_unavailable"] == (
        "host b: every path hop needs 'link' and 'rate' (got {'link': 'b egress'})")
    assert report["status"] == "ok" and "predicted_step_s" not in report


def test_a_bad_rate_before_a_broken_hop_is_the_error_named():
    """The path is read in order: a rate that does not parse on the first hop is named before a later hop's missing
    link."""
    a = worker("a", 1.0)
    a["annotations"]["path"] = [{"link": "sw->sink", "rate": "fast"}, {"rate": "1gbit"}]
    report = analyze_records([a])
    assert report["prediction_unavailable"].startswith("host a path link sw->sink rate: ")
    assert "'fast'" in report["prediction_unavailable"]


def test_an_expected_worker_without_a_result_fails_the_step():
    """After an interrupted run only the finished flows are on disk; the step must not be timed over them."""
    a, b = worker("w1", 27.6), worker("w2", 27.6)
    for rec in (a, b):
        rec["annotations"]["expected_workers"] = ["w1", "w2", "w3"]
    report = analyze_records([a, b])
    assert report["status"] == "failed" and report["step_s"] is None
    assert report["failed"][0]["host"] == "w3" and report["failed"][0]["status"] == "missing"
    assert "never reported" in report["failed"][0]["cause"]
    assert report["workers_expected"] == 3 and report["workers_completed"] == 2


def test_retransmissions_are_reported_and_named_as_the_stragglers_cause_when_they_count():
    records = [worker("worker1", 5.37), worker("worker2", 5.37), worker("worker3", 8.06, throttle="2gbit")]
    records[2].update(retransmits=3676, bytes_retrans=3676 * 8948)
    records[0].update(retransmits=0, bytes_retrans=0)
    step = analyze_records(records)
    w3 = next(w for w in step["workers"] if w["host"] == "worker3")
    assert (w3["retransmits"], w3["retrans_bytes"]) == (3676, 32_892_848)
    assert w3["retrans_share"] == pytest.approx(32_892_848 / (SEED_VOLUME + 32_892_848), abs=1e-6)
    assert step["straggler"]["cause"] == (
        "throttled to 2gbit; 3676 segments retransmitted (32.9 MB, 0.33% of its wire; the other workers at most "
        "0.00%)")
    w1 = next(w for w in step["workers"] if w["host"] == "worker1")
    assert w1["retransmits"] == 0 and "retransmits" not in next(w for w in step["workers"] if w["host"] == "worker2")
