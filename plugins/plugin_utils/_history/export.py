# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The history for other tools: one row per step of every recorded run, the run's figures beside the step's
(``ROW``: the run's id, path, label, start, status and gates; the step's time, prediction, straggler, idle shares,
goodput and counters' verdict), oldest run first, as JSON lines (one object a line) or CSV (a header, then a row a
line; a text a spreadsheet would run as a formula is quoted as text, as flows.csv does). Read-only: the history is
opened as the other readers open it (``read_history``: nothing is written; a missing or unreadable file's runs are read
from the run directories into memory)."""

from __future__ import annotations

import json

from ansible_collections.aifabric.lab.plugins.plugin_utils._history.store import HistoryError, read_history
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.formats import csv_text

__all__ = ["FORMATS", "ROW", "export", "export_rows"]

_RUN = ("id", "path", "label", "started", "status", "gates")
_STEP = ("position", "step", "kind", "status", "step_s", "predicted_step_s", "fair_step_s", "mean_completion_s",
         "straggler", "straggler_cause", "straggler_behind_next_s", "unthrottled_idle_share", "throttled_idle_share",
         "idle_worker_seconds", "sum_of_flow_gbps", "aggregate_gbps", "counters_verdict", "verdict",
         "workers_expected", "workers_completed")
# a row's keys, in order: the run's prefixed run_ (run_id ... run_gates), then the step's
ROW = tuple("run_" + c if c != "id" else "run_id" for c in _RUN) + _STEP
FORMATS = ("jsonl", "csv")


def export_rows(db_path, runs_dir=None, notify=None):
    """Every recorded step with its run's figures (``ROW``'s keys), oldest run first, steps in their order; read only
    (``runs_dir``: where a missing or unreadable history's runs are read from, default the database's directory)."""
    select = ", ".join(["r.%s AS %s" % (c, "run_id" if c == "id" else "run_" + c) for c in _RUN]
                       + ["s.%s AS %s" % (c, c) for c in _STEP])
    with read_history(db_path, runs_dir, notify) as conn:
        rows = conn.execute("SELECT %s FROM runs r JOIN steps s ON s.run_id = r.id "
                            "ORDER BY r.started, r.id, s.position" % select).fetchall()
    return [{k: row[k] for k in ROW} for row in rows]


def export(rows, fmt="jsonl"):
    """``rows`` (``export_rows``') as the text of format ``fmt``: ``jsonl`` or ``csv``."""
    if fmt == "jsonl":
        return "".join(json.dumps(r, sort_keys=False) + "\n" for r in rows)
    if fmt == "csv":
        return csv_text(ROW, rows)
    raise HistoryError("format: %r is not one the export writes; give one of %s" % (fmt, ", ".join(FORMATS)))
