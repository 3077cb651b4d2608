# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who sends to whom: traffic patterns and collectives, as rounds of flows.

A pattern is a function ``(workers, sinks, root) -> rounds``; a round is the list of ``(source, destination, share)``
flows that start together and end at one barrier (``share``: the fraction of the experiment's volume the flow
carries). A plain pattern is one round. A collective is a sequence of dependent rounds, each a barrier sub-step:
ring AllReduce is 2(n-1) rounds in which every worker sends V/n to the next.

``BUS_FACTOR`` is nccl-tests' ratio of bus bandwidth to algorithm bandwidth (``busbw = algbw x factor``,
doc/PERFORMANCE.md of nccl-tests), so that a collective's figures can be laid beside nccl-tests'.
"""

from __future__ import annotations

__all__ = ["PATTERNS", "COLLECTIVES", "NEEDS_SINK", "BUS_FACTOR", "PatternError", "rounds", "tournament"]


class PatternError(ValueError):
    """A pattern that cannot be built from these hosts; the message names the field and the fix."""


def _need(workers, n, pattern):
    if len(workers) < n:
        raise PatternError("experiment.pattern: %s needs %d workers or more (got %d)" % (pattern, n, len(workers)))


def _ring_round(workers, share=1.0):
    return [(w, workers[(i + 1) % len(workers)], share) for i, w in enumerate(workers)]


def incast(workers, sinks, root=None):
    """Every worker sends to the first sink: the collective step of the seed (the sink's port is the bottleneck)."""
    return [[(w, sinks[0], 1.0) for w in workers]]


def ring(workers, sinks, root=None):
    """Every worker sends to the next, the last to the first: each link carries one flow, so the step is as slow as
    its slowest path."""
    _need(workers, 2, "ring")
    return [_ring_round(workers)]


def ring_bidirectional(workers, sinks, root=None):
    """Every worker sends to both neighbours at once: two flows out of and into every port, each half the line."""
    _need(workers, 3, "ring_bidirectional")
    n = len(workers)
    return [[(w, workers[(i + 1) % n], 1.0) for i, w in enumerate(workers)]
            + [(w, workers[(i - 1) % n], 1.0) for i, w in enumerate(workers)]]


def shift(workers, sinks, root=None):
    """Every worker sends to the worker half the list further on (a permutation, one flow out of and into every port):
    with the workers listed leaf by leaf, every flow crosses the fabric between two leaves, the elephants an ECMP
    fabric hashes onto its uplinks."""
    _need(workers, 2, "shift")
    n = len(workers)
    return [[(w, workers[(i + n // 2) % n], 1.0) for i, w in enumerate(workers)]]


def tournament(workers):
    """Round-robin pairings (the circle method): n-1 rounds of disjoint pairs for even n; for odd n, n rounds, in each
    of which one worker sits out. Every two workers meet exactly once."""
    players = list(workers) + ([None] if len(workers) % 2 else [])
    n = len(players)
    out = []
    for _r in range(n - 1):
        pairs = [(players[i], players[n - 1 - i]) for i in range(n // 2)]
        out.append([(a, b) for a, b in pairs if a is not None and b is not None])
        players = [players[0]] + [players[-1]] + players[1:-1]  # keep the first, rotate the rest
    return out


def pairwise(workers, sinks, root=None):
    """A round-robin tournament: in each round disjoint pairs exchange in both directions at once (n-1 rounds, odd n:
    n rounds with one worker sitting out of each)."""
    _need(workers, 2, "pairwise")
    return [[(a, b, 1.0) for a, b in pairs] + [(b, a, 1.0) for a, b in pairs] for pairs in tournament(workers)]


def all_to_all(workers, sinks, root=None):
    """Every worker sends to every other at once (mixture-of-experts dispatch): n-1 flows out of and into every
    port."""
    _need(workers, 2, "all_to_all")
    return [[(a, b, 1.0) for a in workers for b in workers if a != b]]


def one_to_many(workers, sinks, root=None):
    """The root sends to every other worker at once (a broadcast): the root's port is the bottleneck."""
    _need(workers, 2, "one_to_many")
    root = root or workers[0]
    if root not in workers:
        raise PatternError("experiment.root: %r is not one of the experiment's workers (%s)"
                           % (root, ", ".join(workers)))
    return [[(root, w, 1.0) for w in workers if w != root]]


def many_to_many(workers, sinks, root=None):
    """Every worker sends to every sink at once: each sink's port shared by the workers, each worker's port by the
    sinks."""
    if len(sinks) < 2:
        raise PatternError("experiment.pattern: many_to_many needs 2 sinks or more in group 'sinks' (got %d)"
                           % len(sinks))
    return [[(w, s, 1.0) for w in workers for s in sinks]]


def allreduce_ring(workers, sinks, root=None):
    """Ring AllReduce: reduce-scatter then all-gather, 2(n-1) dependent rounds, in each every worker sends V/n to the
    next."""
    _need(workers, 2, "allreduce_ring")
    n = len(workers)
    return [_ring_round(workers, 1.0 / n) for _round in range(2 * (n - 1))]


def allgather_ring(workers, sinks, root=None):
    """Ring AllGather: n-1 rounds of V/n to the next worker."""
    _need(workers, 2, "allgather_ring")
    n = len(workers)
    return [_ring_round(workers, 1.0 / n) for _round in range(n - 1)]


def reduce_scatter_ring(workers, sinks, root=None):
    """Ring ReduceScatter: n-1 rounds of V/n to the next worker."""
    _need(workers, 2, "reduce_scatter_ring")
    n = len(workers)
    return [_ring_round(workers, 1.0 / n) for _round in range(n - 1)]


def alltoall(workers, sinks, root=None):
    """AlltoAll: every worker sends V/n to every other at once, one round."""
    _need(workers, 2, "alltoall")
    n = len(workers)
    return [[(a, b, 1.0 / n) for a in workers for b in workers if a != b]]


PATTERNS = {"incast": incast, "ring": ring, "ring_bidirectional": ring_bidirectional, "pairwise": pairwise,
            "all_to_all": all_to_all, "one_to_many": one_to_many, "many_to_many": many_to_many,
            "shift": shift}
COLLECTIVES = {"allreduce_ring": allreduce_ring, "allgather_ring": allgather_ring,
               "reduce_scatter_ring": reduce_scatter_ring, "alltoall": alltoall}
NEEDS_SINK = {"incast", "many_to_many"}
# nccl-tests' busbw = algbw x factor (n ranks)
BUS_FACTOR = {"allreduce_ring": lambda n: 2.0 * (n - 1) / n, "allgather_ring": lambda n: (n - 1.0) / n,
              "reduce_scatter_ring": lambda n: (n - 1.0) / n, "alltoall": lambda n: (n - 1.0) / n}


def rounds(pattern, workers, sinks, root=None):
    """The rounds of ``pattern`` (a pattern or a collective) over these hosts."""
    if pattern in PATTERNS:
        return PATTERNS[pattern](workers, sinks, root)
    if pattern in COLLECTIVES:
        return COLLECTIVES[pattern](workers, sinks, root)
    raise PatternError("experiment.pattern: %r is not known; use one of %s" % (
        pattern, ", ".join(list(PATTERNS) + list(COLLECTIVES))))
