# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's and the history's small statistics, one home each: the mean, the median, a distribution's summary
(p50, p90, p99, min, max, mean), a worker's idle share of a step and the mean idle share of workers. The percentile
itself is module_utils/_stats.py's, which the hosts share (the mice's figures)."""

from __future__ import annotations

from ansible_collections.aifabric.lab.plugins.module_utils._stats import percentile

__all__ = ["idle_share", "mean", "mean_idle_share", "median", "percentile", "summary"]


def mean(values):
    """The arithmetic mean (None when there are no values)."""
    values = list(values)
    return sum(values) / len(values) if values else None


def median(values):
    """The middle value, or the mean of the two middle ones (None when there are no values)."""
    values = sorted(values)
    n = len(values)
    return None if not n else (values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2)


def summary(values):
    """``{p50, p90, p99, min, max, mean}`` of ``values`` (percentiles linear between ranks), each to 1e-6; None when
    there are none."""
    if not values:
        return None
    out = {name: round(percentile(values, q), 6) for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))}
    out.update(min=round(min(values), 6), max=round(max(values), 6), mean=round(sum(values) / len(values), 6))
    return out


def idle_share(step_s, completion_s):
    """The share of a step a worker that completed at ``completion_s`` sat idle, waiting for the slowest: (step -
    completion) / step, to 1e-6; 0.0 for a step of no time, None without a step time or a completion."""
    if step_s is None or completion_s is None:
        return None
    return round((step_s - completion_s) / step_s, 6) if step_s > 0 else 0.0


def mean_idle_share(workers):
    """The mean idle share of ``workers`` (their ``idle_share``, none counted as 0), to 1e-6; None for no workers."""
    if not workers:
        return None
    return round(sum(w.get("idle_share") or 0.0 for w in workers) / len(workers), 6)
