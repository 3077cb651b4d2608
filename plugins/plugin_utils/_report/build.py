# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The barrier report of a run: every step analysed, the experiments summarised, the gates checked; and every file
of the report (``report_files``: report.json, report.txt and the other formats).

``analyze_run(path)`` is the one analysis of a run directory's files (``_run.store``: plan.json, flows/, counters/,
starts/): the callback's, the re-render's and the run_report filter's, so a run interrupted before its report loses
nothing.
"""

from __future__ import annotations

import json

from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.barrier import SCHEMA_VERSION, analyze_step
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.fabric import seeds as fabric_seeds
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.fabric import variants as fabric_variants
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.gates import broken_messages, evaluate
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.grid import incast_grid
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.job import analyze_job_step
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.stats import mean_idle_share, summary
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.bmwg import build_test_report
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.formats import FORMATS
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.text import render_text
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.store import load_run, write_files

__all__ = ["analyze_run", "build_report", "report_json", "render_run", "report_files", "write_report"]


def build_report(run):
    """The whole run's report (a ``_run.Run``): every step analysed, baselines first so later steps can compare to
    them; with each step's counters (before/after snapshots per host), what the wire and the queues saw beside it."""
    report = {"schema_version": SCHEMA_VERSION, "run_dir": run.path, "steps": [], "baseline_gbps": None}
    if run.lab:
        report["lab"] = run.lab
    baseline = None
    for step in run.steps:
        if step.plan.job is not None:  # a training job's step: its programs' results (docs/jobs.md)
            report["steps"].append(analyze_job_step(step))
            continue
        out = analyze_step(step, baseline_gbps=baseline)
        if out["kind"] == "baseline" and out["status"] == "ok" and len(out["workers"]) == 1:
            baseline = out["workers"][0]["gbps"]
            report["baseline_gbps"] = baseline
        report["steps"].append(out)
    report["status"] = "ok" if all(s["status"] == "ok" for s in report["steps"]) else "failed"
    summaries = [summarize_experiment(e, report["steps"]) for e in run.experiments]
    report["experiments"] = [e for e in summaries if e]
    _check_gates(report, run.experiments)
    _fabric_summaries(report)
    grid = incast_grid(report["experiments"])
    if grid:  # experiments labelled n, buffer and mode: the incast sweep's cells (docs/congestion.md)
        report["incast_grid"] = grid
    report["test_report"] = build_test_report(report, run)
    return report


def _fabric_summaries(report):
    """The fabric lab: its steps side by side (the variants of one run), and over the hash seeds when several."""
    rows = fabric_variants(report["steps"])
    if not rows:
        return
    report["fabric_variants"] = rows
    what_if = next((s["fabric"]["what_if"] for s in report["steps"] if (s.get("fabric") or {}).get("what_if")
                    and s["fabric"].get("placement") == "hash"), None)
    summary = fabric_seeds(report["steps"], what_if)
    if summary:
        report["fabric_seeds"] = summary


def _check_gates(report, experiments):
    """Each step of an experiment that states ``expect`` gets its ``gates`` (``_analysis.gates.evaluate``, against the
    baseline run the plan recorded); the report gets ``gates``: whether any broke, and which, one sentence each."""
    by_name = {s["step"]: s for s in report["steps"]}
    checked = False
    for experiment in experiments:
        if not experiment.expect:
            continue
        for name in experiment.steps:
            if name in by_name:
                by_name[name]["gates"] = evaluate(by_name[name], experiment.expect, experiment.baseline)
                checked = True
    if checked:
        broken = broken_messages(report)
        report["gates"] = {"status": "broken" if broken else "ok", "broken": broken,
                           "not_checked": ["step %s: gate %s" % (s["step"], g["message"]) for s in report["steps"]
                                           for g in s.get("gates") or [] if g["ok"] is None]}


def summarize_experiment(experiment, steps):
    """An experiment's steps together (``experiment``: its ``_plan.model.Plan``): the step times' distribution, which
    host held how many steps back, each host's idle worker-seconds, the steps as a series; a collective's time (its
    rounds in turn), algbw and busbw (nccl-tests' factors) and what the straggler cost. A failed step is counted and
    named, and left out of the figures that need its time (never silently: ``failed_steps``)."""
    by_name = {s["step"]: s for s in steps}
    names = list(experiment.steps)
    if not any(n in by_name for n in names):
        return None
    for n in names:
        if n not in by_name:  # planned, but no flow of it ever reported (the play ended before it, or its record lost)
            by_name[n] = {"step": n, "status": "missing", "verdict": "no record: the step never reported a flow"}
    ok = [by_name[n] for n in names if by_name[n]["status"] == "ok"]
    frequency, idle = {}, {}
    for s in ok:
        if s["straggler"]["host"] is not None:  # (a job's iteration in which nobody waited has no straggler)
            frequency[s["straggler"]["host"]] = frequency.get(s["straggler"]["host"], 0) + 1
        for w in s["workers"]:
            idle[w["host"]] = round(idle.get(w["host"], 0.0) + (w.get("idle_s") or 0.0), 6)
    out = {
        "name": experiment.name,
        "pattern": experiment.pattern,
        **({"labels": dict(experiment.labels)} if experiment.labels else {}),
        "steps": len(names),
        "steps_ok": len(ok),
        "failed_steps": [{"step": n, "cause": by_name[n]["verdict"]} for n in names if by_name[n]["status"] != "ok"],
        "step_s": summary([s["step_s"] for s in ok]),
        "straggler_frequency": dict(sorted(frequency.items(), key=lambda kv: (-kv[1], kv[0]))),
        "idle_worker_seconds": dict(sorted(idle.items())),
        "series": [{"step": n, "status": by_name[n]["status"], "step_s": by_name[n].get("step_s"),
                    "predicted_step_s": by_name[n].get("predicted_step_s"),
                    "straggler": (by_name[n].get("straggler") or {}).get("host")} for n in names],
    }
    books = [s["ecn"] for s in ok if s.get("ecn")]
    if books:  # the switch's marked ports were snapshotted: the experiment's congestion books, its steps summed
        out["ecn"] = _ecn_books(books, ok)
    if experiment.collective:
        out["collective"] = _collective(experiment.collective, experiment, by_name)
    if experiment.job:
        out["job"] = {"algorithm": list(experiment.job.described), "ranks": len(experiment.job.ranks),
                      "jct_s": summary([s["step_s"] for s in ok])}
    return out


def _ecn_books(books, steps):
    """An experiment's congestion books over its steps (each step's ``ecn``): the segments, ECT, marks and drops at
    the marked ports, the flows' retransmissions and RTO expiries, the flow completion times over every flow of
    every step (p50, p99), the step times; lossless only when every step was; the checks that disagreed."""
    total = {k: sum(b["total"][k] for b in books) for k in ("segs", "ect_segs", "marked_segs", "dropped_segs")}
    fct = [w["completion_s"] for s in steps for w in s["workers"] if w.get("completion_s") is not None]
    return {
        "steps": len(books),
        "total": total,
        "marking_ratio": round(total["marked_segs"] / total["ect_segs"], 6) if total["ect_segs"] else None,
        "peak_queue_bytes": max(b["peak_queue_bytes"] for b in books),
        "retransmits": sum(b["retransmits"] for b in books),
        "rto_timeouts": sum(b["rto_timeouts"] for b in books),
        "fct_s": summary(fct),
        "step_s": summary([s["step_s"] for s in steps]),
        # every flow's bytes over the step time; the fair share's step (max-min, predicted) over the measured one
        "goodput_gbps": summary([sum(w.get("bytes") or 0 for w in s["workers"]) * 8 / s["step_s"] / 1e9
                                 for s in steps if s.get("step_s")]),
        "efficiency": summary([s["predicted_step_s"] / s["step_s"] for s in steps
                               if s.get("step_s") and s.get("predicted_step_s")]),
        "lossless": all(b["lossless"] for b in books),
        "disagreements": [c["text"] for b in books for c in b["checks"] if not c["agrees"]],
    }


def _collective(collective, experiment, by_name):
    """Each repetition of a collective (``collective``: the plan's ``Collective``): its rounds' step times added (each
    round a barrier; the time between rounds, when Ansible starts the next, is not counted), algbw = size / time,
    busbw = algbw x nccl-tests' factor, and the straggler's cost against the same collective predicted without the
    throttles."""
    reps = []
    for i, names in enumerate(experiment.repetitions, 1):
        rounds = [by_name.get(n) for n in names]
        ok = all(r is not None and r["status"] == "ok" for r in rounds)
        rep = {"repetition": i, "rounds": names, "status": "ok" if ok else "failed", "time_s": None}
        if ok:
            time_s = sum(r["step_s"] for r in rounds)
            rep["time_s"] = round(time_s, 6)
            rep["algbw_GBps"] = round(collective.size / time_s / 1e9, 6)
            rep["busbw_GBps"] = round(rep["algbw_GBps"] * collective.bus_factor, 6)
            if all(r.get("predicted_step_s") for r in rounds):
                rep["predicted_s"] = round(sum(r["predicted_step_s"] for r in rounds), 6)
            if all(r.get("predicted_unthrottled_step_s") for r in rounds):
                rep["predicted_unthrottled_s"] = round(sum(r["predicted_unthrottled_step_s"] for r in rounds), 6)
                rep["straggler_cost_s"] = round(time_s - rep["predicted_unthrottled_s"], 6)
                rep["straggler_cost_share"] = round(rep["straggler_cost_s"] / time_s, 6)
            rep["idle_share_per_round"] = [mean_idle_share(r["workers"]) or 0.0 for r in rounds]
        reps.append(rep)
    done = [r for r in reps if r["status"] == "ok"]
    return dict(collective.to_dict(), repetitions=reps, time_s=summary([r["time_s"] for r in done]),
                busbw_GBps=summary([r["busbw_GBps"] for r in done]))


def analyze_run(path):
    """The one analysis: a run directory's report, from its files (flows/, counters/, starts/). The callback, the
    re-render playbook and the run_report filter all call it, so they give the same report for the same run."""
    return build_report(load_run(path))


def report_json(report):
    """report.json's text."""
    return json.dumps(report, indent=1, sort_keys=True)


def report_files(report):
    """Every file of the report, name -> text: report.json, report.txt and the other formats (``formats``). The
    callback and the re-render both write exactly these."""
    files = {"report.json": report_json(report), "report.txt": render_text(report)}
    files.update((name, fmt(report)) for name, fmt in FORMATS.items())
    return files


def write_report(path, report):
    """Every file of the report (``report_files``) into the run directory at ``path``; returns the text report."""
    files = report_files(report)
    write_files(path, files)
    return files["report.txt"]


def render_run(path):
    """Rebuild every file of a run directory's report (report.json, report.txt and ``FORMATS``') from its files;
    return the text."""
    return write_report(path, analyze_run(path))
