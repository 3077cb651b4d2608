# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rates and sizes as network engineers write them, parsed in one place.

Rates follow tc's bit units (``bit``, ``kbit``, ``mbit``, ``gbit``, ``tbit``: powers of 1000, and the binary
``kibit``... forms). tc reads ``bps`` as *bytes* per second, a classic trap, so ``bps`` forms are refused with a hint.
Sizes are bytes: ``B``, ``KB``/``MB``/``GB``/``TB`` (powers of 1000) and ``KiB``/``MiB``/``GiB``/``TiB``.
"""

from __future__ import annotations

import re

__all__ = ["UnitError", "parse_rate", "parse_size", "format_rate", "format_size", "MIN_RATE_BPS", "MAX_RATE_BPS"]

MIN_RATE_BPS = 1_000  # 1kbit
MAX_RATE_BPS = 400_000_000_000  # 400gbit

_RATE_UNITS = {
    "bit": 1,
    "kbit": 10**3,
    "mbit": 10**6,
    "gbit": 10**9,
    "tbit": 10**12,
    "kibit": 2**10,
    "mibit": 2**20,
    "gibit": 2**30,
    "tibit": 2**40,
}
_SIZE_UNITS = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_NUMBER = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*$")


class UnitError(ValueError):
    """A rate or size that cannot be read; the message says what is expected."""


def parse_rate(value, name="rate", minimum=MIN_RATE_BPS, maximum=MAX_RATE_BPS):
    """Return a rate in bits per second from ``8gbit``, ``100mbit``, ``2.5gbit`` or a plain number of bit/s."""
    if isinstance(value, bool):
        raise UnitError("%s: %r is not a rate; write it like '8gbit', '100mbit' or '1kbit'" % (name, value))
    if isinstance(value, (int, float)):
        bps = float(value)
    else:
        match = _NUMBER.match(str(value))
        if not match:
            raise UnitError("%s: %r is not a rate; write it like '8gbit', '100mbit' or '1kbit'" % (name, value))
        number, unit = float(match.group(1)), match.group(2).lower()
        if unit.endswith("bps"):
            raise UnitError(
                "%s: %r is ambiguous: tc reads 'bps' as bytes per second. Write bits, e.g. '%sgbit' for %s Gb/s"
                % (name, value, match.group(1), match.group(1))
            )
        if unit == "":
            unit = "bit"
        if unit not in _RATE_UNITS:
            raise UnitError(
                "%s: unknown rate unit %r in %r; use one of %s" % (name, match.group(2), value, ", ".join(_RATE_UNITS))
            )
        bps = number * _RATE_UNITS[unit]
    bps_int = int(round(bps))
    if bps_int < minimum or bps_int > maximum:
        raise UnitError(
            "%s: %r is outside the supported range %s to %s" % (name, value, format_rate(minimum), format_rate(maximum))
        )
    return bps_int


def parse_size(value, name="size", minimum=1, maximum=None):
    """Return a size in bytes from ``9.83GB``, ``512MiB``, ``64KB`` or a plain number of bytes."""
    if isinstance(value, bool):
        raise UnitError("%s: %r is not a size; write it like '1GB', '512MiB' or 65536" % (name, value))
    if isinstance(value, (int, float)):
        size = float(value)
    else:
        match = _NUMBER.match(str(value))
        if not match:
            raise UnitError("%s: %r is not a size; write it like '1GB', '512MiB' or 65536" % (name, value))
        number, unit = float(match.group(1)), match.group(2).lower()
        if unit == "":
            unit = "b"
        if unit not in _SIZE_UNITS:
            raise UnitError(
                "%s: unknown size unit %r in %r; use B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB"
                % (name, match.group(2), value)
            )
        size = number * _SIZE_UNITS[unit]
    size_int = int(round(size))
    if size_int < minimum or (maximum is not None and size_int > maximum):
        upper = " to %s" % format_size(maximum) if maximum is not None else " or more"
        raise UnitError("%s: %r is outside the supported range %s%s" % (name, value, format_size(minimum), upper))
    return size_int


def format_rate(bps):
    """``8000000000`` -> ``8gbit`` (the shortest exact tc spelling, else three significant digits)."""
    for unit, factor in (("tbit", 10**12), ("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3)):
        if bps >= factor:
            number = bps / factor
            text = ("%d" % number) if number == int(number) else ("%.3g" % number)
            return text + unit
    return "%dbit" % bps


def format_size(size):
    """``9830000000`` -> ``9.83GB``."""
    for unit, factor in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if size >= factor:
            number = size / factor
            text = ("%d" % number) if number == int(number) else ("%.3g" % number)
            return text + unit
    return "%dB" % size
