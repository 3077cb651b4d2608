# -*- coding: utf-8 -*-
from __future__ import annotations

import math

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._model.fair_share import (
    goodput_factor,
    max_min_rates,
    predict_completions,
)

G = 1e9


@pytest.mark.parametrize(
    "flows, links, expected",
    [
        # The seed: three workers through an 8 Gb/s bottleneck, one capped at 2 -> 3, 3, 2.
        ({"w1": ["b"], "w2": ["b"], "w3": ["b", "t3"]}, {"b": 8 * G, "t3": 2 * G},
         {"w1": 3 * G, "w2": 3 * G, "w3": 2 * G}),
        # No throttle: equal thirds.
        ({"w1": ["b"], "w2": ["b"], "w3": ["b"]}, {"b": 9 * G}, {"w1": 3 * G, "w2": 3 * G, "w3": 3 * G}),
        # A throttle above the fair share does not bind.
        ({"w1": ["b"], "w2": ["b", "t2"]}, {"b": 8 * G, "t2": 5 * G}, {"w1": 4 * G, "w2": 4 * G}),
        # Two bottlenecks in series (the classic parking lot): long flow crosses both.
        ({"long": ["l1", "l2"], "a": ["l1"], "b": ["l2"]}, {"l1": 10 * G, "l2": 4 * G},
         {"long": 2 * G, "a": 8 * G, "b": 2 * G}),
        # A flow with no links is unconstrained.
        ({"free": [], "w": ["b"]}, {"b": 1 * G}, {"free": math.inf, "w": 1 * G}),
    ],
)
def test_max_min_rates(flows, links, expected):
    rates = max_min_rates(flows, links)
    assert rates.keys() == expected.keys()
    for flow, rate in expected.items():
        assert rates[flow] == pytest.approx(rate, rel=1e-9), flow


def test_unknown_link_is_named():
    with pytest.raises(KeyError, match="'w1' crosses link 'nope'"):
        max_min_rates({"w1": ["nope"]}, {"b": G})


def test_seed_step_prediction():
    # 1 GB each: healthy at 3 Gb/s until 8/3 s, then the throttled one alone at its cap of 2 Gb/s -> 4 s.
    flows = {"w1": ["b"], "w2": ["b"], "w3": ["b", "t3"]}
    times = predict_completions(flows, {"b": 8 * G, "t3": 2 * G}, {f: 1e9 for f in flows})
    assert times["w1"] == pytest.approx(8 / 3)
    assert times["w2"] == pytest.approx(8 / 3)
    assert times["w3"] == pytest.approx(4.0)
    # Idle share of the healthy workers = (4 - 8/3) / 4 = 1/3: the seed's "32 percent" (13.1 of 40.75 s).
    assert (times["w3"] - times["w1"]) / times["w3"] == pytest.approx(1 / 3)


def test_reshare_when_a_flow_finishes():
    # Unequal volumes, no throttle: 1 GB and 3 GB through 8 Gb/s. Both at 4 Gb/s until the small one is done
    # (2 s, 1 GB each sent); then the big one alone at 8 Gb/s for its last 2 GB (2 s) -> 4 s.
    times = predict_completions({"a": ["b"], "c": ["b"]}, {"b": 8 * G}, {"a": 1e9, "c": 3e9})
    assert times == {"a": pytest.approx(2.0), "c": pytest.approx(4.0)}


def test_goodput_factor_mtu_9000():
    # 9000-byte IP packets carry 8948 bytes of TCP payload (20 IP + 20 TCP + 12 timestamps) in 9014-byte frames.
    assert goodput_factor(9000) == pytest.approx(8948 / 9014)
    assert 8 * goodput_factor(9000) == pytest.approx(7.9414, abs=1e-4)  # the seed's single elephant: 7.94
    assert goodput_factor(1500) == pytest.approx(1448 / 1514)
    with pytest.raises(ValueError):
        goodput_factor(40)


def test_prediction_with_goodput_factor():
    f = goodput_factor(9000)
    flows = {"w1": ["b"], "w2": ["b"], "w3": ["b", "t3"]}
    times = predict_completions(flows, {"b": 8 * G, "t3": 2 * G}, {k: 2e9 for k in flows}, {k: f for k in flows})
    assert times["w3"] == pytest.approx(2e9 * 8 / (2 * G * f))


def test_zero_volume_and_zero_capacity():
    times = predict_completions({"a": ["b"], "z": ["b"]}, {"b": G}, {"a": 0, "z": 1e9})
    assert times["a"] == 0.0 and times["z"] == pytest.approx(8.0)
    stuck = predict_completions({"a": ["dead"]}, {"dead": 0.0}, {"a": 1e9})
    assert stuck["a"] == math.inf


@pytest.mark.parametrize("starts, want", [
    # b joins at 1 s: a alone 1 Gbit, then both at 0.5; b's 2 Gbit take 4 s (5 s); a's last 1 Gbit alone: 6 s
    ({"b": 1.0}, {"a": 6.0, "b": 5.0}),
    # b starts after a has ended: the link idles from 4 to 10 s, b alone 2 s
    ({"b": 10.0}, {"a": 4.0, "b": 12.0}),
    # both late by the same: the same step shifted
    ({"a": 2.0, "b": 2.0}, {"a": 8.0, "b": 6.0}),
    ({}, {"a": 6.0, "b": 4.0}),
])
def test_late_starts_are_predicted_by_hand_and_as_the_simulator_does(starts, want):
    from ansible_collections.aifabric.lab.plugins.plugin_utils._model.simulate import simulate

    links, flows, volumes = {"L": 1e9}, {"a": ["L"], "b": ["L"]}, {"a": 4e9 / 8, "b": 2e9 / 8}
    assert predict_completions(flows, links, volumes, starts=starts) == pytest.approx(want, abs=1e-9)
    assert simulate(links, flows, volumes, starts=starts).completions() == pytest.approx(want, abs=1e-9)
