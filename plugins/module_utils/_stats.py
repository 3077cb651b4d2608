# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small statistics shared by the hosts (the mice's figures) and the controller (the report's)."""

from __future__ import annotations

__all__ = ["percentile"]


def percentile(values, q):
    """The q-quantile of ``values``, linear between ranks (None when there are none)."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = q * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)
