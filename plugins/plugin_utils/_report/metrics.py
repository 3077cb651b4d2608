# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run's figures as metrics (``metrics.prom``): OpenMetrics text, every family a gauge, no timestamps, ended by
``# EOF``; so it is also what the Prometheus text format reads (node_exporter's textfile collector: copy or link it
into its directory; a Pushgateway: ``curl --data-binary @metrics.prom .../metrics/job/aifabric_lab``).

Every sample carries ``run`` (the run directory's name); a step's carry ``experiment``, ``step``, ``kind`` and
``pattern``; a worker's also ``host``. ``METRICS`` lists every family this writes (the Grafana dashboard in
docs/grafana/ reads only these)."""

from __future__ import annotations

import math
import os
import time

from ansible_collections.aifabric.lab.plugins.plugin_utils._run.store import stamp_of

__all__ = ["METRICS", "metrics_text"]

# name -> (unit or "", help)
METRICS = {
    "aifabric_run_ok": ("", "1 when every step of the run completed (and no gate broke), else 0"),
    "aifabric_run_timestamp_seconds": ("seconds", "when the run started: its directory's stamp (the controller's local "
                                                  "time), read in the local time of the machine that writes this"),
    "aifabric_run_gates_broken": ("", "the gates the run broke"),
    "aifabric_step_ok": ("", "1 when the step completed, else 0"),
    "aifabric_step_seconds": ("seconds", "the step time: the slowest worker's completion (completed steps)"),
    "aifabric_step_predicted_seconds": ("seconds", "the fair-share model's step time"),
    "aifabric_step_fair_seconds": ("seconds", "the step with nobody throttled"),
    "aifabric_step_mean_completion_seconds": ("seconds", "the mean of the workers' completions"),
    "aifabric_step_unthrottled_idle_ratio": ("ratio", "mean idle share of the workers without a throttle"),
    "aifabric_step_throttled_idle_ratio": ("ratio", "mean idle share of the other throttled workers"),
    "aifabric_step_idle_worker_seconds": ("seconds", "idle time summed over the workers"),
    "aifabric_step_goodput_bits_per_second": ("bits_per_second", "all bytes over the step time"),
    "aifabric_step_start_skew_seconds": ("seconds", "how far apart the flows' first bytes left"),
    "aifabric_step_straggler_seconds": ("seconds", "the straggler's completion (label host: which worker)"),
    "aifabric_step_straggler_behind_next_seconds": ("seconds", "how far the straggler finished behind the next"),
    "aifabric_step_refused_connections": ("", "connections the rendezvous and the flow servers refused"),
    "aifabric_step_counters_clean": ("", "1 when no error counter moved and every book agreed, else 0 (label "
                                         "verdict: the counters' sentence)"),
    "aifabric_step_counters_errors": ("", "error counters' increase over the step, summed per host"),
    "aifabric_step_counters_congestion": ("", "congestion counters' increase over the step, summed per host"),
    "aifabric_step_fabric_mmr_ratio": ("ratio", "the max-mean ratio of a set of parallel fabric links (label set: "
                                       "leaf1->* or *->leaf2; by: flows or bytes; draft-calabria-bmwg-ai-fabric-"
                                       "training-bench 8.4)"),
    "aifabric_step_fabric_jfi_ratio": ("ratio", "Jain's fairness index (sum x)^2 / (N sum x^2) of a set of parallel "
                                       "fabric links (labels as the MMR's)"),
    "aifabric_worker_completion_seconds": ("seconds", "a worker's completion, from the common start instant"),
    "aifabric_worker_idle_ratio": ("ratio", "a worker's idle share of the step"),
    "aifabric_worker_goodput_bits_per_second": ("bits_per_second", "a worker's goodput"),
    "aifabric_experiment_step_seconds": ("seconds", "an experiment's step times (label stat: p50, p90, p99, max, "
                                                    "mean)"),
    "aifabric_experiment_step_cv_ratio": ("ratio", "the step time's coefficient of variation over the experiment's "
                                                   "steps (the test report's repeatability)"),
    "aifabric_job_jct_seconds": ("seconds", "a job step's job completion time (JCT)"),
    "aifabric_job_predicted_jct_seconds": ("seconds", "the JCT the dependency-aware simulation predicted"),
    "aifabric_job_iteration_seconds": ("seconds", "a job's iteration times (label stat: min, mean, p50, p90, p99, "
                                                  "max)"),
    "aifabric_job_iteration_cv_ratio": ("ratio", "the iteration time's coefficient of variation (the draft's "
                                                 "repeatability figure)"),
    "aifabric_job_max_deviation_ratio": ("ratio", "the largest (predicted - measured) / measured of an iteration"),
    "aifabric_job_jct_ratio": ("ratio", "JCT / Roofline_seq (draft-calabria-bmwg-ai-fabric-training-bench 10.1)"),
    "aifabric_job_collective_busbw_bytes_per_second": ("bytes_per_second", "a job collective's busbw (nccl-tests' "
                                                                           "factors)"),
    "aifabric_collective_seconds": ("seconds", "a collective's repetition time"),
    "aifabric_collective_algbw_bytes_per_second": ("bytes_per_second", "a collective repetition's algbw"),
    "aifabric_collective_busbw_bytes_per_second": ("bytes_per_second", "a collective repetition's busbw "
                                                                       "(nccl-tests' factor)"),
}


def _escape(value):
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


class _Families:
    def __init__(self):
        self.samples = {name: [] for name in METRICS}
        self.seen = set()

    def add(self, name, labels, value):
        if value is None:
            return
        key = (name, tuple(sorted(labels.items())))
        if key in self.seen:  # one sample per label set (a repeated step name cannot make two)
            return
        self.seen.add(key)
        self.samples[name].append((labels, value))

    def text(self):
        out = []
        for name, (unit, help_text) in METRICS.items():
            samples = self.samples[name]
            if not samples:
                continue
            out.append("# TYPE %s gauge" % name)
            if unit:
                out.append("# UNIT %s %s" % (name, unit))
            out.append("# HELP %s %s" % (name, _escape(help_text)))
            for labels, value in samples:
                text = ",".join('%s="%s"' % (k, _escape(v)) for k, v in labels.items())
                out.append("%s{%s} %s" % (name, text, _number(value)))
        out.append("# EOF")
        return "\n".join(out) + "\n"


def _experiments_of(report):
    """step name -> (experiment, pattern), from the experiments' series."""
    out = {}
    for e in report.get("experiments") or []:
        for s in e.get("series") or []:
            out[s["step"]] = (e["name"], e.get("pattern") or "")
    return out


def _job_metrics(fam, labels, job):
    if not job:
        return
    fam.add("aifabric_job_jct_seconds", labels, job.get("jct_s"))
    fam.add("aifabric_job_predicted_jct_seconds", labels, job.get("predicted_jct_s"))
    for stat in ("min", "mean", "p50", "p90", "p99", "max"):
        fam.add("aifabric_job_iteration_seconds", dict(labels, stat=stat), (job.get("iterations") or {}).get(stat))
    fam.add("aifabric_job_iteration_cv_ratio", labels, job.get("cv"))
    fam.add("aifabric_job_max_deviation_ratio", labels, job.get("max_deviation"))
    fam.add("aifabric_job_jct_ratio", labels, (job.get("roofline") or {}).get("jct_ratio"))
    for c in job.get("collectives") or []:
        if c.get("busbw_GBps") is not None:
            cl = dict(labels, collective=str(c.get("index")), op=c.get("op") or "", algorithm=c.get("algorithm") or "")
            fam.add("aifabric_job_collective_busbw_bytes_per_second", cl, round(c["busbw_GBps"] * 1e9, 3))


def metrics_text(report):
    """metrics.prom's text for ``report`` (``build.analyze_run``'s result)."""
    fam = _Families()
    run = os.path.basename(os.path.normpath(report.get("run_dir") or "")) or "run"
    base = {"run": run}
    gates = report.get("gates") or {}
    fam.add("aifabric_run_ok", base, report.get("status") == "ok" and gates.get("status") != "broken")
    when, _label = stamp_of(report.get("run_dir") or "")
    if when is not None:
        fam.add("aifabric_run_timestamp_seconds", base, int(time.mktime(when)))
    if gates:
        fam.add("aifabric_run_gates_broken", base, len(gates.get("broken") or []))
    experiments = _experiments_of(report)
    for s in report.get("steps") or []:
        experiment, pattern = experiments.get(s["step"], (s["step"], ""))
        labels = dict(base, experiment=experiment, step=s["step"], kind=s.get("kind") or "barrier", pattern=pattern)
        fam.add("aifabric_step_ok", labels, s["status"] == "ok")
        for name, key in (("aifabric_step_seconds", "step_s"), ("aifabric_step_predicted_seconds", "predicted_step_s"),
                          ("aifabric_step_fair_seconds", "fair_step_s"),
                          ("aifabric_step_mean_completion_seconds", "mean_completion_s"),
                          ("aifabric_step_unthrottled_idle_ratio", "unthrottled_idle_share"),
                          ("aifabric_step_throttled_idle_ratio", "throttled_idle_share"),
                          ("aifabric_step_start_skew_seconds", "start_skew_s")):
            fam.add(name, labels, s.get(key))
        if s["status"] == "ok":
            fam.add("aifabric_step_idle_worker_seconds", labels, s.get("idle_worker_seconds"))
            if s.get("aggregate_gbps") is not None:
                fam.add("aifabric_step_goodput_bits_per_second", labels, round(s["aggregate_gbps"] * 1e9, 3))
        for lb_set in ((s.get("fabric") or {}).get("load_balance") or {}).get("sets") or []:
            for by in ("flows", "bytes"):
                ll = dict(labels, set=lb_set["set"], by=by)
                fam.add("aifabric_step_fabric_mmr_ratio", ll, lb_set.get(by + "_mmr"))
                fam.add("aifabric_step_fabric_jfi_ratio", ll, lb_set.get(by + "_jfi"))
        straggler = s.get("straggler")
        if straggler:  # a job's straggler is {host, cause}: who was waited for most, not a completion
            fam.add("aifabric_step_straggler_seconds", dict(labels, host=straggler["host"]),
                    straggler.get("completion_s"))
            fam.add("aifabric_step_straggler_behind_next_seconds", dict(labels, host=straggler["host"]),
                    straggler.get("behind_next_s"))
        _job_metrics(fam, labels, s.get("job"))
        if s.get("refused") is not None:
            fam.add("aifabric_step_refused_connections", labels, s["refused_total"])
        counters = s.get("counters")
        if counters:
            hosts = counters.get("hosts") or {}
            clean = not counters.get("disagreements") and not any((c.get("errors") or {}) for c in hosts.values())
            fam.add("aifabric_step_counters_clean", dict(labels, verdict=counters.get("verdict") or ""), clean)
            for host, c in sorted(hosts.items()):
                fam.add("aifabric_step_counters_errors", dict(labels, host=host), sum((c.get("errors") or {}).values()))
                fam.add("aifabric_step_counters_congestion", dict(labels, host=host),
                        sum((c.get("congestion") or {}).values()))
        for w in s.get("workers") or []:
            wl = dict(labels, host=w["host"])
            fam.add("aifabric_worker_completion_seconds", wl, w.get("completion_s"))
            fam.add("aifabric_worker_idle_ratio", wl, w.get("idle_share"))
            if w.get("gbps") is not None:
                fam.add("aifabric_worker_goodput_bits_per_second", wl, round(w["gbps"] * 1e9, 3))
    repeat = {r["experiment"]: r for r in (report.get("test_report") or {}).get("repeatability") or []}
    for e in report.get("experiments") or []:
        el = dict(base, experiment=e["name"], pattern=e.get("pattern") or "")
        for stat, value in sorted((e.get("step_s") or {}).items()) if e.get("steps", 0) > 1 else []:
            fam.add("aifabric_experiment_step_seconds", dict(el, stat=stat), value)
        if repeat.get(e["name"], {}).get("cv") is not None:
            fam.add("aifabric_experiment_step_cv_ratio", el, repeat[e["name"]]["cv"])
        c = e.get("collective")
        for r in (c or {}).get("repetitions") or []:
            if r["status"] != "ok":
                continue
            cl = dict(el, collective=c["name"], repetition=str(r["repetition"]))
            fam.add("aifabric_collective_seconds", cl, r["time_s"])
            fam.add("aifabric_collective_algbw_bytes_per_second", cl, round(r["algbw_GBps"] * 1e9, 3))
            fam.add("aifabric_collective_busbw_bytes_per_second", cl, round(r["busbw_GBps"] * 1e9, 3))
    return fam.text()
