# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The coordinator's step record (what ``flow_step state=collected`` returns) read into flows, counters and how the
step started: what the callback writes into a run directory, and what the experiment role's gates check."""

from __future__ import annotations

from ansible_collections.aifabric.lab.plugins.plugin_utils._run.model import build_run, step_plans

__all__ = ["applied_throttles", "counters_entry", "missing_flow_cause", "run_from_records"]


def applied_throttles(results):
    """host -> what the throttle module applied (its ``description``), from the throttle task's loop results."""
    out = {}
    for res in results or []:
        if isinstance(res, dict) and res.get("item") and res.get("description") and not res.get("failed"):
            out[str(res["item"])] = str(res["description"])
    return out


def counters_entry(step, host, counters):
    """A host part's ``counters`` ({before, after, interface, engine}) as the run directory keeps it; None when a
    snapshot is missing or could not be read (the report says so by its absence)."""
    if not isinstance(counters, dict) or "before" not in counters or "after" not in counters:
        return None
    if "error" in counters["before"] or "error" in counters["after"]:
        return None
    entry = {"step": step, "host": host, "before": counters["before"], "after": counters["after"]}
    for key in ("interface", "engine"):
        if counters.get(key):
            entry[key] = counters[key]
    return entry


def missing_flow_cause(record, host):
    """Why a host of a coordinator's step record never reported its flows."""
    info = (record.get("parties") or {}).get(host) or {}
    if record.get("status") == "aborted":
        return "did not arm: %s" % record.get("error")
    if info.get("lost"):
        return "its step process ended without a result (%s): killed, crashed or cut off" % info["lost"]
    return record.get("error") or "no result"


def run_from_records(records, plan, applied=None, baseline=None):
    """A ``Run`` from the coordinator's step records of one experiment (what ``flow_step state=collected`` returns;
    ``plan``: its ``_plan.model.Plan``),
    read as the callback reads them into a run directory: each host's client flows and counters, a flow that never
    reported failed with its cause. What the experiment role's gates check, before the run directory is complete."""
    steps, counters = {}, {}
    for record in records or []:
        if not isinstance(record, dict):
            continue
        step = record.get("step") or "step"
        hosts = record.get("hosts") or {}
        flows = steps.setdefault(step, [])
        for host, part in sorted(hosts.items()):
            for flow in (part or {}).get("clients") or []:
                flows.append(dict(flow, host=host, step=step, flow_id=flow.get("flow_id") or host))
            entry = counters_entry(step, host, (part or {}).get("counters"))
            if entry:
                counters.setdefault(step, {})[host] = entry
        for host, flow_ids in sorted((record.get("expected_flows") or {}).items()):
            if host not in hosts:
                flows.extend({"host": host, "step": step, "flow_id": f, "status": "error",
                              "error": missing_flow_cause(record, host)} for f in flow_ids)
    plan = plan.with_applied(applied or {})
    if baseline:
        plan.baseline = baseline
    return build_run(steps, step_plans(plan), counters, experiments=[plan])
