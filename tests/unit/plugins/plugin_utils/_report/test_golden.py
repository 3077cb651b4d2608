# -*- coding: utf-8 -*-
"""Every report file re-renders byte for byte as the code before the redesign rendered it.

The golden copies under ``fixtures/golden`` were written by that code (``tests/render/goldens.py --tree <the old
checkout>``): every file of the checked-in run directories (before plan.json, and plan.json schema 1) and their
history, whole; and a SHA-256 of every report file of the scenarios (``tests/render/scenarios.py``: a demo,
collectives, the fabric lab, failed steps and gates, played through the callback). This tree makes the same files and
must give the same bytes; ``bash tests/render/compare.sh`` shows where a scenario differs.
"""
from __future__ import annotations

import difflib
import importlib
import json
import os
import sys
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".."))
GOLDEN = os.path.join(ROOT, "tests", "unit", "plugins", "plugin_utils", "fixtures", "golden")
sys.path.insert(0, os.path.join(ROOT, "tests", "render"))
goldens = importlib.import_module("goldens")
scenarios = importlib.import_module("scenarios")


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """What this tree writes (the clock and the collection's version fixed as the goldens' were)."""
    mp = pytest.MonkeyPatch()
    mp.setattr(time, "time", scenarios._clock)
    callback = importlib.import_module("ansible_collections.aifabric.lab.plugins.callback.barrier_report")
    for name in ("ansible_collections.aifabric.lab.plugins.callback.barrier_report",
                 "ansible_collections.aifabric.lab.plugins.plugin_utils._run.store"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        for attr in ("_collection_version", "collection_version"):
            if hasattr(module, attr):
                mp.setattr(module, attr, lambda: "0.0.0-scenario")
    scenarios.pin_controller(mp.setattr)
    try:
        yield goldens.generate(str(tmp_path_factory.mktemp("golden")), callback)
    finally:
        mp.undo()


def _golden(name):
    with open(os.path.join(GOLDEN, name), encoding="utf-8") as handle:
        return handle.read()


@pytest.mark.parametrize("name", ["%s/%s" % (os.path.basename(run), f) for run in goldens.FIXTURE_RUNS
                                  for f in goldens.REPORT_FILES] + ["history.txt"])
def test_every_fixture_file_re_renders_as_before(made, name):
    want, got = _golden(name), made[name]
    assert got == want, "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "golden", "now",
                                                     n=1))


def test_every_scenario_file_is_written_as_before(made):
    # Python 3.12 sums floats with compensation (sum() is more exact there), so a mean's last digit can differ from
    # 3.11's: the old code wrote each golden on both (scenarios.json on 3.11, scenarios-py312.json on 3.13)
    golden = "scenarios.json" if sys.version_info < (3, 12) else "scenarios-py312.json"
    want, got = json.loads(_golden(golden)), json.loads(made["scenarios.json"])
    assert sorted(got) == sorted(want)
    differ = sorted(name for name in want if got[name] != want[name])
    assert not differ, "these files differ from the old code's (bash tests/render/compare.sh shows how): %s" % differ
