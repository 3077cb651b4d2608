# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The golden copies of every report file, as a tree renders them:

    python tests/render/goldens.py --tree /work/wt/base --out tests/unit/plugins/plugin_utils/fixtures/golden
    (on Python 3.11; on 3.12 or newer its scenarios.json is the golden scenarios-py312.json: sum() of floats is
    compensated from 3.12, and a mean's last digit can differ)

- every checked-in run directory of the unit tests' fixtures (``run-v1-demo``: before plan.json; ``history/*``:
  plan.json schema 1), copied and re-rendered (``run_report`` + ``report_files``, the filters ``make render`` uses):
  each file whole, its run directory written ``RUN_DIR``;
- their history (``history_rebuild``, ``history_table``, ``history_compare`` both ways, as text and JSON);
- the scenarios of ``scenarios.py`` played through the tree's callback: a SHA-256 of every report file of each run
  directory and of the history over them (whole copies would be megabytes; ``compare.sh`` shows a difference).

The unit test ``tests/unit/plugins/plugin_utils/_report/test_golden.py`` makes the same files with the tree under test
and compares them with the checked-in ones, which the code before the redesign wrote.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "tests", "unit", "plugins", "plugin_utils", "fixtures")
FIXTURE_RUNS = ("run-v1-demo", "history/20261130T180103-demo", "history/20261130T185009-demo")
REPORT_FILES = ("report.json", "report.txt", "report.md", "flows.csv", "steps.csv", "junit.xml", "report.html")


def _filters():
    filters = {}
    base = os.path.join(list(importlib.import_module("ansible_collections.aifabric.lab").__path__)[0], "plugins",
                        "filter")
    for name in sorted(os.listdir(base)):
        if name.endswith(".py"):
            module = importlib.import_module("ansible_collections.aifabric.lab.plugins.filter.%s" % name[:-3])
            if hasattr(module, "FilterModule"):
                filters.update(module.FilterModule().filters())
    return filters


def history_text(filters, runs_dir):
    """The history filters' answers over the run directories under ``runs_dir``."""
    db = os.path.join(runs_dir, "golden-history.sqlite")
    filters["history_rebuild"](runs_dir, db)
    rows = filters["history_runs"](db, runs_dir=runs_dir, sync=False)
    out = [filters["history_table"](rows)]
    ids = [r["id"] for r in rows]
    for a in ids:
        for b in ids:
            if a != b:
                diff = filters["history_compare"](db, a, b, runs_dir)
                out += [filters["history_compare_text"](diff), json.dumps(diff, indent=1, sort_keys=True)]
    for r in rows:
        r.pop("recorded_at", None)
    out.append(json.dumps(rows, indent=1, sort_keys=True))
    return "\n".join(out).replace(runs_dir, "RUNS")


def fixture_files(filters, work):
    """{fixture/file: text} of every fixture run directory re-rendered (its run directory written RUN_DIR)."""
    out = {}
    for name in FIXTURE_RUNS:
        copy = os.path.join(work, "fixtures", os.path.basename(name))
        shutil.copytree(os.path.join(FIXTURES, name), copy)
        for f in REPORT_FILES:  # only the record: the re-render writes the report
            if os.path.exists(os.path.join(copy, f)):
                os.remove(os.path.join(copy, f))
        files = filters["report_files"](filters["run_report"](copy))
        for f in REPORT_FILES:
            out["%s/%s" % (os.path.basename(name), f)] = files[f].replace(copy, "RUN_DIR")
    hist = os.path.join(work, "history-runs")
    os.makedirs(hist)
    for name in FIXTURE_RUNS[1:]:
        shutil.copytree(os.path.join(FIXTURES, name), os.path.join(hist, os.path.basename(name)))
    out["history.txt"] = history_text(filters, hist)
    return out


def scenario_digests(filters, callback_module, work):
    """{run/file: sha256} of every report file the scenarios' run directories hold, and of their history."""
    sys.path.insert(0, HERE)
    import scenarios  # noqa: E402  (tests/render/scenarios.py)

    runs = os.path.join(work, "scenarios")
    scenarios.reset_clocks()
    out = {}
    for name, play in scenarios.SCENARIOS.items():
        lab = scenarios.Lab(filters, callback_module, runs, name)
        play(lab)
        path = lab.end()
        for f in REPORT_FILES:
            with open(os.path.join(path, f), encoding="utf-8") as handle:
                text = handle.read().replace(runs, "RUNS")
            out["%s/%s" % (os.path.basename(path), f)] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    os.remove(os.path.join(runs, "history.sqlite"))
    for suffix in ("-wal", "-shm"):
        if os.path.exists(os.path.join(runs, "history.sqlite" + suffix)):
            os.remove(os.path.join(runs, "history.sqlite" + suffix))
    out["history"] = hashlib.sha256(history_text(filters, runs).encode("utf-8")).hexdigest()
    return out


def generate(work, callback_module=None):
    """Every golden file, name -> text, made by the importable tree under the directory ``work``."""
    filters = _filters()
    out = fixture_files(filters, work)
    if callback_module is None:
        callback_module = importlib.import_module("ansible_collections.aifabric.lab.plugins.callback.barrier_report")
    out["scenarios.json"] = json.dumps(scenario_digests(filters, callback_module, work), indent=1, sort_keys=True)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--tree", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    sys.path.insert(0, HERE)
    import scenarios  # noqa: E402

    time.time = scenarios._clock  # before the tree is imported (a default argument may bind it)
    _filters_unused, callback = scenarios._load_tree(args.tree)
    work = tempfile.mkdtemp(prefix="aifabric-golden-")
    try:
        files = generate(work, callback)
    finally:
        shutil.rmtree(work)
    for name, text in files.items():
        path = os.path.join(args.out, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    print("%d golden files under %s" % (len(files), args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
