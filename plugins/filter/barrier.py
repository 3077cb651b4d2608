# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters ``barrier_analysis`` and ``barrier_gates``: the barrier analysis of flow results that describe their
step themselves, and the gates an experiment states, checked on its steps' records."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.barrier import BarrierInputError, analyze_records
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.gates import broken_messages
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import Plan, PlanError
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.build import build_report
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.records import applied_throttles, run_from_records


def barrier_analysis(records, baseline_gbps=None, bottleneck=None, name=None):
    if not isinstance(records, list):
        raise AnsibleFilterError("barrier_analysis: expected a list of flow results, got %s" % type(records).__name__)
    try:
        return analyze_records([dict(r) for r in records], baseline_gbps=baseline_gbps, bottleneck=bottleneck,
                               name=name)
    except BarrierInputError as exc:
        raise AnsibleFilterError("barrier_analysis: %s" % exc) from None


def barrier_gates(records, the_plan, throttles=None, baseline=None):
    try:
        the_plan = Plan.from_dict(the_plan)
    except (PlanError, KeyError, TypeError):
        the_plan = None
    if not isinstance(records, list) or the_plan is None:
        raise AnsibleFilterError("barrier_gates: give the steps' records (flow_step state=collected's 'step', a list) "
                                 "and the flow_plan filter's result")
    if not the_plan.expect:
        return []
    names = set(the_plan.steps)
    records = [r for r in records if isinstance(r, dict) and r.get("step") in names]
    report = build_report(run_from_records(records, the_plan, applied_throttles(throttles),
                                           baseline if isinstance(baseline, dict) else None))
    return broken_messages(report)


class FilterModule:
    def filters(self):
        return {"barrier_analysis": barrier_analysis, "barrier_gates": barrier_gates}
