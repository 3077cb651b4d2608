# -*- coding: utf-8 -*-
"""The run history on real run directories: what it stores, idempotent re-imports, compare, a corrupt or missing
database rebuilt, bad refs, and a failure mid-record that leaves no half run.

The fixtures under ``fixtures/history/`` are two real ``make demo`` runs (plan.json, flows/, counters/, starts/ as
the callback wrote them; the report files left out), both with worker3 throttled to 2gbit: no real demo run without
a throttle exists. ``unthrottled()`` makes one from a copy of the second by editing it consistently - the plan loses
worker3's throttle (its throttle_args, applied_throttles, the throttled link of its path), worker3's counters lose
the htb qdisc, and the barrier's three flows finish together near the fair share (6.048, 6.052, 6.050 s instead of
5.36, 5.37, 8.06 s), their rates, end times and interval samples rewritten to match.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._history import store as _history
from ansible_collections.aifabric.lab.plugins.plugin_utils._history.compare import compare, get_run
from ansible_collections.aifabric.lab.plugins.plugin_utils._history.store import (
    HistoryError,
    list_runs,
    rebuild,
    record_run,
)
from ansible_collections.aifabric.lab.plugins.plugin_utils._history.text import (
    compare_files,
    render_compare,
    render_history,
    write_compare,
)
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.build import analyze_run

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures")
A_RUN, B_RUN = "20261130T180103-demo", "20261130T185009-demo"
UNTHROTTLED = "20261130T190000-demo"  # made by unthrottled() from B_RUN
THROTTLE_LINE = "2gbit (tc htb on eth0's egress)"
HTB = "tc htb on eth0's egress"


def _load(path):
    with open(path) as handle:
        return json.load(handle)


def _dump(path, data):
    with open(path, "w") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)


def unthrottled(src, dst):
    """A copy of the throttled demo run ``src`` as it would have run without worker3's throttle (module docstring)."""
    shutil.copytree(src, dst)
    plan = _load(os.path.join(dst, "plan.json"))
    barrier = plan["experiments"][1]
    assert barrier["name"] == "barrier" and barrier["applied_throttles"] == {"worker3": HTB}
    barrier["hosts"]["worker3"]["throttle"] = None
    del barrier["hosts"]["worker3"]["throttle_args"]
    barrier["applied_throttles"], barrier["throttled"] = {}, []
    client = barrier["rounds"][0]["hosts"]["worker3"]["clients"][0]
    client["path"] = [link for link in client["path"] if not link.get("throttle")]
    for flow in plan["steps"]["barrier"]["flows"]:
        flow["path"] = [link for link in flow["path"] if not link.get("throttle")]
        flow["throttle"] = flow["throttle_mechanism"] = None
    _dump(os.path.join(dst, "plan.json"), plan)
    counters = _load(os.path.join(dst, "counters", "barrier", "worker3.json"))
    counters["before"]["qdisc"] = counters["after"]["qdisc"] = {}
    _dump(os.path.join(dst, "counters", "barrier", "worker3.json"), counters)
    for host, completion in (("worker1", 6.048), ("worker2", 6.052), ("worker3", 6.05)):
        path = os.path.join(dst, "flows", "barrier", host + ".json")
        flow = _load(path)
        duration = completion - flow["late_s"]
        rate = flow["bytes"] * 8 / duration / 1e9
        flow.update(completion_s=completion, duration_s=round(duration, 6), gbps=round(rate, 6),
                    last_byte_acked=flow["first_byte"] + duration, server_last_byte=flow["first_byte"] + duration,
                    samples=[{"bytes": int(rate * t * 1e9 / 8), "gbps": round(rate, 6), "retransmits": 0,
                              "rtt_us": 1000, "t": float(t)} for t in range(1, 7)])
        _dump(path, flow)
    return dst


@pytest.fixture
def runs(tmp_path):
    """A runs directory holding the two real demo runs and the unthrottled one."""
    runs_dir = tmp_path / "runs"
    runs_dir.mkdir()
    for name in (A_RUN, B_RUN):
        shutil.copytree(os.path.join(FIXTURES, "history", name), str(runs_dir / name))
    unthrottled(str(runs_dir / B_RUN), str(runs_dir / UNTHROTTLED))
    return runs_dir


@pytest.fixture
def notes():
    return []


def _counts(db):
    conn = sqlite3.connect(str(db))
    try:
        return {t: conn.execute("SELECT COUNT(*) FROM %s" % t).fetchone()[0]
                for t in ("runs", "config", "steps", "workers", "flows")}
    finally:
        conn.close()


def test_a_run_is_stored_with_its_configuration_and_results(runs, notes):
    db = runs / "history.sqlite"
    out = record_run(str(db), str(runs / B_RUN), notify=notes.append)
    assert out["id"] == B_RUN and out["steps"] == 2 and out["flows"] == 4
    run = get_run(str(db), B_RUN, notify=notes.append)
    config = dict(map(tuple, run["config"]))
    # the lines a person compares, with the values the run recorded (plan.json, counters, lab)
    assert config["line rate"] == "8gbit" and config["mtu"] == "9000" and config["engine"] == "tcp"
    assert config["worker3 throttle"] == THROTTLE_LINE
    assert config["worker1 throttle"] == config["sink throttle"] == "none"
    assert config["worker3 qdisc eth0"] == "classes 1:1, 1:2"  # worker3's htb, as its counters saw it
    assert "worker1 qdisc eth0" not in config
    assert config["barrier pattern"] == config["elephant pattern"] == "incast"
    assert config["barrier workers"] == "worker1, worker2, worker3"
    assert config["barrier volume"] == "2000000000 bytes (2 GB)"
    assert config["worker3 kernel"] == config["controller kernel"] == "6.18.44-fc-v669"
    assert config["ansible-core"] == "2.19.14" and config["controller python"] == "3.11.2"
    assert config["aifabric.lab"] == "0.1.0"
    assert "hash policy" not in config  # nothing recorded one
    assert "perftest options" not in config  # a tcp run
    # the results, as report.json of this run says them
    assert run["status"] == "ok" and run["started"] == "2026-11-30 18:50:09" and run["label"] == "demo"
    assert run["headline_step_s"] == 8.06134 and run["headline_straggler"] == "worker3"
    assert run["headline_idle_share"] == 0.334184
    barrier = run["steps"][1]
    assert barrier["step"] == "barrier" and barrier["kind"] == "barrier" and barrier["status"] == "ok"
    assert barrier["step_s"] == 8.06134 and barrier["predicted_step_s"] == 8.059008
    assert barrier["straggler"] == "worker3"
    assert barrier["straggler_cause"] == "throttled to 2gbit (worker3: tc htb on eth0's egress)"
    assert barrier["unthrottled_idle_share"] == 0.334184 and barrier["throttled_idle_share"] is None
    assert barrier["counters_verdict"].startswith("all error counters zero; congestion counters moved: worker3:")
    flows = {f["flow_id"]: f for f in barrier["flows"]}
    assert flows["worker3"] == {"position": 3, "host": "worker3", "flow_id": "worker3", "status": "ok",
                                "bytes": 2000000000, "completion_s": 8.06134, "gbps": 1.984804,
                                "predicted_s": 8.059008, "idle_share": 0.0, "late_s": 9.1e-05}
    assert flows["worker1"]["idle_share"] == 0.334681 and flows["worker1"]["gbps"] == 2.983232
    workers = {w["host"]: w for w in barrier["workers"]}
    assert workers["worker3"]["throttle"] == "2gbit" and workers["worker1"]["throttle"] is None


def test_recording_again_replaces_the_run(runs, notes):
    db = runs / "history.sqlite"
    record_run(str(db), str(runs / B_RUN), notify=notes.append)  # the history is built: all three runs
    first = _counts(db)
    assert first["runs"] == 3 and first["steps"] == 6 and first["flows"] == 12
    record_run(str(db), str(runs / B_RUN), notify=notes.append)
    record_run(str(db), str(runs / A_RUN) + "/", notify=notes.append)  # the same directory, written differently
    record_run(str(db), str(runs / B_RUN), notify=notes.append)
    assert _counts(db) == first
    rebuild(str(db), str(runs), notify=notes.append)
    assert _counts(db) == first


def test_the_callback_s_report_is_recorded_as_the_analysis_would_be(runs, notes):
    db = runs / "history.sqlite"
    record_run(str(db), str(runs / B_RUN), notify=notes.append)
    by_analysis = get_run(str(db), B_RUN)
    record_run(str(db), str(runs / B_RUN), report=analyze_run(str(runs / B_RUN)), notify=notes.append)
    given = get_run(str(db), B_RUN)
    for run in (by_analysis, given):
        run.pop("recorded_at")
    assert given == by_analysis


def test_compare_names_the_throttle_and_the_step_time(runs, notes, tmp_path):
    db = str(runs / "history.sqlite")
    diff = compare(db, B_RUN, UNTHROTTLED, notify=notes.append)
    assert diff["a"]["id"] == B_RUN and diff["b"]["id"] == UNTHROTTLED
    assert diff["config"]["changed"] == [{"key": "worker3 throttle", "a": THROTTLE_LINE, "b": "none"}]
    assert diff["config"]["only_a"] == [{"key": "worker3 qdisc eth0", "value": "classes 1:1, 1:2"}]
    assert diff["config"]["only_b"] == []
    assert [s["step"] for s in diff["steps"]] == ["elephant", "barrier"]
    barrier = diff["steps"][1]
    assert barrier["step_s"] == {"a": 8.06134, "b": 6.052, "delta": -2.00934, "change": -0.249256}
    assert barrier["straggler"]["a"]["host"] == "worker3" and barrier["straggler"]["b"]["host"] == "worker2"
    assert barrier["unthrottled_idle_share"]["a"] == 0.334184
    w3 = next(w for w in barrier["workers"] if w["host"] == "worker3")
    assert w3["throttle"] == {"a": "2gbit", "b": None}
    assert w3["completion_s"]["a"] == 8.06134 and w3["completion_s"]["b"] == 6.05
    elephant = diff["steps"][0]
    assert elephant["step_s"]["delta"] == 0.0  # the same baseline: B is a copy of A's elephant
    text = render_compare(diff)
    assert "  worker3 throttle      2gbit (tc htb on eth0's egress) -> none\n" in text
    assert "  worker3 qdisc eth0    classes 1:1, 1:2 -> (not in B)\n" in text
    assert "configuration: 1 line differs, 1 only in A, 0 only in B" in text
    assert "  step time s                   8.061        6.052  -2.009 (-24.9%)\n" in text
    assert "=== step 'barrier' (barrier): ok -> ok" in text
    assert "  straggler              A worker3: throttled to 2gbit (worker3: tc htb on eth0's egress)\n" in text
    assert "  worker3            8.061     6.050    -25.0%" in text
    assert "2gbit -> -" in text
    # the files: text and JSON, written atomically under <runs_dir>/compare
    paths = write_compare(diff, str(runs))
    assert sorted(os.path.basename(p) for p in paths) == ["%s__%s.json" % (B_RUN, UNTHROTTLED),
                                                          "%s__%s.txt" % (B_RUN, UNTHROTTLED)]
    files = compare_files(diff)
    for path in paths:
        with open(path) as handle:
            assert handle.read() == files[os.path.basename(path)]
    assert _load(paths[1] if paths[1].endswith(".json") else paths[0]) == json.loads(json.dumps(diff))


def test_two_real_runs_compare_with_the_same_configuration(runs, notes):
    diff = compare(str(runs / "history.sqlite"), A_RUN, B_RUN, notify=notes.append)
    assert diff["config"]["changed"] == diff["config"]["only_a"] == diff["config"]["only_b"] == []
    barrier = diff["steps"][1]
    assert barrier["step_s"]["a"] == 8.059957 and barrier["step_s"]["b"] == 8.06134
    assert barrier["straggler"]["a"] == barrier["straggler"]["b"]
    assert "  straggler              worker3: throttled to 2gbit (worker3: tc htb on eth0's egress) (both)" in \
        render_compare(diff)


def test_history_lists_the_runs_with_their_headline(runs, notes):
    db = str(runs / "history.sqlite")
    rows = list_runs(db, notify=notes.append)
    assert [(r["id"], r["ref"]) for r in rows] == [(A_RUN, "latest~2"), (B_RUN, "latest~1"), (UNTHROTTLED, "latest")]
    assert [r["headline_step_s"] for r in rows] == [8.059957, 8.06134, 6.052]
    assert [r["headline_straggler"] for r in rows] == ["worker3", "worker3", "worker2"]
    text = render_history(rows)
    lines = text.splitlines()
    assert lines[0].split() == ["ref", "run", "date", "label", "status", "steps", "ok", "barrier", "step", "s",
                                "straggler", "idle"]
    assert lines[2].split() == ["latest~1", B_RUN, "2026-11-30", "18:50:09", "demo", "ok", "2/2", "8.061",
                                "worker3", "33%"]
    assert lines[3].split()[-2:] == ["worker2", "0%"]
    assert [r["id"] for r in list_runs(db, limit=1)] == [UNTHROTTLED]


def test_runs_are_named_by_id_directory_or_latest(runs, notes, monkeypatch):
    db = str(runs / "history.sqlite")
    assert get_run(db, "latest", notify=notes.append)["id"] == UNTHROTTLED
    assert get_run(db, "latest~2")["id"] == A_RUN
    assert get_run(db, B_RUN)["id"] == B_RUN
    assert get_run(db, str(runs / A_RUN))["id"] == A_RUN
    assert get_run(db, "elsewhere/%s" % B_RUN)["id"] == B_RUN  # a path's basename
    assert get_run(db, "20261130T1801")["id"] == A_RUN  # the unique start of an id
    monkeypatch.chdir(str(runs))
    assert get_run(db, "./%s" % B_RUN)["id"] == B_RUN  # a relative directory


@pytest.mark.parametrize("ref, message", [
    ("xyz", "ref: no run matches 'xyz' in history.sqlite: give a run id (make history lists them), a run directory "
            "or latest~N"),
    ("latest~3", "ref: latest~3, but history.sqlite holds 3 runs (latest to latest~2); give a run id"),
    ("20261130T1", "ref: '20261130T1' matches 3 runs in history.sqlite (20261130T180103-demo, 20261130T185009-demo, "
                   "20261130T190000-demo); give one of them whole"),
    ("", "ref: empty; give a run id"),
])
def test_a_bad_ref_says_what_to_give(runs, notes, ref, message):
    with pytest.raises(HistoryError) as err:
        get_run(str(runs / "history.sqlite"), ref, notify=notes.append)
    assert str(err.value).startswith(message)


def test_compare_names_the_bad_side(runs, notes):
    with pytest.raises(HistoryError, match=r"^b: no run matches 'nope' in history.sqlite"):
        compare(str(runs / "history.sqlite"), "latest", "nope", notify=notes.append)


def _unwritten(before, after):
    """``after`` is ``before`` but for SQLite's empty read-side files (an empty -wal, the -shm index) a read-only
    connection to a WAL database may leave: no byte of the history changed, nothing was committed."""
    new = {k: v for k, v in after.items() if k not in before}
    empty_wal = hashlib.sha256(b"").hexdigest()
    return ({k: v for k, v in after.items() if k in before} == before
            and all(k.endswith("-shm") or (k.endswith("-wal") and v[0] == empty_wal) for k, v in new.items()))


def test_a_run_directory_not_yet_recorded_is_read_when_named_and_not_written(runs, tmp_path, notes, file_states):
    db = str(runs / "history.sqlite")
    list_runs(db, notify=notes.append)
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(str(runs / A_RUN), str(elsewhere / A_RUN))
    before = file_states(runs)
    diff = compare(db, str(elsewhere / A_RUN), B_RUN, notify=notes.append)
    # the same name from another directory gets the id the history would give it, and is read as it would hold it
    assert diff["a"]["id"] == "%s@%s" % (A_RUN, hashlib.sha1(str(elsewhere / A_RUN).encode()).hexdigest()[:6])
    assert diff["a"]["path"] == str(elsewhere / A_RUN)
    assert diff["config"]["changed"] == [] and diff["steps"][1]["step_s"]["a"] == 8.059957  # A_RUN's own figures
    assert _unwritten(before, file_states(runs)) and _counts(db)["runs"] == 3
    record_run(db, str(elsewhere / A_RUN), notify=notes.append)  # what the history action would write
    assert compare(db, str(elsewhere / A_RUN), B_RUN, notify=notes.append)["a"] == diff["a"]


def test_compare_never_writes_the_history_whatever_its_state(runs, notes, monkeypatch, file_states):
    """A filter reads: the history's file is left byte for byte as it was, sound, missing or corrupt (its runs are
    then read from their directories into memory), and SQLite itself refuses a write on the connection."""
    db = runs / "history.sqlite"
    before = file_states(runs)
    diff = compare(str(db), B_RUN, UNTHROTTLED, notify=notes.append)  # no history file yet
    assert diff["steps"][1]["step_s"]["delta"] == -2.00934 and not db.exists() and file_states(runs) == before
    assert notes == ["history database %s does not exist: read 3 run directories under %s without writing it "
                     "(aifabric.lab.history with sync: true writes it)" % (db, runs)]
    db.write_bytes(b"\x00garbage" * 100)
    before = file_states(runs)
    assert compare(str(db), B_RUN, UNTHROTTLED, notify=notes.append) == diff and file_states(runs) == before
    assert "is corrupt (file is not a database): read 3 run directories" in notes[-1]
    db.unlink()
    list_runs(str(db), notify=notes.append)  # a sound history, written by a writer
    before = file_states(runs)
    assert compare(str(db), B_RUN, str(runs / UNTHROTTLED), notify=notes.append) == diff
    assert _unwritten(before, file_states(runs))
    from ansible_collections.aifabric.lab.plugins.plugin_utils._history import store

    with store.read_history(str(db)) as conn, pytest.raises(sqlite3.OperationalError, match="readonly"):
        conn.execute("DELETE FROM runs")
    assert _counts(db)["runs"] == 3


def test_a_missing_database_is_built_from_the_run_directories(runs, notes):
    db = runs / "history.sqlite"
    (runs / "compare").mkdir()  # not a run directory: neither plan.json nor flows/
    record_run(str(db), str(runs / A_RUN), notify=notes.append)
    assert notes == ["history database %s did not exist: built it from 3 run directories under %s" % (db, runs)]
    assert _counts(db)["runs"] == 3


def test_a_corrupt_database_is_moved_aside_and_rebuilt(runs, notes):
    db = runs / "history.sqlite"
    list_runs(str(db), notify=notes.append)
    garbage = b"this is not an SQLite file\x00\xff" * 64
    db.write_bytes(garbage)
    notes.clear()
    rows = list_runs(str(db), notify=notes.append)
    assert [r["id"] for r in rows] == [A_RUN, B_RUN, UNTHROTTLED]
    assert len(notes) == 1
    aside = [p for p in os.listdir(str(runs)) if p.startswith("history.sqlite.corrupt-")]
    assert len(aside) == 1 and (runs / aside[0]).read_bytes() == garbage  # moved, never deleted
    assert notes[0] == ("history database %s is corrupt (file is not a database): moved it aside to %s and rebuilt "
                        "it from 3 run directories under %s" % (db, runs / aside[0], runs))


def test_a_truncated_database_is_moved_aside_and_rebuilt(runs, notes):
    db = runs / "history.sqlite"
    list_runs(str(db), notify=notes.append)
    conn = sqlite3.connect(str(db))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2])
    notes.clear()
    assert len(list_runs(str(db), notify=notes.append)) == 3
    assert "is corrupt" in notes[0] and "moved it aside to" in notes[0]


def test_another_schema_is_rebuilt_and_a_newer_one_refused(runs, notes):
    db = runs / "history.sqlite"
    conn = sqlite3.connect(str(db))
    conn.execute("CREATE TABLE things (a)")
    conn.commit()
    conn.close()
    assert len(list_runs(str(db), notify=notes.append)) == 3
    assert "is not a history this collection reads (its tables: things): moved it aside" in notes[0]
    conn = sqlite3.connect(str(db))
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(HistoryError, match="has schema 99, newer than this collection's 1"):
        list_runs(str(db), notify=notes.append)
    assert os.path.exists(str(db))  # not moved: it is not ours


def test_a_directory_that_cannot_be_analysed_is_skipped_with_a_warning(runs, notes):
    broken = runs / "20261130T200000-broken"
    (broken / "flows" / "barrier").mkdir(parents=True)
    (broken / "flows" / "barrier" / "w1.json").write_text("{not json")
    summary = rebuild(str(runs / "history.sqlite"), str(runs), notify=notes.append)
    assert summary["runs"] == 3 and [s["path"] for s in summary["skipped"]] == [str(broken)]
    assert any(n.startswith("skipped %s: run_dir: %s cannot be analysed" % (broken, broken)) for n in notes)
    with pytest.raises(HistoryError, match="cannot be analysed"):
        record_run(str(runs / "history.sqlite"), str(broken), notify=notes.append)
    with pytest.raises(HistoryError, match="is not a directory"):
        record_run(str(runs / "history.sqlite"), str(runs / "nothing"), notify=notes.append)


def test_a_failure_mid_record_leaves_no_half_run(runs, notes, monkeypatch):
    db = runs / "history.sqlite"
    record_run(str(db), str(runs / A_RUN), notify=notes.append)
    conn = sqlite3.connect(str(db))
    conn.execute("DELETE FROM runs WHERE id = ?", (UNTHROTTLED,))
    for table in ("config", "steps", "workers", "flows"):
        conn.execute("DELETE FROM %s WHERE run_id = ?" % table, (UNTHROTTLED,))
    conn.commit()
    conn.close()
    before = _counts(db)
    real_insert, calls = _history._insert, []

    def failing_insert(conn, table, rows):
        calls.append(table)
        if len(calls) > 1:
            raise OSError("disk full (simulated) after the first insert")
        real_insert(conn, table, rows)

    monkeypatch.setattr(_history, "_insert", failing_insert)
    with pytest.raises(OSError, match="simulated"):
        record_run(str(db), str(runs / UNTHROTTLED), notify=notes.append)  # a new run: its runs row came first
    assert calls == ["runs", "config"]
    calls.clear()
    with pytest.raises(OSError, match="simulated"):
        record_run(str(db), str(runs / A_RUN), notify=notes.append)  # a run recorded before: its old rows stay
    assert calls == ["runs", "config"]
    assert _counts(db) == before
    monkeypatch.setattr(_history, "_insert", real_insert)
    assert get_run(str(db), A_RUN)["steps"][1]["step_s"] == 8.059957
    with pytest.raises(HistoryError, match="no run matches"):
        get_run(str(db), UNTHROTTLED)


def test_a_run_without_a_plan_reads_its_flows_annotations(tmp_path, notes):
    runs_dir = tmp_path / "runs"
    shutil.copytree(os.path.join(FIXTURES, "run-v1-demo"), str(runs_dir / "20261129T083744-demo"))
    run = get_run(str(runs_dir / "history.sqlite"), "latest", notify=notes.append)
    config = dict(map(tuple, run["config"]))
    assert config["worker3 throttle"] == THROTTLE_LINE
    assert config["worker1 throttle"] == "none"
    assert config["bottleneck"] == "8gbit" and config["engine"] == "tcp"
    assert "line rate" not in config  # only a plan says the line rate


def test_hash_policy_and_perftest_lines_when_the_record_has_them(runs, notes):
    plan = _load(str(runs / B_RUN / "plan.json"))
    plan["lab"]["fabric"] = {"hash_policy": "l3+l4"}
    plan["experiments"][1].update(engine="perftest", perftest={"qps": 2, "tool": "ib_write_bw"})
    _dump(str(runs / B_RUN / "plan.json"), plan)
    config = dict(map(tuple, get_run(str(runs / "history.sqlite"), B_RUN, notify=notes.append)["config"]))
    assert config["hash policy"] == "l3+l4"
    assert config["perftest options"] == "qps=2, tool=ib_write_bw"
    assert config["engine"] == "elephant: tcp; barrier: perftest"  # the experiments disagree: each named


def test_the_database_path(monkeypatch):
    monkeypatch.delenv(_history.DB_ENV, raising=False)
    assert _history.default_db_path("runs") == os.path.join("runs", "history.sqlite")
    monkeypatch.setenv(_history.DB_ENV, "/var/lib/aifabric/history.sqlite")
    assert _history.default_db_path("runs") == "/var/lib/aifabric/history.sqlite"


def test_a_directory_in_the_database_s_place_is_an_error(tmp_path, notes):
    (tmp_path / "history.sqlite").mkdir()
    with pytest.raises(HistoryError, match="is a directory; give a file path"):
        list_runs(str(tmp_path / "history.sqlite"), notify=notes.append)
