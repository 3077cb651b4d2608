# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of a training job (docs/jobs.md): ``job_sweep_points`` (an nccl-tests-style size sweep as one job per
size and algorithm) and ``job_sweep_table`` (the measured sweep as nccl-tests' table, with the prediction)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.aifabric.lab.plugins.plugin_utils._job.sweep import SweepError, job_for, point, row, sizes
from ansible_collections.aifabric.lab.plugins.plugin_utils._job.sweep import table as sweep_table
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import Plan, PlanError
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.build import build_report
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.records import run_from_records

_SWEEP = ("minimum", "maximum", "factor", "op", "algorithms", "iterations", "chunks", "window", "compute_ms")


def job_sweep_points(sweep, workers):
    """One point per (algorithm, size): ``{name, algorithm, point, job}``, the job being the collective alone."""
    if not isinstance(sweep, dict) or sorted(set(sweep) - set(_SWEEP)):
        raise AnsibleFilterError("job_sweep_points: give a dict of %s (unknown: %s)" % (
            ", ".join(_SWEEP), ", ".join(sorted(set(sweep) - set(_SWEEP))) if isinstance(sweep, dict) else sweep))
    try:
        workers = int(workers)
        op = sweep.get("op", "allreduce")
        chosen = sizes(sweep.get("minimum", "1M"), sweep.get("maximum", "64M"), int(sweep.get("factor", 2)))
        points = [point(op, size, workers) for size in chosen]
    except (SweepError, ValueError, TypeError) as exc:
        raise AnsibleFilterError("job_sweep_points: %s" % exc) from None
    out = []
    for algorithm in sweep.get("algorithms") or ["ring"]:
        for p in points:
            out.append({"name": "sweep-%s-%s-%d" % (op, algorithm, p["size"]), "algorithm": algorithm, "point": p,
                        "job": job_for(p, algorithm=algorithm, iterations=int(sweep.get("iterations", 20)),
                                       chunks=int(sweep.get("chunks", 1)), window=int(sweep.get("window", 2)),
                                       compute_ms=sweep.get("compute_ms", 0))})
    return out


def job_sweep_table(points, records):
    """``points``: ``job_sweep_points``' result; ``records``: ``[{plan, record}]`` (each point's plan and its step's
    record, as the experiment role keeps them in ``experiment_job_records``), paired by the plan's name. The text of
    one nccl-tests table per algorithm, the time being the collective's mean over the iterations, the prediction's
    beside it; a point without a record (or whose job failed) has no figures."""
    if not isinstance(points, list) or not isinstance(records, list):
        raise AnsibleFilterError("job_sweep_table: give the points (job_sweep_points) and the records "
                                 "([{plan, record}], the experiment role's experiment_job_records)")
    by_name = {}
    for item in records:
        if isinstance(item, dict) and isinstance(item.get("plan"), dict):
            by_name[item["plan"].get("name")] = item
    by_algorithm = {}
    for p in points:
        measured = predicted = None
        item = by_name.get(p["name"])
        if item is not None:
            try:
                the_plan = Plan.from_dict(item["plan"])
                report = build_report(run_from_records([item["record"]], the_plan))
            except (PlanError, KeyError, TypeError) as exc:
                raise AnsibleFilterError("job_sweep_table: %s: %s" % (p["name"], exc)) from None
            step = report["steps"][0] if report["steps"] else {}
            if step.get("status") == "ok":
                collective = step["job"]["collectives"][0]
                measured, predicted = collective["time_s"], collective["predicted_time_s"]
        by_algorithm.setdefault(p["algorithm"], []).append(row(p["point"], measured, predicted))
    lines = []
    for algorithm, rows in by_algorithm.items():
        first = rows[0]
        lines.append("# %s %s, %d ranks (a blank time: that size's job failed; its step in the report says why)"
                     % (first["op"], algorithm, first["ranks"]))
        lines += sweep_table(rows)
    return "\n".join(lines)


class FilterModule:
    def filters(self):
        return {"job_sweep_points": job_sweep_points, "job_sweep_table": job_sweep_table}
