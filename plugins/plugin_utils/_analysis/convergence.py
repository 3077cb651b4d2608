# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How long flows take to share a bottleneck fairly after new ones join: the convergence test.

draft-calabria-bmwg-ai-fabric-training-bench section 7.3: M flows run through one bottleneck to one receiver, M more
start at T0; the result is the time from T0 until every one of the 2M flows is within 10% of its fair share (the
link rate / 2M). Here it is computed from the flows' own interval samples (the tcp engine's ``samples``: every
``interval`` seconds the bytes the receiver acknowledged), not from a switch counter.

Definitions (the draft says "until all are within 10%"; a flow that touches its share once and leaves it again has
not converged, so the instant must be one from which the flows *stay* there):

* a flow's samples are intervals ``(t[k-1], t[k]]`` with the mean rate over each (the first interval starts at the
  flow's ``start``); only the intervals that end after T0 and no later than ``end`` (the analysis window's end:
  by default the instant the first flow's last sample ends, since the fair share changes once a flow finishes)
  count;
* an interval is **within tolerance** when ``|rate - fair_share| <= tolerance * fair_share``;
* a flow's **time to fair share** is the end of its last interval in the window that is not within tolerance, minus
  T0 (0 when every one is): from then to the window's end the flow is within tolerance. When its last interval is
  not within tolerance it never converged (``None``);
* the **convergence time** is the largest of them (the first instant from which every flow stays within tolerance
  for the rest of the window); ``None`` (never converged) when any flow's is, or when the flows held their shares
  for less than ``hold`` seconds before the window ended;
* **Jain's fairness index** over time, ``(sum x)^2 / (n * sum x^2)`` over the flows' rates at each instant of a
  common grid (every ``step`` seconds after T0, by default the samples' median interval; a flow's rate at an
  instant is that of its interval holding it; a flow with none there counts 0).
"""

from __future__ import annotations

from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.balance import jfi

__all__ = ["ConvergenceError", "convergence", "intervals", "step_convergence", "HOLD_S", "TOLERANCE"]

TOLERANCE = 0.1  # the draft's 10%
HOLD_S = 1.0  # a step's flows must hold their shares this long before the window ends to have converged

_EPS = 1e-9


class ConvergenceError(ValueError):
    """Samples or parameters the convergence test cannot use; the message names the flow, the field and the fix."""


def _number(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConvergenceError("%s: %r is not a number" % (what, value))
    return float(value)


def intervals(flow_id, flow):
    """A flow's samples as ``[(begin, end, rate)]``. ``flow`` is ``{"start": s, "samples": [...]}``, each sample
    ``{"t": s, "rate": r}`` (in the fair share's unit) or ``{"t": s, "bytes": cumulative}`` (then the rate is bits
    per second, counted from 0 bytes at ``start``); ``t`` on the same clock as ``start`` and T0, increasing."""
    if not isinstance(flow, dict) or "samples" not in flow or "start" not in flow:
        raise ConvergenceError("flow %s: give {start: seconds, samples: [{t, rate} or {t, bytes}, ...]}, not %r"
                               % (flow_id, flow))
    begin = _number(flow["start"], "flow %s: start" % flow_id)
    samples = flow["samples"]
    if not isinstance(samples, list) or not samples:
        raise ConvergenceError("flow %s: no samples; give the experiment an interval (the tcp engine then records "
                               "one sample per interval)" % flow_id)
    out, last_bytes = [], 0.0
    for i, sample in enumerate(samples):
        if not isinstance(sample, dict) or "t" not in sample or not ("rate" in sample or "bytes" in sample):
            raise ConvergenceError("flow %s: sample %d is %r; give {t, rate} or {t, bytes}" % (flow_id, i, sample))
        t = _number(sample["t"], "flow %s: sample %d's t" % (flow_id, i))
        if t <= begin:
            raise ConvergenceError("flow %s: sample %d's t %s is not after %s (the flow's start or the previous "
                                   "sample); samples must be in time order" % (flow_id, i, t, begin))
        if "rate" in sample:
            rate = _number(sample["rate"], "flow %s: sample %d's rate" % (flow_id, i))
        else:
            count = _number(sample["bytes"], "flow %s: sample %d's bytes" % (flow_id, i))
            if count < last_bytes:
                raise ConvergenceError("flow %s: sample %d's bytes %d fell below the previous %d; give the "
                                       "cumulative bytes" % (flow_id, i, count, last_bytes))
            rate = (count - last_bytes) * 8 / (t - begin)
            last_bytes = count
        if rate < 0:
            raise ConvergenceError("flow %s: sample %d's rate %r is negative" % (flow_id, i, rate))
        out.append((begin, t, rate))
        begin = t
    return out


def convergence(flows, t0, fair_share, tolerance=0.1, end=None, hold=0.0, step=None):
    """The convergence test of ``flows`` (``{flow_id: {"start", "samples"}}``, see ``intervals``) after T0.
    ``fair_share``: the flows' common share, or ``{flow_id: share}`` (each flow its own: a throttled one's).

    Returns ``{"converged", "convergence_s", "per_flow_s", "never", "window_s", "jfi", "jfi_end", "fair_share",
    "tolerance"}``: ``convergence_s`` seconds after T0 (``None`` when it never converged, and ``never`` lists the
    flows that did not, or says the hold was too short), ``per_flow_s`` each flow's time to fair share (``None``:
    never), ``jfi`` ``[(seconds after t0, index)]`` on the grid, ``jfi_end`` the last of it.
    """
    if not isinstance(flows, dict) or len(flows) < 2:
        raise ConvergenceError("flows: give at least two flows by id (the M running and the M started at T0), "
                               "not %r" % (flows,))
    t0 = _number(t0, "t0")
    if isinstance(fair_share, dict):  # each flow its own share (a throttled flow's is its throttle's)
        missing = sorted(set(flows) - set(fair_share))
        if missing:
            raise ConvergenceError("fair_share: no share for flow(s) %s; give every flow's" % ", ".join(missing))
        shares = {fid: _number(fair_share[fid], "fair_share of %s" % fid) for fid in flows}
    else:
        shares = dict.fromkeys(flows, _number(fair_share, "fair_share"))
    if min(shares.values()) <= 0:
        raise ConvergenceError("fair_share: %r; give the link rate / 2M, above 0" % (fair_share,))
    tol = _number(tolerance, "tolerance")
    if not 0 < tol < 1:
        raise ConvergenceError("tolerance: %r; give a share between 0 and 1 (0.1 is the draft's 10%%)" % (tolerance,))
    hold = _number(hold, "hold")
    if hold < 0:
        raise ConvergenceError("hold: %r; give seconds, 0 or more" % (hold,))
    spans = {fid: intervals(fid, flow) for fid, flow in flows.items()}
    window_end = min(iv[-1][1] for iv in spans.values()) if end is None else _number(end, "end")
    if window_end <= t0:
        raise ConvergenceError("the analysis window ends at %s, not after T0 %s: a flow's samples end before T0 "
                               "(did every flow run past T0?), or end is too early" % (window_end, t0))
    per_flow, never = {}, []
    for fid, iv in spans.items():
        inside = [(b, e, r) for b, e, r in iv if e > t0 + _EPS and e <= window_end + _EPS]
        if not inside:
            raise ConvergenceError("flow %s: no sample ends between T0 %s and the window's end %s; give a shorter "
                                   "interval or a longer run" % (fid, t0, window_end))
        fair = shares[fid]
        off = [e for b, e, r in inside if abs(r - fair) > tol * fair + _EPS]
        if not off:
            per_flow[fid] = 0.0
        elif off[-1] >= inside[-1][1] - _EPS:
            per_flow[fid] = None
            never.append(fid)
        else:
            per_flow[fid] = round(off[-1] - t0, 6)
    converged = not never
    at = max(per_flow.values()) if converged else None
    held = None
    if converged:
        held = round(window_end - t0 - at, 6)
        if held + _EPS < hold:
            converged, at = False, None
            never = ["held %s s, less than hold=%s s" % (held, hold)]
    if step is None:  # the sampling interval: the median length (a flow's first and last samples may be short)
        lengths = sorted(span[1] - span[0] for iv in spans.values() for span in iv)
        grid_step = lengths[len(lengths) // 2]
    else:
        grid_step = _number(step, "step")
    if grid_step <= 0:
        raise ConvergenceError("step: %r; give seconds above 0" % (step,))
    series = []
    k = 0
    while True:
        instant = t0 + k * grid_step
        if instant > window_end + _EPS:
            break
        rates = []
        for iv in spans.values():
            rate = next((r for b, e, r in iv if b < instant <= e + _EPS), None)
            rates.append(0.0 if rate is None else rate)
        if k > 0:  # T0 itself is the edge of the new flows' first interval
            index = jfi(rates)
            series.append((round(instant - t0, 6), None if index is None else round(index, 6)))
        k += 1
    return {
        "converged": converged,
        "convergence_s": None if at is None else round(at, 6),
        "per_flow_s": per_flow,
        "never": never,
        "held_s": held,
        "window_s": round(window_end - t0, 6),
        "jfi": series,
        "jfi_end": series[-1][1] if series else None,
        "fair_share": fair_share if isinstance(fair_share, dict) else shares[next(iter(shares))],
        "tolerance": tol,
    }


def step_convergence(step, model):
    """A step whose flows start at different instants (the plan's ``start_offset``, experiment ``start_offsets``):
    the convergence test of section 7.3 over its flows' own samples, or None for a step whose flows all start
    together. ``model``: the barrier analysis' max-min model of the step (``flows``, ``links``, ``factors``).

    T0 is the last flow's start offset (when the last flows join). Each flow's fair share is its max-min rate with
    every flow of the step running, times its goodput factor (the payload rate its samples measure): on one shared
    port, the port's TCP goodput / 2M. The window ends where the first flow's last full sample ends (a flow's final
    sample is its tail, and once a flow ends the shares change). Returns the ``convergence()`` figures with ``t0_s``,
    ``joined`` (the flows that start at T0), ``fair_share_gbps`` per flow and ``hold_s``; or ``{"unavailable":
    why}`` when the flows' samples cannot give it (a failed flow, no samples: give the experiment an interval)."""
    from ansible_collections.aifabric.lab.plugins.plugin_utils._model.fair_share import max_min_rates

    offsets = {flow.flow_id: step.planned(flow).start_offset for flow in step.flows}
    if not any(offsets.values()):
        return None
    t0 = max(offsets.values())
    out = {"t0_s": t0, "joined": sorted(fid for fid, off in offsets.items() if off == t0), "tolerance": TOLERANCE,
           "hold_s": HOLD_S}
    failed = sorted(f.flow_id for f in step.flows if not f.ok)
    if failed:
        out["unavailable"] = "flow(s) %s did not complete: the test needs every flow's samples" % ", ".join(failed)
        return out
    if model is None:
        out["unavailable"] = "no prediction of the step (its flows' paths), so no fair share to converge to"
        return out
    rates = max_min_rates(model["flows"], model["links"])
    flows, shares, ends = {}, {}, []
    for flow in step.flows:
        keys = [k for k in model["flows"] if k[:2] == flow.key]  # the flow, or its streams on the fabric lab
        shares[flow.flow_id] = sum(rates[k] * model["factors"].get(k, 1.0) for k in keys)
        samples = flow.samples or []
        if flow.start is None or flow.start_at is None or len(samples) < 2:
            out["unavailable"] = ("flow %s has %d sample(s); give the experiment a shorter interval (0.2) or a "
                                  "larger volume" % (flow.flow_id, len(samples)))
            return out
        common = flow.start_at - offsets[flow.flow_id]  # the step's common instant, on the flow's host clock
        start = flow.start - common
        flows[flow.flow_id] = {"start": start, "samples": [{"t": start + x["t"], "bytes": x["bytes"]}
                                                           for x in samples]}
        ends.append(start + samples[-2]["t"])
    try:
        result = convergence(flows, t0, shares, tolerance=TOLERANCE, end=min(ends), hold=HOLD_S)
    except ConvergenceError as exc:
        out["unavailable"] = str(exc)
        return out
    result.pop("fair_share")
    out.update(result, fair_share_gbps={fid: round(v / 1e9, 6) for fid, v in sorted(shares.items())})
    out["verdict"] = _verdict(out, len(flows))
    return out


def _verdict(out, n):
    gbps = sorted(set(out["fair_share_gbps"].values()))
    share = ("%.3f Gb/s" % gbps[0]) if len(gbps) == 1 else "%.3f-%.3f Gb/s" % (gbps[0], gbps[-1])
    head = "%d of %d flows joined at T0 = %.2f s" % (len(out["joined"]), n, out["t0_s"])
    jfi_end = "" if out["jfi_end"] is None else "; JFI at the window's end %.3f" % out["jfi_end"]
    if out["converged"]:
        return "%s: every flow within %d%% of its fair share (%s) from T0 + %.2f s, held %.2f s%s" % (
            head, round(out["tolerance"] * 100), share, out["convergence_s"], out["held_s"], jfi_end)
    return "%s: not converged within the %.2f s window (%s)%s" % (
        head, out["window_s"], "; ".join(out["never"]) if out["never"] else "", jfi_end)
