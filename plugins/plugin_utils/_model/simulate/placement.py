# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ECMP placement: one equal-cost path per flow, by a seeded hash of its five-tuple or as the kernel placed it."""

from __future__ import annotations

import hashlib

from .solver import SimulationError

__all__ = ["flow_hash", "ecmp_place"]

# --- ECMP ----------------------------------------------------------------------------------------------------------


def flow_hash(five_tuple, seed=0):
    """A seeded 64-bit hash of a flow's five-tuple (any tuple: addresses, protocol, ports), stable across runs.

    blake2b of the tuple's ``repr`` keyed by the seed: uniform, independent per flow, the same on every machine.
    """
    key = str(int(seed)).encode()
    return int.from_bytes(hashlib.blake2b(repr(tuple(five_tuple)).encode(), digest_size=8, key=key).digest(), "big")


def ecmp_place(flows, paths, hash="random", seed=0):
    """One equal-cost path per flow: ``{flow_id: path}``.

    ``flows``: ``{flow_id: five_tuple}`` (e.g. ``(src_ip, dst_ip, 6, sport, dport)``); ``paths``:
    ``{flow_id: [path, ...]}`` (its equal-cost candidates, e.g. ``Fabric.paths(src, dst)``). ``hash``:
    ``"random"``: path ``flow_hash(five_tuple, seed) mod len(paths)`` (deterministic for a seed, a different draw for
    another seed: what a switch's seeded hash does, statistically); or ``{flow_id: path index}``: the placement given
    (what the kernel chose for each flow in the lab).
    """
    if not isinstance(flows, dict) or not isinstance(paths, dict):
        raise SimulationError("ecmp_place: flows must be {flow_id: five_tuple} and paths {flow_id: [path, ...]}")
    explicit = isinstance(hash, dict)
    if not explicit and hash != "random":
        raise SimulationError("hash: expected 'random' (a seeded hash of the five-tuple) or {flow_id: path index}, "
                              "got %r" % (hash,))
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise SimulationError("seed: expected an integer, got %r" % (seed,))
    out = {}
    for flow_id, five_tuple in flows.items():
        if flow_id not in paths:
            raise SimulationError("paths: no equal-cost paths for flow %r; give its candidates" % (flow_id,))
        candidates = list(paths[flow_id])
        if not candidates:
            raise SimulationError("paths: flow %r has no path: give it at least one" % (flow_id,))
        if explicit:
            if flow_id not in hash:
                raise SimulationError("hash: no path index for flow %r; give every flow its chosen path"
                                      % (flow_id,))
            k = hash[flow_id]
            if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < len(candidates):
                raise SimulationError("hash: flow %r has path index %r; expected 0 to %d (it has %d equal-cost paths)"
                                      % (flow_id, k, len(candidates) - 1, len(candidates)))
        else:
            if not isinstance(five_tuple, (tuple, list)):
                raise SimulationError("flows: flow %r has five-tuple %r; expected a tuple such as "
                                      "(src_ip, dst_ip, protocol, sport, dport)" % (flow_id, five_tuple))
            k = flow_hash(five_tuple, seed) % len(candidates)
        out[flow_id] = list(candidates[k])
    return out
