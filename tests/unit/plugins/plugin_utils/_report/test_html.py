# -*- coding: utf-8 -*-
"""report.html from the v1 demo run (its flows and counters as a real `make demo` wrote them: worker3 throttled to
2gbit finishes at 8.064249 s, worker1 at 5.374527 s) and from steps built out of the same flows: a page that parses,
loads nothing, draws a bar per flow as long as its completion, hatches each worker's idle time, marks the straggler
with its cause, escapes hostile names, lists a failed step's causes and draws an experiment's distribution."""
from __future__ import annotations

import copy
import json
import os
import re
import shutil
from xml.etree import ElementTree

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import Collective, Plan, Rendezvous, Round
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.build import analyze_run, build_report, render_run
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.formats import FORMATS
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.html import FULL_STEPS, report_html
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.model import build_run

V1_RUN = os.path.join(os.path.dirname(__file__), "..", "fixtures", "run-v1-demo")
HOSTILE = "<script>alert(\"w3\")</script>&'"
# plan.json's lab of a real demo run (runs/20261130T185009-demo): the v1 run predates plan.json
LAB = {"controller": {"ansible_core": "2.19.14", "collection": "0.1.0", "kernel": "6.18.44-fc-v669",
                      "python": "3.11.2"},
       "hosts": {h: {"kernel": "6.18.44-fc-v669"} for h in ("sink", "worker1", "worker2", "worker3")}}


def experiment(name, pattern, steps, rounds=1, collective=None):
    """A plan of ``steps`` (each repetition ``rounds`` of them), as the report reads it: names, pattern, collective."""
    return Plan(name=name, kind="barrier", pattern=pattern, engine="tcp", volume=10**9, line_rate="8gbit", mtu=9000,
                hosts={}, rounds=[Round() for _round in range(rounds)], steps=list(steps),
                rendezvous=Rendezvous("w1", 18599),
                collective=Collective(**collective) if collective else None)


def demo(tmp_path):
    path = str(tmp_path / "run")
    shutil.copytree(V1_RUN, path)
    return path, analyze_run(path)


def v1_records(step="barrier", rename=None):
    """The v1 run's flow records of one step (as its files hold them), a host renamed when asked."""
    base = os.path.join(V1_RUN, "flows", step)
    out = []
    for name in sorted(os.listdir(base)):
        text = open(os.path.join(base, name)).read()
        for old, new in (rename or {}).items():
            text = text.replace(old, json.dumps(new)[1:-1])
        out.append(json.loads(text))
    return out


def parse(html):
    """The whole page as XML (it is written well-formed: void elements closed, character references only)."""
    assert html.startswith("<!DOCTYPE html>\n")
    return ElementTree.fromstring(html[len("<!DOCTYPE html>\n"):])


def section(root, step):
    (found,) = [s for s in root.iter("section") if s.get("class") == "step" and s.get("data-step") == step]
    return found


def classes(element):
    return (element.get("class") or "").split()


def of_class(root, name, tag=None):
    return [e for e in root.iter(tag) if name in classes(e)]


def test_the_page_stands_alone_and_every_picture_is_well_formed(tmp_path):
    _path, report = demo(tmp_path)
    html = report_html(report)
    root = parse(html)
    svgs = re.findall(r"<svg\b.*?</svg>", html, flags=re.S)
    assert len(svgs) == 4  # per step: a timeline and the throughput of its flows
    for svg in svgs:
        ElementTree.fromstring(svg)
    # nothing from anywhere: no address at all, no script, no external file, font or style sheet
    assert "http://" not in html and "https://" not in html
    assert "<script" not in html and "src=" not in html and "@import" not in html and "@font-face" not in html
    assert re.findall(r"url\((?!#hatch-\d+\))", html) == []
    assert [(e.get("rel"), e.get("href")) for e in root.iter("link")] == [("icon", "data:,")]
    assert root.find("head/title").text == "Barrier report: all 2 steps ok"
    # the verdict on top of each step, from the report
    for step in report["steps"]:
        (verdict,) = [p for p in section(root, step["step"]).iter("p") if "step-verdict" in classes(p)]
        assert verdict.text == step["verdict"]


def test_a_bar_per_flow_as_long_as_its_completion_and_the_idle_time_after_it(tmp_path):
    _path, report = demo(tmp_path)
    root = parse(report_html(report))
    barrier = section(root, "barrier")
    bars = {b.get("data-host"): b for b in of_class(barrier, "flow-bar", "rect")}
    assert sorted(bars) == ["worker1", "worker2", "worker3"]
    # the real run's completions, as its flow files hold them
    assert bars["worker3"].get("data-completion-s") == "8.064249"
    assert bars["worker1"].get("data-completion-s") == "5.374527"
    scale = float(bars["worker3"].get("width")) / 8.064249
    workers = {w["host"]: w for w in report["steps"][1]["workers"]}
    for host, rect in bars.items():
        assert float(rect.get("width")) == pytest.approx(workers[host]["completion_s"] * scale, rel=0.005)
        assert float(rect.get("x")) == float(bars["worker3"].get("x"))  # every bar starts at the common instant
    idle = {r.get("data-host"): r for r in of_class(barrier, "idle", "rect")}
    step_s = report["steps"][1]["step_s"]
    assert step_s == 8.064249
    for host, rect in idle.items():
        assert float(rect.get("width")) == pytest.approx((step_s - workers[host]["completion_s"]) * scale, abs=0.01)
        # the idle time starts where the worker's bar ends
        assert float(rect.get("x")) == pytest.approx(float(bars[host].get("x")) + float(bars[host].get("width")),
                                                     abs=0.01)
    assert float(idle["worker1"].get("width")) == pytest.approx((8.064249 - 5.374527) * scale, abs=0.01)
    assert float(idle["worker3"].get("width")) == 0.0
    # the fair-share prediction beside each bar
    ticks = {t.get("data-host"): t for t in of_class(barrier, "predicted", "line")}
    for host, tick in ticks.items():
        predicted = workers[host]["predicted_s"]
        assert float(tick.get("x1")) == pytest.approx(float(bars[host].get("x")) + predicted * scale, abs=0.01)
    assert sorted(ticks) == ["worker1", "worker2", "worker3"]


def test_the_straggler_is_marked_with_its_cause(tmp_path):
    _path, report = demo(tmp_path)
    barrier = section(parse(report_html(report)), "barrier")
    marked = of_class(barrier, "straggler")
    assert marked and {e.get("data-host") for e in marked} == {"worker3"}
    (marked_bar,) = [e for e in marked if "flow-bar" in classes(e)]
    others = {b.get("fill") for b in of_class(barrier, "flow-bar") if b is not marked_bar}
    assert marked_bar.get("fill") not in others  # a colour of its own
    (cause,) = [e for e in marked if "straggler-cause" in classes(e)]
    assert cause.text == "throttled to 2gbit (worker3: tc htb on eth0's egress)"


def test_the_flows_throughput_is_drawn_from_their_samples(tmp_path):
    _path, report = demo(tmp_path)
    barrier = section(parse(report_html(report)), "barrier")
    lines = {p.get("data-host"): p for p in of_class(barrier, "series", "polyline")}
    assert sorted(lines) == ["worker1", "worker2", "worker3"]
    samples = json.load(open(os.path.join(V1_RUN, "flows", "barrier", "worker3.json")))["samples"]
    assert len(samples) == 9
    points = [tuple(map(float, p.split(","))) for p in lines["worker3"].get("points").split()]
    assert len(points) == 2 * len(samples) + 1  # each sample's rate held over its interval, then down to zero
    # the samples at 2 Gb/s are level, worker1's at 3 Gb/s are higher (SVG's y grows downwards)
    w1 = [tuple(map(float, p.split(","))) for p in lines["worker1"].get("points").split()]
    assert w1[0][1] < points[0][1]


def test_the_analysis_keeps_each_flows_samples_time_and_rate_only(tmp_path):
    _path, report = demo(tmp_path)
    w3 = next(w for w in report["steps"][1]["workers"] if w["host"] == "worker3")
    samples = json.load(open(os.path.join(V1_RUN, "flows", "barrier", "worker3.json")))["samples"]
    assert w3["samples"] == [{"t": x["t"], "gbps": x["gbps"]} for x in samples]
    assert w3["samples"][0] == {"t": 1.000232, "gbps": 1.984954}


def test_the_header_gives_the_run_and_the_lab(tmp_path):
    path, report = demo(tmp_path)
    report["lab"] = LAB
    root = parse(report_html(report))
    facts = {dt.text: "".join(dd.itertext()) for dt, dd in zip(root.iter("dt"), root.iter("dd"))}
    assert facts["Run directory"] == path
    assert facts["Controller"] == "kernel 6.18.44-fc-v669, Python 3.11.2, ansible-core 2.19.14, aifabric.lab 0.1.0"
    assert facts["Hosts"] == "kernel 6.18.44-fc-v669: sink, worker1, worker2, worker3"
    assert root.find(".//span[@id='run-status']").text == "all 2 steps ok"


def test_hostile_names_are_escaped():
    records = v1_records(rename={"worker3": HOSTILE})
    report = build_report(build_run({"barrier <b>&": records}))
    html = report_html(report)
    assert "<script" not in html and "<b>" not in html
    root = parse(html)
    step = section(root, "barrier <b>&")
    (marked_bar,) = [b for b in of_class(step, "flow-bar") if "straggler" in classes(b)]
    assert marked_bar.get("data-host") == HOSTILE  # the name itself, escaped in the file and whole once parsed
    assert HOSTILE in "".join(step.itertext())


def test_a_failed_step_lists_its_causes_and_draws_no_step_time():
    records = v1_records()
    records[1].update(status="timeout", error="flow did not complete <within> 16 s", completion_s=None)
    report = build_report(build_run({"barrier": records}))
    root = parse(report_html(report))
    step = section(root, "barrier")
    assert step.get("data-status") == "failed"
    causes = {li.get("data-host"): "".join(li.itertext()) for li in of_class(step, "failed-cause", "li")}
    assert causes == {"worker2": "worker2 (timeout): flow did not complete <within> 16 s"}
    # the workers that finished keep their bars; the failed one is a row with its cause; nobody is idle, no straggler
    assert sorted(b.get("data-host") for b in of_class(step, "flow-bar")) == ["worker1", "worker3"]
    assert [e.get("data-host") for e in of_class(step, "flow-failed")] == ["worker2"]
    assert of_class(step, "idle") == [] and of_class(step, "straggler") == [] and of_class(step, "step-end") == []
    assert root.find(".//span[@id='run-status']").text == "FAILED: 1 of 1 steps failed"


def repeated(n, failed=()):
    """``n`` barrier steps out of the v1 run's flows, the k-th 1% slower than the one before (the straggler
    worker3 every time), those in ``failed`` with worker2 timed out; one experiment of them all."""
    steps = {}
    for k in range(1, n + 1):
        recs = copy.deepcopy(v1_records())
        for r in recs:
            r["completion_s"] = round(r["completion_s"] * (1 + 0.01 * (k - 1)), 6)
            r["step"] = "barrier-%d" % k
        if k in failed:
            recs[1].update(status="timeout", error="flow did not complete within 16 s", completion_s=None)
        steps["barrier-%d" % k] = recs
    return steps


def test_an_experiment_of_several_steps_draws_its_distribution_and_keeps_the_page_short():
    names = ["barrier-%d" % k for k in range(1, 9)]
    run = build_run(repeated(8, failed=(5,)), experiments=[experiment("barrier", "incast", names)])
    report = build_report(run)
    (e,) = report["experiments"]
    assert e["steps_ok"] == 7 and e["straggler_frequency"] == {"worker3": 7}
    root = parse(report_html(report))
    (exp,) = [s for s in root.iter("section") if s.get("data-experiment") == "barrier"]
    points = {c.get("data-step"): c for c in of_class(exp, "dist-point", "circle")}
    assert sorted(points) == sorted(n for n in names if n != "barrier-5")
    # barrier-8 is 7% slower than barrier-1: higher on the picture (SVG's y grows downwards), by its step times
    first, last = (float(points[n].get("data-step-s")) for n in ("barrier-1", "barrier-8"))
    assert first == 8.064249 and last == pytest.approx(8.064249 * 1.07, abs=1e-6)
    assert float(points["barrier-8"].get("cy")) < float(points["barrier-1"].get("cy"))
    (cross,) = of_class(exp, "dist-failed")
    assert cross.get("data-step") == "barrier-5"
    (p50,) = of_class(exp, "p50", "line")
    (p99,) = of_class(exp, "p99", "line")
    assert float(p50.get("data-value")) == e["step_s"]["p50"] and float(p99.get("data-value")) == e["step_s"]["p99"]
    assert float(p99.get("y1")) < float(p50.get("y1"))
    (freq,) = of_class(exp, "freq-bar", "rect")
    assert (freq.get("data-host"), freq.get("data-count")) == ("worker3", "7")
    # in full: the first FULL_STEPS, the slowest and the failed one; the others on their line of the steps' table
    rows = {r.get("data-step"): r.get("data-detail") for r in of_class(root, "step-row", "tr")}
    full = sorted(n for n, d in rows.items() if d == "full")
    assert FULL_STEPS == 3 and full == ["barrier-1", "barrier-2", "barrier-3", "barrier-5", "barrier-8"]
    assert sorted(s.get("data-step") for s in root.iter("section") if s.get("class") == "step") == full
    assert [li.get("data-host") for li in of_class(section(root, "barrier-5"), "failed-cause", "li")] == ["worker2"]


def test_a_collective_draws_each_repetitions_rounds():
    names = ["barrier-%d" % k for k in range(1, 7)]
    run = build_run(repeated(6), experiments=[experiment(
        "ring", "allreduce_ring", names, rounds=3,
        collective={"name": "allreduce_ring", "ranks": 3, "size": 3 * 10**9, "bus_factor": 4 / 3})])
    report = build_report(run)
    root = parse(report_html(report))
    (exp,) = [s for s in root.iter("section") if s.get("data-experiment") == "ring"]
    rounds = of_class(exp, "round", "rect")
    assert [r.get("data-step") for r in rounds] == names
    times = {s["step"]: s["step_s"] for s in report["steps"]}
    scale = float(rounds[0].get("width")) / times["barrier-1"]
    for r in rounds:
        assert float(r.get("width")) == pytest.approx(times[r.get("data-step")] * scale, rel=0.005)
    # a repetition's rounds end to end
    assert float(rounds[1].get("x")) == pytest.approx(float(rounds[0].get("x")) + float(rounds[0].get("width")),
                                                      abs=0.01)
    reps = {r.get("data-repetition"): ["".join(td.itertext()) for td in r.iter("td")] for r in exp.iter("tr")
            if r.get("data-repetition")}
    rep = report["experiments"][0]["collective"]["repetitions"][0]
    assert reps["1"][:6] == ["1", "ok", "%.3f" % rep["time_s"], "%.3f" % rep["predicted_s"],
                             "%.4f" % rep["algbw_GBps"], "%.4f" % rep["busbw_GBps"]]
    # 3 GB over three rounds of 8.064249, 8.144891 and 8.225534 s (the v1 step, 1% and 2% slower)
    assert rep["algbw_GBps"] == pytest.approx(3 / (8.064249 + 8.144891 + 8.225534), abs=1e-6)


def test_the_re_render_writes_the_page_the_callback_writes(tmp_path):
    path, report = demo(tmp_path)
    assert FORMATS["report.html"] is report_html
    render_run(path)
    assert open(os.path.join(path, "report.html")).read() == report_html(report)
