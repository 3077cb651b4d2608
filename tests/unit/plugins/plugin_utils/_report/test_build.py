# -*- coding: utf-8 -*-
from __future__ import annotations

import json
import os

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import Collective, Plan, Rendezvous, Round
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.build import build_report as _build_report
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.build import render_run
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.text import render_text
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.model import build_run
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.store import RunDirectory, load_run


def build_report(steps):
    return _build_report(build_run(steps))


def rec(host, completion, throttle=None, kind="barrier", step="barrier", status="ok"):
    ann = {"kind": kind, "step": step, "mtu": 9000, "bottleneck": "8gbit",
           "path": [{"link": "sw->sink", "rate": "8gbit"}] + ([{"link": host, "rate": throttle}] if throttle else [])}
    if throttle:
        ann["throttle"] = throttle
    out = {"host": host, "role": "client", "status": status, "completion_s": completion, "bytes": 10**9,
           "volume_bytes": 10**9, "gbps": 8 / completion if completion else None, "start": 1.0, "annotations": ann,
           "step": step}
    if status != "ok":
        out["error"] = "connection reset"
    return out


def test_baseline_feeds_the_barrier_step():
    steps = {"elephant": [rec("w1", 1.007, kind="baseline", step="elephant")],
             "barrier": [rec("w1", 2.69), rec("w2", 2.69), rec("w3", 4.03, "2gbit")]}
    report = build_report(steps)
    assert [s["kind"] for s in report["steps"]] == ["baseline", "barrier"]
    assert report["baseline_gbps"] == 8 / 1.007
    assert report["steps"][1]["baseline_gbps"] == 8 / 1.007
    text = render_text(report)
    assert "single flow w1: 7.944 Gb/s" in text
    assert "step time (max)        4.03 s" in text
    assert "straggler              w3: throttled to 2gbit" in text
    assert "unthrottled idle       33% of the step (the workers without a throttle of their own)" in text
    assert "  throttled idle" not in text


def test_failed_step_text_says_no_step_time():
    report = build_report({"barrier": [rec("w1", 2.69), rec("w2", None, status="error")]})
    text = render_text(report)
    assert report["status"] == "failed"
    assert "STEP FAILED: no step time is computed over the survivors." in text
    assert "- w2 (error): connection reset" in text
    assert "w1                     done" in text


def test_run_directory_round_trip(tmp_path):
    run = RunDirectory(str(tmp_path), "barrier")
    for r in (rec("w1", 2.69), rec("w2", 2.69), rec("w3", 4.03, "2gbit")):
        run.add_flow("barrier", r)
    files = sorted(os.listdir(os.path.join(run.path, "flows", "barrier")))
    assert files == ["w1.json", "w2.json", "w3.json"]  # written one by one, no temp files left
    # A crash before the report: re-render from the flow files alone.
    text = render_run(run.path)
    with open(os.path.join(run.path, "report.json")) as handle:
        saved = json.load(handle)
    assert saved["steps"][0]["step_s"] == 4.03
    assert saved["steps"][0]["straggler"]["host"] == "w3"
    assert "step time (max)        4.03 s" in text
    assert [s.name for s in load_run(run.path).steps] == ["barrier"]


def test_the_peers_refused_and_the_survivors_of_a_dead_coordinator_are_in_every_report_file(tmp_path):
    """events/<step>.json (what the hosts saw beside the flows) re-renders into report.json, .txt, .md and .html."""
    run = RunDirectory(str(tmp_path), "chaos")
    run.add_flow("barrier", rec("w1", 2.69))
    run.add_flow("barrier", rec("w2", None, status="error"))
    run.add_events("barrier", {
        "refused": [{"peer": "198.18.8.11", "reason": "bad token", "count": 2, "by": "the rendezvous on sink"}],
        "refused_unlisted": {"the rendezvous on sink": 5}, "results": {"survived": ["w1"], "lost": ["w2"]},
        "result_file_errors": {"w1": "OSError: [Errno 28] No space left on device"}})
    text = render_run(run.path)
    files = {name: open(os.path.join(run.path, name)).read() for name in ("report.json", "report.md", "report.html")}
    step = json.loads(files["report.json"])["steps"][0]
    assert step["refused"] == [{"peer": "198.18.8.11", "reason": "bad token", "count": 2,
                                "by": "the rendezvous on sink"}]
    assert step["refused_total"] == 7
    assert step["results"]["survived"] == ["w1"] and step["results"]["lost"] == ["w2"]
    assert step["anomalies"] == ["w1 could not keep its own copy of its result (OSError: [Errno 28] No space left on "
                                 "device); it reached the coordinator over the network"]
    assert "  refused                7 connections (peers that are not the step's)\n" in text
    assert "    198.18.8.11 x2, by the rendezvous on sink: bad token\n" in text
    assert "  results                the coordinator died: the results of w1 survived" in text
    assert "  ! w1 could not keep its own copy of its result" in text
    assert "**barrier, refused:** 7 connections (peers that are not the step's): 198.18.8.11 x2 by the rendezvous " \
           "on sink: bad token" in files["report.md"]
    assert "**barrier, results:** the coordinator died: the results of w1 survived" in files["report.md"]
    assert '<li class="refused-peer" data-peer="198.18.8.11">' in files["report.html"]
    assert 'data-survived="w1" data-lost="w2"' in files["report.html"]


def test_run_directories_never_collide(tmp_path):
    a = RunDirectory(str(tmp_path), "x", clock=lambda: 0)
    b = RunDirectory(str(tmp_path), "x", clock=lambda: 0)
    assert a.path != b.path


def test_step_and_host_names_are_made_safe(tmp_path):
    run = RunDirectory(str(tmp_path), "../escape")
    record = rec("../../etc/passwd", 1.0)
    run.add_flow("../step", record)
    assert os.path.dirname(run.path) == str(tmp_path)
    for root, _dirs, names in os.walk(run.path):
        for name in names:
            assert os.path.realpath(os.path.join(root, name)).startswith(run.path)


V1_RUN = os.path.join(os.path.dirname(__file__), "..", "fixtures", "run-v1-demo")


def test_a_version_1_run_directory_re_renders_as_version_2(tmp_path):
    """A real `make demo` run written by schema version 1 (its report.json kept as it was written): re-rendered from
    its flow and counter files, it gives the same figures under the version-2 names."""
    import shutil

    path = str(tmp_path / "run")
    shutil.copytree(V1_RUN, path)
    old = json.load(open(os.path.join(V1_RUN, "report.json")))
    text = render_run(path)
    new = json.load(open(os.path.join(path, "report.json")))
    assert old["schema_version"] == 1 and new["schema_version"] == 2
    (old_step, new_step) = (old["steps"][1], new["steps"][1])
    assert new_step["step_s"] == old_step["step_s"] and new_step["straggler"] == old_step["straggler"]
    assert [w["completion_s"] for w in new_step["workers"]] == [w["completion_s"] for w in old_step["workers"]]
    # the seed's shape (one throttle, and it is the straggler's): the unthrottled share is the old "healthy" one
    assert new_step["unthrottled_idle_share"] == old_step["healthy_idle_share"]
    assert new_step["throttled_idle_share"] is None and "healthy_idle_share" not in new_step
    assert "unthrottled idle       %.0f%% of the step" % (old_step["healthy_idle_share"] * 100) in text
    # the text as version 1 printed it (report.txt, kept as written): every line whose meaning did not change is the
    # same line now (the worker table, step time, straggler, sum of rates, goodput, the counters' books)
    old_lines = open(os.path.join(V1_RUN, "report.txt")).read().splitlines()
    kept = [line for line in old_lines if not line.lstrip().startswith(
        ("healthy workers idle", "start skew", "verdict", "mean completion"))]
    assert len(kept) == len(old_lines) - 4
    new_lines = text.splitlines()
    assert [line for line in kept if line not in new_lines] == []


def experiment(name, pattern, steps, rounds=1, collective=None):
    """A plan of ``steps`` (each repetition ``rounds`` of them), as the report reads it: names, pattern, collective."""
    return Plan(name=name, kind="barrier", pattern=pattern, engine="tcp", volume=10**9, line_rate="8gbit", mtu=9000,
                hosts={}, rounds=[Round() for _round in range(rounds)], steps=list(steps),
                rendezvous=Rendezvous("w1", 18599),
                collective=Collective(**collective) if collective else None)


def _step(name, step_s, straggler="w4", status="ok", predicted=None, unthrottled=None):
    workers = [{"host": "w1", "idle_s": (step_s or 0) / 2, "idle_share": 0.5},
               {"host": "w4", "idle_s": 0.0, "idle_share": 0.0}]
    out = {"step": name, "status": status, "verdict": "v", "workers": workers, "step_s": step_s if status == "ok"
           else None, "straggler": {"host": straggler} if status == "ok" else None}
    if predicted:
        out.update(predicted_step_s=predicted, predicted_unthrottled_step_s=unthrottled)
    return out


def test_an_experiments_steps_together_percentiles_stragglers_and_failed_steps_named():
    """Five steps of 1..4 s and one failed one: p50 of [1, 2, 3, 4] = 2.5 (linear between ranks), p90 = 3.7, max 4;
    the failed step is counted and named, and a planned step that never reported is named too."""
    from ansible_collections.aifabric.lab.plugins.plugin_utils._report.build import summarize_experiment

    steps = [_step("b-1", 1.0), _step("b-2", 2.0, straggler="w1"), _step("b-3", 3.0), _step("b-4", None,
             status="failed"), _step("b-5", 4.0)]
    e = summarize_experiment(experiment("b", "incast", ["b-1", "b-2", "b-3", "b-4", "b-5", "b-6"]), steps)
    assert e["steps"] == 6 and e["steps_ok"] == 4
    assert e["step_s"]["p50"] == 2.5 and e["step_s"]["p90"] == pytest.approx(3.7) and e["step_s"]["max"] == 4.0
    assert e["straggler_frequency"] == {"w4": 3, "w1": 1}
    assert e["idle_worker_seconds"] == {"w1": 5.0, "w4": 0.0}
    assert [f["step"] for f in e["failed_steps"]] == ["b-4", "b-6"]
    assert e["failed_steps"][1]["cause"].startswith("no record")
    assert [x["status"] for x in e["series"]] == ["ok", "ok", "ok", "failed", "ok", "missing"]


def test_a_collectives_time_algbw_busbw_and_what_the_straggler_cost():
    """Ring AllReduce of 1 GB on 4 ranks in 6 rounds of 1.0 s (predicted 1.0, 0.25 without the throttle): time
    6.0 s, algbw 1e9 / 6 / 1e9 = 0.1667 GB/s, busbw x 2(n-1)/n = 1.5 -> 0.25 GB/s, straggler cost 6 - 1.5 = 4.5 s,
    75%."""
    from ansible_collections.aifabric.lab.plugins.plugin_utils._report.build import summarize_experiment

    names = ["a.%d" % k for k in range(1, 7)]
    steps = [_step(n, 1.0, predicted=1.0, unthrottled=0.25) for n in names]
    ring = experiment("a", "allreduce_ring", names, rounds=6,
                      collective={"name": "allreduce_ring", "ranks": 4, "size": 10**9, "bus_factor": 1.5})
    e = summarize_experiment(ring, steps)
    (rep,) = e["collective"]["repetitions"]
    assert rep["time_s"] == 6.0 and rep["predicted_s"] == 6.0 and rep["predicted_unthrottled_s"] == 1.5
    assert rep["algbw_GBps"] == pytest.approx(1 / 6, abs=1e-6) and rep["busbw_GBps"] == pytest.approx(0.25, abs=1e-6)
    assert rep["straggler_cost_s"] == 4.5 and rep["straggler_cost_share"] == 0.75
    text = render_text({"steps": [], "experiments": [e]})
    assert "repetition 1           6.000 s (predicted 6.000 s); without the throttle 1.500 s: the straggler cost " \
           "4.500 s = 75%; algbw 0.167 GB/s, busbw 0.250 GB/s" in text
    # a failed round: the repetition has no time, and says so
    steps[2] = _step("a.3", None, status="failed")
    e = summarize_experiment(ring, steps)
    assert e["collective"]["repetitions"][0]["status"] == "failed" and e["collective"]["time_s"] is None


def test_a_nics_pauses_are_named_in_every_report_file(tmp_path):
    """The demo run's worker3, as if its snapshots had read the port's ethtool QoS statistics (port_counters_info's
    ethtool, mlx5's names): 1,204 pauses received on priority 3, 38112 us of them, between the two snapshots."""
    import shutil

    path = str(tmp_path / "run")
    shutil.copytree(V1_RUN, path)
    record = os.path.join(path, "counters", "barrier", "worker3.json")
    snaps = json.load(open(record))
    snaps["before"]["ethtool"] = {"eth0": {"rx_prio3_pause": 10, "rx_prio3_pause_duration": 900}}
    snaps["after"]["ethtool"] = {"eth0": {"rx_prio3_pause": 1214, "rx_prio3_pause_duration": 39012}}
    with open(record, "w") as handle:
        json.dump(snaps, handle)
    sentence = "worker3's port eth0 was paused 1,204 times on priority 3, 38 ms in all"
    text = render_run(path)
    assert "  nic                    " + sentence in text.splitlines()
    report = json.load(open(os.path.join(path, "report.json")))
    assert report["steps"][1]["counters"]["nic"] == [sentence]
    assert "<li>%s</li>" % sentence.replace("'", "&#39;") in open(os.path.join(path, "report.html")).read()
    assert "- " + sentence in open(os.path.join(path, "report.md")).read().splitlines()
