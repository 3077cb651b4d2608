# -*- coding: utf-8 -*-
from __future__ import annotations

import json
import os

from ansible_collections.aifabric.lab.plugins.plugin_utils._report import (
    RunDirectory,
    render_run,
    render_text,
)
from ansible_collections.aifabric.lab.plugins.plugin_utils._report import build_report as _build_report
from ansible_collections.aifabric.lab.plugins.plugin_utils._run import build_run, load_run


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


V1_RUN = os.path.join(os.path.dirname(__file__), "fixtures", "run-v1-demo")


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
