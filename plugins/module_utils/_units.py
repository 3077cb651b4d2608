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

__all__ = ["UnitError", "parse_rate", "parse_size", "format_rate", "format_size", "scale_size", "MIN_RATE_BPS",
           "MAX_RATE_BPS"]

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


def _parse(value, name, units, default_unit, kind, example, unit_hint, check_unit=None):
    """A number with an optional unit from ``units``; returns the value in the base unit (rounded to an int)."""
    if isinstance(value, bool):
        raise UnitError("%s: %r is not a %s; write it like %s" % (name, value, kind, example))
    if isinstance(value, (int, float)):
        return int(round(float(value)))
    match = _NUMBER.match(str(value))
    if not match:
        raise UnitError("%s: %r is not a %s; write it like %s" % (name, value, kind, example))
    number, unit = match.group(1), match.group(2).lower() or default_unit
    if check_unit is not None:
        check_unit(name, value, number, unit)
    if unit not in units:
        raise UnitError("%s: unknown %s unit %r in %r; use %s" % (name, kind, match.group(2), value, unit_hint))
    return int(round(float(number) * units[unit]))


def _refuse_bytes_per_second(name, value, number, unit):
    if unit.endswith("bps"):
        raise UnitError("%s: %r is ambiguous: tc reads 'bps' as bytes per second. Write bits, e.g. '%sgbit' for %s Gb/s"
                        % (name, value, number, number))


def parse_rate(value, name="rate", minimum=MIN_RATE_BPS, maximum=MAX_RATE_BPS):
    """Return a rate in bits per second from ``8gbit``, ``100mbit``, ``2.5gbit`` or a plain number of bit/s."""
    bps = _parse(value, name, _RATE_UNITS, "bit", "rate", "'8gbit', '100mbit' or '1kbit'",
                 "one of %s" % ", ".join(_RATE_UNITS), _refuse_bytes_per_second)
    if bps < minimum or bps > maximum:
        raise UnitError("%s: %r is outside the supported range %s to %s"
                        % (name, value, format_rate(minimum), format_rate(maximum)))
    return bps


def parse_size(value, name="size", minimum=1, maximum=None):
    """Return a size in bytes from ``9.83GB``, ``512MiB``, ``64KB`` or a plain number of bytes."""
    size = _parse(value, name, _SIZE_UNITS, "b", "size", "'1GB', '512MiB' or 65536",
                  "B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB")
    if size < minimum or (maximum is not None and size > maximum):
        upper = " to %s" % format_size(maximum) if maximum is not None else " or more"
        raise UnitError("%s: %r is outside the supported range %s%s" % (name, value, format_size(minimum), upper))
    return size


def format_rate(bps):
    """``8000000000`` -> ``8gbit`` (the shortest exact tc spelling, else three significant digits)."""
    for unit, factor in (("tbit", 10**12), ("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3)):
        if bps >= factor:
            number = bps / factor
            text = ("%d" % number) if number == int(number) else ("%.3g" % number)
            return text + unit
    return "%dbit" % bps


_SIZE_SCALES = (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("KB", 10**3))


def scale_size(size, largest="TB", kilo="KB"):
    """``(number, unit)`` of a byte count in the largest unit it reaches (powers of 1000, up to ``largest``; ``kilo``:
    how the thousands' unit is spelled, ``KB`` or ``kB``); ``(size, "B")`` below a thousand."""
    names = [unit for unit, _factor in _SIZE_SCALES]
    for unit, factor in _SIZE_SCALES[names.index(largest):]:
        if size >= factor:
            return size / factor, kilo if unit == "KB" else unit
    return size, "B"


def format_size(size, digits=None, sep="", largest="TB", kilo="KB"):
    """``9830000000`` -> ``9.83GB`` (the shortest exact spelling, else three significant digits). ``digits``: that many
    decimals instead; ``sep``: between the number and its unit (``9.83 GB``); ``largest`` and ``kilo``: as
    ``scale_size``'s. The one place sizes are written: tc's burst, the progress line, the report's retransmissions."""
    number, unit = scale_size(size, largest, kilo)
    if unit == "B":
        return "%d%sB" % (size, sep)
    if digits is None:
        text = ("%d" % number) if number == int(number) else ("%.3g" % number)
    else:
        text = "%.*f" % (digits, number)
    return text + sep + unit
