# -*- coding: utf-8 -*-
"""Gates (an experiment's ``expect``) against the v1 demo run's real flows and counters: each figure, its limit, the
sentence; the report, junit.xml and the role's filter agree on what broke."""
from __future__ import annotations

import os
from xml.etree import ElementTree

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.aifabric.lab.plugins.filter.barrier import barrier_gates
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.gates import evaluate
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.expect import GateError, check_expect
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import ExperimentError, plan
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import Plan
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.build import build_report
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.formats import junit_xml, report_markdown, steps_csv
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.text import render_text
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.store import load_run

V1_RUN = os.path.join(os.path.dirname(__file__), "..", "fixtures", "run-v1-demo")


def demo_report(expect, baseline=None):
    """The v1 demo run (barrier step: 8.064 s against 8.059 s predicted, the unthrottled workers idle 33%, every error
    counter zero) with an experiment that expects ``expect`` of its barrier step."""
    run = load_run(V1_RUN)
    experiment = plan({"name": "barrier", "throttles": {"worker3": "2gbit"}, "expect": expect},
                      {"workers": ["worker1", "worker2", "worker3"], "sinks": ["sink"]},
                      {h: {"lab_address": "198.18.0.%d" % i}
                       for i, h in enumerate(["sink", "worker1", "worker2", "worker3"], 1)})
    experiment.baseline = baseline
    run.experiments = [experiment]
    return build_report(run)


def gates(report, step="barrier"):
    return {g["gate"]: g for g in next(s for s in report["steps"] if s["step"] == step)["gates"]}


def test_the_demo_holds_its_prediction_and_breaks_the_idle_gate():
    report = demo_report({"step_vs_predicted": 1.05, "healthy_idle_share": 0.05, "counters": "errors_zero"})
    g = gates(report)
    assert g["step_vs_predicted"]["ok"] is True
    assert g["step_vs_predicted"]["value"] == pytest.approx(8.064249 / 8.059, rel=1e-3)
    assert g["counters"]["ok"] is True and g["counters"]["value"] == "clean"
    idle = g["healthy_idle_share"]
    assert idle["ok"] is False and idle["value"] == pytest.approx(0.33, abs=0.01)
    assert idle["message"].startswith("healthy_idle_share 33.") and "> 5.0%" in idle["message"]
    assert "worker3" in idle["message"]  # the straggler and its cause beside the figure
    assert report["gates"]["status"] == "broken"
    assert report["gates"]["broken"] == ["step barrier: gate " + idle["message"]]
    # the elephant has no expectation: no gates
    assert "gates" not in report["steps"][0]


def test_a_broken_gate_fails_the_junit_case_and_shows_in_every_format():
    report = demo_report({"healthy_idle_share": 0.05})
    suite = ElementTree.fromstring(junit_xml(report)).find("testsuite")
    assert suite.get("failures") == "1"
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert cases["elephant"].find("failure") is None
    failure = cases["barrier"].find("failure")
    assert failure.get("type") == "gate_broken" and "healthy_idle_share 33." in failure.get("message")
    text = render_text(report)
    assert "  gate                   BROKEN healthy_idle_share 33." in text
    assert "=== gates: 1 BROKEN" in text
    assert "**barrier, gate BROKEN:** healthy_idle_share" in report_markdown(report)
    assert "healthy_idle_share 33." in steps_csv(report)


def test_held_gates_pass_junit_and_a_missing_figure_is_not_checked_not_held():
    report = demo_report({"step_vs_predicted": 1.05, "vs_baseline": 0.95})
    g = gates(report)
    assert g["step_vs_predicted"]["ok"] is True
    assert g["vs_baseline"]["ok"] is None and "no baseline run" in g["vs_baseline"]["message"]
    assert report["gates"]["status"] == "ok" and report["gates"]["not_checked"]
    assert ElementTree.fromstring(junit_xml(report)).find("testsuite").get("failures") == "0"
    assert "=== gates: all held, 1 not checked" in render_text(report)


def test_vs_baseline_compares_with_the_baseline_runs_step():
    slower = demo_report({"vs_baseline": 0.95}, baseline={"run": "20261130T110734-demo", "steps": {"barrier": 6.0}})
    g = gates(slower)["vs_baseline"]
    assert g["ok"] is False and g["value"] == pytest.approx(6.0 / 8.064249, rel=1e-4)
    assert "baseline run 20261130T110734-demo: 6.000 s" in g["message"]
    same = demo_report({"vs_baseline": 0.95}, baseline={"run": "r", "steps": {}, "p50_step_s": 8.0})
    assert gates(same)["vs_baseline"]["ok"] is True and "its median step" in gates(same)["vs_baseline"]["message"]


def test_a_failed_step_has_its_gates_not_checked():
    step = {"step": "s", "status": "failed"}
    (entry,) = evaluate(step, {"step_vs_predicted": 1.05})
    assert entry["ok"] is None and "the step failed" in entry["message"]


def test_counters_clean_needs_the_books_to_agree():
    step = {"step": "s", "status": "ok", "step_s": 1.0,
            "counters": {"hosts": {"w1": {"errors": {}}}, "disagreements": ["w1: the application moved ..."],
                         "verdict": "all error counters zero; the books disagree"}}
    clean, errors_zero = evaluate(step, {"counters": "clean"}), evaluate(step, {"counters": "errors_zero"})
    assert clean[0]["ok"] is False and clean[0]["value"] == "books disagree"
    assert errors_zero[0]["ok"] is True
    step["counters"]["hosts"]["w1"]["errors"] = {"netdev/eth0/rx_dropped": 3}
    assert evaluate(step, {"counters": "errors_zero"})[0]["ok"] is False


@pytest.mark.parametrize("expect, message", [
    ({"step_vs_predict": 1.05}, "unknown gate(s) step_vs_predict"),
    ({"step_vs_predicted": "fast"}, "experiment.expect.step_vs_predicted: 'fast'; give a positive number"),
    ({"healthy_idle_share": 5}, "a share of the step is below 1"),
    ({"counters": "zero"}, "use clean"),
    ({"baseline": "latest"}, "given without vs_baseline"),
    ("1.05", "expected a dict of gates"),
])
def test_bad_expectations_name_the_field_and_the_fix(expect, message):
    with pytest.raises(GateError, match=None) as err:
        check_expect(expect)
    assert message in str(err.value)


def test_the_plan_checks_and_carries_the_expectations():
    groups = {"workers": ["w1", "w2"], "sinks": ["sink"]}
    hostvars = {h: {"lab_address": "198.18.0.%d" % i} for i, h in enumerate(["sink", "w1", "w2"], 1)}
    the_plan = plan({"name": "b", "expect": {"step_vs_predicted": 1.1}}, groups, hostvars)
    assert the_plan.expect == {"step_vs_predicted": 1.1}
    assert plan({"name": "b"}, groups, hostvars).expect == {}
    with pytest.raises(ExperimentError, match="experiment.expect.counters"):
        plan({"name": "b", "expect": {"counters": "dirty"}}, groups, hostvars)


def step_record(the_plan, completions, volume):
    """A coordinator's record of the plan's step, as flow_step state=collected returns it."""
    hosts = {h: {"clients": [], "servers": []} for h in the_plan.participants}
    for host, done in completions.items():
        hosts[host]["clients"].append({"flow_id": host, "status": "ok", "bytes": volume, "volume_bytes": volume,
                                       "completion_s": done, "gbps": volume * 8 / done / 1e9, "late_s": 0.0,
                                       "start": 100.0, "start_at": 100.0})
    return {"step": the_plan.steps[0], "status": "ok", "hosts": hosts, "parties": {},
            "expected_flows": {h: [h] for h in completions}}


def test_the_roles_filter_breaks_the_same_gates_as_the_report():
    groups = {"workers": ["w1", "w2"], "sinks": ["sink"]}
    hostvars = {h: {"lab_address": "198.18.0.%d" % i} for i, h in enumerate(["sink", "w1", "w2"], 1)}
    the_plan = plan({"name": "b", "volume": "1GB", "throttles": {"w2": "2gbit"},
                     "expect": {"healthy_idle_share": 0.05, "step_vs_predicted": 1.05}}, groups, hostvars).to_dict()
    throttles = [{"item": "w2", "description": "tc htb on eth0's egress"}]
    # w1 (unthrottled) done at 1.2 s, w2 (2gbit) at 4.1 s: w1 idles 71% of the step
    record = step_record(Plan.from_dict(the_plan), {"w1": 1.2, "w2": 4.1}, 10**9)
    broken = barrier_gates([record], the_plan, throttles)
    assert len(broken) == 1 and broken[0].startswith("step b: gate healthy_idle_share 70.7% > 5.0%")
    assert "throttled to 2gbit (w2: tc htb on eth0's egress)" in broken[0]
    # a record of another experiment's step is not this experiment's
    assert barrier_gates([dict(record, step="elephant")], the_plan, throttles) == []
    # nothing expected, nothing broken
    assert barrier_gates([record], dict(the_plan, expect={})) == []
    with pytest.raises(AnsibleFilterError, match="flow_plan filter's result"):
        barrier_gates([record], {"hosts": {}})


def test_counters_of_a_worker_not_read_leave_the_gate_not_checked():
    step = {"step": "s", "status": "ok", "step_s": 1.0, "workers": [{"host": "w1"}, {"host": "w2"}],
            "counters": {"hosts": {"w1": {"errors": {}}}, "disagreements": [], "verdict": "all error counters zero"}}
    (entry,) = evaluate(step, {"counters": "clean"})
    assert entry["ok"] is None and "no counters of w2" in entry["message"]
    step["counters"]["hosts"]["w2"] = {"missing": "only one of the two snapshots arrived"}
    assert evaluate(step, {"counters": "errors_zero"})[0]["ok"] is None
