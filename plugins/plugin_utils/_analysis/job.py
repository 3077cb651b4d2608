# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job step analysed (docs/jobs.md, "The figures"): the hosts' program results (docs/job-contract.md section 2)
beside the same programs predicted on the plan's paths (section 3), in the report's step shape.

``analyze_job_step(step)`` returns the step's report dict: the fields every step has (``step``, ``kind: job``,
``status``, ``verdict``, ``workers``, ``step_s`` = the JCT, ``predicted_step_s``, ``straggler``, ``failed``) and
``job``: the algorithm and chunking stated, the JCT, the iteration times' distribution and series, measured and
predicted with the deviation per iteration and its largest, the waiting per worker (and whom for), the straggler per
iteration and its frequency, per collective algbw and busbw (nccl-tests' factors) and the efficiency against the
line rate, the roofline, the JCT Ratio and the overlap fraction (the draft's section 10.1), the CV.
"""

from __future__ import annotations

from ansible_collections.aifabric.lab.plugins.module_utils._units import UnitError, parse_rate
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.barrier import SCHEMA_VERSION
from ansible_collections.aifabric.lab.plugins.plugin_utils._job import analysis as _figures

__all__ = ["analyze_job_step", "ENGINE_NOTE", "VERBS_NOTE"]

ENGINE_NOTE = ("the job's programs ran on the hosts' own executor over TCP: perftest runs one transfer per process, "
               "so a chained schedule over it would pay a process launch per operation (a job over perftest is "
               "refused)")
VERBS_NOTE = ("the job's programs ran on the hosts' own executor over RDMA verbs (engine verbs): an RC queue pair per "
              "connection, each message one RDMA WRITE WITH IMMEDIATE, completions through a completion channel; "
              "perftest runs one transfer per process, so a chained schedule over it would pay a process launch per "
              "operation")


def _r(value, digits=6):
    return None if value is None else round(value, digits)


def _dist(d):
    return {k: (_r(v) if k not in ("n", "series") else v) for k, v in d.items() if k != "series"}


def analyze_job_step(step):
    """The report dict of a job's step (a ``_run.Step`` whose plan has ``job``)."""
    plan = step.plan.job
    job_plan = plan.job
    spec = job_plan.parsed()
    ranks = list(job_plan.ranks)
    results = {h: step.programs[h] for h in ranks if h in step.programs}
    failed = []
    for h in ranks:
        r = results.get(h)
        if r is None:
            failed.append({"host": h, "status": "missing",
                           "cause": "no result: the job expected this worker's program but it never reported "
                                    "(interrupted run or lost result)"})
        elif r.get("status") != "ok":
            failed.append({"host": h, "status": r.get("status") or "error", "cause": r.get("error") or "no cause"})
    try:
        line_bps = parse_rate(plan.line_rate, "line_rate")
    except (UnitError, TypeError):
        line_bps = None
    throttles = {h: plan.hosts[h].throttle.rate for h in ranks if plan.hosts[h].throttle}
    report = {
        "schema_version": SCHEMA_VERSION, "step": step.name, "kind": "job", "pattern": "job", "engine": "program",
        "bottleneck": None, "workers_expected": len(ranks), "workers_completed": len(ranks) - len(failed),
        "failed": failed,
    }
    if step.start:
        report["start"] = step.start
    about = {"algorithm": list(job_plan.described), "iterations_planned": spec.iterations,
             "compute_ms": spec.compute_ms, "overlap": spec.overlap, "channels": spec.channels, "ranks": ranks,
             "line_rate": plan.line_rate, "throttles": throttles,
             "engine_note": VERBS_NOTE if plan.engine == "verbs" else ENGINE_NOTE}
    programs = job_plan.programs(plan.hosts)
    if failed:
        report.update(status="failed", verdict="FAILED: %s" % "; ".join(
            "%s (%s): %s" % (f["host"], f["status"], f["cause"]) for f in failed),
            workers=[_failed_worker(h, results.get(h), throttles.get(h)) for h in ranks], straggler={"host": None},
            job=about)
        return report
    predicted = job_plan.predict(plan)["results"]
    figures = _figures.analyze(results, programs, spec, line_bps, predicted=predicted)
    unthrottled = job_plan.predict(plan, throttle=False)["results"] if throttles else None
    jct = figures["jct_s"]
    if jct is None:  # every host said ok, yet an iteration has no end somewhere: nothing to time
        report.update(status="failed", verdict="FAILED: not every iteration ended on every worker",
                      failed=[{"host": h, "status": "incomplete", "cause": "an iteration without an end"}
                              for h in ranks if None in (results[h].get("iteration_end") or [None])],
                      workers=[_failed_worker(h, results.get(h), throttles.get(h)) for h in ranks],
                      straggler={"host": None}, job=about)
        return report
    pred = figures["prediction"]
    waiting = figures["waiting"]
    measured_series = figures["iterations"].get("series") or []
    predicted_series = figures["predicted_iterations"].get("series") or []
    workers = []
    for h in ranks:
        w = waiting["per_host"].get(h) or {}
        r = results[h]
        idle = w.get("idle_total_s") or 0.0
        workers.append({"host": h, "status": "ok", "error": None, "throttle": throttles.get(h),
                        "completion_s": _r(r["iteration_end"][-1]), "idle_s": _r(idle),
                        "idle_share": _r(idle / jct) if jct else None,
                        "waited_for": {p: _r(t) for p, t in sorted((w.get("waited_for") or {}).items())},
                        "root_cause": {p: _r(t) for p, t in sorted((w.get("root_cause") or {}).items())},
                        "bytes": r.get("bytes_sent"), "late_s": r.get("late_s"), "cpu_s": r.get("cpu_s"),
                        "retransmits": sum(c.get("retransmits") or 0 for c in r.get("connections") or []
                                           if c.get("direction") == "send")})
    counts = waiting["straggler_count"]
    top = max(sorted(counts), key=lambda h: counts[h]) if counts else None
    n = len(measured_series)
    roof = figures["roofline"]
    predicted_roof = _figures.roofline(spec, line_bps, pred["predicted_jct_s"]) if line_bps else {}
    collectives = figures["collectives"]
    pred_coll = _figures.collectives(predicted, programs, spec, line_bps)
    for c, p in zip(collectives, pred_coll):
        c["predicted_time_s"], c["predicted_busbw_GBps"] = p["time_s"], p["busbw_GBps"]
        c.pop("times_s", None)
        for key in ("time_s", "algbw_GBps", "busbw_GBps", "efficiency", "predicted_time_s", "predicted_busbw_GBps"):
            c[key] = _r(c.get(key))
    deviation = [_r(x) for x in pred["iterations"]]
    by_iteration = {x["iteration"]: x["straggler"] for x in waiting["stragglers"]}
    report.update(
        status="ok", step_s=_r(jct), predicted_step_s=_r(pred["predicted_jct_s"]),
        workers=workers, idle_worker_seconds=_r(sum(w["idle_s"] or 0.0 for w in workers)),
        straggler={"host": top, "cause": ("the root cause of the most waiting in %d of %d iterations" % (
            counts[top], n)) if top else "nobody waited on a dependency"},
        verdict="%d iterations in %s s (predicted %s s, largest per-iteration deviation %s); straggler %s" % (
            n, _seconds(jct), _seconds(pred["predicted_jct_s"]),
            "%.1f%%" % (pred["max_abs"] * 100) if pred["max_abs"] is not None else "n/a", top or "none"),
    )
    if unthrottled is not None:
        report["predicted_unthrottled_step_s"] = _r(_figures.jct(unthrottled))
    about.update({
        "jct_s": _r(jct), "predicted_jct_s": _r(pred["predicted_jct_s"]), "jct_deviation": _r(pred["jct"]),
        "iterations": _dist(figures["iterations"]), "predicted_iterations": _dist(figures["predicted_iterations"]),
        "series_s": [_r(x) for x in measured_series], "predicted_series_s": [_r(x) for x in predicted_series],
        "deviation": deviation, "max_deviation": _r(pred["max_abs"]),
        "stragglers": [{"iteration": s["iteration"], "straggler": s["straggler"]} for s in waiting["stragglers"]],
        "per_iteration": [{"iteration": i, "measured_s": _r(m), "predicted_s": _r(p), "deviation": d,
                           "straggler": by_iteration.get(i)}
                          for i, (m, p, d) in enumerate(zip(measured_series, predicted_series, deviation))],
        "straggler_count": dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
        "collectives": collectives,
        "roofline": {k: _r(v) if isinstance(v, float) else v for k, v in roof.items()},
        "predicted_roofline": {k: _r(v) if isinstance(v, float) else v for k, v in predicted_roof.items()},
        "cv": _r(figures["iterations"].get("cv")),
    })
    if unthrottled is not None:
        about["predicted_unthrottled_jct_s"] = report["predicted_unthrottled_step_s"]
    report["job"] = about
    return report


def _seconds(value):
    return "n/a" if value is None else "%.3f" % value


def _failed_worker(host, result, throttle):
    if result is None:
        return {"host": host, "status": "missing", "error": "no result", "throttle": throttle}
    return {"host": host, "status": result.get("status") or "error", "error": result.get("error"),
            "throttle": throttle, "bytes": result.get("bytes_sent")}
