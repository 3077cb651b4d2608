# -*- coding: utf-8 -*-
"""The report's other formats, from the v1 demo run (its flows and counters as written by a real `make demo`) and a
failed step: what a ticket, a spreadsheet and a CI server read."""
from __future__ import annotations

import csv
import io
import os
import re
import shutil
from xml.etree import ElementTree

from ansible_collections.aifabric.lab.plugins.plugin_utils._report.build import analyze_run, build_report, render_run
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.formats import (
    flows_csv,
    junit_xml,
    report_markdown,
    steps_csv,
)
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.model import build_run

V1_RUN = os.path.join(os.path.dirname(__file__), "..", "fixtures", "run-v1-demo")


def demo(tmp_path):
    path = str(tmp_path / "run")
    shutil.copytree(V1_RUN, path)
    return path, analyze_run(path)


def failed_report():
    ann = {"path": [{"link": "sw->sink", "rate": "8gbit"}], "mtu": 9000, "bottleneck": "8gbit"}
    records = [{"host": "w1", "status": "ok", "completion_s": 2.0, "bytes": 10**9, "volume_bytes": 10**9,
                "gbps": 4.0, "annotations": ann},
               {"host": "w2", "status": "timeout", "error": "flow did not complete | within 16 s",
                "annotations": ann}]
    return build_report(build_run({"barrier": records}))


def test_the_markdown_summary_says_what_a_ticket_needs(tmp_path):
    _path, report = demo(tmp_path)
    text = report_markdown(report)
    assert text.startswith("# Barrier report: all steps ok\n")
    line = next(x for x in text.splitlines() if x.startswith("| barrier |"))
    # the demo's figures: 8.06 s, worker3 throttled to 2gbit (the mechanism applied), the others idle 33%
    assert "| barrier | barrier | ok | 8.064 | 8.059 | worker3 (throttled to 2gbit (worker3: tc htb on eth0's " \
           "egress)) | 33% |" in line
    assert "**barrier, counters:** all error counters zero" in text
    failed = report_markdown(failed_report())
    assert failed.startswith("# Barrier report: FAILED")
    assert "**barrier, w2 timeout:** flow did not complete \\| within 16 s" in failed  # a | does not break the table


def test_the_csvs_have_a_row_per_flow_and_per_step(tmp_path):
    _path, report = demo(tmp_path)
    flows = list(csv.DictReader(io.StringIO(flows_csv(report))))
    assert [(r["step"], r["host"]) for r in flows] == [
        ("elephant", "worker1"), ("barrier", "worker1"), ("barrier", "worker2"), ("barrier", "worker3")]
    w3 = flows[3]
    assert w3["status"] == "ok" and float(w3["completion_s"]) == 8.064249 and w3["throttle"] == "2gbit"
    assert float(w3["gbps"]) == next(w for w in report["steps"][1]["workers"] if w["host"] == "worker3")["gbps"]
    steps = list(csv.DictReader(io.StringIO(steps_csv(report))))
    assert [(r["step"], r["kind"], r["straggler"]) for r in steps] == [
        ("elephant", "baseline", "worker1"), ("barrier", "barrier", "worker3")]
    assert float(steps[1]["step_s"]) == report["steps"][1]["step_s"]


def test_junit_has_a_case_per_step_failing_when_the_step_failed(tmp_path):
    _path, report = demo(tmp_path)
    suite = ElementTree.fromstring(junit_xml(report)).find("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "0"
    assert [(c.get("name"), c.get("time")) for c in suite.findall("testcase")] == [
        ("elephant", "%.6f" % report["steps"][0]["step_s"]), ("barrier", "%.6f" % report["steps"][1]["step_s"])]
    suite = ElementTree.fromstring(junit_xml(failed_report())).find("testsuite")
    (case,) = suite.findall("testcase")
    assert suite.get("failures") == "1" and case.find("failure").get("type") == "step_failed"
    assert "w2 (timeout): flow did not complete" in case.find("failure").text


def test_the_re_render_writes_every_format_the_callback_writes(tmp_path):
    path, report = demo(tmp_path)
    render_run(path)
    for name, fmt in (("report.md", report_markdown), ("flows.csv", flows_csv), ("steps.csv", steps_csv),
                      ("junit.xml", junit_xml)):
        assert open(os.path.join(path, name)).read() == fmt(report), name


HOSTILE = "w|1 <img src=x onerror=alert(1)>\n*[x](javascript:y)* `z` &amp;"


def hostile_report():
    """A step whose host, step and cause carry what Markdown, a spreadsheet and XML would read as their own."""
    ann = {"path": [{"link": "sw->sink", "rate": "8gbit"}], "mtu": 9000, "bottleneck": "8gbit"}
    records = [{"host": "=HYPERLINK(\"http://x\")", "status": "ok", "completion_s": 2.0, "bytes": 10**9,
                "volume_bytes": 10**9, "gbps": 4.0, "annotations": ann},
               {"host": HOSTILE, "status": "timeout", "error": "lost\x1b[31m | -1 <b>bold</b>", "annotations": ann}]
    return build_report(build_run({"step|<i>": records}))


def test_markdown_shows_every_name_as_it_is_and_reads_none_as_markdown():
    md = report_markdown(hostile_report())
    # by hand: every | [ ] * ` \\ escaped by a backslash, a tag's < as &lt;, an entity's & as &amp;, a newline a space
    assert "| step\\|&lt;i> | barrier | failed |" in md
    assert ("**step\\|&lt;i>, w\\|1 &lt;img src=x onerror=alert(1)> \\*\\[x\\](javascript:y)\\* \\`z\\` &amp;amp; "
            "timeout:** lost\x1b\\[31m \\| -1 &lt;b>bold&lt;/b>") in md
    # nothing of the names breaks out of its row: every table row still has its 8 cells
    rows = [line for line in md.splitlines() if line.startswith("| step\\|")]
    assert len(rows) == 1 and rows[0].count(" | ") == 7
    assert "<img" not in md and "<b>" not in md and not re.search(r"(?<!\\)\]\(", md)  # no link


def test_csv_keeps_a_name_a_spreadsheet_would_run_as_a_formula_as_text():
    rows = list(csv.DictReader(io.StringIO(flows_csv(hostile_report()))))
    # =HYPERLINK(...) would be a formula: behind a ' it is text; the csv module quotes the newline and the |
    assert [r["host"] for r in rows] == ["'=HYPERLINK(\"http://x\")", HOSTILE]
    assert rows[1]["error"].startswith("lost\x1b[31m | -1")  # a text that starts otherwise is left as it is
    # a number stays a number (a negative one is not a formula)
    assert [r["prediction_error"] for r in csv.DictReader(io.StringIO(flows_csv(
        {"steps": [{"step": "s", "workers": [{"host": "w", "prediction_error": -0.25}]}]})))] == ["-0.25"]
    (step,) = csv.DictReader(io.StringIO(steps_csv(hostile_report())))
    assert step["step"] == "step|<i>"


def test_junit_xml_parses_back_with_every_name_whole():
    text = junit_xml(hostile_report())
    root = ElementTree.fromstring(text.encode("utf-8"))  # a control character would make this fail
    (case,) = root.iter("testcase")
    assert case.get("name") == "step|<i>"
    failure = case.find("failure")
    assert "lost\\x1b[31m | -1 <b>bold</b>" in failure.text and "\x1b" not in text
    assert HOSTILE.replace("\n", " ") not in failure.text and HOSTILE in failure.text
