# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""MMR and JFI across parallel links, against hand arithmetic (draft-calabria-bmwg-ai-fabric-training-bench 8.1,
8.4)."""

from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.balance import (
    jfi,
    load_balance,
    mmr,
    parallel_sets,
)


@pytest.mark.parametrize("loads, want_mmr, want_jfi", [
    # even: max = mean, (4)^2 / (4 * 4) = 1
    ([1, 1, 1, 1], 1.0, 1.0),
    # 3 of 4 elephants on one uplink, one on another: mean 1, max 3; JFI 16 / (4 * (9 + 1)) = 0.4
    ([3, 1, 0, 0], 3.0, 0.4),
    # everything on one of N links: MMR N, JFI 1/N
    ([8, 0, 0, 0], 4.0, 0.25),
    # 2, 1, 1, 0: mean 1, max 2; JFI 16 / (4 * 6) = 2/3
    ([2, 1, 1, 0], 2.0, 2.0 / 3),
    # bytes: 3 GB and 1 GB on two links: mean 2 GB, MMR 1.5; JFI 16 / (2 * 10) = 0.8
    ([3e9, 1e9], 1.5, 0.8),
])
def test_mmr_and_jfi_by_hand(loads, want_mmr, want_jfi):
    assert mmr(loads) == pytest.approx(want_mmr, rel=1e-12)
    assert jfi(loads) == pytest.approx(want_jfi, rel=1e-12)


def test_nothing_carried_has_no_figure():
    assert mmr([]) is None and jfi([]) is None
    assert mmr([0, 0]) is None and jfi([0, 0]) is None


def _entry(link, tier, flows, counted):
    return {"link": link, "tier": tier, "flows": flows, "counted_bytes": counted}


LINKS = [
    _entry("w1->leaf1", "host", ["w1"], 10**9),
    _entry("leaf1->spine1", "uplink", ["w1", "w2", "w3"], 3 * 10**9),
    _entry("leaf1->spine2", "uplink", ["w4"], 10**9),
    _entry("leaf1->spine3", "uplink", [], 0),
    _entry("leaf1->spine4", "uplink", [], 0),
    _entry("leaf2->spine1", "uplink", [], 1000),
    _entry("leaf2->spine2", "uplink", [], 1000),
    _entry("spine1->leaf2", "downlink", ["w1", "w2", "w3"], 3 * 10**9),
    _entry("spine2->leaf2", "downlink", ["w4"], 10**9),
    _entry("spine1->leaf1", "downlink", [], 500),
    _entry("spine2->leaf1", "downlink", [], 500),
    _entry("spine1.1->super1", "superuplink", ["w1"], None),
    _entry("spine1.1->super2", "superuplink", ["w2"], 10**9),
    _entry("super1->spine2.1", "superdownlink", ["w1"], 10**9),
]


def test_parallel_sets_fan_out_of_a_switch_or_into_one():
    sets = {name: [e["link"] for e in group] for name, _tier, group in parallel_sets(LINKS)}
    assert sets == {
        "leaf1->*": ["leaf1->spine1", "leaf1->spine2", "leaf1->spine3", "leaf1->spine4"],
        "leaf2->*": ["leaf2->spine1", "leaf2->spine2"],
        "*->leaf2": ["spine1->leaf2", "spine2->leaf2"],
        "*->leaf1": ["spine1->leaf1", "spine2->leaf1"],
        "spine1.1->*": ["spine1.1->super1", "spine1.1->super2"],
        # super1->spine2.1 is the only link into spine2.1 from above: no set
    }


def test_load_balance_by_flows_and_by_bytes():
    lb = load_balance(LINKS)
    by_set = {s["set"]: s for s in lb["sets"]}
    # sets no flow was put on (leaf2->*, *->leaf1) are left out
    assert sorted(by_set) == ["*->leaf2", "leaf1->*", "spine1.1->*"]
    up = by_set["leaf1->*"]
    assert up["flows"] == [3, 1, 0, 0] and up["bytes"] == [3 * 10**9, 10**9, 0, 0]
    assert (up["flows_mmr"], up["flows_jfi"]) == (3.0, 0.4)
    assert (up["bytes_mmr"], up["bytes_jfi"]) == (3.0, 0.4)
    down = by_set["*->leaf2"]
    # 3 and 1 on two links: mean 2, MMR 1.5; JFI 16 / (2 * 10) = 0.8
    assert (down["flows_mmr"], down["flows_jfi"], down["bytes_mmr"], down["bytes_jfi"]) == (1.5, 0.8, 1.5, 0.8)
    sup = by_set["spine1.1->*"]
    # a link without a counter reading: no bytes figure for its set, the flows' still
    assert sup["bytes"] is None and sup["bytes_mmr"] is None and (sup["flows_mmr"], sup["flows_jfi"]) == (1.0, 1.0)
    assert lb["worst_flows_mmr"] == 3.0 and lb["lowest_flows_jfi"] == 0.4
    assert lb["worst_bytes_mmr"] == 3.0 and lb["lowest_bytes_jfi"] == 0.4


def test_no_set_no_figures():
    lb = load_balance([_entry("w1->leaf1", "host", ["w1"], 10)])
    assert lb == {"sets": [], "worst_flows_mmr": None, "lowest_flows_jfi": None, "worst_bytes_mmr": None,
                  "lowest_bytes_jfi": None}
