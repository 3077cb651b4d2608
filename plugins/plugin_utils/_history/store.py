# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run history: every run directory indexed in one SQLite file.

The file (``<runs_dir>/history.sqlite`` unless ``AIFABRIC_HISTORY_DB`` names another) holds, per run, its **lab
configuration** as flat, human-readable lines (``worker3 throttle`` = ``2gbit (tc htb on eth0's egress)``), derived
from ``plan.json``, the counters' snapshots, the flows' own records and ``lab``; and its **results**: per step (the
step time, the prediction, the straggler and its cause, the idle shares, the counters' verdict), per worker and per
flow. It is an index, never the record: the run directories are (``_run.store``), and every row can be built again from
them (``rebuild``), which is what happens when the file is missing or corrupt (moved aside first, never deleted).

Every run is written in one transaction (a crash leaves the run's old rows or its new ones, never half of them), the
journal is SQLite's write-ahead log, and recording a run directory again replaces its rows (idempotent). The
configuration lines are ``config``'s; finding a run and comparing two, ``compare``'s; their text, ``text``'s. Errors a
person can act on are ``HistoryError`` (a ``ValueError``).

Writers open the file with ``open_history`` (which builds or rebuilds it); a reader that must not write (the filters:
``read_runs``, ``compare``, ``export``) opens it with ``read_history``, which writes nothing: no schema, no PRAGMA, no
file created or moved (not even SQLite's ``-wal`` and ``-shm`` beside it when no writer is at the file), and reads a
missing or unreadable file's runs from their directories into memory instead.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import sys
import time
from collections import Counter
from contextlib import contextmanager
from urllib.parse import quote

from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.stats import idle_share, mean, median
from ansible_collections.aifabric.lab.plugins.plugin_utils._history.config import config_lines
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.build import build_report
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.store import (
    PLAN_FILE,
    is_run_dir,
    load_run,
    run_dirs,
    stamp_of,
)

__all__ = ["DB_ENV", "DB_NAME", "SCHEMA_VERSION", "HistoryError", "default_db_path", "list_runs", "read_history",
           "read_runs", "rebuild", "record_run"]


SCHEMA_VERSION = 1


DB_NAME = "history.sqlite"


DB_ENV = "AIFABRIC_HISTORY_DB"


_COLUMNS = {
    "runs": ("id", "path", "label", "started", "status", "report_schema", "steps", "steps_ok", "flows",
             "baseline_gbps", "barrier_steps", "headline_step_s", "headline_straggler", "headline_straggler_steps",
             "headline_idle_share", "gates", "recorded_at"),
    "config": ("run_id", "position", "key", "value"),
    "steps": ("run_id", "position", "step", "kind", "status", "step_s", "predicted_step_s", "fair_step_s",
              "mean_completion_s", "straggler", "straggler_cause", "straggler_behind_next_s",
              "unthrottled_idle_share", "throttled_idle_share", "idle_worker_seconds", "sum_of_flow_gbps",
              "aggregate_gbps", "counters_verdict", "verdict", "workers_expected", "workers_completed"),
    "workers": ("run_id", "step", "position", "host", "status", "completion_s", "gbps", "idle_s", "idle_share",
                "predicted_s", "prediction_error", "throttle", "bytes", "late_s", "error"),
    "flows": ("run_id", "step", "position", "host", "flow_id", "status", "bytes", "completion_s", "gbps",
              "predicted_s", "idle_share", "late_s"),
}


_TABLES = ("runs", "config", "steps", "workers", "flows")  # the order a run is written in


_KEYS = {"runs": "id", "config": "run_id", "steps": "run_id", "workers": "run_id", "flows": "run_id"}


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
  id TEXT PRIMARY KEY, path TEXT NOT NULL UNIQUE, label TEXT, started TEXT, status TEXT, report_schema INTEGER,
  steps INTEGER, steps_ok INTEGER, flows INTEGER, baseline_gbps REAL, barrier_steps INTEGER, headline_step_s REAL,
  headline_straggler TEXT, headline_straggler_steps INTEGER, headline_idle_share REAL, gates TEXT,
  recorded_at TEXT);
CREATE INDEX IF NOT EXISTS runs_started ON runs (started, id);
CREATE TABLE IF NOT EXISTS config (
  run_id TEXT NOT NULL, position INTEGER NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (run_id, key));
CREATE TABLE IF NOT EXISTS steps (
  run_id TEXT NOT NULL, position INTEGER NOT NULL, step TEXT NOT NULL, kind TEXT, status TEXT, step_s REAL,
  predicted_step_s REAL, fair_step_s REAL, mean_completion_s REAL, straggler TEXT, straggler_cause TEXT,
  straggler_behind_next_s REAL, unthrottled_idle_share REAL, throttled_idle_share REAL, idle_worker_seconds REAL,
  sum_of_flow_gbps REAL, aggregate_gbps REAL, counters_verdict TEXT, verdict TEXT, workers_expected INTEGER,
  workers_completed INTEGER, PRIMARY KEY (run_id, step));
CREATE TABLE IF NOT EXISTS workers (
  run_id TEXT NOT NULL, step TEXT NOT NULL, position INTEGER NOT NULL, host TEXT NOT NULL, status TEXT,
  completion_s REAL, gbps REAL, idle_s REAL, idle_share REAL, predicted_s REAL, prediction_error REAL, throttle TEXT,
  bytes INTEGER, late_s REAL, error TEXT);
CREATE INDEX IF NOT EXISTS workers_run ON workers (run_id, step);
CREATE TABLE IF NOT EXISTS flows (
  run_id TEXT NOT NULL, step TEXT NOT NULL, position INTEGER NOT NULL, host TEXT NOT NULL, flow_id TEXT NOT NULL,
  status TEXT, bytes INTEGER, completion_s REAL, gbps REAL, predicted_s REAL, idle_share REAL, late_s REAL);
CREATE INDEX IF NOT EXISTS flows_run ON flows (run_id, step);
"""


class HistoryError(ValueError):
    """A history request that cannot be met; the message names the parameter or the file and the fix."""


def default_db_path(runs_dir="runs", environ=None):
    """Where the history lives: ``$AIFABRIC_HISTORY_DB`` when set, else ``<runs_dir>/history.sqlite``."""
    environ = os.environ if environ is None else environ
    return environ.get(DB_ENV) or os.path.join(runs_dir, DB_NAME)


def notify_stderr(message):
    sys.stderr.write("history: %s\n" % message)


# -- a run's rows --------------------------------------------------------------------------------------------------
def _started(path, report):
    """When the run started (``2026-11-30 18:50:09``, local time): its directory's stamp, else its first flow's
    start, else the directory's modification time; and its label (the directory name after the stamp)."""
    stamp, label = stamp_of(path)
    if stamp is not None:
        return time.strftime("%Y-%m-%d %H:%M:%S", stamp), label
    starts = [w["start"] for s in report.get("steps") or [] for w in s.get("workers") or []
              if isinstance(w.get("start"), (int, float))]
    epoch = min(starts) if starts else os.path.getmtime(path)
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch)), label


def _headline(steps):
    """The figures a history line shows: over the run's barrier steps that completed, the step time (the median
    when there are several), the most frequent straggler and how many steps it held, the mean unthrottled idle
    share."""
    barrier = [s for s in steps if s.get("kind") == "barrier"]
    ok = [s for s in barrier if s.get("status") == "ok" and s.get("step_s") is not None]
    stragglers = Counter((s.get("straggler") or {}).get("host") for s in ok if s.get("straggler"))
    top = stragglers.most_common(1)[0] if stragglers else (None, None)
    idle = [s["unthrottled_idle_share"] for s in ok if s.get("unthrottled_idle_share") is not None]
    return {"barrier_steps": len(barrier), "headline_step_s": median([s["step_s"] for s in ok]),
            "headline_straggler": top[0], "headline_straggler_steps": top[1],
            "headline_idle_share": round(mean(idle), 6) if idle else None}


def run_rows(run_dir, report=None):
    """Everything the history holds of one run directory, as rows per table (the run's id filled in later)."""
    path = os.path.abspath(str(run_dir))
    if not os.path.isdir(path):
        raise HistoryError("run_dir: %s is not a directory; give a run directory (runs/<stamp>-<playbook>)" % path)
    if not is_run_dir(path):
        raise HistoryError("run_dir: %s has neither %s nor flows/: not a run directory" % (path, PLAN_FILE))
    try:
        run = load_run(path)
        report = build_report(run) if report is None else report
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise HistoryError("run_dir: %s cannot be analysed: %s" % (path, exc)) from None
    steps = report.get("steps") or []
    started, label = _started(path, report)
    rows = {"runs": [dict(path=path, label=label, started=started, status=report.get("status"),
                          report_schema=report.get("schema_version"), steps=len(steps),
                          steps_ok=sum(1 for s in steps if s.get("status") == "ok"),
                          flows=0, baseline_gbps=report.get("baseline_gbps"),
                          gates=(report.get("gates") or {}).get("status"),
                          recorded_at=time.strftime("%Y-%m-%d %H:%M:%S"), **_headline(steps))],
            "config": [dict(position=i, key=k, value=v) for i, (k, v) in enumerate(config_lines(run))],
            "steps": [], "workers": [], "flows": []}
    for i, s in enumerate(steps):
        straggler = s.get("straggler") or {}
        rows["steps"].append(dict(
            position=i, step=s.get("step"), kind=s.get("kind"), status=s.get("status"), step_s=s.get("step_s"),
            predicted_step_s=s.get("predicted_step_s"), fair_step_s=s.get("fair_step_s"),
            mean_completion_s=s.get("mean_completion_s"), straggler=straggler.get("host"),
            straggler_cause=straggler.get("cause"), straggler_behind_next_s=straggler.get("behind_next_s"),
            unthrottled_idle_share=s.get("unthrottled_idle_share"), throttled_idle_share=s.get("throttled_idle_share"),
            idle_worker_seconds=s.get("idle_worker_seconds"), sum_of_flow_gbps=s.get("sum_of_flow_gbps"),
            aggregate_gbps=s.get("aggregate_gbps"), counters_verdict=(s.get("counters") or {}).get("verdict"),
            verdict=s.get("verdict"), workers_expected=s.get("workers_expected"),
            workers_completed=s.get("workers_completed")))
        for j, w in enumerate(s.get("workers") or []):
            rows["workers"].append(dict(
                step=s.get("step"), position=j, host=w.get("host"), status=w.get("status"),
                completion_s=w.get("completion_s"), gbps=w.get("gbps"), idle_s=w.get("idle_s"),
                idle_share=w.get("idle_share"), predicted_s=w.get("predicted_s"),
                prediction_error=w.get("prediction_error"), throttle=w.get("throttle"), bytes=w.get("bytes"),
                late_s=w.get("late_s"), error=w.get("error")))
            # a host that sent several flows lists them; a host's one flow is the host's line
            several = w.get("flows") or []
            for f in several or [dict(w, flow_id=w.get("host"))]:
                rows["flows"].append(dict(
                    step=s.get("step"), position=len(rows["flows"]), host=w.get("host"),
                    flow_id=f.get("flow_id") or w.get("host"), status=f.get("status"), bytes=f.get("bytes"),
                    completion_s=f.get("completion_s"), gbps=f.get("gbps"), predicted_s=f.get("predicted_s"),
                    idle_share=(idle_share(s.get("step_s"), f.get("completion_s")) if several
                                else w.get("idle_share")),
                    late_s=f.get("late_s")))
    rows["runs"][0]["flows"] = len(rows["flows"])
    return rows


# -- the database --------------------------------------------------------------------------------------------------
def _connect(db_path):
    conn = sqlite3.connect(db_path, timeout=30, isolation_level=None)
    conn.row_factory = sqlite3.Row
    return conn


@contextmanager
def transaction(conn):
    """One write transaction: everything in it is committed together, or nothing is."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:  # SQLite may have rolled back already (a full disk, an I/O error)
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _insert(conn, table, rows):
    columns = _COLUMNS[table]
    conn.executemany("INSERT INTO %s (%s) VALUES (%s)" % (table, ", ".join(columns), ", ".join("?" * len(columns))),
                     [tuple(r.get(c) for c in columns) for r in rows])


def _delete_run(conn, run_id):
    for table in _TABLES:
        conn.execute("DELETE FROM %s WHERE %s = ?" % (table, _KEYS[table]), (run_id,))


def _run_id(conn, path):
    """The run's id: its directory's name; a different directory of the same name (another runs_dir sharing this
    history) gets a short digest of its path after an ``@``."""
    base = os.path.basename(path)
    row = conn.execute("SELECT path FROM runs WHERE id = ?", (base,)).fetchone()
    if row is None or row["path"] == path:
        return base
    return "%s@%s" % (base, hashlib.sha1(path.encode("utf-8")).hexdigest()[:6])


def write_run(conn, rows, run_id=None):
    """One run's rows, replacing what the history held of its directory; the caller holds the transaction.
    ``run_id``: the id to write it under (default: its directory's name, as ``_run_id`` makes it in ``conn``)."""
    path = rows["runs"][0]["path"]
    for old in conn.execute("SELECT id FROM runs WHERE path = ?", (path,)).fetchall():
        _delete_run(conn, old["id"])
    run_id = run_id or _run_id(conn, path)
    _delete_run(conn, run_id)
    for table in _TABLES:
        _insert(conn, table, [dict(r, **{_KEYS[table]: run_id}) for r in rows[table]])
    return run_id


def _problem(conn):
    """Why the open file is not a usable history (None when it is), as "is corrupt (...)" or "is not a history this
    collection reads (...)"; raises for a newer schema, which is not ours to move aside."""
    check = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
    if check != ["ok"]:
        return "is corrupt (integrity check: %s)" % "; ".join(str(c) for c in check[:3])
    detail = _unreadable(conn)
    return "is not a history this collection reads (%s)" % detail if detail else None


def _unreadable(conn):
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()}
    if not tables:
        return None  # an empty file: the schema is created
    if "meta" not in tables:
        return "its tables: %s" % ", ".join(sorted(tables))
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    version = int(row[0]) if row and str(row[0]).isdigit() else None
    if version is None:
        return "no schema_version in its meta table"
    if version > SCHEMA_VERSION:
        raise HistoryError("history database %s has schema %d, newer than this collection's %d: use the aifabric.lab "
                           "that wrote it, or point %s at another file"
                           % (_db_name(conn), version, SCHEMA_VERSION, DB_ENV))
    if version < SCHEMA_VERSION:
        return "schema %d, this collection writes %d" % (version, SCHEMA_VERSION)
    missing = set(_TABLES) - tables
    if missing:
        return "tables missing: %s" % ", ".join(sorted(missing))
    for table in _TABLES:
        columns = {r[1] for r in conn.execute("PRAGMA table_info(%s)" % table).fetchall()}
        if set(_COLUMNS[table]) - columns:
            return "table %s lacks column(s) %s" % (table, ", ".join(sorted(set(_COLUMNS[table]) - columns)))
    return None


def _db_name(conn):
    row = conn.execute("PRAGMA database_list").fetchone()
    return row[2] if row else "?"


def _create(conn):
    conn.executescript(_SCHEMA)
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))


def _pragmas(conn):
    conn.execute("PRAGMA journal_mode = WAL")  # readers never block the writer; a crash rolls back to a whole run
    conn.execute("PRAGMA synchronous = FULL")


def _move_aside(db_path):
    stamp = time.strftime("%Y%m%dT%H%M%S")
    aside, n = "%s.corrupt-%s" % (db_path, stamp), 1
    while os.path.exists(aside):
        n += 1
        aside = "%s.corrupt-%s-%d" % (db_path, stamp, n)
    for suffix in ("-wal", "-shm", "-journal", ""):  # the database last: its journal belongs with it
        if os.path.exists(db_path + suffix):
            os.replace(db_path + suffix, aside + suffix)
    return aside


def _analyse_all(dirs, notify):
    """Every directory's rows; a directory that cannot be analysed is skipped with a warning."""
    done, skipped = [], []
    for path in dirs:
        try:
            done.append(run_rows(path))
        except HistoryError as exc:
            skipped.append({"path": path, "error": str(exc)})
            notify("skipped %s: %s" % (path, exc))
    return done, skipped


def _fill(conn, runs_dir, notify):
    """Index every run directory under ``runs_dir`` in one transaction (the history's rows replaced)."""
    done, skipped = _analyse_all(run_dirs(runs_dir), notify)
    with transaction(conn):
        for table in _TABLES:
            conn.execute("DELETE FROM %s" % table)
        for rows in done:
            write_run(conn, rows)
    return {"runs": len(done), "skipped": skipped}


def _built_from(summary, runs_dir):
    text = "%d run director%s under %s" % (summary["runs"], "y" if summary["runs"] == 1 else "ies", runs_dir)
    if summary["skipped"]:
        text += " (%d skipped: they cannot be analysed)" % len(summary["skipped"])
    return text


def _open(db_path, runs_dir=None, notify=None):
    """A connection to the history at ``db_path`` with its schema; a missing file is built, and a corrupt one moved
    aside to ``<name>.corrupt-<stamp>`` and built again, from the run directories under ``runs_dir`` (default: the
    database's directory). Returns (connection, what happened: None, "created" or "rebuilt", and when it was built
    ``{runs, skipped}``)."""
    db_path = os.path.abspath(str(db_path))
    runs_dir = os.path.abspath(str(runs_dir)) if runs_dir else os.path.dirname(db_path)
    if os.path.isdir(db_path):
        raise HistoryError("history database %s is a directory; give a file path (%s)" % (db_path, DB_ENV))
    missing = not os.path.exists(db_path)
    problem = None
    conn = None
    if not missing:
        try:
            conn = _connect(db_path)
            problem = _problem(conn)
        except sqlite3.OperationalError as exc:  # locked, unreadable, a directory on the way: not corruption
            if conn is not None:
                conn.close()
            raise HistoryError("cannot open history database %s: %s; check its permissions, or point %s at a "
                               "writable file" % (db_path, exc, DB_ENV)) from None
        except sqlite3.DatabaseError as exc:  # garbage bytes, a malformed image
            problem = "is corrupt (%s)" % exc
        except HistoryError:
            conn.close()
            raise
        if problem is None:
            new = not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'runs'").fetchone()
            try:
                _pragmas(conn)
                _create(conn)
            except sqlite3.OperationalError as exc:  # a read-only file or directory
                conn.close()
                raise HistoryError("cannot write history database %s: %s; check its permissions and its directory's, "
                                   "or point %s at a writable file" % (db_path, exc, DB_ENV)) from None
            if not new:
                return conn, None, None
            summary = _fill(conn, runs_dir, notify)
            notify("history database %s was empty: built it from %s" % (db_path, _built_from(summary, runs_dir)))
            return conn, "created", summary
        if conn is not None:
            conn.close()
        aside = _move_aside(db_path)
    try:
        os.makedirs(os.path.dirname(db_path), exist_ok=True)
        conn = _connect(db_path)
        _pragmas(conn)
        _create(conn)
    except (OSError, sqlite3.Error) as exc:
        raise HistoryError("cannot create history database %s: %s; point %s at a writable file"
                           % (db_path, exc, DB_ENV)) from None
    summary = _fill(conn, runs_dir, notify)
    if missing:
        notify("history database %s did not exist: built it from %s" % (db_path, _built_from(summary, runs_dir)))
        return conn, "created", summary
    notify("history database %s %s: moved it aside to %s and rebuilt it from %s"
           % (db_path, problem, aside, _built_from(summary, runs_dir)))
    return conn, "rebuilt", summary


def memory_history():
    """An empty history in memory (the schema, no file): where a reader puts what it read without writing it."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.row_factory = sqlite3.Row
    _create(conn)
    return conn


def run_in_memory(conn, rows):
    """``(connection, run id)``: one run directory's rows (``run_rows``') in a history of their own in memory, under
    the id the history of ``conn`` would give them (read there, never written); the caller closes the connection."""
    run_id = _run_id(conn, rows["runs"][0]["path"])
    scratch = memory_history()
    with transaction(scratch):
        write_run(scratch, rows, run_id=run_id)
    return scratch, run_id


def _read_only(db_path, immutable=False):
    """A connection in SQLite's read-only mode (a write raises); ``immutable``: without locking, and without the
    ``-wal`` and ``-shm`` files a read-only connection to a database in write-ahead-log mode creates beside it."""
    conn = sqlite3.connect("file:%s?mode=ro%s" % (quote(db_path), "&immutable=1" if immutable else ""), uri=True,
                           timeout=30, isolation_level=None)
    conn.row_factory = sqlite3.Row
    return conn


def _at_rest(db_path):
    """The file's (inode, size, modification time) when no writer is at it, else None: a writer's connection keeps
    its write-ahead log (``-wal``) beside the file while it is open, a rollback transaction its ``-journal``."""
    if any(os.path.exists(db_path + suffix) for suffix in ("-wal", "-journal")):
        return None
    stat = os.stat(db_path)
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


def _why_not(conn):
    """None when ``conn`` holds a history this collection reads, else why not ("is empty", "is corrupt (...)", ...);
    raises ``HistoryError`` for a newer schema."""
    problem = _problem(conn)
    if problem is None and conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'runs'").fetchone():
        return None
    return problem or "is empty"


def _snapshot(db_path):
    """``(connection, why not)``: the history at ``db_path``, while no writer is at it, read as an immutable file and
    copied into memory (query only: a write raises, as on a read-only connection), so that nothing is created beside
    it; ``(None, why not)`` when it is not a history this collection reads; ``(None, None)`` when a writer is at the
    file, or came while it was read (the caller reads it beside the writer then)."""
    state = _at_rest(db_path)
    if state is None:
        return None, None
    source = copy = None
    try:
        source = _read_only(db_path, immutable=True)
        why = _why_not(source)
        if why is None:
            copy = sqlite3.connect(":memory:", isolation_level=None)
            source.backup(copy)
    except sqlite3.DatabaseError:
        if copy is not None:
            copy.close()
        if _at_rest(db_path) != state:  # a torn read: a writer came
            return None, None
        raise
    finally:
        if source is not None:
            source.close()
    if _at_rest(db_path) != state:
        if copy is not None:
            copy.close()
        return None, None
    if copy is not None:
        copy.row_factory = sqlite3.Row
        copy.execute("PRAGMA query_only = ON")
    return copy, why


def _open_read_only(db_path, runs_dir, notify):
    """A connection that only reads the history at ``db_path``: a copy in memory when no writer is at the file
    (``_snapshot``), else SQLite's read-only mode beside the writer (a write raises either way); when the file is
    missing, empty or not a history this collection reads, a history in memory built from the run directories under
    ``runs_dir``, the file left as it is (the ``aifabric.lab.history`` action writes it)."""
    db_path = os.path.abspath(str(db_path))
    runs_dir = os.path.abspath(str(runs_dir)) if runs_dir else os.path.dirname(db_path)
    if os.path.isdir(db_path):
        raise HistoryError("history database %s is a directory; give a file path (%s)" % (db_path, DB_ENV))
    why = "does not exist"
    if os.path.exists(db_path):
        conn = None
        try:
            conn, why = _snapshot(db_path)
            if conn is None and why is None:  # a writer is at the file: read beside it, as its readers do
                conn = _read_only(db_path)
                why = _why_not(conn)
            if why is None:
                return conn
        except sqlite3.OperationalError as exc:  # locked, unreadable: not corruption
            if conn is not None:
                conn.close()
            raise HistoryError("cannot read history database %s: %s; check its permissions, or point %s at a "
                               "readable file" % (db_path, exc, DB_ENV)) from None
        except sqlite3.DatabaseError as exc:  # garbage bytes, a malformed image
            why = "is corrupt (%s)" % exc
        except HistoryError:  # a newer schema: not ours to read
            if conn is not None:
                conn.close()
            raise
        if conn is not None:
            conn.close()
    conn = memory_history()
    summary = _fill(conn, runs_dir, notify)
    notify("history database %s %s: read %s without writing it (aifabric.lab.history with sync: true writes it)"
           % (db_path, why, _built_from(summary, runs_dir)))
    return conn


@contextmanager
def read_history(db_path, runs_dir=None, notify=None):
    """The history at ``db_path``, read only: nothing is written to the file or beside it, whatever its state
    (missing, empty or unreadable: the run directories under ``runs_dir`` are read into a history in memory instead;
    see ``_open_read_only``). The filters read through this; ``open_history`` is the writers'."""
    conn = _open_read_only(db_path, runs_dir, notify or notify_stderr)
    try:
        yield conn
    finally:
        conn.close()


@contextmanager
def open_history(db_path, runs_dir=None, notify=None):
    conn, _what, _summary = _open(db_path, runs_dir, notify or notify_stderr)
    try:
        yield conn
    finally:
        conn.close()


# -- the API -------------------------------------------------------------------------------------------------------
def record_run(db_path, run_dir, report=None, runs_dir=None, notify=None):
    """Index one run directory (its configuration lines and results) in the history at ``db_path``, in one
    transaction; recording it again replaces its rows. ``report``: the run's report when the caller has it (the
    callback, once report.json is written); else ``_report.build.analyze_run``'s. ``runs_dir``: where the run
    directories are, when the history must be built (missing or corrupt; default the database's directory).
    ``notify``: called with each message (a rebuilt database, a skipped directory); default standard error. Returns
    ``{id, path, db, steps, flows, config_lines}``."""
    rows = run_rows(run_dir, report)
    with open_history(db_path, runs_dir, notify) as conn:
        with transaction(conn):
            run_id = write_run(conn, rows)
    return {"id": run_id, "path": rows["runs"][0]["path"], "db": os.path.abspath(str(db_path)),
            "steps": len(rows["steps"]), "flows": len(rows["flows"]), "config_lines": len(rows["config"])}


def rebuild(db_path, runs_dir=None, notify=None):
    """Build the history again from every run directory under ``runs_dir`` (default: the database's directory), in
    one transaction. Returns ``{db, runs_dir, runs, skipped: [{path, error}]}``."""
    notify = notify or notify_stderr
    runs_dir = os.path.abspath(str(runs_dir)) if runs_dir else os.path.dirname(os.path.abspath(str(db_path)))
    conn, what, summary = _open(db_path, runs_dir, notify)
    try:
        if what is None:  # a sound database: every row again (when it was missing or corrupt, _open just did that)
            summary = _fill(conn, runs_dir, notify)
    finally:
        conn.close()
    return dict(summary, db=os.path.abspath(str(db_path)), runs_dir=runs_dir)


def sync_runs(conn, runs_dir, notify):
    """Index the run directories under ``runs_dir`` the history does not hold yet (runs made before the callback
    recorded them, or whose play was interrupted)."""
    known = {r["path"] for r in conn.execute("SELECT path FROM runs").fetchall()}
    new = [p for p in run_dirs(runs_dir) if os.path.abspath(p) not in known]
    if not new:
        return 0
    done, _skipped = _analyse_all(new, notify)
    with transaction(conn):
        for rows in done:
            write_run(conn, rows)
    return len(done)


def ordered_ids(conn):
    return [r["id"] for r in conn.execute("SELECT id FROM runs ORDER BY started DESC, id DESC").fetchall()]


def _limit(limit):
    if limit is None:
        return None
    try:
        limit = int(limit)
    except (TypeError, ValueError):
        raise HistoryError("limit: %r is not a number of runs; give a positive integer" % (limit,)) from None
    if limit < 1:
        raise HistoryError("limit: %d; give a positive integer (the newest runs to list)" % limit)
    return limit


def _listed(conn, limit):
    sql = "SELECT * FROM runs ORDER BY started DESC, id DESC"
    rows = conn.execute(sql + (" LIMIT %d" % limit if limit else "")).fetchall()
    out = []
    for n, row in enumerate(rows):
        item = dict(row)
        item["ref"] = "latest" if n == 0 else "latest~%d" % n
        out.append(item)
    return list(reversed(out))


def list_runs(db_path, limit=None, runs_dir=None, sync=False, notify=None):
    """The runs in the history, oldest first (the newest ``limit`` of them), each with its headline figures and
    ``ref`` (``latest``, ``latest~1``... as compare takes them). A writer's: the history is opened with
    ``open_history`` (built when missing, rebuilt when corrupt); ``sync``: first index the run directories under
    ``runs_dir`` the history does not hold yet. ``read_runs`` lists them without writing."""
    limit = _limit(limit)
    runs_dir = os.path.abspath(str(runs_dir)) if runs_dir else os.path.dirname(os.path.abspath(str(db_path)))
    with open_history(db_path, runs_dir, notify) as conn:
        if sync:
            sync_runs(conn, runs_dir, notify or notify_stderr)
        return _listed(conn, limit)


def read_runs(db_path, limit=None, runs_dir=None, notify=None):
    """``list_runs``' rows, read only (``read_history``: nothing is written; a missing or unreadable file's runs are
    read from the run directories under ``runs_dir``, default the database's directory, into memory)."""
    limit = _limit(limit)
    with read_history(db_path, runs_dir, notify) as conn:
        return _listed(conn, limit)
