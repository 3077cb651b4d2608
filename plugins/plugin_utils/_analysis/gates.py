# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Gates: what an experiment expects of its steps (``expect:``, ``_plan.expect``), checked against the barrier report.

``_plan.expect.check_expect`` validates the gates when the experiment is planned; ``evaluate`` checks one analysed
step (a step report of ``barrier.analyze_step``) and returns one entry per gate: its figure's value, the limit, whether
it held and a sentence saying so. The report (``_report.build.build_report``) and the experiment role's last task call
the same
function on the same analysis, so the play fails for exactly the gates the report and junit.xml show broken.
"""

from __future__ import annotations

from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.expect import GATES

__all__ = ["evaluate", "broken_messages"]


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
