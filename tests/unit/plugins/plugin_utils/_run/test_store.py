# -*- coding: utf-8 -*-
"""The run store: a run directory's name, what its writer writes where, its reader reading it back, and the listing
of the run directories under a runs_dir."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time

import pytest
import yaml
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import plan
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.store import (
    PLAN_FILE,
    RunDirectory,
    collection_version,
    is_run_dir,
    load_run,
    read_plan,
    run_dirs,
    safe_name,
    stamp_of,
)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".."))
FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures")
PLAN = plan({"name": "barrier", "throttles": {"w2": "2gbit"}}, {"workers": ["w1", "w2"], "sinks": ["sink"]},
            {"sink": {"lab_address": "198.18.0.1"}, "w1": {"lab_address": "198.18.0.11"},
             "w2": {"lab_address": "198.18.0.12"}})
NOON = time.mktime((2026, 11, 30, 12, 0, 5, 0, 0, -1))  # 2026-11-30 12:00:05 local time


def test_a_run_directory_is_named_by_its_stamp_and_label_and_never_reused(tmp_path):
    first = RunDirectory(str(tmp_path), "demo", clock=lambda: NOON)
    second = RunDirectory(str(tmp_path), "demo", clock=lambda: NOON)
    odd = RunDirectory(str(tmp_path), "my play", clock=lambda: NOON)
    assert os.path.basename(first.path) == "20261130T120005-demo"
    assert os.path.basename(second.path) == "20261130T120005-demo-2"
    assert os.path.basename(odd.path) == "20261130T120005-my_play-ac010990"  # sha1(b"my play"): ac010990...
    when, label = stamp_of(first.path)
    assert time.strftime("%Y-%m-%d %H:%M:%S", when) == "2026-11-30 12:00:05" and label == "demo"
    assert stamp_of(second.path)[1] == "demo-2"
    assert stamp_of(str(tmp_path / "not-a-stamp")) == (None, "not-a-stamp")


def test_safe_names_keep_a_name_that_is_one_and_tell_apart_those_that_are_not():
    assert safe_name("worker1") == "worker1"
    # sha1("a b") starts 7dbde935 (hashlib.sha1(b"a b").hexdigest()): "a b" and "a_b" never share a file
    assert safe_name("a b") == "a_b-7dbde935" and safe_name("a_b") == "a_b"
    assert safe_name("../..") == "unnamed-%s" % hashlib.sha1(b"../..").hexdigest()[:8]


def test_what_the_writer_writes_the_reader_reads_back(tmp_path):
    run = RunDirectory(str(tmp_path), "demo", clock=lambda: NOON)
    lab = {"controller": {"kernel": "6.1.0"}, "hosts": {"w1": {"kernel": "6.1.0-28"}}}
    run.write_plan([PLAN], lab)
    # received_at orders a step's flows as they came, whatever their file names
    run.add_flow("barrier", {"host": "w2", "step": "barrier", "flow_id": "w2", "status": "ok", "completion_s": 3.0,
                             "received_at": 2.0})
    run.add_flow("barrier", {"host": "w1", "step": "barrier", "flow_id": "w1", "status": "ok", "completion_s": 2.0,
                             "received_at": 1.0})
    run.add_flow("other step", {"host": "w1", "step": "other step", "flow_id": "w1->w2", "status": "ok",
                                "received_at": 3.0})
    run.add_counters("barrier", "w1", {"step": "barrier", "host": "w1", "before": {}, "after": {}})
    run.add_start("barrier", {"mode": "rendezvous", "margin_s": 0.002})
    run.write_files({"report.txt": "text\n"})
    names = sorted(os.path.relpath(os.path.join(d, f), run.path) for d, _s, fs in os.walk(run.path) for f in fs)
    assert names == ["counters/barrier/w1.json", "flows/barrier/w1.json", "flows/barrier/w2.json",
                     "flows/other_step-%s/w1--w1-_w2-%s.json" % (hashlib.sha1(b"other step").hexdigest()[:8],
                                                                 hashlib.sha1(b"w1->w2").hexdigest()[:8]),
                     "plan.json", "report.txt", "starts/barrier.json"]
    saved = json.load(open(os.path.join(run.path, PLAN_FILE)))
    assert saved == {"schema_version": 2, "experiments": [PLAN.to_dict(views=False)], "lab": lab}
    back = load_run(run.path)
    assert back.path == run.path and back.lab == lab and back.experiments == [PLAN]
    barrier = next(s for s in back.steps if s.name == "barrier")
    assert [f.host for f in barrier.flows] == ["w1", "w2"]
    assert barrier.counters == {"w1": {"step": "barrier", "host": "w1", "before": {}, "after": {}}}
    assert barrier.start == {"mode": "rendezvous", "margin_s": 0.002}
    # the step's plan made from the experiment's: its expected workers, w2's throttle
    assert barrier.plan.expected_workers == ["w1", "w2"] and barrier.plan.flow("w2").throttle == "2gbit"
    other = next(s for s in back.steps if s.name == "other step")
    assert other.flows[0].flow_id == "w1->w2" and other.plan.expected_workers == []  # no plan describes it


def test_plan_json_of_schema_1_is_read_as_it_was_written():
    path = os.path.join(FIXTURES, "history", "20261130T185009-demo")
    experiments, steps, lab = read_plan(path)
    stored = json.load(open(os.path.join(path, PLAN_FILE)))
    assert [e.name for e in experiments] == ["elephant", "barrier"]
    assert {n: s.as_dict() for n, s in steps.items()} == {
        n: dict(s, flows=sorted(s["flows"], key=lambda f: (f["host"], f["flow_id"])))
        for n, s in stored["steps"].items()}
    assert lab == stored["lab"]
    assert read_plan(os.path.join(FIXTURES, "run-v1-demo")) is None  # before there was plan.json


@pytest.mark.parametrize("content, message", [
    ({"schema_version": 7, "experiments": []}, "schema_version 7; it reads 1 and 2"),
    ({"schema_version": 1, "experiments": []}, "not a run plan .no 'steps'"),
    ({"schema_version": 2, "experiments": [{"version": 2, "hosts": {}}]},
     "an experiment's plan cannot be read: not a plan: no rounds"),
])
def test_a_plan_json_that_cannot_be_read_says_why(tmp_path, content, message):
    (tmp_path / "flows").mkdir()
    (tmp_path / PLAN_FILE).write_text(json.dumps(content))
    with pytest.raises(ValueError, match=message):
        load_run(str(tmp_path))


def test_the_run_directories_under_a_runs_dir(tmp_path):
    for name in ("20261130T185009-demo", "20261130T180103-demo"):
        shutil.copytree(os.path.join(FIXTURES, "history", name), str(tmp_path / name))
    (tmp_path / "only-flows" / "flows").mkdir(parents=True)
    (tmp_path / "compare").mkdir()  # make compare's output: not a run
    (tmp_path / "history.sqlite").write_text("")
    assert [os.path.basename(p) for p in run_dirs(str(tmp_path))] == [
        "20261130T180103-demo", "20261130T185009-demo", "only-flows"]
    assert not is_run_dir(str(tmp_path / "compare")) and run_dirs(str(tmp_path / "nowhere")) == []


def test_the_collections_version_is_the_checkouts():
    with open(os.path.join(ROOT, "galaxy.yml")) as handle:
        assert collection_version() == yaml.safe_load(handle)["version"]


def _write(root, rel, data):
    full = root / rel
    full.parent.mkdir(parents=True, exist_ok=True)
    full.write_text(json.dumps(data))


def test_the_step_files_and_the_step_and_host_files_are_read_by_one_reader(tmp_path):
    """starts/ and events/ hold a file per step, counters/ and programs/ a file per step and host; an entry's own
    step and host name it (a step name a file name cannot hold), else its path does. The counters keep those names
    in the entry, the others give them up."""
    _write(tmp_path, "flows/barrier/w1.json", {"host": "w1", "status": "ok", "completion_s": 1.0, "bytes": 1,
                                               "volume_bytes": 1, "received_at": 1.0})
    _write(tmp_path, "starts/barrier.json", {"step": "barrier", "margin_s": 0.25})
    _write(tmp_path, "starts/odd.json", {"step": "odd/name", "margin_s": 0.5})
    _write(tmp_path, "starts/notes.txt", {"ignored": True})
    _write(tmp_path, "events/barrier.json", {"refused": ["w9"]})
    _write(tmp_path, "counters/barrier/w1.json", {"step": "barrier", "host": "w1", "before": {}, "after": {}})
    _write(tmp_path, "counters/barrier/sw.json", {"before": {"x": 1}, "after": {"x": 2}})
    _write(tmp_path, "programs/allreduce/w1.json", {"step": "allreduce", "host": "w1", "status": "ok"})
    _write(tmp_path, "programs/allreduce/w2.json", {"status": "failed"})
    run = load_run(str(tmp_path))
    steps = {s.name: s for s in run.steps}
    barrier = steps["barrier"]
    assert barrier.start == {"margin_s": 0.25}
    assert barrier.events == {"refused": ["w9"]}
    assert barrier.counters == {"w1": {"step": "barrier", "host": "w1", "before": {}, "after": {}},
                                "sw": {"before": {"x": 1}, "after": {"x": 2}}}
    assert steps["allreduce"].programs == {"w1": {"status": "ok"}, "w2": {"status": "failed"}}
    assert sorted(steps) == ["allreduce", "barrier"]  # odd/name has a start but no flow or program: no step
