# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters ``barrier_analysis`` and ``fair_share``: the barrier report's arithmetic, usable in any play."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.aifabric.lab.plugins.module_utils._units import UnitError, parse_rate
from ansible_collections.aifabric.lab.plugins.plugin_utils._barrier import BarrierInputError, analyze_records
from ansible_collections.aifabric.lab.plugins.plugin_utils._counters_diff import diff as _counters_diff
from ansible_collections.aifabric.lab.plugins.plugin_utils._counters_diff import verdict as _counters_verdict
from ansible_collections.aifabric.lab.plugins.plugin_utils._experiment import (
    ExperimentError,
    batch_args,
    host_args,
    plan,
)
from ansible_collections.aifabric.lab.plugins.plugin_utils._fair_share import max_min_rates, predict_completions
from ansible_collections.aifabric.lab.plugins.plugin_utils._gates import broken_messages
from ansible_collections.aifabric.lab.plugins.plugin_utils._netns_lab import LabError, lab_hosts
from ansible_collections.aifabric.lab.plugins.plugin_utils._report import analyze_run, build_report
from ansible_collections.aifabric.lab.plugins.plugin_utils._report import render_run as _render_run
from ansible_collections.aifabric.lab.plugins.plugin_utils._report import render_text as _render_text
from ansible_collections.aifabric.lab.plugins.plugin_utils._report import report_files as _report_files
from ansible_collections.aifabric.lab.plugins.plugin_utils._report import report_json as _report_json
from ansible_collections.aifabric.lab.plugins.plugin_utils._run import applied_throttles, run_from_records


def barrier_analysis(records, baseline_gbps=None, bottleneck=None, name=None):
    if not isinstance(records, list):
        raise AnsibleFilterError("barrier_analysis: expected a list of flow results, got %s" % type(records).__name__)
    try:
        return analyze_records([dict(r) for r in records], baseline_gbps=baseline_gbps, bottleneck=bottleneck,
                               name=name)
    except BarrierInputError as exc:
        raise AnsibleFilterError("barrier_analysis: %s" % exc) from None


def fair_share(flows, links, volumes=None):
    if not isinstance(flows, dict) or not isinstance(links, dict):
        raise AnsibleFilterError("fair_share: flows and links must be dicts ({flow: [link, ...]}, {link: rate})")
    try:
        caps = {name: parse_rate(rate, "links.%s" % name, minimum=1) for name, rate in links.items()}
        rates = max_min_rates({f: list(p) for f, p in flows.items()}, caps)
        out = {f: {"rate_bps": rates[f]} for f in flows}
        if volumes is not None:
            times = predict_completions({f: list(p) for f, p in flows.items()}, caps, dict(volumes))
            for f in flows:
                out[f]["completion_s"] = times[f]
        return out
    except (UnitError, KeyError) as exc:
        raise AnsibleFilterError("fair_share: %s" % exc) from None


def flow_plan(experiment, groups, hostvars, line_rate="8gbit", mtu=9000, switch="switch", interface="eth0",
              rdma_device=None, fabric=None):
    try:
        return plan(experiment, groups, hostvars, line_rate=line_rate, mtu=int(mtu), switch=switch,
                    interface=interface or "eth0", rdma_device=rdma_device or None, fabric=fabric or None)
    except ExperimentError as exc:
        raise AnsibleFilterError("flow_plan: %s" % exc) from None


def flow_step_args(the_plan, host, step, token, throttle=None):
    if not isinstance(the_plan, dict) or host not in (the_plan.get("hosts") or {}):
        raise AnsibleFilterError("flow_step_args: %s is not a host of this plan (give the flow_plan filter's result "
                                 "and one of its participants)" % (host,))
    return host_args(the_plan, host, str(step), str(token), throttle=throttle or None)


def flow_step_batch_args(the_plan, step, token, throttles=None, only=None):
    if not isinstance(the_plan, dict) or "participants" not in the_plan:
        raise AnsibleFilterError("flow_step_batch_args: give the flow_plan filter's result")
    by_host = {}
    for result in throttles or []:
        if isinstance(result, dict) and result.get("item") and not result.get("skipped"):
            by_host[result["item"]] = result
    try:
        return batch_args(the_plan, str(step), str(token), throttles=by_host,
                          only=list(only) if only is not None else None)
    except ExperimentError as exc:
        raise AnsibleFilterError("flow_step_batch_args: %s" % exc) from None


def netns_lab_hosts(groups, hostvars, prefix="afl-", subnet="198.18.0.0/24", sinks_group="sinks",
                    workers_group="workers"):
    try:
        return lab_hosts(groups, hostvars, prefix, subnet, sinks_group, workers_group)
    except LabError as exc:
        raise AnsibleFilterError("netns_lab_hosts: %s" % exc) from None


def run_report(run_dir):
    try:
        return analyze_run(str(run_dir))
    except (OSError, ValueError) as exc:
        raise AnsibleFilterError("run_report: %s" % exc) from None


def report_json(report):
    if not isinstance(report, dict) or "steps" not in report:
        raise AnsibleFilterError("report_json: give a report (the run_report filter's result)")
    return _report_json(report)


def report_text(report):
    if not isinstance(report, dict) or "steps" not in report:
        raise AnsibleFilterError("report_text: give a report (the run_report filter's result)")
    return _render_text(report)


def report_files(report):
    if not isinstance(report, dict) or "steps" not in report:
        raise AnsibleFilterError("report_files: give a report (the run_report filter's result)")
    return _report_files(report)


def render_run(run_dir):
    try:
        return _render_run(str(run_dir))
    except (OSError, ValueError) as exc:
        raise AnsibleFilterError("render_run: %s" % exc) from None


def barrier_gates(records, the_plan, throttles=None, baseline=None):
    if not isinstance(records, list) or not isinstance(the_plan, dict) or "step_round" not in the_plan:
        raise AnsibleFilterError("barrier_gates: give the steps' records (flow_step state=collected's 'step', a list) "
                                 "and the flow_plan filter's result")
    if not the_plan.get("expect"):
        return []
    names = set(the_plan.get("steps") or [])
    records = [r for r in records if isinstance(r, dict) and r.get("step") in names]
    report = build_report(run_from_records(records, the_plan, applied_throttles(throttles),
                                           baseline if isinstance(baseline, dict) else None))
    return broken_messages(report)


def rate_bps(value, name="rate"):
    try:
        return parse_rate(value, name)
    except UnitError as exc:
        raise AnsibleFilterError(str(exc)) from None


def counters_diff(before, after, slower_than_fair_share=None):
    if not isinstance(before, dict) or not isinstance(after, dict):
        raise AnsibleFilterError("counters_diff: give two port_counters snapshots (the module's 'counters' return)")
    delta = _counters_diff(before, after)
    delta["verdict"] = _counters_verdict(delta, slower_than_fair_share)
    return delta


class FilterModule:
    def filters(self):
        return {"barrier_analysis": barrier_analysis, "fair_share": fair_share, "flow_plan": flow_plan,
                "flow_step_args": flow_step_args, "flow_step_batch_args": flow_step_batch_args,
                "netns_lab_hosts": netns_lab_hosts, "render_run": render_run, "run_report": run_report,
                "report_json": report_json, "report_text": report_text, "report_files": report_files,
                "rate_bps": rate_bps, "counters_diff": counters_diff, "barrier_gates": barrier_gates}
