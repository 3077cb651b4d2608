# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The incast sweep's grid (issue 27, docs/congestion.md "The incast grid"): the experiments of a run that carry the
labels ``n`` (senders), ``buffer`` (the switch port's queue limit) and ``mode`` (``taildrop`` or ``ecn``), one cell
each, laid out as a column per buffer and mode with a row per N. A cell's efficiency is the fair share's step time (the
simulator's max-min prediction of the step, ``predicted_step_s``) over the measured one, p50 over the cell's steps:
1.0 when the port stays busy and every sender gets its share, lower when losses and timeouts leave it idle. A column's
**goodput cliff** is the smallest N whose efficiency falls below ``CLIFF`` (0.8: the port idle a fifth of the step or
more), or whose step failed; the row names it with what came with it (drops, RTO expiries). A cliff at the column's
smallest N says the whole column is below it."""
from __future__ import annotations

from ansible_collections.aifabric.lab.plugins.module_utils._units import UnitError, parse_size

__all__ = ["CLIFF", "incast_grid"]

CLIFF = 0.8  # a cell below 80% of the fair share's goodput has fallen off the cliff
_KEYS = ("n", "buffer", "mode")


def _bytes(buffer):
    try:
        return parse_size(buffer, "labels.buffer")
    except UnitError:
        return None


def _cell(experiment):
    """One cell's row from an experiment's summary (its ``labels`` and ``ecn`` books; a cell whose every step failed
    has no books: its figures are None and ``failed_steps`` says how many)."""
    labels, books = experiment["labels"], experiment.get("ecn") or {}
    total = books.get("total") or {}
    return {
        "experiment": experiment["name"], "n": int(labels["n"]), "buffer": str(labels["buffer"]),
        "buffer_bytes": _bytes(labels["buffer"]), "mode": str(labels["mode"]), "steps": experiment["steps"],
        "failed_steps": len(experiment.get("failed_steps") or []),
        "step_s": books["step_s"]["p50"] if books.get("step_s") else None,
        "efficiency": books["efficiency"]["p50"] if books.get("efficiency") else None,
        "goodput_gbps": books["goodput_gbps"]["p50"] if books.get("goodput_gbps") else None,
        "fct_p99_s": books["fct_s"]["p99"] if books.get("fct_s") else None,
        "marked_segs": total.get("marked_segs"), "dropped_segs": total.get("dropped_segs"),
        "retransmits": books.get("retransmits"), "rto_timeouts": books.get("rto_timeouts"),
        "lossless": books.get("lossless"),
    }


def _fell(row, cliff):
    """Off the cliff: an efficiency below ``cliff``, or a step of it failed (timed out: no time to compare)."""
    if row["failed_steps"]:
        return True
    return row["efficiency"] is not None and row["efficiency"] < cliff


def incast_grid(experiments, cliff=CLIFF):
    """The grid of a run's ``experiments`` (the report's summaries) labelled ``n``, ``buffer`` and ``mode`` and with
    their summaries: ``{"cliff_share", "columns": [{buffer, mode, rows (by N), best_efficiency, cliff}]}``, a column's
    ``cliff`` None when no N fell off (or no row has an efficiency); None when fewer than two cells are labelled."""
    cells = [_cell(e) for e in experiments if all(k in (e.get("labels") or {}) for k in _KEYS)]
    if len(cells) < 2:
        return None
    columns = {}
    for cell in cells:
        columns.setdefault((cell["buffer"], cell["mode"]), []).append(cell)
    out = []
    for (buffer, mode), rows in sorted(columns.items(), key=lambda kv: (
            kv[1][0]["buffer_bytes"] if kv[1][0]["buffer_bytes"] is not None else float("inf"), kv[0][0],
            kv[0][1] != "taildrop", kv[0][1])):
        rows.sort(key=lambda r: r["n"])
        known = [r["efficiency"] for r in rows if r["efficiency"] is not None]
        best = max(known) if known else None
        fell = next((r for r in rows if _fell(r, cliff)), None)
        out.append({"buffer": buffer, "mode": mode, "rows": rows, "best_efficiency": best,
                    "cliff": None if fell is None else {
                        "n": fell["n"], "efficiency": fell["efficiency"], "rto_timeouts": fell["rto_timeouts"],
                        "dropped_segs": fell["dropped_segs"], "failed_steps": fell["failed_steps"],
                        "last_good_n": max((r["n"] for r in rows if r["n"] < fell["n"]), default=None)}})
    return {"cliff_share": cliff, "columns": out}
