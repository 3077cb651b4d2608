# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Barrier analysis: a collective step ends when its slowest worker ends.

Input is one ``_run.Step``: its flows' measurements (``Flow``: one per flow, with ``status``/``error`` for flows that
failed or were unreachable) and what the plan says of it (``StepPlan``: each flow's path and throttle, the
bottleneck, the expected workers). Completion times come from the hosts' own clocks (``completion_s`` = confirmed
last byte minus the common start instant), never from when results reached the controller.

A step with any failed worker is *failed*: it has no step time, because a maximum over the survivors would report a
fast step that never happened. The failed hosts and causes are listed and the completed flows are kept.
"""

from __future__ import annotations

from ansible_collections.aifabric.lab.plugins.module_utils._units import UnitError, format_rate, format_size, parse_rate
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.convergence import step_convergence
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.counters import step_counters
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.ecn import step_ecn
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.events import report_events
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.fabric import analyze_fabric, relay_books
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.stats import (
    idle_share,
    mean_idle_share,
    percentile,
)
from ansible_collections.aifabric.lab.plugins.plugin_utils._model.fair_share import goodput_factor, predict_completions
from ansible_collections.aifabric.lab.plugins.plugin_utils._model.simulate import simulate
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.expect import LateBoundError, parse_late_bound
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import throttle_link
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.model import Flow, Step, StepPlan

__all__ = ["analyze_step", "analyze_records", "BarrierInputError", "SCHEMA_VERSION"]

SCHEMA_VERSION = 2


class BarrierInputError(ValueError):
    """Flow records the analysis cannot use; the message says which and why."""


def _rate(value, where):
    try:
        return parse_rate(value, where, minimum=1)
    except UnitError as exc:
        raise BarrierInputError(str(exc)) from None


def _predict(step, without_throttles=False, model=False):
    """Max-min prediction per flow (keyed by host and flow id) from the plan's path of every flow (links with rates)
    and its MTU; ``without_throttles``: the same step with every throttle lifted. ``model``: also the model itself,
    ``(predicted, {flows, links, volumes, factors, completions})``, keyed by flow or (host, flow_id, stream)."""
    flows, links, volumes, factors, starts = {}, {}, {}, {}, {}
    parts = {}  # a flow's keys in the model: itself, or one per subflow (a stream on the fabric lab)
    for flow in step.flows:
        planned = step.planned(flow)
        if not (planned.path or planned.path_error or planned.subflows) or not flow.volume_bytes:
            return None
        pieces = [(flow.key, planned.path, planned.path_error, 1.0)] if not planned.subflows else [
            (flow.key + (i,), sub.path, sub.path_error, sub.share) for i, sub in enumerate(planned.subflows)]
        parts[flow.key] = [piece[0] for piece in pieces]
        for key, path, path_error, share in pieces:
            ids = []
            for hop in path:
                if without_throttles and (hop.throttle or hop.link == throttle_link(flow.host)):
                    continue  # (runs before the flag: the throttle's link is "<host> egress")
                cap = _rate(hop.rate, "host %s path link %s rate" % (flow.host, hop.link))
                if hop.link in links and links[hop.link] != cap:
                    raise BarrierInputError(
                        "link %s has two rates: %s and %s; every flow must describe a link the same way"
                        % (hop.link, format_rate(links[hop.link]), format_rate(cap)))
                links[hop.link] = cap
                ids.append(hop.link)
            if path_error:  # the path's dict form stopped at a hop without link or rate (read_path)
                raise BarrierInputError(path_error)
            flows[key] = ids
            volumes[key] = flow.volume_bytes * share
            factors[key] = _factor(planned)
            if planned.start_offset:
                starts[key] = planned.start_offset
    if step.plan.fabric:
        # the fabric lab's prediction is the flow-level simulator's (the same model, vectorised: _model.simulate)
        completions = simulate(links, flows, volumes, starts=starts or None, factors=factors).completions()
    else:
        completions = predict_completions(flows, links, volumes, factors, starts=starts or None)
    predicted = {key: max(completions[k] for k in keys) for key, keys in parts.items()}
    if model:
        return predicted, {"flows": flows, "links": links, "volumes": volumes, "factors": factors,
                           "completions": completions, "starts": starts}
    # perftest's measured set-up (before its first packet on the wire) and tear-down (after its last) are added:
    # fair share predicts the transfer, the part the fabric decides
    for flow in step.flows:
        if flow.key in predicted:
            predicted[flow.key] += _overhead(flow)
    return predicted


def _overhead(flow):
    return (flow.setup_s or 0.0) + (flow.teardown_s or 0.0)


def _factor(planned):
    """Payload share of the wire: the plan's own figure (perftest: RoCE headers per RDMA MTU) or TCP's at the MTU."""
    if planned.goodput_factor:
        return float(planned.goodput_factor)
    return goodput_factor(int(planned.mtu)) if planned.mtu else 1.0


def _cause(planned):
    if planned.throttle:
        how = planned.throttle_mechanism
        return "throttled to %s%s" % (planned.throttle, " (%s)" % how if how else "")
    return None


def _late_bound(raw, predicted_step, measured_step):
    """The lateness bound in seconds and the sentence that says where it comes from. ``late_bound`` (the plan's) is
    a share of the predicted step (default 1%), or a duration like ``5ms``; without a prediction, of the step."""
    try:
        bound = parse_late_bound(raw)
    except LateBoundError as exc:
        raise BarrierInputError(str(exc)) from None
    if isinstance(bound, str):
        value = float(bound[:-2]) / 1000 if bound.endswith("ms") else float(bound[:-1])
        return value, "%s, as set" % bound
    base, what = (predicted_step, "predicted") if predicted_step else (measured_step, "measured")
    if not base:
        return None, "no step time to relate lateness to"
    return bound * base, "%g%% of the %s step %.3f s" % (bound * 100, what, base)


def _host_entry(step, host, flows, ok_keys, predicted):
    """One worker's line: its last flow's completion, all its bytes; with several flows, each flow beside it."""
    ok = all(f.key in ok_keys for f in flows)
    bad = [f for f in flows if f.key not in ok_keys]
    entry = {
        "host": host,
        "status": "ok" if ok else (bad[0].status or "error"),
        "bytes": sum(f.bytes or 0 for f in flows),
        "completion_s": max(f.completion_s for f in flows) if ok else None,
        "late_s": max((f.late_s for f in flows if f.late_s is not None), default=None),
        "start": min((f.start for f in flows if f.start is not None), default=None),
        "throttle": step.planned(flows[0]).throttle,
        "predicted_s": None,
        "error": "; ".join("%s%s" % ("" if len(flows) == 1 else "flow %s: " % f.flow_id, f.error or "no result")
                           for f in bad) or None,
    }
    retrans = [f.extra.get("retransmits") for f in flows if (f.extra or {}).get("retransmits") is not None]
    if retrans:
        # what the kernel retransmitted for the host's flows: on the wire (and in its books) beside the payload
        entry["retransmits"] = sum(retrans)
        entry["retrans_bytes"] = sum(int(f.extra.get("bytes_retrans") or 0) for f in flows)
        if entry["bytes"]:
            entry["retrans_share"] = round(entry["retrans_bytes"] / float(entry["bytes"] + entry["retrans_bytes"]), 6)
    if ok:
        entry["gbps"] = flows[0].gbps if len(flows) == 1 else round(
            entry["bytes"] * 8 / entry["completion_s"] / 1e9, 6) if entry["completion_s"] else 0.0
    else:
        entry["gbps"] = None
    if predicted and all(f.key in predicted for f in flows):
        entry["predicted_s"] = round(max(predicted[f.key] for f in flows), 6)
    if len(flows) > 1:
        entry["flows"] = [{"flow_id": f.flow_id, "status": f.status, "bytes": f.bytes,
                           "completion_s": f.completion_s, "gbps": f.gbps, "late_s": f.late_s,
                           "predicted_s": round(predicted[f.key], 6) if predicted and f.key in predicted
                           else None, **_samples(f)} for f in flows]
    else:
        entry.update(_samples(flows[0]))
    return entry


def _samples(flow):
    """``{"samples": [{t, gbps}]}``: the flow's interval samples without their bytes, retransmits and RTT (the flow's
    file keeps those), t in seconds since the flow's own first byte; nothing when its engine took none."""
    if not flow.samples:
        return {}
    return {"samples": [{"t": x.get("t"), "gbps": x.get("gbps")} for x in flow.samples if isinstance(x, dict)]}


def analyze_records(records, baseline_gbps=None, bottleneck=None, name=None):
    """``analyze_step`` of flow records that describe their step themselves (``annotations``: the path, throttle,
    MTU, bottleneck, expected workers), as plain ``flow`` tasks and the ``barrier_analysis`` filter give them."""
    if not records:
        raise BarrierInputError("no flow results for this step: did the client task run on any worker?")
    for rec in records:
        if "host" not in rec:
            raise BarrierInputError("a flow record has no 'host': %r" % sorted(rec))
    plan = StepPlan.from_annotations(records)
    if bottleneck is not None:
        plan.bottleneck = bottleneck
    name = name or next(((r.get("annotations") or {}).get("step") for r in records
                         if isinstance(r.get("annotations"), dict)), None) or "step"
    return analyze_step(Step(name=name, plan=plan, flows=[Flow.from_record(r) for r in records]),
                        baseline_gbps=baseline_gbps)


def analyze_step(step, baseline_gbps=None):
    """Analyse one step (a ``_run.Step``): a host may send several flows (``flow_id`` tells them apart) and completes
    with its last. Returns the step's report dict."""
    if not step.flows:
        raise BarrierInputError("no flow results for step %s: did the client task run on any worker?" % step.name)
    seen = set()
    for flow in step.flows:
        if flow.key in seen:
            raise BarrierInputError("flow %s of host %s appears twice in one step" % (flow.flow_id, flow.host))
        seen.add(flow.key)
    hosts_seen = {f.host for f in step.flows}
    flows = list(step.flows)
    for host in sorted(set(step.plan.expected_workers) - hosts_seen):
        # A worker the step expected but that never reported (the controller was interrupted, the result was lost):
        # without it the step cannot be timed.
        flows.append(Flow(host=host, flow_id=host, status="missing",
                          error="no result: the step expected this worker but its flow never reported "
                                "(interrupted run or lost result)"))
    step = Step(name=step.name, plan=step.plan, flows=sorted(flows, key=lambda f: f.key), counters=step.counters,
                start=step.start, events=step.events)
    ok = [f for f in step.flows if f.ok]
    ok_keys = {f.key for f in ok}
    bottleneck = step.plan.bottleneck
    report = {
        "schema_version": SCHEMA_VERSION,
        "step": step.name,
        "kind": "baseline" if step.plan.kind == "baseline" else "barrier",
        "bottleneck": bottleneck,
        "baseline_gbps": baseline_gbps,
    }
    if step.start:
        report["start"] = step.start
    report.update(report_events(step.events))
    try:
        predicted = _predict(step)
    except BarrierInputError as exc:
        predicted = None
        report["prediction_unavailable"] = str(exc)
    by_host = {}
    for flow in step.flows:
        by_host.setdefault(flow.host, []).append(flow)
    workers = [_host_entry(step, host, fl, ok_keys, predicted) for host, fl in sorted(by_host.items())]
    if predicted:
        report["predicted_step_s"] = round(max(predicted.values()), 6)
        unthrottled = _predict(step, without_throttles=True)
        if unthrottled:
            report["predicted_unthrottled_step_s"] = round(max(unthrottled.values()), 6)
    # Lateness: every flow's start minus the common instant, each in its host's clock. The spread of those is the
    # start skew; a start later than the bound fails the step (its figures would be distorted), and says so.
    lates = [f.late_s for f in ok if f.late_s is not None]
    measured = max((f.completion_s for f in ok), default=None)
    bound, basis = _late_bound(step.plan.late_bound, report.get("predicted_step_s"), measured)
    report.update(late_p50_s=_round(percentile(lates, 0.5)), late_max_s=_round(max(lates, default=None)),
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
        return _with_convergence(_with_fabric(_with_counters(report, step), step), step)

    times = [w["completion_s"] for w in ok_workers]
    step_s = max(times)
    mean = sum(times) / len(times)
    slowest = max(ok_workers, key=lambda w: w["completion_s"])
    for entry in workers:
        entry["idle_s"] = round(step_s - entry["completion_s"], 6)
        entry["idle_share"] = idle_share(step_s, entry["completion_s"])
        if entry["predicted_s"]:
            entry["prediction_error"] = round(entry["completion_s"] / entry["predicted_s"] - 1, 6)
    total_bytes = sum(f.bytes or 0 for f in ok)
    report.update(
        step_s=round(step_s, 6),
        mean_completion_s=round(mean, 6),
        mean_understates_s=round(step_s - mean, 6),
        mean_understates_share=round((step_s - mean) / step_s, 6) if step_s > 0 else 0.0,
        sum_of_flow_gbps=round(sum(f.gbps or 0 for f in ok), 6),
        aggregate_gbps=round(total_bytes * 8 / step_s / 1e9, 6) if step_s > 0 else None,
        idle_worker_seconds=round(sum(step_s - t for t in times), 6),
    )
    if bottleneck:
        cap = _rate(bottleneck, "bottleneck") / 1e9
        report["bottleneck_gbps"] = cap
        report["sum_of_flow_share_of_bottleneck"] = round(report["sum_of_flow_gbps"] / cap, 6)
        # the step with nobody throttled: every byte through the bottleneck at its payload rate
        factor = _factor(step.planned(ok[0]))
        report["fair_step_s"] = round(total_bytes * 8 / (cap * 1e9 * factor) + max(_overhead(f) for f in ok), 6)
    elif report.get("predicted_unthrottled_step_s"):
        # no single shared link (ring, all-to-all, ...): the fair step is the same step predicted without throttles
        report["fair_step_s"] = report["predicted_unthrottled_step_s"]
    if baseline_gbps:
        report["sum_of_flow_vs_baseline"] = round(report["sum_of_flow_gbps"] / baseline_gbps, 6)
    others = [w for w in ok_workers if w is not slowest]
    cause = _cause(step.planned(by_host[slowest["host"]][0]))
    retrans = _retrans_cause(slowest, others)
    if cause and retrans:
        cause += "; %s" % retrans
    if cause is None and slowest["predicted_s"]:
        off = slowest["completion_s"] / slowest["predicted_s"] - 1
        cause = "no throttle applied; %.1f%% %s than its fair share predicts" % (
            abs(off) * 100, "slower" if off >= 0 else "faster")
    if cause is None and retrans:
        cause = retrans
    report["straggler"] = {
        "host": slowest["host"],
        "completion_s": slowest["completion_s"],
        "behind_next_s": round(step_s - max((w["completion_s"] for w in others), default=step_s), 6),
        "cause": cause or "no throttle applied",
    }
    # The idle figures keep apart the workers that only waited (no throttle of their own) from the other throttled
    # ones: a second throttled worker also waits for the straggler, but it is not a healthy worker.
    report["unthrottled_idle_share"] = mean_idle_share([w for w in others if not w.get("throttle")]) \
        if step_s > 0 else None
    report["throttled_idle_share"] = mean_idle_share([w for w in others if w.get("throttle")]) if step_s > 0 else None
    if report["unthrottled_idle_share"] is not None:
        idle = "the unthrottled workers sat idle %.0f%% of the step" % (report["unthrottled_idle_share"] * 100)
    else:
        idle = "every other worker is throttled too" if others else "no other worker waited"
    if report["throttled_idle_share"] is not None:
        idle += ", the other throttled workers %.0f%%" % (report["throttled_idle_share"] * 100)
    report["verdict"] = "step %.2f s = the straggler %s, %s; the mean %.2f s understates it by %.0f%%; %s" % (
        step_s, slowest["host"], report["straggler"]["cause"], mean, report["mean_understates_share"] * 100, idle)
    if report["kind"] == "baseline" and len(workers) == 1:
        report["samples"] = next((f.samples for f in step.flows), None)
    return _with_convergence(_with_fabric(_with_counters(report, step), step), step)


def _with_convergence(report, step):
    """A step whose flows start at different instants (experiment ``start_offsets``): the convergence test of
    draft-calabria section 7.3 from the flows' own samples (``_analysis.convergence.step_convergence``)."""
    if any(step.planned(flow).start_offset for flow in step.flows):
        try:
            model = _predict(step, model=True)
        except BarrierInputError:
            model = None
        report["convergence"] = step_convergence(step, model[1] if model else None)
    return report


def _with_fabric(report, step):
    """On the fabric lab: each link's flows, the collisions, the ideal, the paths proved by the counters."""
    if step.plan.fabric:
        try:
            model = _predict(step, model=True)
        except BarrierInputError:
            model = None
        report["fabric"] = analyze_fabric(report, step, model[1] if model else None)
    return report


def _with_counters(report, step):
    """What the wire and the queues saw beside the step: each host's before/after snapshots diffed, the books (on a
    fabric with the in-host relay, a NIC's books are what its rail link carried: the streams it relayed too)."""
    if step.counters:
        report["counters"] = step_counters(report, step.counters, relays=relay_books(step))
        books = step_ecn(report, step)
        if books is not None:  # the switch's marked ports were snapshotted (experiment_switch_ecn)
            report["ecn"] = books
    return report


RETRANS_WORTH_SAYING = 0.001  # a straggler whose retransmissions took 0.1% of its wire or more has them named


def _retrans_cause(slowest, others):
    """The straggler's retransmissions, when they are a cause worth saying (tail drops at a throttle, losses)."""
    share = slowest.get("retrans_share") or 0.0
    if share < RETRANS_WORTH_SAYING:
        return None
    rest = max((w.get("retrans_share") or 0.0 for w in others), default=0.0)
    return "%d segments retransmitted (%s, %.2f%% of its wire%s)" % (
        slowest["retransmits"], format_size(slowest["retrans_bytes"], digits=1, sep=" ", largest="GB", kilo="kB"),
        share * 100,
        "; the other workers at most %.2f%%" % (rest * 100) if others else "")


def _round(value):
    return None if value is None else round(value, 6)
