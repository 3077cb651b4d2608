# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's other formats, each a function of the report dict (``build.analyze_run``'s result): a Markdown
summary for a ticket or a pull request, CSV of the flows and of the steps, JUnit XML (one test case per step, failing
when the step failed or broke a gate). ``report_files`` gives every file a run directory holds beside report.json, so
that the callback and the re-render write the same bytes."""

from __future__ import annotations

import csv
import io
import re
from xml.etree import ElementTree

from ansible_collections.aifabric.lab.plugins.plugin_utils._report.bmwg import rows as test_report_rows
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.html import report_html
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.metrics import metrics_text
from ansible_collections.aifabric.lab.plugins.plugin_utils._text import number_or_dash, share_or_dash

__all__ = ["report_markdown", "flows_csv", "steps_csv", "junit_xml", "csv_text", "FORMATS"]


def report_markdown(report):
    """A summary to paste into a ticket: per step its time against the prediction, the straggler and why, the idle
    shares and the counters' verdict; per repeated experiment its distribution; per collective its busbw."""
    out = ["# Barrier report: %s" % ("all steps ok" if report.get("status") == "ok" else "FAILED"), ""]
    if report.get("run_dir"):
        out += ["Run directory: %s" % _code(report["run_dir"]), ""]
    out += ["| step | kind | status | step s | predicted s | straggler | unthrottled idle | verdict |",
            "|---|---|---|---|---|---|---|---|"]
    for s in report.get("steps") or []:
        straggler = s.get("straggler") or {}
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            _name(s["step"]), _name(s.get("kind", "barrier")), _name(s["status"]), number_or_dash(s.get("step_s")),
            number_or_dash(s.get("predicted_step_s")),
            ("%s (%s)" % (_name(straggler["host"]), _name(straggler["cause"]))) if straggler else "-",
            share_or_dash(s.get("unthrottled_idle_share")), _cell(s.get("verdict"))))
    for s in report.get("steps") or []:
        if s.get("counters"):
            out += ["", "**%s, counters:** %s" % (_name(s["step"]), _cell(s["counters"]["verdict"]))]
            out += ["- %s" % _cell(line) for line in s["counters"].get("nic") or []]
        for f in s.get("failed") or []:
            out += ["", "**%s, %s %s:** %s" % (_name(s["step"]), _name(f["host"]), _name(f["status"]),
                                               _cell(f["cause"]))]
        for g in s.get("gates") or []:
            said = "held" if g["ok"] else "BROKEN" if g["ok"] is False else "not checked"
            out += ["", "**%s, gate %s:** %s" % (_name(s["step"]), said, _cell(g["message"]))]
        if s.get("refused") is not None:
            out += ["", "**%s, refused:** %d connection%s (peers that are not the step's): %s" % (
                _name(s["step"]), s["refused_total"], "" if s["refused_total"] == 1 else "s",
                "; ".join("%s x%d by %s: %s" % (_name(r["peer"]), r["count"], _name(r["by"]), _cell(r["reason"]))
                          for r in s["refused"][:8]) or "-")]
        if s.get("results"):
            out += ["", "**%s, results:** %s" % (_name(s["step"]), _cell(s["results"]["sentence"]))]
        for a in s.get("anomalies") or []:
            out += ["", "**%s, anomaly:** %s" % (_name(s["step"]), _cell(a))]
    for e in report.get("experiments") or []:
        if e["steps"] < 2 and not e.get("collective"):
            continue
        title = (_name(e["name"]), _name(e["pattern"]), e["steps_ok"], e["steps"])
        out += ["", "## %s (%s): %d of %d steps ok" % title]
        if e.get("step_s"):
            p = e["step_s"]
            out.append("step time p50 %.3f s, p90 %.3f s, p99 %.3f s, max %.3f s; stragglers: %s" % (
                p["p50"], p["p90"], p["p99"], p["max"],
                ", ".join("%s %d" % (_name(host), n) for host, n in e["straggler_frequency"].items()) or "-"))
        for f in e.get("failed_steps") or []:
            out.append("- step %s failed: %s" % (_name(f["step"]), _cell(f["cause"])))
        c = e.get("collective")
        for r in (c or {}).get("repetitions") or []:
            if r["status"] == "ok":
                out.append("- %s %d: %.3f s, algbw %.4f GB/s, busbw %.4f GB/s%s" % (
                    _name(c["name"]), r["repetition"], r["time_s"], r["algbw_GBps"], r["busbw_GBps"],
                    ", the straggler cost %.0f%%" % (r["straggler_cost_share"] * 100)
                    if r.get("straggler_cost_share") is not None else ""))
            else:
                out.append("- %s %d: FAILED (a round failed)" % (_name(c["name"]), r["repetition"]))
    out += _fabric_markdown(report)
    gates = report.get("gates")
    if gates:
        out += ["", "## Gates: %s" % ("all held" if gates["status"] == "ok" else "%d BROKEN" % len(gates["broken"]))]
        out += ["- %s" % _cell(m) for m in gates["broken"]]
    if report.get("test_report"):
        out += ["", "## Test report (%s)" % _cell(report["test_report"]["reference"]), "", "| item | |", "|---|---|"]
        out += ["| %s | %s |" % (_cell(label), _cell(text)) for label, text in test_report_rows(report["test_report"])]
    return "\n".join(out) + "\n"


def _fabric_markdown(report):
    """The fabric lab: each step's flows with their uplink and who they shared it with, the variants, the seeds."""
    out = []
    for s in report.get("steps") or []:
        fab = s.get("fabric")
        if not fab:
            continue
        out += ["", "## %s on the fabric: hash %s, seed %s, placement %s; %s the ideal; paths %s" % (
            _name(s["step"]), _name(fab.get("hash")), fab.get("seed"), _name(fab.get("placement")),
            ("%.2fx" % fab["slowdown_vs_ideal"]) if fab.get("slowdown_vs_ideal") else "n/a",
            _name(fab["proof"]["status"])),
            "", "| flow | source port | uplink, downlink | predicted s | measured s | shares a link with |",
            "|---|---|---|---|---|---|"]
        for f in fab["flows"]:
            out.append("| %s | %s | %s | %s | %s | %s |" % (
                _name(f["flow"]), f["sport"], ", ".join(_name(lk) for lk in f["links"][1:-1]),
                number_or_dash(f.get("predicted_s"), "%.2f"), number_or_dash(f.get("completion_s"), "%.2f"),
                ", ".join(_name(x) for x in f.get("shares_with") or []) or "-"))
        out += ["- %s" % _cell(d) for d in fab["proof"]["disagreements"]]
    rows = report.get("fabric_variants") or []
    if len(rows) > 1:
        out += ["", "## The fabric variants side by side", "",
                "| step | hash | placement | streams | step s | ideal s | x ideal | x prediction | busiest uplink | "
                "shared links | paths |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        out += ["| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            _name(r["step"]), _name(r["hash"]), _name(r["placement"]), r["streams"],
            number_or_dash(r.get("step_s"), "%.2f"),
            number_or_dash(r.get("ideal_step_s"), "%.2f"), number_or_dash(r.get("slowdown_vs_ideal"), "%.2f"),
            number_or_dash(r.get("vs_prediction")), r["worst_uplink_load"], r["collisions"], _name(r["proof"]))
            for r in rows]
    seeds = report.get("fabric_seeds")
    if seeds:
        out += ["", "## Over %d hash seeds: measured %.3fx the ideal (min %.2f, max %.2f); predicted %s; simulator "
                "(random hash, %d placements) %.3fx; formula %s" % (
                    seeds["seeds"], seeds["measured_mean"], seeds["measured_min"], seeds["measured_max"],
                    number_or_dash(seeds.get("predicted_mean")), seeds["simulated_trials"], seeds["simulated_mean"],
                    ("%.3fx" % seeds["formula"]) if seeds.get("formula") is not None else "n/a")]
    return out


_MARKDOWN = re.compile(r"([\\`*\[\]|])")
_TAG = re.compile(r"<(?=[A-Za-z/!?])")  # what could start raw HTML (a comparison, "< 0.95", cannot)
_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")


def _name(value):
    """A name or a sentence as Markdown shows it, never as Markdown reads it: a line of its own (a newline would end
    the table row), no table cell ended by ``|``, no emphasis, code span, link, raw HTML or entity (``\\`` escapes,
    ``&lt;``, ``&amp;``). What needs none of that is itself, character for character."""
    text = str(value).replace("\r", " ").replace("\n", " ")
    return _MARKDOWN.sub(r"\\\1", _TAG.sub("&lt;", _ENTITY.sub("&amp;", text)))


def _cell(text):
    """``_name`` of a sentence, or ``-`` when there is none."""
    return "-" if text is None else _name(text)


def _code(text):
    """A code span that holds ``text`` whatever its backticks (a fence longer than any run of them inside)."""
    text = str(text).replace("\r", " ").replace("\n", " ")
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    return "%s%s%s" % (fence, " %s " % text if fence != "`" else text, fence)


_FLOW_COLUMNS = ("step", "host", "flow_id", "status", "bytes", "completion_s", "gbps", "predicted_s",
                 "prediction_error", "idle_s", "idle_share", "late_s", "throttle", "error")
_STEP_COLUMNS = ("step", "kind", "status", "workers_expected", "workers_completed", "step_s", "predicted_step_s",
                 "predicted_unthrottled_step_s", "mean_completion_s", "straggler", "straggler_cause",
                 "unthrottled_idle_share", "throttled_idle_share", "idle_worker_seconds", "sum_of_flow_gbps",
                 "aggregate_gbps", "start_skew_s", "late_max_s", "counters_verdict", "gates_broken")


def _csv_value(value):
    """A cell as a spreadsheet takes it: a number as it is; a text that a spreadsheet would read as a formula (it
    starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return: a host named ``=cmd|...``) behind a ``'``. The
    csv module quotes the rest (commas, quotes, newlines)."""
    if value is None:
        return ""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def csv_text(columns, rows):
    """``rows`` (dicts) as CSV of ``columns``: a header, then a row a line, each cell ``_csv_value``'s."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _csv_value(row.get(k)) for k in columns})
    return buf.getvalue()


def flows_csv(report):
    """One row per flow (a worker that sent one flow is one row): what each flow measured beside its prediction."""
    rows = []
    for s in report.get("steps") or []:
        for w in s.get("workers") or []:
            for f in w.get("flows") or [w]:
                row = dict(w, **f)
                row.update(step=s["step"], host=w["host"], flow_id=f.get("flow_id") or w["host"])
                if w.get("flows"):  # the host's idle figures belong to the host, not to each of its flows
                    row.update(prediction_error=(f["completion_s"] / f["predicted_s"] - 1)
                               if f.get("completion_s") and f.get("predicted_s") else None)
                rows.append(row)
    return csv_text(_FLOW_COLUMNS, rows)


def steps_csv(report):
    """One row per step."""
    rows = []
    for s in report.get("steps") or []:
        row = dict(s, straggler=(s.get("straggler") or {}).get("host"),
                   straggler_cause=(s.get("straggler") or {}).get("cause"),
                   counters_verdict=(s.get("counters") or {}).get("verdict"),
                   gates_broken="; ".join(g["message"] for g in s.get("gates") or [] if g["ok"] is False) or None)
        rows.append(row)
    return csv_text(_STEP_COLUMNS, rows)


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _xml(text):
    """Text XML 1.0 can hold (ElementTree escapes ``&``, ``<``, ``>`` and quotes, but writes a control character as
    it is, which no parser reads back): each such character as ``\\xNN``."""
    return _NOT_XML.sub(lambda m: "\\x%02x" % ord(m.group(0)) if m.group(0) < "\x20" else "\\u%04x" % ord(m.group(0)),
                        str(text))


def junit_xml(report):
    """JUnit XML: a test suite per run, a test case per step (its time the step time), failing when the step failed
    or broke a gate (type gate_broken, the gates' sentences),
    with the causes; what a lab's CI shows per step."""
    steps = report.get("steps") or []
    failed = [s for s in steps if s["status"] != "ok" or any(g["ok"] is False for g in s.get("gates") or [])]
    suite = ElementTree.Element("testsuite", name="aifabric.lab barrier report", tests=str(len(steps)),
                                failures=str(len(failed)), errors="0", skipped="0",
                                time="%.6f" % sum(s.get("step_s") or 0.0 for s in steps))
    for s in steps:
        case = ElementTree.SubElement(suite, "testcase", classname=_xml("barrier.%s" % s.get("kind", "barrier")),
                                      name=_xml(s["step"]), time="%.6f" % (s.get("step_s") or 0.0))
        broken = [g["message"] for g in s.get("gates") or [] if g["ok"] is False]
        if s["status"] != "ok":
            failure = ElementTree.SubElement(case, "failure", message=_xml(s.get("verdict") or "step failed"),
                                             type="step_failed")
            failure.text = _xml("\n".join("%s (%s): %s" % (f["host"], f["status"], f["cause"])
                                          for f in s.get("failed") or []))
        elif broken:
            failure = ElementTree.SubElement(case, "failure", message=_xml("gate broken: %s" % "; ".join(broken)),
                                             type="gate_broken")
            said = ["%s (%s)" % (g["message"], "held" if g["ok"] else "BROKEN" if g["ok"] is False else "not checked")
                    for g in s["gates"]]
            failure.text = _xml("\n".join(said + [s.get("verdict") or ""]))
        else:
            out = ElementTree.SubElement(case, "system-out")
            out.text = _xml(s.get("verdict") or "")
    suites = ElementTree.Element("testsuites", name="aifabric.lab", tests=str(len(steps)), failures=str(len(failed)))
    suites.append(suite)
    ElementTree.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ElementTree.tostring(suites, encoding="unicode") + "\n"


# every file a run directory holds beside report.json and report.txt, with the function that writes it
FORMATS = {"report.md": report_markdown, "flows.csv": flows_csv, "steps.csv": steps_csv, "junit.xml": junit_xml,
           "report.html": report_html, "metrics.prom": metrics_text}
