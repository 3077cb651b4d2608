# -*- coding: utf-8 -*-
"""Every report this tree writes validates against docs/report.schema.json: the real runs of the fixtures re-rendered
(and their golden copies), every scenario played through the callback, a run with refused peers and a dead
coordinator; and the schema refuses what report-schema.md says cannot be."""
from __future__ import annotations

import importlib
import json
import os
import shutil
import sys

# jsonschema is pinned in requirements-test.txt (pip install -c constraints.txt -r requirements-test.txt): imported,
# not skipped without it, so that the schema is never silently unchecked
import jsonschema
import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.build import analyze_run, render_run
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.store import RunDirectory

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".."))
FIXTURES = os.path.join(ROOT, "tests", "unit", "plugins", "plugin_utils", "fixtures")
RUNS = ("history/20261130T180103-demo", "history/20261130T185009-demo", "run-v1-demo")
with open(os.path.join(ROOT, "docs", "report.schema.json")) as _handle:
    SCHEMA = json.load(_handle)
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def _errors(report):
    return ["%s: %s" % ("/".join(str(p) for p in e.absolute_path), e.message) for e in VALIDATOR.iter_errors(report)]


def test_the_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("name", RUNS)
def test_a_real_runs_report_validates_as_written_and_as_re_rendered(tmp_path, name):
    with open(os.path.join(FIXTURES, "golden", os.path.basename(name), "report.json")) as handle:
        assert _errors(json.load(handle)) == []
    run = str(tmp_path / os.path.basename(name))
    shutil.copytree(os.path.join(FIXTURES, name), run)
    render_run(run)
    with open(os.path.join(run, "report.json")) as handle:
        assert _errors(json.load(handle)) == []


def test_every_scenarios_report_validates(tmp_path, monkeypatch):
    sys.path.insert(0, os.path.join(ROOT, "tests", "render"))
    goldens, scenarios = importlib.import_module("goldens"), importlib.import_module("scenarios")
    import time

    monkeypatch.setattr(time, "time", scenarios._clock)
    callback = importlib.import_module("ansible_collections.aifabric.lab.plugins.callback.barrier_report")
    filters = goldens._filters()
    scenarios.reset_clocks()
    checked = 0
    for name, play in scenarios.SCENARIOS.items():
        lab = scenarios.Lab(filters, callback, str(tmp_path), name)
        play(lab)
        path = lab.end()
        with open(os.path.join(path, "report.json")) as handle:
            assert _errors(json.load(handle)) == [], name
        checked += 1
    assert checked == len(scenarios.SCENARIOS) > 3


def test_a_run_with_refused_peers_and_a_dead_coordinator_validates(tmp_path):
    run = RunDirectory(str(tmp_path), "chaos")
    run.add_flow("barrier", {"host": "w1", "flow_id": "w1", "status": "ok", "completion_s": 2.0, "bytes": 10 ** 9,
                             "gbps": 4.0, "start": 1.0, "annotations": {"expected_workers": ["w1", "w2"]}})
    run.add_events("barrier", {"refused": [{"peer": "198.18.8.11", "reason": "bad token", "count": 2, "by": "x"}],
                               "results": {"survived": ["w1"], "lost": ["w2"]},
                               "result_file_errors": {"w1": "OSError: ENOSPC"}})
    report = analyze_run(run.path)
    assert report["status"] == "failed" and _errors(report) == []


@pytest.mark.parametrize("path,value,message", [
    (("status",), "fine", "'fine' is not one of ['ok', 'failed']"),
    (("steps", 0, "step_s"), "8.06", "'8.06' is not of type 'number', 'null'"),
    (("steps", 0, "workers", 0, "status"), "done", "'done' is not one of"),
    (("test_report", "order"), ["topology", "dut"], "was expected"),
])
def test_what_cannot_be_is_refused(tmp_path, path, value, message):
    run = str(tmp_path / "run")
    shutil.copytree(os.path.join(FIXTURES, RUNS[1]), run)
    report = analyze_run(run)
    node = report
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    assert any(message in e for e in _errors(report)), _errors(report)


def test_a_job_steps_report_validates(tmp_path):
    """A job's step (issue 26): its programs' results through the run directory, analysed beside the prediction."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "unit", "plugins", "plugin_utils", "_analysis"))
    job = importlib.import_module("test_job_step")
    from ansible_collections.aifabric.lab.plugins.plugin_utils._report.build import build_report, report_files
    from ansible_collections.aifabric.lab.plugins.plugin_utils._run.records import Collector
    from ansible_collections.aifabric.lab.plugins.plugin_utils._run.store import load_run

    plan = job.the_plan()
    run = RunDirectory(str(tmp_path), label="job")
    run.write_plan([plan], {"hosts": {}})
    Collector(writer=run, planned=lambda step: True).add_step_record(job.record(plan, k=1.05))
    report = json.loads(report_files(build_report(load_run(run.path)))["report.json"])
    assert report["steps"][0]["kind"] == "job" and report["steps"][0]["job"]["jct_s"] > 0
    assert _errors(report) == []
