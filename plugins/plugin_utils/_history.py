# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run history: every run directory indexed in one SQLite file, and two runs compared.

The file (``<runs_dir>/history.sqlite`` unless ``AIFABRIC_HISTORY_DB`` names another) holds, per run, its **lab
configuration** as flat, human-readable lines (``worker3 throttle`` = ``2gbit (tc htb on eth0's egress)``), derived
from ``plan.json``, the counters' snapshots, the flows' own records and ``lab``; and its **results**: per step (the
step time, the prediction, the straggler and its cause, the idle shares, the counters' verdict), per worker and per
flow. It is an index, never the record: the run directories are (``_run``), and every row can be built again from
them (``rebuild``), which is what happens when the file is missing or corrupt (moved aside first, never deleted).

Every run is written in one transaction (a crash leaves the run's old rows or its new ones, never half of them), the
journal is SQLite's write-ahead log, and recording a run directory again replaces its rows (idempotent).
``compare`` matches two runs' steps by name and names the configuration lines that differ; ``render_compare`` and
``render_history`` are their text. Errors a person can act on are ``HistoryError`` (a ``ValueError``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import sys
import time
from collections import Counter
from contextlib import contextmanager

from ansible_collections.aifabric.lab.plugins.module_utils._atomic import write_text
from ansible_collections.aifabric.lab.plugins.plugin_utils._report import build_report
from ansible_collections.aifabric.lab.plugins.plugin_utils._run import PLAN_FILE, load_run

__all__ = ["DB_ENV", "DB_NAME", "SCHEMA_VERSION", "HistoryError", "config_lines", "compare", "compare_files",
           "default_db_path", "diff_runs", "get_run", "list_runs", "rebuild", "record_run", "render_compare",
           "render_history", "write_compare"]

SCHEMA_VERSION = 1
DB_NAME = "history.sqlite"
DB_ENV = "AIFABRIC_HISTORY_DB"
COMPARE_DIR = "compare"

_HINT = "give a run id (make history lists them), a run directory or latest~N"

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

_STAMP = re.compile(r"^(\d{8}T\d{6})(?:-(.*))?$")


class HistoryError(ValueError):
    """A history request that cannot be met; the message names the parameter or the file and the fix."""


def default_db_path(runs_dir="runs", environ=None):
    """Where the history lives: ``$AIFABRIC_HISTORY_DB`` when set, else ``<runs_dir>/history.sqlite``."""
    environ = os.environ if environ is None else environ
    return environ.get(DB_ENV) or os.path.join(runs_dir, DB_NAME)


def _stderr(message):
    sys.stderr.write("history: %s\n" % message)


# -- the configuration lines ---------------------------------------------------------------------------------------
def _text(value):
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(_text(v) for v in value)
    if isinstance(value, dict):
        return ", ".join("%s=%s" % (k, _text(v)) for k, v in sorted(value.items()))
    return str(value)


def _merged(values):
    """One line's value from several experiments (or steps): the value when they agree, else each one by name."""
    present = [(name, _text(v)) for name, v in values if v is not None and v != ""]
    distinct = {v for _n, v in present}
    if not present:
        return None
    if len(distinct) == 1:
        return present[0][1]
    return "; ".join("%s: %s" % (n, v) for n, v in present)


def _bytes(n):
    if not isinstance(n, (int, float)) or isinstance(n, bool):
        return None
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return "%d bytes (%g %s)" % (n, n / size, unit)
    return "%d bytes" % n


def _throttle_of(experiment, host):
    """``2gbit (tc htb on eth0's egress)``, ``none``: a host's throttle in one experiment, with what applied it."""
    spec = (experiment.get("hosts") or {}).get(host) or {}
    rate = spec.get("throttle")
    if not rate:
        return "none"
    peers = (spec.get("throttle_args") or {}).get("peers") or []
    what = "%s towards %s" % (rate, ", ".join(peers)) if peers else str(rate)
    how = (experiment.get("applied_throttles") or {}).get(host)
    return "%s (%s)" % (what, how) if how else "%s (not recorded as applied)" % what


def _planned_throttle(planned, host):
    """The same from a step's plan (runs without experiments: their flows' annotations)."""
    if not planned.throttle:
        return "none"
    how = planned.throttle_mechanism or ""
    if how.startswith(host + ": "):
        how = how[len(host) + 2:]
    return "%s (%s)" % (planned.throttle, how) if how else "%s (not recorded as applied)" % planned.throttle


def _hash_policy(run):
    """The fabric's hash policy when the record has one (``lab.hash_policy``, ``lab.fabric.hash_policy`` or an
    experiment's ``hash_policy``); None otherwise (the line is left out)."""
    lab = run.lab or {}
    fabric = lab.get("fabric") if isinstance(lab.get("fabric"), dict) else {}
    values = [("lab", lab.get("hash_policy")), ("lab", fabric.get("hash_policy"))]
    values += [(e.get("name") or "experiment", e.get("hash_policy")) for e in run.experiments if isinstance(e, dict)]
    values += [(e.get("name") or "experiment", _fabric_hash(e.get("fabric"))) for e in run.experiments
               if isinstance(e, dict) and isinstance(e.get("fabric"), dict)]
    return _merged(values)


def _fabric_hash(fabric):
    """The fabric lab's hash as a line: ``l4 (five-tuple), seed 1, placement hash, port seed 0``."""
    what = {"l4": "l4 (five-tuple)", "l3": "l3 (addresses)"}.get(fabric.get("hash"), fabric.get("hash"))
    return "%s, seed %s, placement %s, port seed %s" % (what, fabric.get("seed"), fabric.get("placement"),
                                                        fabric.get("port_seed"))


_PERFTEST_REPORTED = (("test", "test"), ("connection_type", "connection"), ("transport_type", "transport"),
                      ("link_type", "link"), ("device", "device"), ("mtu", "mtu"), ("number_of_qps", "qps"),
                      ("tx_depth", "tx depth"))


def _host_facts(run):
    """Per host, what its flows' records say of the tools that ran them: the tool (its command's name), what perftest
    reported of its settings, and any version a record carries."""
    facts = {}
    for step in run.steps:
        for flow in step.flows:
            extra = flow.extra or {}
            mine = facts.setdefault(flow.host, {})
            argv = extra.get("argv")
            if isinstance(argv, list) and argv:
                mine.setdefault("tool", set()).add(os.path.basename(str(argv[0])))
            reported = extra.get("perftest")
            if isinstance(reported, dict):
                text = ", ".join("%s %s" % (label, reported[key]) for key, label in _PERFTEST_REPORTED
                                 if reported.get(key) is not None)
                if text:
                    mine.setdefault("perftest", set()).add(text)
                for key, value in reported.items():
                    if "version" in key.lower() and isinstance(value, (str, int, float)):
                        mine.setdefault("perftest " + key.replace("_", " "), set()).add(str(value))
            for key, value in extra.items():
                if "version" in key.lower() and isinstance(value, (str, int, float)):
                    mine.setdefault(key.replace("_", " "), set()).add(str(value))
    return facts


def _qdiscs(run):
    """Per (host, interface), the qdisc the counters' snapshots saw: its kind when recorded, and its classes."""
    seen = {}
    for step in run.steps:
        for host, entry in (step.counters or {}).items():
            for when in ("before", "after"):
                snap = entry.get(when) if isinstance(entry, dict) else None
                qdiscs = snap.get("qdisc") if isinstance(snap, dict) else None
                for iface, q in (qdiscs or {}).items():
                    if not isinstance(q, dict):
                        continue
                    kinds, classes = seen.setdefault((host, iface), (set(), set()))
                    kind = q.get("kind") or (q.get("qdisc") or {}).get("kind")
                    if kind:
                        kinds.add(str(kind))
                    classes.update(str(c) for c in (q.get("classes") or {}))
    out = {}
    for (host, iface), (kinds, classes) in seen.items():
        parts = [", ".join(sorted(kinds))] if kinds else []
        names = sorted(classes)
        if len(names) > 8:  # a fabric port's fair classes: one per source-port bucket
            parts.append("%d classes (%s ... %s)" % (len(names), ", ".join(names[:3]), names[-1]))
        else:
            parts.append("classes %s" % ", ".join(names) if names else "root qdisc, no classes")
        out[(host, iface)] = " ".join(parts) if kinds else parts[-1]
    return out


def _natural(name):
    """w2 before w10."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", str(name))]


_CONTROLLER_KEYS = {"kernel": "controller kernel", "python": "controller python", "ansible_core": "ansible-core",
                    "collection": "aifabric.lab"}


def config_lines(run):
    """A run's lab configuration as ``[(key, value)]`` in a stable order: the run-wide lines (line rate, MTU, engine,
    hash policy, perftest options), each experiment's (pattern, kind, workers, volume, streams, steps, collective),
    each host's (its throttle with the mechanism applied, its qdiscs, its kernel, its tools), then the controller's
    versions. ``run`` is ``_run.load_run``'s ``Run``. A line whose value differs between experiments names each."""
    lines = []
    experiments = [e for e in run.experiments if isinstance(e, dict)]
    names = [e.get("name") or "experiment-%d" % i for i, e in enumerate(experiments, 1)]
    hosts = {}  # host -> [(key, value)]

    def host_line(host, key, value):
        if value is not None:
            hosts.setdefault(host, []).append(("%s %s" % (host, key), value))

    if experiments:
        pairs = list(zip(names, experiments))
        lines.append(("line rate", _merged((n, e.get("line_rate")) for n, e in pairs)))
        lines.append(("mtu", _merged((n, e.get("mtu")) for n, e in pairs)))
        lines.append(("engine", _merged((n, e.get("engine")) for n, e in pairs)))
        lines.append(("hash policy", _hash_policy(run)))
        lines.append(("perftest options", _merged(
            (n, _text(e.get("perftest")) or "defaults") for n, e in pairs if e.get("engine") == "perftest")))
        for name, e in pairs:
            collective = e.get("collective")
            lines += [
                ("%s pattern" % name, e.get("pattern")),
                ("%s kind" % name, e.get("kind")),
                ("%s workers" % name, e.get("sources")),
                ("%s volume" % name, _bytes(e.get("volume"))),
                ("%s streams" % name, e.get("streams") if e.get("engine") != "perftest" else None),
                ("%s steps" % name, len(e.get("steps") or []) or None),
                ("%s collective" % name, "%s, %s ranks" % (collective.get("name"), collective.get("ranks"))
                 if isinstance(collective, dict) else None),
                ("%s expect" % name, e.get("expect") or None),  # the gates the experiment states (_gates)
            ]
        for host in sorted({h for e in experiments for h in (e.get("hosts") or {})}, key=_natural):
            host_line(host, "throttle", _merged((n, _throttle_of(e, host)) for n, e in pairs
                                                if host in (e.get("hosts") or {})))
    else:  # a run without a plan: what its steps' plans (the flows' annotations) say
        steps = [(s.name, s.plan) for s in run.steps]
        lines.append(("bottleneck", _merged((n, p.bottleneck) for n, p in steps)))
        lines.append(("mtu", _merged((n, ", ".join(sorted({str(f.mtu) for f in p.flows.values() if f.mtu})))
                                     for n, p in steps)))
        lines.append(("engine", _merged((s.name, s.plan.engine or ", ".join(sorted(
            {str(f.extra["engine"]) for f in s.flows if (f.extra or {}).get("engine")}))) for s in run.steps)))
        lines.append(("hash policy", _hash_policy(run)))
        lines += [("%s pattern" % n, p.pattern) for n, p in steps]
        throttles = {}
        for step in run.steps:
            if not step.plan.flows:  # nothing planned for this step's flows: their throttles are not known
                continue
            for host in list(step.plan.expected_workers) + [f.host for f in step.flows]:
                flows = [pf for (h, _i), pf in step.plan.flows.items() if h == host]
                value = _planned_throttle(flows[0], host) if flows else "none"
                throttles.setdefault(host, []).append((step.name, value))
        for host in sorted(throttles, key=_natural):
            host_line(host, "throttle", _merged(throttles[host]))
    for (host, iface), value in sorted(_qdiscs(run).items()):
        host_line(host, "qdisc %s" % iface, value)
    lab = run.lab or {}
    for host, facts in sorted(((lab.get("hosts") or {}).items())):
        for key, value in sorted((facts or {}).items()):
            host_line(host, key.replace("_", " "), _text(value) if value is not None else None)
    for host, facts in sorted(_host_facts(run).items()):
        for key, values in sorted(facts.items()):
            host_line(host, key, " | ".join(sorted(values)))
    for host in sorted(hosts, key=_natural):
        lines += hosts[host]
    controller = lab.get("controller") or {}
    known = list(_CONTROLLER_KEYS)
    for key in sorted(controller, key=lambda k: (known.index(k) if k in known else len(known), k)):
        lines.append((_CONTROLLER_KEYS.get(key) or "controller %s" % key.replace("_", " "), controller[key]))
    out, seen = [], set()
    for key, value in lines:
        if value is None or value == "" or key in seen:
            continue
        seen.add(key)
        out.append((key, _text(value)))
    return out


# -- a run's rows --------------------------------------------------------------------------------------------------
def _started(path, report):
    """When the run started (``2026-11-30 18:50:09``, local time): its directory's stamp, else its first flow's
    start, else the directory's modification time; and its label (the directory name after the stamp)."""
    name = os.path.basename(path)
    match = _STAMP.match(name)
    if match:
        try:
            stamp = time.strptime(match.group(1), "%Y%m%dT%H%M%S")
            return time.strftime("%Y-%m-%d %H:%M:%S", stamp), match.group(2) or ""
        except ValueError:
            pass
    starts = [w["start"] for s in report.get("steps") or [] for w in s.get("workers") or []
              if isinstance(w.get("start"), (int, float))]
    epoch = min(starts) if starts else os.path.getmtime(path)
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch)), name


def _median(values):
    values = sorted(values)
    n = len(values)
    return None if not n else (values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2)


def _headline(steps):
    """The figures a history line shows: over the run's barrier steps that completed, the step time (the median
    when there are several), the most frequent straggler and how many steps it held, the mean unthrottled idle
    share."""
    barrier = [s for s in steps if s.get("kind") == "barrier"]
    ok = [s for s in barrier if s.get("status") == "ok" and s.get("step_s") is not None]
    stragglers = Counter((s.get("straggler") or {}).get("host") for s in ok if s.get("straggler"))
    top = stragglers.most_common(1)[0] if stragglers else (None, None)
    idle = [s["unthrottled_idle_share"] for s in ok if s.get("unthrottled_idle_share") is not None]
    return {"barrier_steps": len(barrier), "headline_step_s": _median([s["step_s"] for s in ok]),
            "headline_straggler": top[0], "headline_straggler_steps": top[1],
            "headline_idle_share": round(sum(idle) / len(idle), 6) if idle else None}


def _idle_share(step_s, completion_s):
    if not step_s or completion_s is None:
        return None
    return round((step_s - completion_s) / step_s, 6)


def _run_rows(run_dir, report=None):
    """Everything the history holds of one run directory, as rows per table (the run's id filled in later)."""
    path = os.path.abspath(str(run_dir))
    if not os.path.isdir(path):
        raise HistoryError("run_dir: %s is not a directory; give a run directory (runs/<stamp>-<playbook>)" % path)
    if not (os.path.exists(os.path.join(path, PLAN_FILE)) or os.path.isdir(os.path.join(path, "flows"))):
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
                    idle_share=(_idle_share(s.get("step_s"), f.get("completion_s")) if several
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
def _transaction(conn):
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


def _write_run(conn, rows):
    """One run's rows, replacing what the history held of its directory; the caller holds the transaction."""
    path = rows["runs"][0]["path"]
    for old in conn.execute("SELECT id FROM runs WHERE path = ?", (path,)).fetchall():
        _delete_run(conn, old["id"])
    run_id = _run_id(conn, path)
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


def _run_dirs(runs_dir):
    """The run directories under ``runs_dir`` (each with plan.json or flows/), oldest name first."""
    if not os.path.isdir(runs_dir):
        return []
    out = []
    for name in sorted(os.listdir(runs_dir)):
        full = os.path.join(runs_dir, name)
        if os.path.isdir(full) and (os.path.isfile(os.path.join(full, PLAN_FILE))
                                    or os.path.isdir(os.path.join(full, "flows"))):
            out.append(full)
    return out


def _analyse_all(dirs, notify):
    """Every directory's rows; a directory that cannot be analysed is skipped with a warning."""
    done, skipped = [], []
    for path in dirs:
        try:
            done.append(_run_rows(path))
        except HistoryError as exc:
            skipped.append({"path": path, "error": str(exc)})
            notify("skipped %s: %s" % (path, exc))
    return done, skipped


def _fill(conn, runs_dir, notify):
    """Index every run directory under ``runs_dir`` in one transaction (the history's rows replaced)."""
    done, skipped = _analyse_all(_run_dirs(runs_dir), notify)
    with _transaction(conn):
        for table in _TABLES:
            conn.execute("DELETE FROM %s" % table)
        for rows in done:
            _write_run(conn, rows)
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


@contextmanager
def _history(db_path, runs_dir=None, notify=None):
    conn, _what, _summary = _open(db_path, runs_dir, notify or _stderr)
    try:
        yield conn
    finally:
        conn.close()


# -- the API -------------------------------------------------------------------------------------------------------
def record_run(db_path, run_dir, report=None, runs_dir=None, notify=None):
    """Index one run directory (its configuration lines and results) in the history at ``db_path``, in one
    transaction; recording it again replaces its rows. ``report``: the run's report when the caller has it (the
    callback, once report.json is written); else ``_report.analyze_run``'s. ``runs_dir``: where the run directories
    are, when the history must be built (missing or corrupt; default the database's directory). ``notify``: called
    with each message (a rebuilt database, a skipped directory); default standard error. Returns
    ``{id, path, db, steps, flows, config_lines}``."""
    rows = _run_rows(run_dir, report)
    with _history(db_path, runs_dir, notify) as conn:
        with _transaction(conn):
            run_id = _write_run(conn, rows)
    return {"id": run_id, "path": rows["runs"][0]["path"], "db": os.path.abspath(str(db_path)),
            "steps": len(rows["steps"]), "flows": len(rows["flows"]), "config_lines": len(rows["config"])}


def rebuild(db_path, runs_dir=None, notify=None):
    """Build the history again from every run directory under ``runs_dir`` (default: the database's directory), in
    one transaction. Returns ``{db, runs_dir, runs, skipped: [{path, error}]}``."""
    notify = notify or _stderr
    runs_dir = os.path.abspath(str(runs_dir)) if runs_dir else os.path.dirname(os.path.abspath(str(db_path)))
    conn, what, summary = _open(db_path, runs_dir, notify)
    try:
        if what is None:  # a sound database: every row again (when it was missing or corrupt, _open just did that)
            summary = _fill(conn, runs_dir, notify)
    finally:
        conn.close()
    return dict(summary, db=os.path.abspath(str(db_path)), runs_dir=runs_dir)


def _sync(conn, runs_dir, notify):
    """Index the run directories under ``runs_dir`` the history does not hold yet (runs made before the callback
    recorded them, or whose play was interrupted)."""
    known = {r["path"] for r in conn.execute("SELECT path FROM runs").fetchall()}
    new = [p for p in _run_dirs(runs_dir) if os.path.abspath(p) not in known]
    if not new:
        return 0
    done, _skipped = _analyse_all(new, notify)
    with _transaction(conn):
        for rows in done:
            _write_run(conn, rows)
    return len(done)


def _ordered_ids(conn):
    return [r["id"] for r in conn.execute("SELECT id FROM runs ORDER BY started DESC, id DESC").fetchall()]


def list_runs(db_path, limit=None, runs_dir=None, sync=False, notify=None):
    """The runs in the history, oldest first (the newest ``limit`` of them), each with its headline figures and
    ``ref`` (``latest``, ``latest~1``... as compare takes them). ``sync``: first index the run directories under
    ``runs_dir`` the history does not hold yet."""
    if limit is not None:
        try:
            limit = int(limit)
        except (TypeError, ValueError):
            raise HistoryError("limit: %r is not a number of runs; give a positive integer" % (limit,)) from None
        if limit < 1:
            raise HistoryError("limit: %d; give a positive integer (the newest runs to list)" % limit)
    runs_dir = os.path.abspath(str(runs_dir)) if runs_dir else os.path.dirname(os.path.abspath(str(db_path)))
    with _history(db_path, runs_dir, notify) as conn:
        if sync:
            _sync(conn, runs_dir, notify or _stderr)
        sql = "SELECT * FROM runs ORDER BY started DESC, id DESC"
        rows = conn.execute(sql + (" LIMIT %d" % limit if limit else "")).fetchall()
    out = []
    for n, row in enumerate(rows):
        item = dict(row)
        item["ref"] = "latest" if n == 0 else "latest~%d" % n
        out.append(item)
    return list(reversed(out))


def _resolve(conn, ref, name, db_path):
    """The id of the run ``ref`` names: ``latest``/``latest~N``, an id, a run directory (its path or its name), or
    the unique start of an id; None for a run directory the history does not hold yet."""
    text = str(ref).strip() if ref is not None else ""
    if not text:
        raise HistoryError("%s: empty; %s" % (name, _HINT))
    db_name = os.path.basename(str(db_path))
    latest = re.fullmatch(r"latest(?:~(\d+))?", text)
    if latest:
        n = int(latest.group(1) or 0)
        ids = _ordered_ids(conn)
        if not ids:
            raise HistoryError("%s: %s, but %s holds no runs yet: run an experiment (make demo), or give runs_dir, the "
                               "directory that holds the run directories" % (name, text, db_name))
        if n >= len(ids):
            raise HistoryError("%s: %s, but %s holds %d run%s (latest to latest~%d); %s"
                               % (name, text, db_name, len(ids), "" if len(ids) == 1 else "s", len(ids) - 1, _HINT))
        return ids[n]
    row = conn.execute("SELECT id FROM runs WHERE id = ?", (text,)).fetchone()
    if row:
        return row["id"]
    if os.path.isdir(text):
        row = conn.execute("SELECT id FROM runs WHERE path = ?", (os.path.abspath(text),)).fetchone()
        return row["id"] if row else None
    base = os.path.basename(text.rstrip("/"))
    row = conn.execute("SELECT id FROM runs WHERE id = ?", (base,)).fetchone()
    if row:
        return row["id"]
    starts = [r["id"] for r in conn.execute("SELECT id FROM runs WHERE substr(id, 1, ?) = ? ORDER BY id",
                                            (len(base), base)).fetchall()]
    if len(starts) == 1:
        return starts[0]
    if starts:
        raise HistoryError("%s: %r matches %d runs in %s (%s); give one of them whole"
                           % (name, text, len(starts), db_name, ", ".join(starts[:5]) + (", ..." if len(starts) > 5
                                                                                         else "")))
    raise HistoryError("%s: no run matches %r in %s: %s" % (name, text, db_name, _HINT))


def _fetch(conn, run_id):
    run = dict(conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone())
    run["config"] = [[r["key"], r["value"]] for r in
                     conn.execute("SELECT key, value FROM config WHERE run_id = ? ORDER BY position", (run_id,))]
    workers, flows = {}, {}
    for r in conn.execute("SELECT * FROM workers WHERE run_id = ? ORDER BY step, position", (run_id,)):
        workers.setdefault(r["step"], []).append({k: r[k] for k in r.keys() if k not in ("run_id", "step")})
    for r in conn.execute("SELECT * FROM flows WHERE run_id = ? ORDER BY step, position", (run_id,)):
        flows.setdefault(r["step"], []).append({k: r[k] for k in r.keys() if k not in ("run_id", "step")})
    run["steps"] = []
    for r in conn.execute("SELECT * FROM steps WHERE run_id = ? ORDER BY position", (run_id,)):
        step = {k: r[k] for k in r.keys() if k != "run_id"}
        step["workers"], step["flows"] = workers.get(r["step"], []), flows.get(r["step"], [])
        run["steps"].append(step)
    return run


def _fetch_ref(conn, ref, name, db_path):
    run_id = _resolve(conn, ref, name, db_path)
    if run_id is None:  # a run directory not indexed yet: index it now
        rows = _run_rows(str(ref))
        with _transaction(conn):
            run_id = _write_run(conn, rows)
    return _fetch(conn, run_id)


def get_run(db_path, ref, runs_dir=None, notify=None):
    """One run as the history holds it: its row, ``config`` ([key, value] in order) and ``steps`` (each with its
    ``workers`` and ``flows``). ``ref``: a run id, a run directory (path or name), ``latest`` or ``latest~N``."""
    with _history(db_path, runs_dir, notify) as conn:
        return _fetch_ref(conn, ref, "ref", db_path)


def baseline_run(db_path, steps, ref=None, runs_dir=None, notify=None):
    """The run a ``vs_baseline`` gate compares with: ``ref`` (a run of the history, as ``get_run`` takes it), else
    the latest run in which a step named like one of ``steps`` completed. Returns ``{run, path, steps: {name:
    step_s}, p50_step_s}`` (the completed steps of those names; their median), or ``{reason}`` when the history holds
    no such run."""
    names = [str(n) for n in steps or []]
    with _history(db_path, runs_dir, notify) as conn:
        if runs_dir:  # runs made while the history was not written (history off, another database) count too
            _sync(conn, os.path.abspath(str(runs_dir)), notify or _stderr)
        if ref not in (None, "", "latest") or not names:
            run_id = _resolve(conn, ref or "latest", "expect.baseline", db_path)
            if run_id is None:
                return {"reason": "the baseline run %s is not in %s (make history-rebuild indexes it)"
                                  % (ref, os.path.basename(str(db_path)))}
        else:
            marks = ",".join("?" * len(names))
            row = conn.execute("SELECT s.run_id FROM steps s JOIN runs r ON r.id = s.run_id WHERE s.step IN (%s) AND "
                               "s.status = 'ok' ORDER BY r.started DESC, r.id DESC LIMIT 1" % marks, names).fetchone()
            if row is None:
                return {"reason": "no run in %s has a completed step %s" % (
                    os.path.basename(str(db_path)), " or ".join(names[:3]) + (" ..." if len(names) > 3 else ""))}
            run_id = row["run_id"]
        path = conn.execute("SELECT path FROM runs WHERE id = ?", (run_id,)).fetchone()["path"]
        rows = conn.execute("SELECT step, step_s FROM steps WHERE run_id = ? AND status = 'ok' AND step_s IS NOT NULL",
                            (run_id,)).fetchall()
    times = {r["step"]: r["step_s"] for r in rows if not names or r["step"] in names}
    if not times:
        return {"reason": "the baseline run %s has no completed step %s" % (run_id, " or ".join(names[:3]))}
    return {"run": run_id, "path": path, "steps": times, "p50_step_s": round(_median(list(times.values())), 6)}


# -- compare -------------------------------------------------------------------------------------------------------
def _num(a, b):
    out = {"a": a, "b": b, "delta": None, "change": None}
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        out["delta"] = round(b - a, 6)
        out["change"] = round((b - a) / a, 6) if a else None
    return out


def _pair(a, b):
    return {"a": a, "b": b}


_STEP_FIGURES = ("step_s", "predicted_step_s", "fair_step_s", "mean_completion_s", "unthrottled_idle_share",
                 "throttled_idle_share", "idle_worker_seconds", "sum_of_flow_gbps", "aggregate_gbps")


def _step_diff(sa, sb):
    out = {"step": sa["step"], "kind": _pair(sa.get("kind"), sb.get("kind")),
           "status": _pair(sa.get("status"), sb.get("status"))}
    for key in _STEP_FIGURES:
        out[key] = _num(sa.get(key), sb.get(key))
    out["straggler"] = _pair(
        {"host": sa.get("straggler"), "cause": sa.get("straggler_cause")} if sa.get("straggler") else None,
        {"host": sb.get("straggler"), "cause": sb.get("straggler_cause")} if sb.get("straggler") else None)
    out["counters_verdict"] = _pair(sa.get("counters_verdict"), sb.get("counters_verdict"))
    out["verdict"] = _pair(sa.get("verdict"), sb.get("verdict"))
    wa = {w["host"]: w for w in sa.get("workers") or []}
    wb = {w["host"]: w for w in sb.get("workers") or []}
    out["workers"] = []
    for host in list(wa) + [h for h in wb if h not in wa]:
        a, b = wa.get(host) or {}, wb.get(host) or {}
        out["workers"].append({"host": host, "status": _pair(a.get("status"), b.get("status")),
                               "throttle": _pair(a.get("throttle"), b.get("throttle")),
                               "completion_s": _num(a.get("completion_s"), b.get("completion_s")),
                               "gbps": _num(a.get("gbps"), b.get("gbps")),
                               "idle_share": _num(a.get("idle_share"), b.get("idle_share")),
                               "predicted_s": _num(a.get("predicted_s"), b.get("predicted_s"))})
    return out


def _summary(run):
    return {k: run.get(k) for k in ("id", "path", "label", "started", "status", "steps", "steps_ok")}


def diff_runs(run_a, run_b):
    """What changed from run A to run B (``get_run``'s dicts): the configuration lines that differ and those only
    in one run, and per step matched by name its figures A -> B (``{a, b, delta, change}``: delta = b - a, change =
    delta / a), its straggler, its counters' verdict and each worker's completion and rate."""
    cfg_a, cfg_b = dict(map(tuple, run_a["config"])), dict(map(tuple, run_b["config"]))
    order = [k for k, _v in run_a["config"]] + [k for k, _v in run_b["config"] if k not in cfg_a]
    config = {"changed": [{"key": k, "a": cfg_a[k], "b": cfg_b[k]} for k in order
                          if k in cfg_a and k in cfg_b and cfg_a[k] != cfg_b[k]],
              "only_a": [{"key": k, "value": cfg_a[k]} for k in order if k not in cfg_b],
              "only_b": [{"key": k, "value": cfg_b[k]} for k in order if k not in cfg_a],
              "same": sum(1 for k in cfg_a if k in cfg_b and cfg_a[k] == cfg_b[k])}
    sb = {s["step"]: s for s in run_b["steps"]}
    names_a = [s["step"] for s in run_a["steps"]]
    return {"a": _summary(run_a), "b": _summary(run_b), "config": config,
            "steps": [_step_diff(s, sb[s["step"]]) for s in run_a["steps"] if s["step"] in sb],
            "steps_only_a": [n for n in names_a if n not in sb],
            "steps_only_b": [s["step"] for s in run_b["steps"] if s["step"] not in set(names_a)]}


def compare(db_path, a="latest~1", b="latest", runs_dir=None, notify=None):
    """``diff_runs`` of the runs ``a`` and ``b`` name (run ids, run directories, ``latest``, ``latest~N``; a run
    directory the history does not hold yet is indexed first)."""
    with _history(db_path, runs_dir, notify) as conn:
        run_a = _fetch_ref(conn, a, "a", db_path)
        run_b = _fetch_ref(conn, b, "b", db_path)
    return diff_runs(run_a, run_b)


# -- text ----------------------------------------------------------------------------------------------------------
def _f(value, fmt="%.3f"):
    return "-" if value is None else fmt % value


def _share(value):
    return "-" if value is None else "%.1f%%" % (value * 100)


def _change(num, share=False):
    if num["delta"] is None:
        return ""
    if share:
        return "%+.1f points" % (num["delta"] * 100)
    if num["change"] is None:
        return "%+.3f" % num["delta"]
    return "%+.3f (%+.1f%%)" % (num["delta"], num["change"] * 100)


def _who(straggler):
    return "-" if not straggler else "%s: %s" % (straggler["host"], straggler["cause"] or "no cause recorded")


def _either(label, pair, show):
    """A line for a value of A and B: once when they agree, else A's then B's under it."""
    a, b = show(pair["a"]), show(pair["b"])
    if a == b:
        return ["  %-22s %s (both)" % (label, a)]
    return ["  %-22s A %s" % (label, a), "  %-22s B %s" % ("", b)]


_FIGURE_LABELS = (  # (the step's key, its label, a share)
    ("step_s", "step time s", False), ("predicted_step_s", "predicted s", False),
    ("fair_step_s", "unthrottled fair s", False), ("mean_completion_s", "mean completion s", False),
    ("unthrottled_idle_share", "unthrottled idle", True), ("throttled_idle_share", "throttled idle", True),
    ("idle_worker_seconds", "idle worker-seconds", False), ("sum_of_flow_gbps", "sum of flow Gb/s", False),
    ("aggregate_gbps", "step goodput Gb/s", False))


def render_compare(diff):
    """``compare``'s result as text for a terminal."""
    a, b = diff["a"], diff["b"]
    out = ["compare A %s -> B %s" % (a["id"], b["id"])]
    for tag, run in (("A", a), ("B", b)):
        out.append("  %s  %-32s %s  %-7s %s" % (tag, run["id"], run["started"], run["status"], run["path"]))
    cfg = diff["config"]
    out += ["", "configuration: %d line%s differ%s, %d only in A, %d only in B, %d the same"
            % (len(cfg["changed"]), "" if len(cfg["changed"]) == 1 else "s", "s" if len(cfg["changed"]) == 1 else "",
               len(cfg["only_a"]), len(cfg["only_b"]), cfg["same"])]
    width = max([len(c["key"]) for c in cfg["changed"] + cfg["only_a"] + cfg["only_b"]] + [20])
    out += ["  %-*s  %s -> %s" % (width, c["key"], c["a"], c["b"]) for c in cfg["changed"]]
    out += ["  %-*s  %s -> (not in B)" % (width, c["key"], c["value"]) for c in cfg["only_a"]]
    out += ["  %-*s  (not in A) -> %s" % (width, c["key"], c["value"]) for c in cfg["only_b"]]
    for s in diff["steps"]:
        kind = s["kind"]["a"] if s["kind"]["a"] == s["kind"]["b"] else "%s -> %s" % (s["kind"]["a"], s["kind"]["b"])
        out += ["", "=== step '%s' (%s): %s -> %s" % (s["step"], kind, s["status"]["a"], s["status"]["b"]),
                "  %-22s %12s %12s  %s" % ("", "A", "B", "change")]
        for key, label, share in _FIGURE_LABELS:
            num = s[key]
            if num["a"] is None and num["b"] is None:
                continue
            show = _share if share else _f
            out.append("  %-22s %12s %12s  %s" % (label, show(num["a"]), show(num["b"]), _change(num, share)))
        out += _either("straggler", s["straggler"], _who)
        out += _either("counters", s["counters_verdict"], lambda v: v or "-")
        if s["workers"]:
            out.append("  %-14s %9s %9s %9s  %8s %8s %9s  %s" % ("worker", "compl. A", "B", "change", "Gb/s A", "B",
                                                                 "change", "throttle"))
            for w in s["workers"]:
                c, g = w["completion_s"], w["gbps"]
                throttle = (w["throttle"]["a"] or "-") if w["throttle"]["a"] == w["throttle"]["b"] else \
                    "%s -> %s" % (w["throttle"]["a"] or "-", w["throttle"]["b"] or "-")
                status = "" if w["status"]["a"] == w["status"]["b"] == "ok" else \
                    "  (%s -> %s)" % (w["status"]["a"] or "absent", w["status"]["b"] or "absent")
                out.append("  %-14s %9s %9s %9s  %8s %8s %9s  %s%s" % (
                    w["host"], _f(c["a"]), _f(c["b"]), "" if c["change"] is None else "%+.1f%%" % (c["change"] * 100),
                    _f(g["a"]), _f(g["b"]), "" if g["change"] is None else "%+.1f%%" % (g["change"] * 100), throttle,
                    status))
    if diff["steps_only_a"]:
        out += ["", "steps only in A: %s" % ", ".join(diff["steps_only_a"])]
    if diff["steps_only_b"]:
        out += ["", "steps only in B: %s" % ", ".join(diff["steps_only_b"])]
    return "\n".join(out) + "\n"


def compare_files(diff):
    """The comparison's files, name -> text: ``<A>__<B>.txt`` and ``<A>__<B>.json``."""
    base = "%s__%s" % (diff["a"]["id"], diff["b"]["id"])
    return {base + ".txt": render_compare(diff), base + ".json": json.dumps(diff, indent=1, sort_keys=True)}


def write_compare(diff, runs_dir):
    """Write ``compare_files(diff)`` under ``<runs_dir>/compare/`` atomically; returns their paths."""
    out = []
    for name, text in compare_files(diff).items():
        out.append(write_text(os.path.join(str(runs_dir), COMPARE_DIR, name), text))
    return out


def render_history(rows):
    """``list_runs``' rows as a table: ref, id, date, label, status, steps completed, the barrier step time (the
    median over several), the straggler (and the steps it held), the mean unthrottled idle share."""
    table = [("ref", "run", "date", "label", "status", "steps ok", "barrier step s", "straggler", "idle")]
    for r in rows:
        n = r.get("barrier_steps") or 0
        step = _f(r.get("headline_step_s"))
        if n > 1 and r.get("headline_step_s") is not None:
            step = "p50 %s" % step
        straggler = r.get("headline_straggler") or "-"
        if r.get("headline_straggler") and n > 1:
            straggler = "%s %d/%d" % (straggler, r.get("headline_straggler_steps") or 0, n)
        table.append((r.get("ref") or "", r["id"], r.get("started") or "-", r.get("label") or "-",
                      r.get("status") or "-", "%d/%d" % (r.get("steps_ok") or 0, r.get("steps") or 0), step,
                      straggler, "-" if r.get("headline_idle_share") is None
                      else "%.0f%%" % (r["headline_idle_share"] * 100)))
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    right = {5, 6, 8}  # the figures
    out = ["  ".join(cell.rjust(w) if i in right else cell.ljust(w) for i, (cell, w) in enumerate(zip(line, widths)))
           .rstrip() for line in table]
    if not rows:
        out.append("(no runs recorded)")
    return "\n".join(out) + "\n"
