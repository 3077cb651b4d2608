# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the run history (``plugin_utils/_history``): list the runs, compare two, export, as text. They read
(``_history.store.read_history``: no file created, no schema or PRAGMA written, nothing rebuilt); the
``aifabric.lab.history`` action writes (``history_record`` and ``history_rebuild``, which write, are deprecated in
meta/runtime.yml)."""

from __future__ import annotations

import os
import sqlite3

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.utils.display import Display
from ansible_collections.aifabric.lab.plugins.plugin_utils._history import compare as _compare
from ansible_collections.aifabric.lab.plugins.plugin_utils._history import export as _export
from ansible_collections.aifabric.lab.plugins.plugin_utils._history import store as _store
from ansible_collections.aifabric.lab.plugins.plugin_utils._history import text as _text
from ansible_collections.aifabric.lab.plugins.plugin_utils._history.settings import history_paths
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import Plan, PlanError

_display = Display()


def _warn(message):
    _display.warning("history: %s" % message)


def _db(db, runs_dir, name):
    if db in (None, ""):
        if not runs_dir:
            raise AnsibleFilterError("%s: give db (the history file, e.g. runs/history.sqlite) or runs_dir" % name)
        return _store.default_db_path(str(runs_dir))
    return str(db)


def _call(name, function, *args, **kwargs):
    try:
        return function(*args, notify=_warn, **kwargs)
    except _store.HistoryError as exc:
        raise AnsibleFilterError("%s: %s" % (name, exc)) from None
    except (OSError, sqlite3.Error) as exc:
        raise AnsibleFilterError("%s: %s" % (name, exc)) from None


def history_record(run_dir, db=None, runs_dir=None):
    if not run_dir:
        raise AnsibleFilterError("history_record: give a run directory (runs/<stamp>-<playbook>)")
    runs_dir = runs_dir or os.path.dirname(os.path.abspath(str(run_dir)))
    return _call("history_record", _store.record_run, _db(db, runs_dir, "history_record"), str(run_dir),
                 runs_dir=str(runs_dir))


def history_rebuild(runs_dir, db=None):
    if not runs_dir:
        raise AnsibleFilterError("history_rebuild: give the directory that holds the run directories (runs)")
    if not os.path.isdir(str(runs_dir)):
        raise AnsibleFilterError("history_rebuild: runs_dir %s is not a directory; give the directory that holds the "
                                 "run directories (runs)" % runs_dir)
    return _call("history_rebuild", _store.rebuild, _db(db, runs_dir, "history_rebuild"), runs_dir=str(runs_dir))


def history_runs(db, limit=None, runs_dir=None, sync=False):
    if boolean(sync, strict=False):
        raise AnsibleFilterError("history_runs: sync=true writes the history, and a filter only reads; index the run "
                                 "directories first with the aifabric.lab.history action (sync: true, runs_dir: ...), "
                                 "as playbooks/history.yml does, then call history_runs without sync")
    return _call("history_runs", _store.read_runs, _db(db, runs_dir, "history_runs"), limit=limit, runs_dir=runs_dir)


def history_table(rows):
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "id" in r for r in rows):
        raise AnsibleFilterError("history_table: give the history_runs filter's result (a list of runs)")
    return _text.render_history(rows)


def history_compare(db, a="latest~1", b="latest", runs_dir=None):
    return _call("history_compare", _compare.compare, _db(db, runs_dir, "history_compare"), a=a, b=b,
                 runs_dir=runs_dir)


def history_export(db, format="jsonl", runs_dir=None):  # noqa: A002  (the filter's documented option)
    if format not in _export.FORMATS:
        raise AnsibleFilterError("history_export: format %r is not one it writes; give one of %s"
                                 % (format, ", ".join(_export.FORMATS)))
    rows = _call("history_export", _export.export_rows, _db(db, runs_dir, "history_export"), runs_dir=runs_dir)
    return _export.export(rows, format)


def _diff(diff, name):
    if not isinstance(diff, dict) or not {"a", "b", "config", "steps"} <= set(diff):
        raise AnsibleFilterError("%s: give the history_compare filter's result" % name)
    return diff


def history_compare_text(diff):
    return _text.render_compare(_diff(diff, "history_compare_text"))


def history_compare_files(diff):
    return _text.compare_files(_diff(diff, "history_compare_files"))


def history_baseline(the_plan, db=None, runs_dir=None):
    try:
        the_plan = Plan.from_dict(the_plan)
    except (PlanError, KeyError, TypeError):
        raise AnsibleFilterError("history_baseline: give the flow_plan filter's result") from None
    runs_dir, db = history_paths(runs_dir, db)
    if not os.path.isdir(runs_dir):
        return {"reason": "no run history yet (%s does not exist)" % runs_dir}
    if not os.path.isfile(db):  # a filter reads: the aifabric.lab.history action (sync) builds the history
        return {"reason": "no run history yet (%s does not exist: aifabric.lab.history with sync: true builds it)"
                          % db}
    return _call("history_baseline", _compare.baseline_run, db, the_plan.steps, ref=the_plan.expect.get("baseline"),
                 runs_dir=runs_dir, sync=False)


class FilterModule:
    def filters(self):
        return {"history_baseline": history_baseline, "history_record": history_record,
                "history_rebuild": history_rebuild, "history_runs": history_runs,
                "history_table": history_table, "history_compare": history_compare,
                "history_compare_text": history_compare_text, "history_compare_files": history_compare_files,
                "history_export": history_export}
