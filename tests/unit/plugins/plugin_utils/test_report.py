# -*- coding: utf-8 -*-
from __future__ import annotations

import json
import os

from ansible_collections.aifabric.lab.plugins.plugin_utils._report import (
    RunDirectory,
    build_report,
    load_steps,
    render_run,
    render_text,
)


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
    assert "healthy workers idle   33% of the step" in text


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
    assert list(load_steps(run.path)) == ["barrier"]


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
