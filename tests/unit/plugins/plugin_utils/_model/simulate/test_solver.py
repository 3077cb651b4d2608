# -*- coding: utf-8 -*-
"""The simulator's solver: hand-computed cases, agreement with _model.fair_share on the lab's own steps, its refills
and windowed search, its input errors."""
from __future__ import annotations

import random

import numpy as np
import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._units import parse_rate
from ansible_collections.aifabric.lab.plugins.plugin_utils._model.fair_share import (
    goodput_factor,
    max_min_rates,
    predict_completions,
)
from ansible_collections.aifabric.lab.plugins.plugin_utils._model.simulate import (
    SimulationError,
    fat_tree,
    max_min,
    simulate,
    simulate_arrays,
)
from ansible_collections.aifabric.lab.plugins.plugin_utils._model.simulate import solver as _solver
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import plan
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.patterns import COLLECTIVES, PATTERNS

G = 1e9


EXACT = 1e-12  # "to float precision": the two models do the same arithmetic in another order


def agree(a, b):
    assert a.keys() == b.keys()
    for k in a:
        assert a[k] == pytest.approx(b[k], rel=EXACT, abs=1e-15), k


def test_two_flows_share_a_link_then_the_survivor_speeds_up():
    # 8 Gb/s; a: 2 GB (16 Gbit) from 0 s, b: 0.5 GB (4 Gbit) from 1 s. a alone at 8 until 1 s (8 Gbit left); both
    # at 4 until b is done at 2 s (a: 4 Gbit left); a alone at 8 again: 0.5 s more -> 2.5 s.
    sim = simulate({"port": 8 * G}, {"a": ["port"], "b": ["port"]}, {"a": 2e9, "b": 0.5e9}, starts={"b": 1.0})
    assert sim.completions() == {"a": pytest.approx(2.5, rel=EXACT), "b": pytest.approx(2.0, rel=EXACT)}
    assert sim.rates() == {"a": 8 * G, "b": 4 * G}  # each flow's rate when it started
    assert sim.step_time == pytest.approx(2.5, rel=EXACT)


def test_reshare_as_in_fair_share():
    # 1 GB and 3 GB through 8 Gb/s: 4 each until 2 s, then the big one alone at 8 for its last 2 GB -> 4 s.
    sim = simulate({"b": 8 * G}, {"a": ["b"], "c": ["b"]}, {"a": 1e9, "c": 3e9})
    assert sim.completions() == {"a": pytest.approx(2.0, rel=EXACT), "c": pytest.approx(4.0, rel=EXACT)}


def test_a_three_link_chain():
    # "long" crosses l1 (10), l2 (4), l3 (3 Gb/s); a, b, c cross one each. Filling: l3 fills first at 1.5 each
    # (long, c); then l2: b gets 4 - 1.5 = 2.5; l1: a gets 10 - 1.5 = 8.5.
    # c (1.5 Gbit) is done at 1 s. Then l3 holds long alone; l2 is the tightest: long and b at 2, a at 8.
    # a had 20 - 8.5 = 11.5 Gbit left: done at 1 + 11.5/8 = 2.4375 s. long and b keep 2 each: long (6.5 left at 1 s)
    # done at 1 + 6.5/2 = 4.25 s; b (7.5 left at 1 s, 1.0 at 4.25 s) alone on l2 at 4: 0.25 s more -> 4.5 s.
    links = {"l1": 10 * G, "l2": 4 * G, "l3": 3 * G}
    flows = {"long": ["l1", "l2", "l3"], "a": ["l1"], "b": ["l2"], "c": ["l3"]}
    volumes = {"long": 1e9, "a": 2.5e9, "b": 1.25e9, "c": 0.1875e9}
    sim = simulate(links, flows, volumes)
    assert sim.rates() == {"long": 1.5 * G, "a": 8.5 * G, "b": 2.5 * G, "c": 1.5 * G}
    agree(sim.completions(), {"c": 1.0, "a": 2.4375, "long": 4.25, "b": 4.5})
    agree(sim.completions(), predict_completions(flows, links, volumes))


def test_goodput_factor_and_empty_flow():
    f = goodput_factor(9000)
    sim = simulate({"b": 8 * G}, {"a": ["b"], "z": ["b"]}, {"a": 1e9, "z": 0}, factors={"a": f})
    assert sim.completions() == {"a": pytest.approx(1.0 / f, rel=EXACT), "z": 0.0}


def test_max_min_rates_as_fair_share():
    flows = {"long": ["l1", "l2"], "a": ["l1"], "b": ["l2"]}
    links = {"l1": 10 * G, "l2": 4 * G}
    agree(max_min(links, flows), max_min_rates(flows, links))
    assert max_min(links, flows) == {"long": 2 * G, "a": 8 * G, "b": 2 * G}


def test_the_seeds_incast_with_a_throttle():
    # three workers into an 8 Gb/s port, w3 throttled to 2: 3, 3, 2 Gb/s; 1 GB each: 8/3, 8/3 and 4 s.
    flows = {"w1": ["b"], "w2": ["b"], "w3": ["b", "t3"]}
    links = {"b": 8 * G, "t3": 2 * G}
    volumes = {f: 1e9 for f in flows}
    sim = simulate(links, flows, volumes)
    agree(sim.completions(), {"w1": 8 / 3, "w2": 8 / 3, "w3": 4.0})
    agree(sim.completions(), predict_completions(flows, links, volumes))
    factors = {k: goodput_factor(9000) for k in flows}
    agree(simulate(links, flows, volumes, factors=factors).completions(),
          predict_completions(flows, links, volumes, factors))


def test_an_uneven_four_worker_step():
    # 1, 2, 3 and 4 GB from four workers to one sink's 8 Gb/s port, w4 throttled to 2 Gb/s, TCP at MTU 9000 and
    # 1500: every worker finishes at another time and the others speed up each time.
    links = {"sink": 8 * G, "w4 egress": 2 * G, "w1 egress": 8 * G, "w2 egress": 8 * G, "w3 egress": 8 * G}
    flows = {w: ["%s egress" % w, "sink"] for w in ("w1", "w2", "w3", "w4")}
    volumes = {"w1": 1e9, "w2": 2e9, "w3": 3e9, "w4": 4e9}
    factors = {"w1": goodput_factor(9000), "w2": goodput_factor(9000), "w3": goodput_factor(1500),
               "w4": goodput_factor(9000)}
    sim = simulate(links, flows, volumes, factors=factors)
    expected = predict_completions(flows, links, volumes, factors)
    agree(sim.completions(), expected)
    assert len(set(expected.values())) == 4
    agree(simulate(links, flows, volumes, factors=factors, full_recompute=True).completions(), expected)


def lab_steps():
    """Every pattern's and collective's rounds on the unit tests' lab (4 workers, 2 sinks, w4 throttled to 2 Gb/s)."""
    workers = ["w1", "w2", "w3", "w4"]
    hostvars = {h: {"lab_address": "198.18.0.%d" % (i + 1)} for i, h in enumerate(["s1", "s2"] + workers)}
    for pattern in list(PATTERNS) + list(COLLECTIVES):
        p = plan({"name": "x", "pattern": pattern, "volume": "1GB", "throttles": {"w4": "2gbit"}},
                 {"workers": workers, "sinks": ["s1", "s2"]}, hostvars, line_rate="8gbit", switch="sw")
        for k, rnd in enumerate(p.rounds):
            flows, links, volumes = {}, {}, {}
            for f in rnd.flows():
                flows[(f.src, f.flow_id)] = [hop.link for hop in f.path]
                links.update({hop.link: parse_rate(hop.rate) for hop in f.path})
                volumes[(f.src, f.flow_id)] = f.volume
            if flows:
                yield pytest.param(flows, links, volumes, id="%s.%d" % (pattern, k))


@pytest.mark.parametrize("flows, links, volumes", list(lab_steps()))
def test_every_lab_pattern_as_fair_share(flows, links, volumes):
    agree(simulate(links, flows, volumes).completions(), predict_completions(flows, links, volumes))


def test_random_small_cases_as_fair_share():
    rng = random.Random(7)
    for _case in range(60):
        links = {"l%d" % i: rng.choice([1, 2, 2.5, 4, 8, 10]) * G for i in range(rng.randint(1, 5))}
        flows = {"f%d" % i: rng.sample(sorted(links), rng.randint(1, len(links))) for i in range(rng.randint(1, 7))}
        volumes = {f: rng.choice([0, 1e8, 5e8, 1e9, 3.3e9]) for f in flows}
        factors = {f: rng.choice([1.0, goodput_factor(9000), goodput_factor(1500)]) for f in flows}
        expected = predict_completions(flows, links, volumes, factors)
        agree(simulate(links, flows, volumes, factors=factors).completions(), expected)
        agree(max_min(links, flows), max_min_rates(flows, links))


def test_incremental_refill_equals_full_refill_on_a_fabric():
    ft = fat_tree(4, 10 * G)
    rng = np.random.default_rng(5)
    src = rng.integers(0, 16, 300)
    dst = (src + rng.integers(1, 16, 300)) % 16
    indptr, indices = ft.path_links(src, dst, ft.ecmp(src, dst, seed=1))
    volume = rng.choice([1e8, 2e8, 5e8], 300)
    start = rng.choice([0.0, 0.0, 0.05, 0.1], 300)
    fast = simulate_arrays(ft.capacity, indptr, indices, volume, start=start)
    full = simulate_arrays(ft.capacity, indptr, indices, volume, start=start, full_recompute=True)
    np.testing.assert_allclose(fast.finish, full.finish, rtol=1e-11)
    assert fast.refilled < full.refilled  # the point of the tail refill


def test_the_windowed_search_for_the_next_full_link(monkeypatch):
    # With a window of 2 links (the default holds 1024, and all links of a small case), the filling renews its
    # window of lowest fill levels again and again: the same completions as _fair_share.
    monkeypatch.setattr(_solver, "_WINDOW", 2)
    ft = fat_tree(4, 10 * G)
    rng = np.random.default_rng(3)
    src = rng.integers(0, 16, 60)
    dst = (src + rng.integers(1, 16, 60)) % 16
    indptr, indices = ft.path_links(src, dst, ft.ecmp(src, dst, seed=4))
    flows = {i: [ft.link_names[j] for j in indices[indptr[i]:indptr[i + 1]]] for i in range(60)}
    volumes = dict(enumerate(rng.choice([1e8, 2e8, 7e8], 60).tolist()))
    links = {name: ft.links[name] for name in {link for path in flows.values() for link in path}}
    agree(simulate(links, flows, volumes).completions(), predict_completions(flows, links, volumes))


def test_grouping_by_link_beyond_16_bits():
    rng = np.random.default_rng(0)
    for n_keys in (3, 1 << 16, 70_000, 5_000_000):
        keys = rng.integers(0, n_keys, 5000)
        order = _solver._group(keys, n_keys)
        assert (np.diff(keys[order]) >= 0).all()
        assert (np.diff(order)[np.diff(keys[order]) == 0] > 0).all()  # stable within a key


@pytest.mark.parametrize("links, flows, volumes, message", [
    ({"b": G}, {"w1": ["nope"]}, {"w1": 1}, "flows: flow 'w1' crosses link 'nope', which is not in links: add it"),
    ({"b": 0}, {"w1": ["b"]}, {"w1": 1}, "links: link 'b' has capacity 0: every link needs a capacity in bit/s > 0"),
    ({"b": -G}, {"w1": ["b"]}, {"w1": 1}, "link 'b' has capacity -1000000000.0"),
    ({"b": G}, {"w1": []}, {"w1": 1}, "flows: flow 'w1' has an empty path: give the links it crosses"),
    ({"b": G}, {"w1": ["b", "b"]}, {"w1": 1}, "flow 'w1' names link 'b' twice"),
    ({"b": G}, {"w1": ["b"]}, {}, "volumes: no value for flow 'w1'; give every flow its volumes"),
    ({"b": G}, {"w1": ["b"]}, {"w1": -5}, "volumes: flow 'w1' has -5: expected a number >= 0"),
    ({"b": G}, {"w1": "b"}, {"w1": 1}, "the path of flow 'w1' is 'b': give a list of link names"),
    ({}, {"w1": ["b"]}, {"w1": 1}, "links: expected {link: capacity in bit/s} with at least one link"),
])
def test_input_errors_name_the_parameter_and_the_fix(links, flows, volumes, message):
    with pytest.raises(SimulationError, match=message.replace("{", "\\{").replace("}", "\\}")):
        simulate(links, flows, volumes)


def test_array_input_errors():
    with pytest.raises(SimulationError, match=r"capacity\[1\] is 0.0 bit/s: every link needs a finite capacity > 0"):
        simulate_arrays([G, 0.0], [0, 1], [0], [1])
    with pytest.raises(SimulationError, match="flow 1 has an empty path"):
        simulate_arrays([G], [0, 1, 1], [0], [1, 1])
    with pytest.raises(SimulationError, match="flow 0 crosses link index 3, which is not a link"):
        simulate_arrays([G], [0, 1], [3], [1])
    with pytest.raises(SimulationError, match=r"start\[0\] is -1.0"):
        simulate_arrays([G], [0, 1], [0], [1], start=[-1.0])
    with pytest.raises(SimulationError, match="starts: flow 'x' is not in flows"):
        simulate({"b": G}, {"w1": ["b"]}, {"w1": 1}, starts={"x": 1.0})
