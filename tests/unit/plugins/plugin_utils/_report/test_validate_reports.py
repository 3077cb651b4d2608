# -*- coding: utf-8 -*-
"""tests/integration/validate_reports.py, the check the integration targets and the VM tier run on every report.json
their runs wrote: the fixtures' reports pass, a report with a wrong type fails naming the report and the JSON path,
what is not a report fails, and without jsonschema it refuses to pass (exit 2), as check_chaos.py does."""
from __future__ import annotations

import glob
import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".."))
HELPER = os.path.join(ROOT, "tests", "integration", "validate_reports.py")
CHECK_CHAOS = os.path.join(ROOT, "tests", "integration", "targets", "chaos", "check_chaos.py")
FIXTURES = os.path.join(ROOT, "tests", "unit", "plugins", "plugin_utils", "fixtures")
GOLDEN = os.path.join(FIXTURES, "golden")
GOOD = os.path.join(GOLDEN, "20261130T185009-demo", "report.json")


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


helper = _load("validate_reports", HELPER)


def _broken(directory, name="bad"):
    """A copy of a real run's report.json whose first step's step_s is a string: its path."""
    with open(GOOD) as handle:
        report = json.load(handle)
    report["steps"][0]["step_s"] = "8.06"
    run = directory / name
    run.mkdir(parents=True)
    (run / "report.json").write_text(json.dumps(report))
    return str(run / "report.json")


def test_every_fixture_report_of_schema_version_2_validates(capsys):
    assert helper.main([GOLDEN]) == 0
    out = capsys.readouterr().out.splitlines()
    expected = sorted(glob.glob(os.path.join(GOLDEN, "*", "report.json")))
    assert out == ["%s: OK" % path for path in expected] and len(out) >= 3


def test_a_report_a_run_directory_and_a_directory_of_runs(tmp_path, capsys):
    runs = tmp_path / "runs"
    for name in ("a", "b/c"):
        (runs / name).mkdir(parents=True)
        shutil.copy(GOOD, str(runs / name / "report.json"))
    assert helper.main([GOOD, str(runs / "a"), str(runs)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "%s: OK" % GOOD, "%s: OK" % (runs / "a" / "report.json"),
        "%s: OK" % (runs / "a" / "report.json"), "%s: OK" % (runs / "b" / "c" / "report.json")]


def test_a_wrong_type_fails_naming_the_report_and_its_json_path(tmp_path, capsys):
    runs = tmp_path / "runs"
    bad = _broken(runs)
    (runs / "good").mkdir()
    shutil.copy(GOOD, str(runs / "good" / "report.json"))
    assert helper.main([str(runs)]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["%s: OK" % (runs / "good" / "report.json")]
    err = captured.err.splitlines()
    assert err[0] == "%s: FAILED: 1 error(s) against docs/report.schema.json" % bad
    assert err[1] == ("  $.steps[0].step_s: '8.06' is not of type 'number', 'null' "
                      "(schema: properties/steps/items/properties/step_s/type)")
    assert "1 report(s) or path(s) FAILED" in err[-1]


def test_a_schema_version_1_report_is_refused(capsys):
    # the v1 fixture is the input of a re-render (test_schema.py, test_golden.py), not a report this tree writes
    assert helper.main([os.path.join(FIXTURES, "run-v1-demo")]) == 1
    assert "  $.schema_version: 2 was expected (schema: properties/schema_version/const)" in capsys.readouterr().err


def test_what_is_not_a_report_fails(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    (tmp_path / "torn").mkdir()
    (tmp_path / "torn" / "report.json").write_text('{"schema_version": 2, "st')
    assert helper.main([str(tmp_path / "empty"), str(tmp_path / "torn"), str(tmp_path / "nowhere")]) == 1
    err = capsys.readouterr().err
    assert "%s: FAILED: no report.json in it or below it" % (tmp_path / "empty") in err
    assert "%s: FAILED: not a JSON file" % (tmp_path / "torn" / "report.json") in err
    assert "%s: FAILED: no such file or directory" % (tmp_path / "nowhere") in err
    assert "3 report(s) or path(s) FAILED" in err


def test_the_command_line(tmp_path):
    ok = subprocess.run([sys.executable, HELPER, GOLDEN], capture_output=True, text=True, check=False)
    assert ok.returncode == 0 and ok.stdout.count(": OK\n") == len(glob.glob(os.path.join(GOLDEN, "*", "report.json")))
    bad = _broken(tmp_path)
    failed = subprocess.run([sys.executable, HELPER, GOOD, bad], capture_output=True, text=True, check=False)
    assert failed.returncode == 1 and failed.stdout == "%s: OK\n" % GOOD, failed
    assert "%s: FAILED" % bad in failed.stderr and "$.steps[0].step_s: '8.06'" in failed.stderr
    assert subprocess.run([sys.executable, HELPER], capture_output=True, text=True, check=False).returncode == 2


def test_without_jsonschema_nothing_passes_exit_2(tmp_path):
    blocked = ("import runpy, sys; sys.modules['jsonschema'] = None; sys.argv = [sys.argv[1]] + sys.argv[2:]; "
               "runpy.run_path(sys.argv[0], run_name='__main__')")
    result = subprocess.run([sys.executable, "-c", blocked, HELPER, GOLDEN], capture_output=True, text=True,
                            check=False)
    assert result.returncode == 2 and result.stdout == "", result
    assert "validate_reports: jsonschema is not importable" in result.stderr
    assert "requirements-test.txt" in result.stderr


def test_check_chaos_uses_it(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))  # check_chaos puts tests/integration on it, and imports
    monkeypatch.setitem(sys.modules, "validate_reports", helper)  # this module from there
    check_chaos = _load("check_chaos", CHECK_CHAOS)
    with open(GOOD) as handle:
        check_chaos.check_schema(json.load(handle))
    with open(_broken(tmp_path)) as handle:
        broken = json.load(handle)
    with pytest.raises(AssertionError, match=r"\$\.steps\[0\]\.step_s: '8\.06' is not of type"):
        check_chaos.check_schema(broken)
    monkeypatch.setitem(sys.modules, "jsonschema", None)
    with pytest.raises(SystemExit) as stopped:
        check_chaos.check_schema(broken)
    assert stopped.value.code == 2
