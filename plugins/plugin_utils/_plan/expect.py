# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an experiment expects, checked when it is planned: its gates (``expect:``) and its lateness bound
(``late_bound``). The analysis reads the same values with the same functions (``_analysis.gates``,
``_analysis.barrier``).

An experiment may state::

    expect:
      step_vs_predicted: 1.05    # step time / the fair-share prediction, at most
      healthy_idle_share: 0.05   # the unthrottled workers' mean idle share of the step, at most
      counters: clean            # no error counter moved and the books agree (or: errors_zero)
      vs_baseline: 0.95          # the baseline run's step time / this one's (its speed), at least
      baseline: latest           # which run of the history is the baseline (default: the latest with the step ok)
    late_bound: 0.01             # a start later than this share of the predicted step (or a duration: 5ms) fails it
"""

from __future__ import annotations

__all__ = ["GateError", "GATES", "LateBoundError", "DEFAULT_LATE_BOUND", "check_expect", "parse_late_bound"]


class LateBoundError(ValueError):
    """A lateness bound that cannot be read; the message names the field and the fix."""


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


DEFAULT_LATE_BOUND = 0.01  # a start later than 1% of the predicted step could distort the step's figures


def parse_late_bound(raw, name="late_bound"):
    """A lateness bound as given (the experiment's ``late_bound``): a share of the predicted step from 0 to 1, or a
    duration (``5ms``, ``0.2s``). Returns the share (float) or the duration's text; None gives the default share.
    Raises LateBoundError naming ``name`` and the fix. The one reader: the plan checks with it, the analysis
    reads with it."""
    if raw is None:
        return DEFAULT_LATE_BOUND
    if isinstance(raw, str):
        text = raw.strip()
        try:
            return _share(float(text), raw, name)  # -e late_bound=0.02 arrives as text
        except ValueError:
            pass
        try:
            ok = text.endswith("s") and float(text[:-2] if text.endswith("ms") else text[:-1]) > 0
        except ValueError:
            ok = False
        if not ok:
            raise LateBoundError("%s: %r; give a share of the predicted step (0.01 = 1%%) or a duration (5ms, "
                                 "0.2s)" % (name, raw))
        return text
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise LateBoundError("%s: %r; give a share of the predicted step from 0 to 1 (0.01 = 1%%) or a duration "
                             "(5ms)" % (name, raw))
    return _share(raw, raw, name)


def _share(value, raw, name):
    if not 0 < value <= 1:
        raise LateBoundError("%s: %r; give a share of the predicted step from 0 to 1 (0.01 = 1%%) or a duration "
                             "(5ms)" % (name, raw))
    return float(value)
