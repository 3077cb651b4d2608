# -*- coding: utf-8 -*-
"""The simulator's fabrics: leaf-spine and fat-tree names, sizes and equal-cost paths, by name and as arrays; the
hose model."""
from __future__ import annotations

import numpy as np
import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._model.simulate import (
    SimulationError,
    fat_tree,
    ideal_completions,
    leaf_spine,
    simulate,
    simulate_arrays,
)

G = 1e9


EXACT = 1e-12  # "to float precision": the two models do the same arithmetic in another order


def agree(a, b):
    assert a.keys() == b.keys()
    for k in a:
        assert a[k] == pytest.approx(b[k], rel=EXACT, abs=1e-15), k


def test_leaf_spine_names_and_paths():
    fab = leaf_spine(2, 4, 4, 100 * G, 100 * G)
    assert len(fab.hosts) == 8 and len(fab.links) == 8 * 2 + 2 * 4 * 2
    assert fab.paths("h1", "h2") == [["h1->leaf1", "leaf1->h2"]]
    assert fab.paths("h1", "h6") == [["h1->leaf1", "leaf1->spine%d" % s, "spine%d->leaf2" % s, "leaf2->h6"]
                                     for s in (1, 2, 3, 4)]
    assert fab.links["leaf2->spine3"] == 100 * G


def test_fat_tree_sizes_and_paths():
    ft = fat_tree(4, 10 * G, 40 * G)
    assert len(ft.hosts) == 16 and len(ft.links) == 6 * 16
    assert ft.paths("h1", "h2") == [["h1->edge1.1", "edge1.1->h2"]]
    assert ft.paths("h1", "h3") == [["h1->edge1.1", "edge1.1->agg1.%d" % a, "agg1.%d->edge1.2" % a, "edge1.2->h3"]
                                    for a in (1, 2)]
    far = ft.paths("h1", "h16")
    assert len(far) == 4
    assert far[3] == ["h1->edge1.1", "edge1.1->agg1.2", "agg1.2->core2.2", "core2.2->agg4.2", "agg4.2->edge4.2",
                      "edge4.2->h16"]
    assert ft.links["agg1.2->core2.2"] == 40 * G and ft.links["h1->edge1.1"] == 10 * G
    big = fat_tree(32, 100 * G)
    assert len(big.hosts) == 8192
    assert big.path_count([0, 0, 0], [1, 16, 8191]).tolist() == [1, 16, 256]


def test_names_and_arrays_agree():
    ft = fat_tree(4, 10 * G)
    src, dst = np.array([0, 1, 2, 5]), np.array([15, 15, 3, 9])
    choice = ft.ecmp(src, dst, seed=2)
    indptr, indices = ft.path_links(src, dst, choice)
    by_arrays = simulate_arrays(ft.capacity, indptr, indices, 1e9)
    flows = {i: [ft.link_names[j] for j in indices[indptr[i]:indptr[i + 1]]] for i in range(4)}
    assert flows[0] == ft.paths(0, 15)[choice[0]]
    agree(dict(enumerate(by_arrays.finish.tolist())), simulate(ft.links, flows, dict.fromkeys(flows, 1e9))
          .completions())


def test_the_hose_model_is_perfect_spreading_on_a_nonblocking_fabric():
    ft = fat_tree(4, 10 * G)
    rng = np.random.default_rng(11)
    src = rng.integers(0, 16, 40)
    dst = (src + rng.integers(1, 16, 40)) % 16
    volume = rng.choice([1e8, 3e8], 40)
    hose = simulate_arrays(ft.capacity, *ft.hose(src, dst), volume)
    paths = {i: ft.paths(int(s), int(d)) for i, (s, d) in enumerate(zip(src, dst))}
    spread = ideal_completions(ft.links, paths, dict(enumerate(volume.tolist())))
    agree(dict(enumerate(hose.finish.tolist())), spread)
    with pytest.raises(SimulationError, match="oversubscribed"):
        leaf_spine(2, 2, 4, 100 * G, 100 * G).hose([0], [4])


# --------------------------------------------------------------------------- 3-tier Clos and rail-optimized
from ansible_collections.aifabric.lab.plugins.plugin_utils._model.simulate import clos3, rail_optimized  # noqa: E402


def test_clos3_names_paths_and_oversubscription():
    # 2 pods of 2 leaves and 2 spines, 2 superspines per plane, 2 hosts per leaf: 8 hosts
    c = clos3(2, 2, 2, 2, 2, 100 * G, 100 * G, 50 * G)
    assert c.hosts == ["h%d" % i for i in range(1, 9)]
    # host links 2 * 8, leaf-spine 2 * (2 pods * 2 * 2), spine-superspine 2 * (2 pods * 2 spines * 2)
    assert len(c.links) == 16 + 16 + 16
    assert c.paths("h1", "h2") == [["h1->leaf1.1", "leaf1.1->h2"]]
    assert c.paths("h1", "h3") == [["h1->leaf1.1", "leaf1.1->spine1.%d" % s, "spine1.%d->leaf1.2" % s, "leaf1.2->h3"]
                                   for s in (1, 2)]
    far = c.paths("h1", "h8")
    assert len(far) == 4
    # path 3: plane 3 // 2 + 1 = 2, superspine 3 % 2 + 1 = 2
    assert far[3] == ["h1->leaf1.1", "leaf1.1->spine1.2", "spine1.2->super2.2", "super2.2->spine2.2",
                      "spine2.2->leaf2.2", "leaf2.2->h8"]
    assert far[0][2:4] == ["spine1.1->super1.1", "super1.1->spine2.1"]
    assert c.links["spine1.2->super2.2"] == 50 * G and c.links["leaf1.1->spine1.2"] == 100 * G
    # leaf: 2 hosts * 100 in, 2 spines * 100 up: 1:1; spine: 2 leaves * 100 in, 2 superspines * 50 up: 2:1
    assert c.oversubscription == {"leaf": 1.0, "spine": 2.0} and not c.nonblocking
    assert clos3(2, 2, 2, 2, 2, 100 * G, 100 * G).nonblocking


def test_clos3_oversubscribed_spine_tier_halves_cross_pod_elephants():
    # 4 elephants from pod 1 to pod 2, one per host pair, each on its own superspine: every superuplink at 50 G
    # carries one flow, which then runs at 50 G (the host links are 100 G): 1 GB in 8e9 / 50e9 = 0.16 s
    c = clos3(2, 2, 2, 2, 2, 100 * G, 100 * G, 50 * G)
    src, dst = np.array([0, 1, 2, 3]), np.array([4, 5, 6, 7])
    indptr, indices = c.path_links(src, dst, np.array([0, 1, 2, 3]))
    sim = simulate_arrays(c.capacity, indptr, indices, 1e9)
    assert np.allclose(sim.finish, 8e9 / (50 * G))


def test_rail_optimized_names_and_paths():
    r = rail_optimized(3, 2, 2, 100 * G, 100 * G)
    assert r.hosts == ["h1.r1", "h1.r2", "h2.r1", "h2.r2", "h3.r1", "h3.r2"]
    assert len(r.links) == 2 * 6 + 2 * 2 * 2
    # same rail: the rail leaf alone
    assert r.paths("h1.r1", "h2.r1") == [["h1.r1->rail1", "rail1->h2.r1"]]
    # across rails: through a spine
    assert r.paths("h1.r1", "h2.r2") == [["h1.r1->rail1", "rail1->spine%d" % k, "spine%d->rail2" % k,
                                          "rail2->h2.r2"] for k in (1, 2)]
    assert r.paths("h1.r1", "h1.r2") == [["h1.r1->rail1", "rail1->spine%d" % k, "spine%d->rail2" % k,
                                          "rail2->h1.r2"] for k in (1, 2)]
    # 3 hosts at 100 G on a rail, 2 uplinks at 100 G: 1.5:1
    assert r.oversubscription == {"rail": 1.5} and not r.nonblocking


def test_rail_optimized_with_the_in_host_relay_never_crosses_a_spine():
    r = rail_optimized(2, 2, 2, 100 * G, 100 * G, relay_rate=900 * G)
    assert r.paths("h1.r1", "h2.r2") == [["h1.r1->h1.r2", "h1.r2->rail2", "rail2->h2.r2"]]
    assert r.paths("h1.r2", "h2.r1") == [["h1.r2->h1.r1", "h1.r1->rail1", "rail1->h2.r1"]]
    assert r.paths("h1.r1", "h1.r2") == [["h1.r1->h1.r2"]]
    assert r.paths("h1.r1", "h2.r1") == [["h1.r1->rail1", "rail1->h2.r1"]]
    assert r.links["h2.r2->h2.r1"] == 900 * G and not r.nonblocking
    with pytest.raises(SimulationError, match="oversubscribed"):
        r.hose([0], [3])


def test_rail_optimized_same_rail_traffic_is_nonblocking_and_cross_rail_collides():
    # the ring of the 4 GPUs of 2 hosts, NIC r to NIC r of the other host: every flow alone at 100 G (0.08 s per GB)
    r = rail_optimized(2, 2, 1, 100 * G, 100 * G)
    links = r.links
    same = {"a": r.paths("h1.r1", "h2.r1")[0], "b": r.paths("h1.r2", "h2.r2")[0]}
    assert simulate(links, same, {"a": 1e9, "b": 1e9}).completions() == pytest.approx({"a": 0.08, "b": 0.08})
    # crossing rails (h1.r1 -> h2.r2, h1.r2 -> h2.r1) on one spine: each alone on its own rail's uplink: 0.08 s
    cross = {"a": r.paths("h1.r1", "h2.r2")[0], "b": r.paths("h1.r2", "h2.r1")[0],
             # a third flow h2.r1 -> h1.r2 shares rail1->spine1 with a: both at 50 G, 1 GB in 0.16 s
             "c": r.paths("h2.r1", "h1.r2")[0]}
    got = simulate(links, cross, {"a": 1e9, "b": 1e9, "c": 1e9}).completions()
    assert got == pytest.approx({"a": 0.16, "b": 0.08, "c": 0.16})
