# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Mice: the heavy-tailed sizes, and real short connections on loopback."""

from __future__ import annotations

import random
import socket
import threading

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._mice import (
    MiceError,
    bounded_pareto,
    generate,
    percentile,
    serve,
)


def test_bounded_pareto_is_heavy_tailed_within_its_bounds_and_seeded():
    rng = random.Random(7)
    sizes = [bounded_pareto(rng, 1.2, 1000, 1_000_000) for _draw in range(20000)]
    assert min(sizes) >= 1000 and max(sizes) <= 1_000_000
    # most mice are small (the median of a bounded Pareto(1.2) from 1 kB is 2^(1/1.2) kB = 1.78 kB), a few are large
    assert 1650 < percentile(sizes, 0.5) < 1950
    # and the tail: the 99th percentile is 1 kB x 100^(1/1.2) = 46.4 kB, 26 times the median
    assert 42_000 < percentile(sizes, 0.99) < 51_000
    again = random.Random(7)
    assert [bounded_pareto(again, 1.2, 1000, 1_000_000) for _draw in range(5)] == sizes[:5]


@pytest.mark.parametrize("kw, message", [
    ({"rate": 0}, "rate and duration"),
    ({"size_min": 10, "size_max": 5}, "size_min and size_max"),
    ({"alpha": 0}, "alpha"),
])
def test_bad_mice(kw, message):
    args = dict(rate=10, duration=1)
    args.update(kw)
    with pytest.raises(MiceError, match=message):
        generate("127.0.0.1", 1, **args)


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_mice_on_loopback_are_all_received():
    port = _free_port()
    got = {}
    server = threading.Thread(target=lambda: got.update(serve("127.0.0.1", port, duration=1.5, grace=1.0)))
    server.start()
    sent = generate("127.0.0.1", port, rate=40, duration=1.0, size_min=1000, size_max=200_000, seed=3, workers=4)
    server.join()
    assert sent["planned"] == 40 and sent["sent"] == 40 and sent["failed"] == 0
    assert got == {"connections": 40, "bytes": sent["bytes"]}
    assert 1000 <= sent["size_p50"] <= sent["size_p99"] <= sent["size_max"] <= 200_000


def test_a_server_that_is_not_there_is_counted_as_failures():
    sent = generate("127.0.0.1", _free_port(), rate=20, duration=0.25, workers=2)
    assert sent["sent"] == 0 and sent["failed"] == 5 and sent["errors"] == {"ConnectionRefusedError": 5}
