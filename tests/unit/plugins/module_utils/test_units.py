# -*- coding: utf-8 -*-
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._units import (
    UnitError,
    format_rate,
    format_size,
    parse_rate,
    parse_size,
)


@pytest.mark.parametrize(
    "text, bps",
    [
        ("8gbit", 8_000_000_000), ("2Gbit", 2_000_000_000), ("100mbit", 100_000_000), ("1kbit", 1000),
        ("400gbit", 400_000_000_000), ("2.5gbit", 2_500_000_000), ("1mibit", 1_048_576), (1_000_000, 1_000_000),
        ("34359738360bit", 34_359_738_360), (" 10 gbit ", 10_000_000_000), ("1tbit", None),
    ],
)
def test_parse_rate(text, bps):
    if bps is None:
        with pytest.raises(UnitError, match="outside the supported range"):
            parse_rate(text)
    else:
        assert parse_rate(text) == bps


@pytest.mark.parametrize(
    "text, message",
    [
        ("8gbps", "ambiguous: tc reads 'bps' as bytes"),
        ("fast", "is not a rate"),
        ("8 furlongs", "unknown rate unit"),
        ("999bit", "outside the supported range"),
        (True, "is not a rate"),
        ("", "is not a rate"),
    ],
)
def test_parse_rate_errors_name_the_parameter(text, message):
    with pytest.raises(UnitError, match=message) as info:
        parse_rate(text, "throttles.worker3")
    assert str(info.value).startswith("throttles.worker3:")


@pytest.mark.parametrize(
    "text, size",
    [("9.83GB", 9_830_000_000), ("1GB", 10**9), ("512MiB", 512 * 2**20), ("64kb", 64_000), (65536, 65536),
     ("1TiB", 2**40), ("10", 10)],
)
def test_parse_size(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text, message", [("1g", "unknown size unit"), ("-1GB", "is not a size"), ("0", "outside")])
def test_parse_size_errors(text, message):
    with pytest.raises(UnitError, match=message):
        parse_size(text, "volume")


@pytest.mark.parametrize("bps, text", [(8e9, "8gbit"), (2.5e9, "2.5gbit"), (1000, "1kbit"), (999, "999bit"),
                                       (400e9, "400gbit"), (1.5e12, "1.5tbit")])
def test_format_rate_round_trips(bps, text):
    assert format_rate(bps) == text
    if bps <= 400e9 and bps >= 1000:
        assert parse_rate(text) == bps


def test_format_size():
    assert format_size(9_830_000_000) == "9.83GB"
    assert format_size(512) == "512B"
