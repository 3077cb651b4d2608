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
