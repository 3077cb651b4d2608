# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small text helpers of the report's formats and the history's text, one home each: a number or a dash, a share or
a dash, the natural order of names (worker2 before worker10)."""

from __future__ import annotations

import re

__all__ = ["natural_key", "number_or_dash", "share_or_dash"]

_DIGITS = re.compile(r"(\d+)")


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def number_or_dash(value, fmt="%.3f"):
    """``fmt % value``, or ``-`` when there is no number (None, or a value a template left undefined)."""
    return fmt % value if _is_number(value) else "-"


def share_or_dash(value, fmt="%.0f%%"):
    """A share as a percentage (``0.33`` -> ``33%``), or ``-`` when there is none."""
    return fmt % (value * 100) if _is_number(value) else "-"


def natural_key(name):
    """A sort key that orders the numbers in names by value: worker2 before worker10, w1 before w1a."""
    return [int(part) if i % 2 else part for i, part in enumerate(_DIGITS.split(str(name)))]
