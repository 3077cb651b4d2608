# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Barrier analysis: a collective step ends when its slowest worker ends.

Input is one record per worker: the ``flow`` module's client result plus ``host`` (and ``status``/``error`` for
workers that failed or were unreachable). Completion times come from the hosts' own clocks (``completion_s`` =
confirmed last byte minus the common start instant), never from when results reached the controller.

A step with any failed worker is *failed*: it has no step time, because a maximum over the survivors would report a
fast step that never happened. The failed hosts and causes are listed and the completed flows are kept.
"""

from __future__ import annotations

from ansible_collections.aifabric.lab.plugins.module_utils._units import UnitError, format_rate, parse_rate
from ansible_collections.aifabric.lab.plugins.plugin_utils._fair_share import goodput_factor, predict_completions

__all__ = ["analyze_step", "BarrierInputError", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1


class BarrierInputError(ValueError):
    """Flow records the analysis cannot use; the message says which and why."""


def _rate(value, where):
    try:
        return parse_rate(value, where, minimum=1)
    except UnitError as exc:
        raise BarrierInputError(str(exc)) from None


def _predict(records):
    """Max-min prediction from each record's annotations (``path`` of links with rates, ``mtu``)."""
    flows, links, volumes, factors = {}, {}, {}, {}
    for rec in records:
        ann = rec.get("annotations") or {}
        path = ann.get("path")
        volume = rec.get("volume_bytes")
        if not path or not volume:
            return None
        ids = []
        for hop in path:
            link = hop.get("link")
            if not link or hop.get("rate") is None:
                raise BarrierInputError("host %s: every path hop needs 'link' and 'rate' (got %r)" % (rec["host"], hop))
            cap = _rate(hop["rate"], "host %s path link %s rate" % (rec["host"], link))
            if link in links and links[link] != cap:
                raise BarrierInputError(
                    "link %s has two rates: %s and %s; every flow must describe a link the same way"
                    % (link, format_rate(links[link]), format_rate(cap)))
            links[link] = cap
            ids.append(link)
        flows[rec["host"]] = ids
        volumes[rec["host"]] = volume
        factors[rec["host"]] = _factor(ann)
    predicted = predict_completions(flows, links, volumes, factors)
    # perftest's measured set-up (before its first packet on the wire) and tear-down (after its last) are added:
    # fair share predicts the transfer, the part the fabric decides
    for rec in records:
        if rec["host"] in predicted:
            predicted[rec["host"]] += _overhead(rec)
    return predicted


def _overhead(rec):
    return (rec.get("setup_s") or 0.0) + (rec.get("teardown_s") or 0.0)


def _factor(ann):
    """Payload share of the wire: the plan's own figure (perftest: RoCE headers per RDMA MTU) or TCP's at the MTU."""
    if ann.get("goodput_factor"):
        return float(ann["goodput_factor"])
    return goodput_factor(int(ann["mtu"])) if ann.get("mtu") else 1.0


def _cause(rec):
    ann = rec.get("annotations") or {}
    throttle = ann.get("throttle")
    if throttle:
        how = ann.get("throttle_mechanism")
        return "throttled to %s%s" % (throttle, " (%s)" % how if how else "")
    return None


def analyze_step(records, baseline_gbps=None, bottleneck=None, name=None):
    """Analyse one step. ``records``: list of per-worker dicts (see module docstring). Returns the report dict."""
    if not records:
        raise BarrierInputError("no flow results for this step: did the client task run on any worker?")
    seen = set()
    for rec in records:
        if "host" not in rec:
            raise BarrierInputError("a flow record has no 'host': %r" % sorted(rec))
        if rec["host"] in seen:
            raise BarrierInputError("host %s appears twice in one step" % rec["host"])
        seen.add(rec["host"])
    expected = set()
    for rec in records:
        expected.update((rec.get("annotations") or {}).get("expected_workers") or [])
    for host in sorted(expected - seen):
        # A worker the step expected but that never reported (the controller was interrupted, the result was lost):
        # without it the step cannot be timed.
        records.append({"host": host, "status": "missing",
                        "error": "no result: the step expected this worker but its flow never reported "
                                 "(interrupted run or lost result)"})
    records = sorted(records, key=lambda r: r["host"])
    ok = [r for r in records if r.get("status") == "ok" and r.get("completion_s") is not None]
    failed = [r for r in records if r not in ok]
    if bottleneck is None:
        bottleneck = next(((r.get("annotations") or {}).get("bottleneck") for r in records
                           if (r.get("annotations") or {}).get("bottleneck")), None)
    report = {
        "schema_version": SCHEMA_VERSION,
        "step": name or next(((r.get("annotations") or {}).get("step") for r in records), None) or "step",
        "status": "ok" if not failed else "failed",
        "workers_expected": len(records),
        "workers_completed": len(ok),
        "failed": [{"host": r["host"], "status": r.get("status") or "error", "cause": r.get("error") or "no result"}
                   for r in failed],
        "bottleneck": bottleneck,
        "baseline_gbps": baseline_gbps,
    }
    try:
        predicted = _predict(records)
    except BarrierInputError as exc:
        predicted = None
        report["prediction_error"] = str(exc)
    workers = []
    for rec in records:
        ann = rec.get("annotations") or {}
        entry = {
            "host": rec["host"],
            "status": rec.get("status") or "error",
            "bytes": rec.get("bytes"),
            "completion_s": rec.get("completion_s") if rec in ok else None,
            "gbps": rec.get("gbps") if rec in ok else None,
            "late_s": rec.get("late_s"),
            "start": rec.get("start"),
            "throttle": ann.get("throttle"),
            "predicted_s": round(predicted[rec["host"]], 6) if predicted and rec["host"] in predicted else None,
            "error": rec.get("error"),
        }
        workers.append(entry)
    report["workers"] = workers
    starts = [r["start"] for r in ok if r.get("start") is not None]
    report["start_skew_s"] = round(max(starts) - min(starts), 6) if len(starts) > 1 else 0.0
    if predicted:
        report["predicted_step_s"] = round(max(predicted.values()), 6)
    if failed:
        report.update(step_s=None, mean_completion_s=None, straggler=None,
                      verdict="step failed: %s" % "; ".join(
                          "%s %s" % (f["host"], f["cause"]) for f in report["failed"]))
        return report

    times = [r["completion_s"] for r in ok]
    step = max(times)
    mean = sum(times) / len(times)
    slowest = max(ok, key=lambda r: r["completion_s"])
    for entry in workers:
        entry["idle_s"] = round(step - entry["completion_s"], 6)
        entry["idle_share"] = round((step - entry["completion_s"]) / step, 6) if step > 0 else 0.0
        if entry["predicted_s"]:
            entry["prediction_error"] = round(entry["completion_s"] / entry["predicted_s"] - 1, 6)
    total_bytes = sum(r.get("bytes") or 0 for r in ok)
    report.update(
        step_s=round(step, 6),
        mean_completion_s=round(mean, 6),
        mean_understates_s=round(step - mean, 6),
        mean_understates_share=round((step - mean) / step, 6) if step > 0 else 0.0,
        sum_of_flow_gbps=round(sum(r.get("gbps") or 0 for r in ok), 6),
        aggregate_gbps=round(total_bytes * 8 / step / 1e9, 6) if step > 0 else None,
        idle_worker_seconds=round(sum(step - t for t in times), 6),
    )
    if bottleneck:
        cap = _rate(bottleneck, "bottleneck") / 1e9
        report["bottleneck_gbps"] = cap
        report["sum_of_flow_share_of_bottleneck"] = round(report["sum_of_flow_gbps"] / cap, 6)
        # the step with nobody throttled: every byte through the bottleneck at its payload rate
        factor = _factor(next((r.get("annotations") or {} for r in ok), {}))
        report["fair_step_s"] = round(total_bytes * 8 / (cap * 1e9 * factor) + max(_overhead(r) for r in ok), 6)
    if baseline_gbps:
        report["sum_of_flow_vs_baseline"] = round(report["sum_of_flow_gbps"] / baseline_gbps, 6)
    healthy = [r for r in ok if r is not slowest]
    cause = _cause(slowest)
    if cause is None and predicted:
        cause = "no throttle applied; %.1f%% slower than its fair share predicts" % (
            (slowest["completion_s"] / predicted[slowest["host"]] - 1) * 100)
    report["straggler"] = {
        "host": slowest["host"],
        "completion_s": slowest["completion_s"],
        "behind_next_s": round(step - max((r["completion_s"] for r in healthy), default=step), 6),
        "cause": cause or "no throttle applied",
    }
    healthy_idle = [(step - r["completion_s"]) / step for r in healthy] if step > 0 else []
    report["healthy_idle_share"] = round(sum(healthy_idle) / len(healthy_idle), 6) if healthy_idle else 0.0
    report["verdict"] = "step %.2f s = the straggler %s, %s; the mean %.2f s understates it by %.0f%%; " \
        "the other workers sat idle %.0f%% of the step" % (
            step, slowest["host"], report["straggler"]["cause"], mean, report["mean_understates_share"] * 100,
            report["healthy_idle_share"] * 100)
    return report
