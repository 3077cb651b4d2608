# -*- coding: utf-8 -*-
"""The history exported for other tools: a row per step of every run, read back as JSON lines and as CSV, its figures
those of the runs' report.json (the golden copies, written apart)."""
from __future__ import annotations

import csv
import io
import json
import os
import shutil

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._history.export import ROW, export, export_rows
from ansible_collections.aifabric.lab.plugins.plugin_utils._history.store import HistoryError, rebuild

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures")
RUNS = ("20261130T180103-demo", "20261130T185009-demo")


@pytest.fixture
def db(tmp_path):
    runs_dir = tmp_path / "runs"
    for name in RUNS:
        shutil.copytree(os.path.join(FIXTURES, "history", name), str(runs_dir / name))
    path = str(runs_dir / "history.sqlite")
    rebuild(path, str(runs_dir), notify=lambda m: None)
    return path


def _golden_steps():
    out = []
    for name in RUNS:
        with open(os.path.join(FIXTURES, "golden", name, "report.json")) as handle:
            report = json.load(handle)
        out += [(name, s) for s in report["steps"]]
    return out


def test_a_row_per_step_of_every_run_oldest_first_as_json_lines(db):
    text = export(export_rows(db, notify=lambda m: None), "jsonl")
    rows = [json.loads(line) for line in text.splitlines()]
    want = _golden_steps()
    assert [(r["run_id"], r["step"]) for r in rows] == [(name, s["step"]) for name, s in want]
    for row, (_name, step) in zip(rows, want):
        assert list(row) == list(ROW)
        assert row["step_s"] == pytest.approx(step["step_s"])
        assert row["straggler"] == (step.get("straggler") or {}).get("host")
        assert row["run_status"] == "ok"


def test_the_same_rows_as_csv_with_a_header(db):
    rows = export_rows(db, notify=lambda m: None)
    read = list(csv.DictReader(io.StringIO(export(rows, "csv"))))
    assert len(read) == len(rows) and list(read[0]) == list(ROW)
    assert [float(r["step_s"]) for r in read] == pytest.approx([r["step_s"] for r in rows])


def test_an_unknown_format_says_which_it_writes():
    with pytest.raises(HistoryError, match="format: 'xml' is not one the export writes; give one of jsonl, csv"):
        export([], "xml")
