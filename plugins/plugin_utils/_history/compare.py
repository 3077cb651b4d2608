# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A run of the history found by what a person calls it (a run id, a run directory, ``latest~N``), the baseline run
a ``vs_baseline`` gate compares with, and what changed from one run to another."""

from __future__ import annotations

import os
import re

from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.stats import median
from ansible_collections.aifabric.lab.plugins.plugin_utils._history.store import (
    HistoryError,
    notify_stderr,
    open_history,
    ordered_ids,
    read_history,
    run_in_memory,
    run_rows,
    sync_runs,
)

__all__ = ["get_run", "baseline_run", "diff_runs", "compare"]


_HINT = "give a run id (make history lists them), a run directory or latest~N"


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
        ids = ordered_ids(conn)
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
    if run_id is not None:
        return _fetch(conn, run_id)
    # a run directory the history does not hold yet: read as the history would hold it, in memory (the history is
    # left as it is: the aifabric.lab.history action records it)
    scratch, run_id = run_in_memory(conn, run_rows(str(ref)))
    try:
        return _fetch(scratch, run_id)
    finally:
        scratch.close()


def get_run(db_path, ref, runs_dir=None, notify=None):
    """One run as the history holds it: its row, ``config`` ([key, value] in order) and ``steps`` (each with its
    ``workers`` and ``flows``). ``ref``: a run id, a run directory (path or name), ``latest`` or ``latest~N``. Reads
    only (``read_history``): a run directory the history does not hold is read as it would hold it."""
    with read_history(db_path, runs_dir, notify) as conn:
        return _fetch_ref(conn, ref, "ref", db_path)


def baseline_run(db_path, steps, ref=None, runs_dir=None, notify=None, sync=True):
    """The run a ``vs_baseline`` gate compares with: ``ref`` (a run of the history, as ``get_run`` takes it), else
    the latest run in which a step named like one of ``steps`` completed. Returns ``{run, path, steps: {name:
    step_s}, p50_step_s}`` (the completed steps of those names; their median), or ``{reason}`` when the history holds
    no such run. ``sync``: first index the run directories under ``runs_dir`` it does not hold yet, a writer's
    (``open_history``); without it, it reads only (``read_history``), as the history_baseline filter does, leaving the
    indexing to the ``aifabric.lab.history`` action."""
    names = [str(n) for n in steps or []]
    with (open_history if sync else read_history)(db_path, runs_dir, notify) as conn:
        if runs_dir and sync:  # runs made while the history was not written (history off, another database) count too
            sync_runs(conn, os.path.abspath(str(runs_dir)), notify or notify_stderr)
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
    return {"run": run_id, "path": path, "steps": times, "p50_step_s": round(median(list(times.values())), 6)}


# -- compare -------------------------------------------------------------------------------------------------------
def _delta(a, b):
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
        out[key] = _delta(sa.get(key), sb.get(key))
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
                               "completion_s": _delta(a.get("completion_s"), b.get("completion_s")),
                               "gbps": _delta(a.get("gbps"), b.get("gbps")),
                               "idle_share": _delta(a.get("idle_share"), b.get("idle_share")),
                               "predicted_s": _delta(a.get("predicted_s"), b.get("predicted_s"))})
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
    directory the history does not hold yet is read as it would hold it). Reads only: nothing is written to the
    history (``read_history``), so a filter can call it."""
    with read_history(db_path, runs_dir, notify) as conn:
        run_a = _fetch_ref(conn, a, "a", db_path)
        run_b = _fetch_ref(conn, b, "b", db_path)
    return diff_runs(run_a, run_b)
