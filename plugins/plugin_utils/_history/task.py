# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the ``aifabric.lab.history`` action does to the run history: record one run directory, index the ones it
does not hold yet (sync), or build it again (rebuild); in check mode it says what it would write and writes nothing.
The one writer of the history besides the callback (the filters only read)."""

from __future__ import annotations

import os
import sqlite3

from ansible_collections.aifabric.lab.plugins.plugin_utils._history import store
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.store import run_dirs

__all__ = ["held", "run_task"]


def held(db_path):
    """``{path: {table: rows}}`` of what the history at ``db_path`` holds of each run, read only (without creating or
    repairing it); None when there is no readable history there."""
    if not os.path.isfile(db_path):
        return None
    try:
        conn = sqlite3.connect("file:%s?mode=ro" % db_path, uri=True)
    except sqlite3.Error:
        return None
    conn.row_factory = sqlite3.Row
    try:
        out = {}
        for run in conn.execute("SELECT * FROM runs").fetchall():
            rows = {"runs": [{k: run[k] for k in run.keys() if k not in ("id", "recorded_at")}]}
            for table in ("config", "steps", "workers", "flows"):
                rows[table] = [{k: r[k] for k in r.keys() if k != "run_id"} for r in conn.execute(
                    "SELECT * FROM %s WHERE run_id = ? ORDER BY rowid" % table, (run["id"],)).fetchall()]
            out[run["path"]] = rows
        return out
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def _comparable(rows):
    """A run's rows as ``run_rows`` makes them, in the form ``held`` reads them back (no id, no recorded_at)."""
    out = {"runs": [{k: v for k, v in rows["runs"][0].items() if k != "recorded_at"}]}
    for table in ("config", "steps", "workers", "flows"):
        out[table] = [{k: v for k, v in r.items() if k != "run_id"} for r in rows[table]]
    return out


def _same(held_rows, rows):
    want = _comparable(rows)
    for table, expected in want.items():
        got = held_rows.get(table) or []
        if len(got) != len(expected):
            return False
        for g, e in zip(got, expected):
            if any(g.get(k) != v for k, v in e.items()):
                return False
    return True


def run_task(params, check_mode=False, notify=None):
    """The action's result for ``params`` (``record``, ``sync``, ``rebuild``, ``runs_dir``, ``db``: absolute paths
    already): ``changed``, ``db``, ``runs_dir``, ``recorded`` (the run directories written, or that would be),
    ``unreadable`` (``[{path, error}]``: not analysable, left out), and ``msg``. Raises ``store.HistoryError``."""
    db, runs_dir = params["db"], params["runs_dir"]
    notify = notify or store.notify_stderr
    out = {"db": db, "runs_dir": runs_dir, "recorded": [], "unreadable": []}
    have = held(db)
    if params.get("rebuild"):
        dirs = [os.path.abspath(p) for p in run_dirs(runs_dir)]
        if check_mode:
            return dict(out, changed=True, recorded=dirs,
                        msg="would build %s again from %d run directories under %s" % (db, len(dirs), runs_dir))
        summary = store.rebuild(db, runs_dir, notify=notify)
        recorded = [p for p in dirs if p not in {s["path"] for s in summary["skipped"]}]
        return dict(out, changed=True, recorded=recorded, unreadable=summary["skipped"],
                    msg="%s: built again from %d run directories under %s" % (db, summary["runs"], runs_dir))
    if params.get("record"):
        path = os.path.abspath(str(params["record"]))
        rows = store.run_rows(path)
        if have is not None and path in have and _same(have[path], rows):
            return dict(out, changed=False, msg="%s already holds %s as it is" % (db, path))
        if not check_mode:
            store.record_run(db, path, runs_dir=runs_dir, notify=notify)
        return dict(out, changed=True, recorded=[path], msg="%s %s in %s" % (
            "would record" if check_mode else "recorded", path, db))
    # sync: the run directories under runs_dir the history does not hold yet (all of them when it has none)
    if have is None:
        dirs = [os.path.abspath(p) for p in run_dirs(runs_dir)]
        if check_mode:
            return dict(out, changed=True, recorded=dirs, msg="would build %s from %d run directories under %s" % (
                db, len(dirs), runs_dir))
        summary = store.rebuild(db, runs_dir, notify=notify)
        bad = {s["path"] for s in summary["skipped"]}
        return dict(out, changed=True, recorded=[p for p in dirs if p not in bad], unreadable=summary["skipped"],
                    msg="built %s from %d run directories under %s" % (db, summary["runs"], runs_dir))
    new = [os.path.abspath(p) for p in run_dirs(runs_dir) if os.path.abspath(p) not in have]
    if not new:
        return dict(out, changed=False, msg="%s holds every run directory under %s" % (db, runs_dir))
    if check_mode:
        return dict(out, changed=True, recorded=new, msg="would index %d run directories of %s in %s" % (
            len(new), runs_dir, db))
    with store.open_history(db, runs_dir, notify) as conn:
        store.sync_runs(conn, runs_dir, notify)
    now = held(db) or {}
    recorded = [p for p in new if p in now]
    return dict(out, changed=bool(recorded), recorded=recorded,
                unreadable=[{"path": p, "error": "cannot be analysed (see the warning)"} for p in new if p not in now],
                msg="indexed %d run directories of %s in %s" % (len(recorded), runs_dir, db))
