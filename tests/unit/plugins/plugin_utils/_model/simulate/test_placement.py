# -*- coding: utf-8 -*-
"""ECMP placement: deterministic for a seed, a collision against perfect spreading, its errors."""
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._model.simulate import (
    SimulationError,
    ecmp_place,
    fat_tree,
    ideal_completions,
    leaf_spine,
    simulate,
)

G = 1e9


EXACT = 1e-12  # "to float precision": the two models do the same arithmetic in another order


def agree(a, b):
    assert a.keys() == b.keys()
    for k in a:
        assert a[k] == pytest.approx(b[k], rel=EXACT, abs=1e-15), k


def eight_elephants(fab):
    """The issue's lab: 4 workers per leaf, each to its peer on the other leaf (8 cross-leaf flows)."""
    pairs = {"e%d" % i: ("h%d" % i, "h%d" % (i + 4)) for i in range(1, 5)}
    pairs.update({"e%d" % i: ("h%d" % i, "h%d" % (i - 4)) for i in range(5, 9)})
    five = {f: ("10.0.0.%s" % s[1:], "10.0.0.%s" % d[1:], 6, 40000 + int(f[1:]), 5201) for f, (s, d) in pairs.items()}
    return five, {f: fab.paths(s, d) for f, (s, d) in pairs.items()}


def test_ecmp_placement_is_deterministic_for_a_seed():
    fab = leaf_spine(2, 4, 4, 100 * G, 100 * G)
    five, paths = eight_elephants(fab)
    first = ecmp_place(five, paths, seed=0)
    assert first == ecmp_place(five, paths, seed=0)
    assert first != ecmp_place(five, paths, seed=1)
    assert all(first[f] in paths[f] for f in five)
    assert (fab.ecmp([0, 1, 2], [4, 5, 6], seed=3) == fab.ecmp([0, 1, 2], [4, 5, 6], seed=3)).all()


def test_a_collision_doubles_the_step_against_perfect_spreading():
    # 100 Gb/s everywhere. Leaf1's four flows hashed onto spines 1, 1, 2, 3: two share leaf1->spine1 (50 Gb/s each),
    # so 1 GB takes 0.16 s instead of 0.08. Perfect spreading: every flow a quarter on each spine, each uplink
    # carries 4 quarters = one flow's worth: 0.08 s, the host links' limit. Slowdown 2 = the busiest uplink's load.
    fab = leaf_spine(2, 4, 4, 100 * G, 100 * G)
    five, paths = eight_elephants(fab)
    choice = {"e1": 0, "e2": 0, "e3": 1, "e4": 2, "e5": 0, "e6": 1, "e7": 2, "e8": 3}
    placed = ecmp_place(five, paths, hash=choice)
    volumes = dict.fromkeys(five, 1e9)
    sim = simulate(fab.links, placed, volumes)
    assert sim.completions()["e1"] == pytest.approx(0.16, rel=EXACT)
    assert sim.step_time == pytest.approx(0.16, rel=EXACT)
    assert sim.completions()["e8"] == pytest.approx(0.08, rel=EXACT)
    hot = sim.per_link()["leaf1->spine1"]
    assert hot["flows"] == ["e1", "e2"] and hot["rates_bps"] == [50 * G, 50 * G] and hot["load"] == 1.0
    ideal = ideal_completions(fab.links, paths, volumes)
    assert max(ideal.values()) == pytest.approx(0.08, rel=EXACT)
    assert sim.step_time / max(ideal.values()) == pytest.approx(2.0, rel=EXACT)


def test_placement_errors():
    paths = {"f": [["a"], ["b"]]}
    with pytest.raises(SimulationError, match="hash: flow 'f' has path index 2; expected 0 to 1"):
        ecmp_place({"f": (1, 2, 6, 3, 4)}, paths, hash={"f": 2})
    with pytest.raises(SimulationError, match="hash: expected 'random'"):
        ecmp_place({"f": (1, 2, 6, 3, 4)}, paths, hash="crc32")
    with pytest.raises(SimulationError, match="paths: no equal-cost paths for flow 'g'"):
        ecmp_place({"g": (1, 2, 6, 3, 4)}, paths)
    with pytest.raises(SimulationError, match="host 'h99' is not in this leaf-spine fabric"):
        leaf_spine(2, 2, 2, G, G).paths("h1", "h99")
    with pytest.raises(SimulationError, match="k: 5; expected an even integer >= 2"):
        fat_tree(5, G)
    with pytest.raises(SimulationError, match="from host h1 to itself"):
        leaf_spine(2, 2, 2, G, G).path_count([0], [0])
