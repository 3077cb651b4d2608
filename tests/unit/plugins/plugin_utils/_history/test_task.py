# -*- coding: utf-8 -*-
"""The history action's work: record, sync, rebuild; check mode writes nothing; recording a run the history holds
as it is changes nothing, a run whose files changed is written again; where the history is, as the callback reads
it."""
from __future__ import annotations

import json
import os
import shutil

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._history.settings import history_paths
from ansible_collections.aifabric.lab.plugins.plugin_utils._history.task import held, run_task

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "history")
A, B = "20261130T180103-demo", "20261130T185009-demo"


@pytest.fixture
def runs(tmp_path):
    runs_dir = tmp_path / "runs"
    for name in (A, B):
        shutil.copytree(os.path.join(FIXTURES, name), str(runs_dir / name))
    return str(runs_dir)


def _params(runs, **kw):
    return dict({"record": None, "sync": False, "rebuild": False, "runs_dir": runs,
                 "db": os.path.join(runs, "history.sqlite")}, **kw)


def test_check_mode_says_what_it_would_write_and_writes_nothing(runs):
    out = run_task(_params(runs, sync=True), check_mode=True)
    assert out["changed"] and sorted(os.path.basename(p) for p in out["recorded"]) == [A, B]
    assert not os.path.exists(os.path.join(runs, "history.sqlite"))
    out = run_task(_params(runs, record=os.path.join(runs, A)), check_mode=True)
    assert out["changed"] and not os.path.exists(os.path.join(runs, "history.sqlite"))


def test_sync_then_record_are_idempotent_and_a_changed_run_is_written_again(runs):
    assert run_task(_params(runs, sync=True), notify=lambda m: None)["changed"]
    assert sorted(os.path.basename(p) for p in held(os.path.join(runs, "history.sqlite"))) == [A, B]
    assert not run_task(_params(runs, sync=True))["changed"]
    record = _params(runs, record=os.path.join(runs, B))
    assert not run_task(record)["changed"] and not run_task(record, check_mode=True)["changed"]
    # worker3's flow now says it was slower: the history holds the old figures, so it is written again
    flow = os.path.join(runs, B, "flows", "barrier", "worker3.json")
    with open(flow) as handle:
        data = json.load(handle)
    data["completion_s"] += 1.0
    with open(flow, "w") as handle:
        json.dump(data, handle)
    assert run_task(record, check_mode=True)["changed"]
    assert run_task(record)["changed"] and not run_task(record)["changed"]


def test_a_new_run_directory_is_indexed_by_sync(runs):
    run_task(_params(runs, sync=True), notify=lambda m: None)
    shutil.copytree(os.path.join(runs, B), os.path.join(runs, "20261201T090000-demo"))
    out = run_task(_params(runs, sync=True))
    assert out["changed"] and [os.path.basename(p) for p in out["recorded"]] == ["20261201T090000-demo"]


def test_rebuild_always_rewrites(runs):
    run_task(_params(runs, sync=True), notify=lambda m: None)
    assert run_task(_params(runs, rebuild=True), check_mode=True)["changed"]
    out = run_task(_params(runs, rebuild=True), notify=lambda m: None)
    assert out["changed"] and len(out["recorded"]) == 2


def test_where_the_history_is(tmp_path, monkeypatch):
    assert history_paths(str(tmp_path / "r"), None) == (str(tmp_path / "r"), str(tmp_path / "r" / "history.sqlite"))
    monkeypatch.setenv("AIFABRIC_RUNS_DIR", str(tmp_path / "from-env"))
    monkeypatch.setenv("AIFABRIC_HISTORY_DB", str(tmp_path / "h.sqlite"))
    assert history_paths() == (str(tmp_path / "from-env"), str(tmp_path / "h.sqlite"))
