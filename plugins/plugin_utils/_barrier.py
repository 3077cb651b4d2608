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

SCHEMA_VERSION = 2


class BarrierInputError(ValueError):
    """Flow records the analysis cannot use; the message says which and why."""


def _rate(value, where):
    try:
        return parse_rate(value, where, minimum=1)
    except UnitError as exc:
        raise BarrierInputError(str(exc)) from None


def _key(rec):
    return (rec["host"], rec.get("flow_id") or rec["host"])


def _predict(records):
    """Max-min prediction per flow (keyed by host and flow id) from each record's annotations (``path`` of links with
    rates, ``mtu``)."""
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
        flows[_key(rec)] = ids
        volumes[_key(rec)] = volume
        factors[_key(rec)] = _factor(ann)
    predicted = predict_completions(flows, links, volumes, factors)
    # perftest's measured set-up (before its first packet on the wire) and tear-down (after its last) are added:
    # fair share predicts the transfer, the part the fabric decides
    for rec in records:
        if _key(rec) in predicted:
            predicted[_key(rec)] += _overhead(rec)
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


DEFAULT_LATE_BOUND = 0.01  # a start later than 1% of the predicted step could distort the step's figures


def _late_bound(records, predicted_step, measured_step):
    """The lateness bound in seconds and the sentence that says where it comes from. ``late_bound`` (annotation) is
    a share of the predicted step (default 1%), or a duration like ``5ms``; without a prediction, of the step."""
    raw = next(((r.get("annotations") or {}).get("late_bound") for r in records
                if (r.get("annotations") or {}).get("late_bound") is not None), DEFAULT_LATE_BOUND)
    if isinstance(raw, str) and raw.strip().endswith("s"):
        text = raw.strip()
        try:
            value = float(text[:-2]) / 1000 if text.endswith("ms") else float(text[:-1])
        except ValueError:
            raise BarrierInputError("late_bound: %r; give a share of the predicted step (0.01) or a duration like "
                                    "5ms" % raw) from None
        return value, "%s, as set" % text
    try:
        share = float(raw)
    except (TypeError, ValueError):
        raise BarrierInputError("late_bound: %r; give a share of the predicted step (0.01) or a duration like 5ms"
                                % (raw,)) from None
    base, what = (predicted_step, "predicted") if predicted_step else (measured_step, "measured")
    if not base:
        return None, "no step time to relate lateness to"
    return share * base, "%g%% of the %s step %.3f s" % (share * 100, what, base)


def _percentile(values, q):
    ordered = sorted(values)
    if not ordered:
        return None
    rank = q * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _host_entry(host, flows, ok_keys, predicted):
    """One worker's line: its last flow's completion, all its bytes; with several flows, each flow beside it."""
    ann = (flows[0].get("annotations") or {})
    ok = all(_key(f) in ok_keys for f in flows)
    bad = [f for f in flows if _key(f) not in ok_keys]
    entry = {
        "host": host,
        "status": "ok" if ok else (bad[0].get("status") or "error"),
        "bytes": sum(f.get("bytes") or 0 for f in flows),
        "completion_s": max(f["completion_s"] for f in flows) if ok else None,
        "late_s": max((f["late_s"] for f in flows if f.get("late_s") is not None), default=None),
        "start": min((f["start"] for f in flows if f.get("start") is not None), default=None),
        "throttle": ann.get("throttle"),
        "predicted_s": None,
        "error": "; ".join("%s%s" % ("" if len(flows) == 1 else "flow %s: " % f.get("flow_id"),
                                     f.get("error") or "no result") for f in bad) or None,
    }
    if ok:
        entry["gbps"] = flows[0].get("gbps") if len(flows) == 1 else round(
            entry["bytes"] * 8 / entry["completion_s"] / 1e9, 6) if entry["completion_s"] else 0.0
    else:
        entry["gbps"] = None
    if predicted and all(_key(f) in predicted for f in flows):
        entry["predicted_s"] = round(max(predicted[_key(f)] for f in flows), 6)
    if len(flows) > 1:
        entry["flows"] = [{"flow_id": f.get("flow_id"), "status": f.get("status"), "bytes": f.get("bytes"),
                           "completion_s": f.get("completion_s"), "gbps": f.get("gbps"), "late_s": f.get("late_s"),
                           "predicted_s": round(predicted[_key(f)], 6) if predicted and _key(f) in predicted
                           else None} for f in flows]
    return entry


def analyze_step(records, baseline_gbps=None, bottleneck=None, name=None):
    """Analyse one step. ``records``: one dict per flow (see module docstring); a host may send several flows
    (``flow_id`` tells them apart) and completes with its last. Returns the report dict."""
    if not records:
        raise BarrierInputError("no flow results for this step: did the client task run on any worker?")
    seen = set()
    for rec in records:
        if "host" not in rec:
            raise BarrierInputError("a flow record has no 'host': %r" % sorted(rec))
        if _key(rec) in seen:
            raise BarrierInputError("flow %s of host %s appears twice in one step" % (_key(rec)[1], rec["host"]))
        seen.add(_key(rec))
    hosts_seen = {r["host"] for r in records}
    expected = set()
    for rec in records:
        expected.update((rec.get("annotations") or {}).get("expected_workers") or [])
    for host in sorted(expected - hosts_seen):
        # A worker the step expected but that never reported (the controller was interrupted, the result was lost):
        # without it the step cannot be timed.
        records.append({"host": host, "status": "missing",
                        "error": "no result: the step expected this worker but its flow never reported "
                                 "(interrupted run or lost result)"})
    records = sorted(records, key=_key)
    ok = [r for r in records if r.get("status") == "ok" and r.get("completion_s") is not None]
    ok_keys = {_key(r) for r in ok}
    if bottleneck is None:
        bottleneck = next(((r.get("annotations") or {}).get("bottleneck") for r in records
                           if (r.get("annotations") or {}).get("bottleneck")), None)
    report = {
        "schema_version": SCHEMA_VERSION,
        "step": name or next(((r.get("annotations") or {}).get("step") for r in records), None) or "step",
        "bottleneck": bottleneck,
        "baseline_gbps": baseline_gbps,
    }
    try:
        predicted = _predict(records)
    except BarrierInputError as exc:
        predicted = None
        report["prediction_unavailable"] = str(exc)
    by_host = {}
    for rec in records:
        by_host.setdefault(rec["host"], []).append(rec)
    workers = [_host_entry(host, flows, ok_keys, predicted) for host, flows in sorted(by_host.items())]
    if predicted:
        report["predicted_step_s"] = round(max(predicted.values()), 6)
    # Lateness: every flow's start minus the common instant, each in its host's clock. The spread of those is the
    # start skew; a start later than the bound fails the step (its figures would be distorted), and says so.
    lates = [r["late_s"] for r in ok if r.get("late_s") is not None]
    measured = max((r["completion_s"] for r in ok), default=None)
    bound, basis = _late_bound(records, report.get("predicted_step_s"), measured)
    report.update(late_p50_s=_round(_percentile(lates, 0.5)), late_max_s=_round(max(lates, default=None)),
                  late_bound_s=_round(bound), late_bound_basis=basis,
                  start_skew_s=round(max(lates) - min(lates), 6) if len(lates) > 1 else 0.0)
    if bound is not None:
        for entry in workers:
            if entry["status"] == "ok" and entry["late_s"] is not None and entry["late_s"] > bound:
                entry["status"] = "late"
                entry["error"] = ("started %.6f s after the common instant, more than the lateness bound %.6f s "
                                  "(%s): its completion, and the others' share of the bottleneck while it was "
                                  "missing, would be distorted" % (entry["late_s"], bound, basis))
    failed = [w for w in workers if w["status"] != "ok"]
    ok_workers = [w for w in workers if w["status"] == "ok"]
    report.update(status="ok" if not failed else "failed", workers_expected=len(workers),
                  workers_completed=len(ok_workers),
                  failed=[{"host": w["host"], "status": w["status"], "cause": w["error"] or "no result"}
                          for w in failed])
    for entry in workers:
        if entry["status"] != "ok":
            entry["completion_s"] = None
            entry["gbps"] = None
    report["workers"] = workers
    if failed:
        report.update(step_s=None, mean_completion_s=None, straggler=None, unthrottled_idle_share=None,
                      throttled_idle_share=None,
                      verdict="step failed: %s" % "; ".join(
                          "%s %s" % (f["host"], f["cause"]) for f in report["failed"]))
        return report

    times = [w["completion_s"] for w in ok_workers]
    step = max(times)
    mean = sum(times) / len(times)
    slowest = max(ok_workers, key=lambda w: w["completion_s"])
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
    others = [w for w in ok_workers if w is not slowest]
    slowest_rec = by_host[slowest["host"]][0]
    cause = _cause(slowest_rec)
    if cause is None and slowest["predicted_s"]:
        cause = "no throttle applied; %.1f%% slower than its fair share predicts" % (
            (slowest["completion_s"] / slowest["predicted_s"] - 1) * 100)
    report["straggler"] = {
        "host": slowest["host"],
        "completion_s": slowest["completion_s"],
        "behind_next_s": round(step - max((w["completion_s"] for w in others), default=step), 6),
        "cause": cause or "no throttle applied",
    }
    # The idle figures keep apart the workers that only waited (no throttle of their own) from the other throttled
    # ones: a second throttled worker also waits for the straggler, but it is not a healthy worker.
    report["unthrottled_idle_share"] = _mean_idle([w for w in others if not w.get("throttle")], step)
    report["throttled_idle_share"] = _mean_idle([w for w in others if w.get("throttle")], step)
    if report["unthrottled_idle_share"] is not None:
        idle = "the unthrottled workers sat idle %.0f%% of the step" % (report["unthrottled_idle_share"] * 100)
    else:
        idle = "every other worker is throttled too" if others else "no other worker waited"
    if report["throttled_idle_share"] is not None:
        idle += ", the other throttled workers %.0f%%" % (report["throttled_idle_share"] * 100)
    report["verdict"] = "step %.2f s = the straggler %s, %s; the mean %.2f s understates it by %.0f%%; %s" % (
        step, slowest["host"], report["straggler"]["cause"], mean, report["mean_understates_share"] * 100, idle)
    return report


def _mean_idle(workers, step):
    """The mean idle share of ``workers`` (None when there are none)."""
    if not workers or step <= 0:
        return None
    return round(sum(w["idle_share"] for w in workers) / len(workers), 6)


def _round(value):
    return None if value is None else round(value, 6)
