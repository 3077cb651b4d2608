# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Gates: what an experiment expects of its steps (``expect:``), checked against the barrier report.

An experiment may state::

    expect:
      step_vs_predicted: 1.05    # step time / the fair-share prediction, at most
      healthy_idle_share: 0.05   # the unthrottled workers' mean idle share of the step, at most
      counters: clean            # no error counter moved and the books agree (or: errors_zero)
      vs_baseline: 0.95          # the baseline run's step time / this one's (its speed), at least
      baseline: latest           # which run of the history is the baseline (default: the latest with the step ok)

``check_expect`` validates that dict when the experiment is planned; ``evaluate`` checks one analysed step (a step
report of ``_barrier.analyze_step``) and returns one entry per gate: its figure's value, the limit, whether it held
and a sentence saying so. The report (``_report.build_report``) and the experiment role's last task call the same
function on the same analysis, so the play fails for exactly the gates the report and junit.xml show broken.
"""

from __future__ import annotations

__all__ = ["GateError", "GATES", "check_expect", "evaluate", "broken_messages"]


class GateError(ValueError):
    """An ``expect`` that cannot be checked; the message names the field and the fix."""


# gate -> (kind of limit, what the figure is, its unit for messages)
GATES = {
    "step_vs_predicted": ("max", "step time / fair-share prediction"),
    "healthy_idle_share": ("max", "mean idle share of the unthrottled workers"),
    "counters": ("choice", "the counters' verdict"),
    "vs_baseline": ("min", "the baseline run's step time / this step's"),
}
_COUNTER_CHOICES = ("clean", "errors_zero")
_KNOWN = set(GATES) | {"baseline"}


def check_expect(expect, where="experiment.expect"):
    """The expectations, validated (numbers as floats). Raises ``GateError`` naming the field and the fix."""
    if expect is None:
        return {}
    if not isinstance(expect, dict):
        raise GateError("%s: expected a dict of gates (%s), got %r" % (where, ", ".join(sorted(GATES)), expect))
    unknown = sorted(set(expect) - _KNOWN)
    if unknown:
        raise GateError("%s: unknown gate(s) %s; known: %s" % (where, ", ".join(unknown), ", ".join(sorted(_KNOWN))))
    out = {}
    for name, value in expect.items():
        if value is None:
            continue
        if name == "baseline":
            if not isinstance(value, str) or not value.strip():
                raise GateError("%s.baseline: %r; give a run of the history (latest, latest~N, a run id or a run "
                                "directory)" % (where, value))
            out[name] = value.strip()
            continue
        kind = GATES[name][0]
        if kind == "choice":
            if value not in _COUNTER_CHOICES:
                raise GateError("%s.counters: %r; use clean (no error counter moved and the books agree) or "
                                "errors_zero (no error counter moved)" % (where, value))
            out[name] = value
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise GateError("%s.%s: %r; give a positive number (e.g. %s)"
                            % (where, name, value, {"step_vs_predicted": "1.05", "healthy_idle_share": "0.05",
                                                    "vs_baseline": "0.95"}[name]))
        if name == "healthy_idle_share" and value >= 1:
            raise GateError("%s.healthy_idle_share: %r; a share of the step is below 1 (0.05 = 5%%)" % (where, value))
        out[name] = float(value)
    if "baseline" in out and "vs_baseline" not in out:
        raise GateError("%s.baseline: given without vs_baseline; add vs_baseline: 0.95 (the speed to keep) or remove "
                        "baseline" % where)
    return out


def _entry(name, limit, value, ok, message):
    return {"gate": name, "limit": limit, "value": value, "ok": ok, "message": message}


def _baseline_step_s(step_name, baseline):
    """The baseline run's time for this step: its step of the same name, else its steps' median."""
    if not baseline:
        return None, None
    steps = baseline.get("steps") or {}
    if steps.get(step_name):
        return steps[step_name], "its step %s" % step_name
    if baseline.get("p50_step_s"):
        return baseline["p50_step_s"], "its median step"
    return None, None


def evaluate(step, expect, baseline=None):
    """The gates of one analysed step: a list of ``{gate, limit, value, ok, message}``. ``ok`` is None when the figure
    does not exist for this step (a failed step, a step with one worker has no idle share, no baseline run): such a
    gate is reported as not checked, never as held. ``baseline``: ``{run, steps: {name: step_s}, p50_step_s}`` (the
    history's baseline run, as the plan recorded it) or None."""
    out = []
    name = step.get("step")
    failed = step.get("status") != "ok"
    for gate, limit in sorted(expect.items()):
        if gate == "baseline":
            continue
        what = GATES[gate][1]
        if failed:
            out.append(_entry(gate, limit, None, None, "%s: not checked, the step failed" % gate))
            continue
        if gate == "step_vs_predicted":
            predicted = step.get("predicted_step_s")
            if not predicted or step.get("step_s") is None:
                out.append(_entry(gate, limit, None, None, "%s: not checked, the step has no prediction" % gate))
                continue
            value = round(step["step_s"] / predicted, 6)
            ok = value <= limit
            out.append(_entry(gate, limit, value, ok, "%s %.3f %s %.3f (step %.3f s, predicted %.3f s)" % (
                gate, value, "<=" if ok else ">", limit, step["step_s"], predicted)))
        elif gate == "healthy_idle_share":
            value = step.get("unthrottled_idle_share")
            if value is None:
                out.append(_entry(gate, limit, None, None, "%s: not checked, the step has no unthrottled worker that "
                                                           "waited" % gate))
                continue
            ok = value <= limit
            straggler = step.get("straggler") or {}
            out.append(_entry(gate, limit, value, ok, "%s %.1f%% %s %.1f%% (%s; the straggler %s: %s)" % (
                gate, value * 100, "<=" if ok else ">", limit * 100, what, straggler.get("host"),
                straggler.get("cause"))))
        elif gate == "counters":
            counters = step.get("counters")
            if not counters:
                out.append(_entry(gate, limit, None, None, "counters: not checked, the step read no counters"))
                continue
            hosts = counters.get("hosts") or {}
            unread = sorted(set(w["host"] for w in step.get("workers") or []) - set(hosts)) + sorted(
                h for h, c in hosts.items() if c.get("missing"))
            if unread:
                out.append(_entry(gate, limit, None, None, "counters: not checked, no counters of %s (a snapshot "
                                                           "missing or unreadable)" % ", ".join(unread)))
                continue
            errors = sorted(e for h in hosts.values() for e in (h.get("errors") or {}))
            disagree = counters.get("disagreements") or []
            bad = errors or (disagree if limit == "clean" else [])
            value = "clean" if not errors and not disagree else "errors" if errors else "books disagree"
            out.append(_entry(gate, limit, value, not bad, "counters %s (%s): %s" % (
                "as expected" if not bad else "not %s" % limit, limit, counters.get("verdict"))))
        elif gate == "vs_baseline":
            base_s, which = _baseline_step_s(name, baseline)
            if base_s is None or not step.get("step_s"):
                out.append(_entry(gate, limit, None, None, "vs_baseline: not checked, %s" % (
                    (baseline or {}).get("reason") or "no baseline run in the history")))
                continue
            value = round(base_s / step["step_s"], 6)
            ok = value >= limit
            out.append(_entry(gate, limit, value, ok, "vs_baseline %.3f %s %.3f (step %.3f s, baseline run %s: %.3f s, "
                                                      "%s)" % (value, ">=" if ok else "<", limit, step["step_s"],
                                                               baseline.get("run"), base_s, which)))
    return out


def broken_messages(report):
    """Every broken gate of a report, one sentence each, naming the step."""
    return ["step %s: gate %s" % (s["step"], g["message"]) for s in report.get("steps") or []
            for g in s.get("gates") or [] if g["ok"] is False]
