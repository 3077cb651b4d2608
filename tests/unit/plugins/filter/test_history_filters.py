# -*- coding: utf-8 -*-
"""The history filters as a play calls them: bad input is an AnsibleFilterError naming the filter, the parameter and
the fix; what the history says while it works (a database rebuilt) is an Ansible warning."""
from __future__ import annotations

import json
import os
import shutil

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.aifabric.lab.plugins.filter import history as history_filters
from ansible_collections.aifabric.lab.plugins.filter.history import FilterModule
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import plan

F = FilterModule().filters()
FIXTURES = os.path.join(os.path.dirname(__file__), "..", "plugin_utils", "fixtures", "history")
RUNS = ("20261130T180103-demo", "20261130T185009-demo")


@pytest.fixture
def runs(tmp_path):
    for name in RUNS:
        shutil.copytree(os.path.join(FIXTURES, name), str(tmp_path / "runs" / name))
    return tmp_path / "runs"


@pytest.fixture
def warnings(monkeypatch):
    said = []
    monkeypatch.setattr(history_filters._display, "warning", said.append)
    return said


def test_every_filter_is_registered():
    assert sorted(F) == ["history_baseline", "history_compare", "history_compare_files", "history_compare_text",
                         "history_export", "history_rebuild", "history_record", "history_runs", "history_table"]


def test_record_list_and_compare_through_the_filters(runs, warnings):
    db = str(runs / "history.sqlite")
    out = F["history_record"](str(runs / RUNS[0]))  # db: <runs_dir>/history.sqlite, runs_dir: the run's parent
    assert out["id"] == RUNS[0] and out["db"] == db
    assert warnings == ["history: history database %s did not exist: built it from 2 run directories under %s"
                        % (db, runs)]
    rows = F["history_runs"](db, limit=5)
    assert [r["id"] for r in rows] == list(RUNS)
    assert F["history_table"](rows).splitlines()[2].startswith("latest    20261130T185009-demo")
    diff = F["history_compare"](db)  # latest~1 -> latest
    assert (diff["a"]["id"], diff["b"]["id"]) == RUNS
    assert F["history_compare_text"](diff).startswith("compare A %s -> B %s\n" % RUNS)
    assert sorted(F["history_compare_files"](diff)) == ["%s__%s.json" % RUNS, "%s__%s.txt" % RUNS]
    assert F["history_rebuild"](str(runs))["runs"] == 2


def test_a_corrupt_database_is_a_warning_not_a_failure(runs, warnings):
    """A filter reads: the corrupt file is left where it is, as it is (the aifabric.lab.history action moves it aside
    and rebuilds it), and the runs are read from their directories."""
    garbage = b"\x00garbage" * 100
    (runs / "history.sqlite").write_bytes(garbage)
    assert len(F["history_runs"](str(runs / "history.sqlite"))) == 2
    assert warnings == ["history: history database %s is corrupt (file is not a database): read 2 run directories "
                        "under %s without writing it (aifabric.lab.history with sync: true writes it)"
                        % (runs / "history.sqlite", runs)]
    assert (runs / "history.sqlite").read_bytes() == garbage
    assert sorted(os.listdir(str(runs))) == sorted(RUNS + ("history.sqlite",))


@pytest.mark.parametrize("name, args, kwargs, message", [
    ("history_record", ("",), {}, "history_record: give a run directory"),
    ("history_record", ("{tmp}/nowhere",), {"db": "{tmp}/h.sqlite"},
     "history_record: run_dir: {tmp}/nowhere is not a directory; give a run directory"),
    ("history_rebuild", ("{tmp}/nowhere",), {}, "history_rebuild: runs_dir {tmp}/nowhere is not a directory"),
    ("history_runs", (None,), {}, "history_runs: give db (the history file, e.g. runs/history.sqlite) or runs_dir"),
    ("history_runs", ("{tmp}/h.sqlite",), {"limit": "ten"},
     "history_runs: limit: 'ten' is not a number of runs; give a positive integer"),
    ("history_runs", ("{tmp}",), {}, "history_runs: history database {tmp} is a directory; give a file path"),
    ("history_compare", ("{tmp}/h.sqlite",), {"a": "xyz"},
     "history_compare: a: no run matches 'xyz' in h.sqlite: give a run id (make history lists them), a run "
     "directory or latest~N"),
    ("history_compare", ("{tmp}/h.sqlite",), {"a": "latest~7"}, "history_compare: a: latest~7, but h.sqlite holds no "
                                                                "runs yet: run an experiment (make demo), or give "
                                                                "runs_dir"),
    ("history_table", ("not rows",), {}, "history_table: give the history_runs filter's result"),
    ("history_compare_text", ({"a": 1},), {}, "history_compare_text: give the history_compare filter's result"),
    ("history_compare_files", ([],), {}, "history_compare_files: give the history_compare filter's result"),
])
def test_bad_input_names_the_filter_and_the_fix(tmp_path, warnings, name, args, kwargs, message):
    tmp = str(tmp_path)
    args = tuple(a.format(tmp=tmp) if isinstance(a, str) else a for a in args)
    kwargs = {k: v.format(tmp=tmp) if isinstance(v, str) else v for k, v in kwargs.items()}
    with pytest.raises(AnsibleFilterError) as err:
        F[name](*args, **kwargs)
    assert str(err.value).startswith(message.format(tmp=tmp))


def test_the_baseline_of_a_vs_baseline_gate_is_the_latest_run_with_the_step(runs, warnings):
    db = str(runs / "history.sqlite")
    for name in RUNS:
        F["history_record"](str(runs / name))
    groups = {"workers": ["w1", "w2"], "sinks": ["sink"]}
    hostvars = {h: {"lab_address": "198.18.0.%d" % i} for i, h in enumerate(["sink", "w1", "w2"], 1)}
    the_plan = plan({"name": "barrier", "expect": {"vs_baseline": 0.95}}, groups, hostvars).to_dict()
    base = F["history_baseline"](the_plan, db, str(runs))
    assert base["run"] == sorted(RUNS)[-1] and set(base["steps"]) == {"barrier"}
    assert base["p50_step_s"] == base["steps"]["barrier"]
    # a named baseline run, and one the history does not hold: the error names the field and the fix
    older = F["history_baseline"](dict(the_plan, expect={"vs_baseline": 0.95, "baseline": "latest~1"}), db, str(runs))
    assert older["run"] == sorted(RUNS)[0]
    with pytest.raises(AnsibleFilterError, match="expect.baseline: no run matches 'nope'"):
        F["history_baseline"](dict(the_plan, expect={"vs_baseline": 0.95, "baseline": "nope"}), db, str(runs))
    # no run has the step: said, not failed
    assert "no run in history.sqlite has a completed step ring" in F["history_baseline"](
        plan({"name": "ring", "pattern": "ring", "expect": {"vs_baseline": 0.95}}, groups, hostvars).to_dict(), db,
        str(runs))["reason"]
    assert "no run history yet" in F["history_baseline"](the_plan, None, str(runs / "nowhere"))["reason"]


def test_the_baseline_filter_reads_only(runs, warnings):
    """Without a history file it says so and writes none (the aifabric.lab.history action builds it); with one, a run
    directory the history does not hold is not indexed by the filter."""
    groups = {"workers": ["w1", "w2"], "sinks": ["sink"]}
    hostvars = {h: {"lab_address": "198.18.0.%d" % i} for i, h in enumerate(["sink", "w1", "w2"], 1)}
    the_plan = plan({"name": "barrier", "expect": {"vs_baseline": 0.95}}, groups, hostvars).to_dict()
    db = str(runs / "history.sqlite")
    said = F["history_baseline"](the_plan, db, str(runs))["reason"]
    assert "aifabric.lab.history with sync: true builds it" in said and not os.path.exists(db)
    from ansible_collections.aifabric.lab.plugins.plugin_utils._history.task import held, run_task

    shutil.rmtree(str(runs / RUNS[1]))
    run_task({"record": None, "sync": True, "rebuild": False, "runs_dir": str(runs), "db": db})
    shutil.copytree(os.path.join(FIXTURES, RUNS[1]), str(runs / RUNS[1]))  # a newer run, not indexed yet
    assert F["history_baseline"](the_plan, db, str(runs))["run"] == RUNS[0]
    assert sorted(os.path.basename(p) for p in held(db)) == [RUNS[0]]


def test_history_compare_reads_and_never_writes(runs, warnings):
    """The filter reads: no history file is made, and a run directory outside the history is read, not recorded."""
    db = runs / "history.sqlite"
    diff = F["history_compare"](str(db), a=str(runs / RUNS[0]), b=RUNS[1])
    assert (diff["a"]["id"], diff["b"]["id"]) == RUNS and not db.exists()
    assert sorted(os.listdir(str(runs))) == sorted(RUNS)
    assert warnings == ["history: history database %s does not exist: read 2 run directories under %s without "
                        "writing it (aifabric.lab.history with sync: true writes it)" % (db, runs)]


def _barrier_plan():
    groups = {"workers": ["w1", "w2"], "sinks": ["sink"]}
    hostvars = {h: {"lab_address": "198.18.0.%d" % i} for i, h in enumerate(["sink", "w1", "w2"], 1)}
    return plan({"name": "barrier", "expect": {"vs_baseline": 0.95}}, groups, hostvars).to_dict()


def _compared_ids(diff):
    return [diff["a"]["id"], diff["b"]["id"]]


# each reading filter as a play calls it, and what it returns reduced to the runs it found
_READERS = {
    "history_runs": lambda db, runs: [r["id"] for r in F["history_runs"](db, runs_dir=runs)],
    "history_export": lambda db, runs: sorted({json.loads(line)["run_id"] for line in
                                               F["history_export"](db, runs_dir=runs).splitlines()}),
    "history_baseline": lambda db, runs: F["history_baseline"](_barrier_plan(), db, runs).get("run"),
    "history_compare": lambda db, runs: _compared_ids(F["history_compare"](db, runs_dir=runs)),
}
_FOUND = {"history_runs": list(RUNS), "history_export": list(RUNS), "history_baseline": RUNS[1],
          "history_compare": list(RUNS)}


@pytest.mark.parametrize("name", sorted(_READERS))
def test_a_reading_filter_leaves_a_sound_history_byte_for_byte(runs, warnings, name, file_states):
    """A history the aifabric.lab.history action wrote (SQLite's write-ahead log, closed): the filter reads it without
    a byte or a modification time changing, and without a file added beside it (not even SQLite's -wal and -shm)."""
    from ansible_collections.aifabric.lab.plugins.plugin_utils._history.task import run_task

    db = str(runs / "history.sqlite")
    run_task({"record": None, "sync": True, "rebuild": False, "runs_dir": str(runs), "db": db})
    before = file_states(runs)
    assert "history.sqlite" in before
    assert _READERS[name](db, str(runs)) == _FOUND[name]
    assert file_states(runs) == before and warnings == []


@pytest.mark.parametrize("name", ["history_export", "history_runs"])  # history_compare's, history_baseline's: above
def test_a_reading_filter_creates_no_history_file(runs, warnings, name, file_states):
    """No history file: none is created; the run directories are read into memory, with a warning."""
    db = runs / "history.sqlite"
    before = file_states(runs)
    assert _READERS[name](str(db), str(runs)) == _FOUND[name]
    assert not db.exists() and file_states(runs) == before and sorted(os.listdir(str(runs))) == sorted(RUNS)
    assert warnings == ["history: history database %s does not exist: read 2 run directories under %s without "
                        "writing it (aifabric.lab.history with sync: true writes it)" % (db, runs)]


@pytest.mark.parametrize("name", ["history_baseline", "history_export", "history_runs"])
def test_a_reading_filter_writes_no_schema_into_an_empty_file(runs, warnings, name, file_states):
    """An empty history file is left empty (no schema, no PRAGMA written): its runs are read into memory."""
    db = runs / "history.sqlite"
    db.write_bytes(b"")
    before = file_states(runs)
    assert _READERS[name](str(db), str(runs)) == _FOUND[name]
    assert file_states(runs) == before and db.read_bytes() == b""
    assert warnings == ["history: history database %s is empty: read 2 run directories under %s without writing it "
                        "(aifabric.lab.history with sync: true writes it)" % (db, runs)]


def test_history_runs_refuses_sync_a_filter_does_not_write(runs, warnings):
    """sync=true would index the run directories (a write): refused, naming the option and the task that does it."""
    db = runs / "history.sqlite"
    with pytest.raises(AnsibleFilterError) as err:
        F["history_runs"](str(db), runs_dir=str(runs), sync=True)
    assert str(err.value).startswith("history_runs: sync=true writes the history, and a filter only reads")
    assert "aifabric.lab.history" in str(err.value) and "sync: true" in str(err.value)
    assert not db.exists() and sorted(os.listdir(str(runs))) == sorted(RUNS)
    assert [r["id"] for r in F["history_runs"](str(db), runs_dir=str(runs), sync=False)] == list(RUNS)
    assert not db.exists()
