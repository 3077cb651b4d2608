# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collectives people run, as transfers with their data dependencies (issue 26, item 2).

``schedule(op, algorithm, ranks, size, ...)`` returns a ``Schedule``: every transfer ``(src, dst, bytes)`` of one
collective, in a global order that is a topological order of their dependencies, each with ``deps``: the transfers
whose operation **at its source** must have ended before it may be sent (a transfer received there, whose data this
one forwards or reduces; or, for the pairwise AlltoAll, the previous round's send and receive there).

Sizes have nccl-tests' meaning (doc/PERFORMANCE.md of nccl-tests): ``size`` S is the AllReduce and Broadcast buffer,
the AllGather's whole output and the ReduceScatter's whole input (n blocks of S/n), and the AlltoAll's send buffer of
each rank (n blocks of S/n, one per rank, its own block not sent). A buffer of S bytes is cut into ``split(S, k)``
parts (sizes differing by one byte at most, the larger first). ``bus_factor(op, n)`` is nccl-tests' busbw/algbw.

Chunking: every message (one step's data between two ranks) is cut into ``chunks`` pieces (``split``), or into pieces
of ``chunk_size`` bytes (the last one shorter); each piece is one transfer, so a rank forwards piece c of a step as
soon as piece c of the previous step has arrived (NCCL pipelines its slices this way). Pieces are listed step by step
(message-major): the order of the sends on a connection, which FIFO and the window (docs/job-contract.md section 1)
follow.
Piece c goes on channel ``c mod channels`` (the double binary tree's second tree on channels ``channels..2 channels-1``:
NCCL runs each tree on its own channels). The ``window`` (unacknowledged pieces in flight per connection) is carried
for the program.

Dependencies are found from the data, not written per algorithm: every rank keeps, per byte range of its buffer, the
transfers whose arrival wrote it (a reduction adds to that set, a copy replaces it); a piece sent from a range
depends on every transfer that wrote any byte of it. The algorithms:

- **allreduce ring**: 2(n-1) steps; at step s rank i sends segment (i - s - 1) mod n to rank i+1 (reduce-scatter for
  s < n-1, reducing; all-gather after, copying); rank i ends the reduce-scatter holding segment i.
- **allreduce tree**: NCCL's double binary tree (src/graph/trees.cc, ``ncclGetBtree``/``ncclGetDtree``): tree 0 is
  the binary tree on rank indices, tree 1 its mirror (n even) or its shift by one (n odd); tree t carries half t of
  the buffer, reduced up to the root (children before parents) then broadcast down.
- **allreduce halving_doubling** (n a power of two): reduce-scatter by recursive halving (step k: partner i XOR
  n/2^(k+1), each sends the half of its current range the partner keeps), then all-gather by recursive doubling
  (partner i XOR 2^k, each sends everything it holds).
- **allgather ring**: n-1 steps; at step s rank i sends segment (i - s) mod n to rank i+1.
- **reducescatter ring**: n-1 steps; at step s rank i sends segment (i - s - 1) mod n to rank i+1; rank i ends
  holding segment i.
- **alltoall direct**: every rank sends block j to rank j, all at once (n(n-1) messages, no dependencies).
- **alltoall pairwise**: n-1 rounds; in round k (1..n-1) rank i sends block (i+k) mod n to rank (i+k) mod n, after its
  round k-1 send and receive have ended (MPI's pairwise exchange).
- **broadcast ring**: a chain from the root along the rank order (root, next, ...), each rank forwarding each piece.
- **broadcast tree**: NCCL's binary tree over the ranks renumbered from the root, each node forwarding to its children.

A reduction's compute is not modelled (a GPU does it at memory speed): it is a dependency, not an operation.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.patterns import BUS_FACTOR

__all__ = [
    "ScheduleError",
    "Transfer",
    "Schedule",
    "OPS",
    "DEFAULT_ALGORITHM",
    "bus_factor",
    "schedule",
    "split",
    "btree",
    "dtree",
    "count_ops",
]

OPS = {
    "allreduce": ("ring", "tree", "halving_doubling"),
    "allgather": ("ring",),
    "reducescatter": ("ring",),
    "alltoall": ("direct", "pairwise"),
    "broadcast": ("ring", "tree"),
}
DEFAULT_ALGORITHM = {"allreduce": "ring", "allgather": "ring", "reducescatter": "ring", "alltoall": "direct",
                     "broadcast": "ring"}
# The key of each op's factor in _plan.patterns.BUS_FACTOR (nccl-tests' factors; broadcast's is 1 and is not there).
_BUS_FACTOR_KEY = {"allreduce": "allreduce_ring", "allgather": "allgather_ring",
                   "reducescatter": "reduce_scatter_ring", "alltoall": "alltoall"}
_ABBREV = {"allreduce": "ar", "allgather": "ag", "reducescatter": "rs", "alltoall": "a2a", "broadcast": "bc"}


class ScheduleError(ValueError):
    """A collective that cannot be scheduled; ``field`` names the parameter (the message names it and the fix)."""

    def __init__(self, field_name, message):
        super().__init__(message)
        self.field = field_name


@dataclass(frozen=True)
class Transfer:
    """One piece sent from ``src`` to ``dst``: ``index`` in the schedule's order, ``deps`` (indices of transfers
    whose operation at ``src``, a receive or for the pairwise AlltoAll also a send, must have ended first)."""

    index: int
    src: str
    dst: str
    nbytes: int
    deps: tuple
    phase: str
    step: int
    chunk: int
    channel: int = 0


@dataclass(frozen=True)
class Schedule:
    """One collective's transfers and how they were cut (the report states the algorithm and the chunking)."""

    op: str
    algorithm: str
    ranks: tuple
    size: int
    chunks: int | None
    chunk_size: int | None
    window: int
    root: str | None
    channels: int
    steps: int
    transfers: tuple = field(repr=False)

    @property
    def factor(self):
        """nccl-tests' busbw / algbw for this op on these ranks."""
        return bus_factor(self.op, len(self.ranks))

    @property
    def abbrev(self):
        return _ABBREV[self.op]

    def describe(self):
        """``allreduce ring, 4 chunks per message, window 2`` (the report's statement of the algorithm)."""
        cut = ("%d chunk%s per message" % (self.chunks, "" if self.chunks == 1 else "s")) if self.chunk_size is None \
            else "chunks of %d bytes" % self.chunk_size
        extra = ", root %s" % self.root if self.root is not None else ""
        lanes = ", %d channels" % self.channels if self.channels > 1 else ""
        return "%s %s, %s, window %d%s%s" % (self.op, self.algorithm, cut, self.window, lanes, extra)


def bus_factor(op, n):
    """nccl-tests' busbw = algbw x factor: allreduce 2(n-1)/n, allgather, reducescatter and alltoall (n-1)/n,
    broadcast 1 (the factors of ``_plan.patterns.BUS_FACTOR``, reused)."""
    if op == "broadcast":
        return 1.0
    if op not in _BUS_FACTOR_KEY:
        raise ScheduleError("op", "op: %r is not a collective; use one of %s" % (op, ", ".join(OPS)))
    return BUS_FACTOR[_BUS_FACTOR_KEY[op]](n)


def split(total, parts):
    """``total`` bytes in ``parts`` parts differing by one byte at most, the larger first: split(10, 3) = [4, 3, 3]."""
    q, r = divmod(int(total), int(parts))
    return [q + 1] * r + [q] * (parts - r)


def _offsets(sizes):
    out = [0]
    for s in sizes:
        out.append(out[-1] + s)
    return out


# --- NCCL's trees (src/graph/trees.cc) -------------------------------------------------------------------------


def btree(n, rank):
    """NCCL's ``ncclGetBtree``: ``(parent, child0, child1)`` of ``rank`` (-1 for none) in the binary tree on
    ``0..n-1`` rooted at 0 (the root has one child, the top of the tree)."""
    bit = 1
    while bit < n:
        if bit & rank:
            break
        bit <<= 1
    if rank == 0:
        return -1, -1, (bit >> 1) if n > 1 else -1
    up = (rank ^ bit) | (bit << 1)
    if up >= n:
        up = rank ^ bit
    lowbit = bit >> 1
    down0 = -1 if lowbit == 0 else rank - lowbit
    down1 = -1 if lowbit == 0 else rank + lowbit
    while down1 >= n:
        down1 = -1 if lowbit == 0 else rank + lowbit
        lowbit >>= 1
    return up, down0, down1


def dtree(n, rank):
    """NCCL's ``ncclGetDtree``: ``(tree0, tree1)``, each ``(parent, child0, child1)``: tree 0 is ``btree``; tree 1 is
    its mirror (rank -> n-1-rank) when n is even, its shift by one (rank -> rank+1) when n is odd."""
    t0 = btree(n, rank)
    if n % 2 == 1:
        u, d0, d1 = btree(n, (rank - 1 + n) % n)
        t1 = tuple(-1 if x == -1 else (x + 1) % n for x in (u, d0, d1))
    else:
        u, d0, d1 = btree(n, n - 1 - rank)
        t1 = tuple(-1 if x == -1 else n - 1 - x for x in (u, d0, d1))
    return t0, t1


# --- the builder: pieces, and dependencies from who wrote which bytes -----------------------------------------


class _Written:
    """Per byte range of one rank's buffer, the transfers whose arrival wrote it (a sorted list of cut points)."""

    __slots__ = ("cuts", "sets")

    def __init__(self, size):
        self.cuts = [0, size]
        self.sets = [frozenset()]

    def _cut(self, x):
        """Make ``x`` a cut point (splitting the piece it falls in); its index in ``cuts``."""
        i = bisect_right(self.cuts, x) - 1
        if self.cuts[i] == x:
            return i
        self.cuts.insert(i + 1, x)
        self.sets.insert(i + 1, self.sets[i])
        return i + 1

    def query(self, lo, hi):
        i = bisect_right(self.cuts, lo) - 1
        out = set()
        while i < len(self.sets) and self.cuts[i] < hi:
            out |= self.sets[i]
            i += 1
        return out

    def write(self, lo, hi, index, reduce):
        a, b = self._cut(lo), self._cut(hi)
        for i in range(a, b):
            self.sets[i] = self.sets[i] | {index} if reduce else frozenset((index,))


class _Builder:
    def __init__(self, ranks, size, chunks, chunk_size, channels):
        self.ranks = ranks
        self.chunks, self.chunk_size, self.channels = chunks, chunk_size, channels
        self.written = {r: _Written(size) for r in ranks}
        self.transfers = []
        self.smallest = None  # (bytes, src, dst) of the smallest message, for the error when it cannot be cut

    def pieces(self, lo, hi):
        if self.chunk_size is not None:
            edges = list(range(lo, hi, self.chunk_size)) + [hi]
        else:
            edges = [lo + x for x in _offsets(split(hi - lo, self.chunks))]
        return list(zip(edges[:-1], edges[1:]))

    def message(self, src, dst, lo, hi, phase, step, mode, after=(), lane=0):
        """Send bytes [lo, hi) of ``src``'s buffer to ``dst`` as pieces; ``mode``: "reduce" (added to what ``dst``
        holds), "copy" (replaces it) or None (a separate receive buffer: no dependencies are tracked)."""
        if self.smallest is None or hi - lo < self.smallest[0]:
            self.smallest = (hi - lo, src, dst)
        if hi - lo < (self.chunks or 1):
            return []  # refused by schedule() with the smallest message named
        out = []
        for c, (a, b) in enumerate(self.pieces(lo, hi)):
            deps = set(after)
            if mode is not None:
                deps |= self.written[src].query(a, b)
            t = Transfer(len(self.transfers), src, dst, b - a, tuple(sorted(deps)), phase, step, c,
                         lane * self.channels + c % self.channels)
            self.transfers.append(t)
            out.append(t)
            if mode is not None:
                self.written[dst].write(a, b, t.index, mode == "reduce")
        return out


class _Counter:
    """The builder's stand-in that only counts each rank's sends and receives (pieces), to refuse a schedule too
    large before building it."""

    def __init__(self, ranks, chunks, chunk_size):
        self.chunks, self.chunk_size = chunks, chunk_size
        self.ops = {r: 0 for r in ranks}

    def message(self, src, dst, lo, hi, phase, step, mode, after=(), lane=0):
        pieces = -(-(hi - lo) // self.chunk_size) if self.chunk_size is not None else self.chunks
        self.ops[src] += pieces
        self.ops[dst] += pieces
        return []


# --- the algorithms ----------------------------------------------------------------------------------------------


def _ring_steps(b, r, size, steps, segment_of, phase_of, mode_of):
    n = len(r)
    seg = _offsets(split(size, n))
    for s in range(steps):
        for i in range(n):
            j = segment_of(i, s) % n
            b.message(r[i], r[(i + 1) % n], seg[j], seg[j + 1], phase_of(s), s, mode_of(s))
    return steps


def _allreduce_ring(b, r, size, root):
    n = len(r)
    return _ring_steps(b, r, size, 2 * (n - 1), lambda i, s: i - s - 1, lambda s: "rs" if s < n - 1 else "ag",
                       lambda s: "reduce" if s < n - 1 else "copy")


def _allgather_ring(b, r, size, root):
    n = len(r)
    return _ring_steps(b, r, size, n - 1, lambda i, s: i - s, lambda s: "ag", lambda s: "copy")


def _reducescatter_ring(b, r, size, root):
    n = len(r)
    return _ring_steps(b, r, size, n - 1, lambda i, s: i - s - 1, lambda s: "rs", lambda s: "reduce")


def _tree_levels(parent, n, root):
    """Depth of every node from ``root`` (parents known), and the nodes top-down (by depth, then index)."""
    depth = {root: 0}

    def d(x):
        if x not in depth:
            depth[x] = d(parent[x]) + 1
        return depth[x]

    for x in range(n):
        d(x)
    return depth, sorted(range(n), key=lambda x: (depth[x], x))


def _allreduce_tree(b, r, size, root):
    n = len(r)
    half = _offsets(split(size, 2))
    trees = [dtree(n, x) for x in range(n)]
    deepest = 0
    for t in (0, 1):
        parent = {x: trees[x][t][0] for x in range(n)}
        children = {x: [c for c in trees[x][t][1:] if c != -1] for x in range(n)}
        top = next(x for x in range(n) if parent[x] == -1)
        depth, order = _tree_levels(parent, n, top)
        deepest = max(deepest, *depth.values())
        lo, hi = half[t], half[t + 1]
        for x in reversed(order):  # children before parents
            if parent[x] != -1:
                b.message(r[x], r[parent[x]], lo, hi, "t%dup" % t, depth[x], "reduce", lane=t)
        for x in order:  # parents before children
            for c in children[x]:
                b.message(r[x], r[c], lo, hi, "t%ddown" % t, depth[c], "copy", lane=t)
    return 2 * deepest


def _allreduce_halving_doubling(b, r, size, root):
    n = len(r)
    if n & (n - 1):
        raise ScheduleError("algorithm", "algorithm: halving_doubling needs a power-of-two number of ranks (got %d); "
                                         "use ring or tree, or run on %d or %d workers"
                            % (n, 1 << (n.bit_length() - 1), 1 << n.bit_length()))
    blocks = _offsets(split(size, n))
    log = n.bit_length() - 1
    held = {i: (0, n) for i in range(n)}
    for k in range(log):
        d = n >> (k + 1)
        kept = {}
        for i in range(n):
            lo, hi = held[i]
            mid = (lo + hi) // 2
            keep, send = ((mid, hi), (lo, mid)) if i & d else ((lo, mid), (mid, hi))
            b.message(r[i], r[i ^ d], blocks[send[0]], blocks[send[1]], "rs", k, "reduce")
            kept[i] = keep
        held = kept
    for k in range(log):
        d = 1 << k
        for i in range(n):
            lo, hi = held[i]
            b.message(r[i], r[i ^ d], blocks[lo], blocks[hi], "ag", log + k, "copy")
        held = {i: (min(held[i][0], held[i ^ d][0]), max(held[i][1], held[i ^ d][1])) for i in range(n)}
    return 2 * log


def _alltoall_direct(b, r, size, root):
    n = len(r)
    blocks = _offsets(split(size, n))
    for k in range(1, n):
        for i in range(n):
            j = (i + k) % n
            b.message(r[i], r[j], blocks[j], blocks[j + 1], "a2a", 0, None)
    return 1


def _alltoall_pairwise(b, r, size, root):
    n = len(r)
    blocks = _offsets(split(size, n))
    last = {}  # rank -> the last piece it sent and the last it received in the previous round
    for k in range(1, n):
        this = {i: [] for i in range(n)}
        for i in range(n):
            j = (i + k) % n
            sent = b.message(r[i], r[j], blocks[j], blocks[j + 1], "pw", k - 1, None, after=last.get(i, ()))
            if sent:
                this[i].append(sent[-1].index)
                this[j].append(sent[-1].index)
        last = this
    return n - 1


def _broadcast_ring(b, r, size, root):
    n = len(r)
    k0 = r.index(root)
    order = [r[(k0 + k) % n] for k in range(n)]
    for k in range(n - 1):
        b.message(order[k], order[k + 1], 0, size, "bc", k, "copy")
    return n - 1


def _broadcast_tree(b, r, size, root):
    n = len(r)
    k0 = r.index(root)
    order = [r[(k0 + k) % n] for k in range(n)]  # index 0 is the root of NCCL's btree
    parent = {x: btree(n, x)[0] for x in range(n)}
    depth, top_down = _tree_levels(parent, n, 0)
    for x in top_down:
        for c in btree(n, x)[1:]:
            if c != -1:
                b.message(order[x], order[c], 0, size, "bc", depth[c] - 1, "copy")
    return max(depth.values())


_ALGORITHMS = {
    ("allreduce", "ring"): _allreduce_ring,
    ("allreduce", "tree"): _allreduce_tree,
    ("allreduce", "halving_doubling"): _allreduce_halving_doubling,
    ("allgather", "ring"): _allgather_ring,
    ("reducescatter", "ring"): _reducescatter_ring,
    ("alltoall", "direct"): _alltoall_direct,
    ("alltoall", "pairwise"): _alltoall_pairwise,
    ("broadcast", "ring"): _broadcast_ring,
    ("broadcast", "tree"): _broadcast_tree,
}


def _positive_int(value, name, minimum=1):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ScheduleError(name, "%s: %r; give a whole number, %d or more" % (name, value, minimum))
    return value


def schedule(op, algorithm, ranks, size, chunks=1, chunk_size=None, window=2, root=None, channels=1):
    """The transfers of one collective over ``ranks`` (host names, in rank order) for a buffer of ``size`` bytes
    (nccl-tests' meaning for ``op``), each message cut into ``chunks`` pieces or pieces of ``chunk_size`` bytes.
    ``root``: broadcast only (default: the first rank). Raises ``ScheduleError`` naming the parameter and the fix."""
    if op not in OPS:
        raise ScheduleError("op", "op: %r is not a collective; use one of %s" % (op, ", ".join(OPS)))
    if algorithm not in OPS[op]:
        raise ScheduleError("algorithm", "algorithm: %r is not an algorithm of %s; use %s"
                            % (algorithm, op, " or ".join(OPS[op])))
    ranks = tuple(ranks)
    if len(ranks) < 2:
        raise ScheduleError("ranks", "ranks: a collective needs 2 ranks or more (got %d)" % len(ranks))
    if len(set(ranks)) != len(ranks):
        twice = sorted({x for x in ranks if ranks.count(x) > 1})
        raise ScheduleError("ranks", "ranks: %s listed twice; give each host once" % ", ".join(map(str, twice)))
    size = _positive_int(size, "size")
    window = _positive_int(window, "window")
    channels = _positive_int(channels, "channels")
    if chunk_size is not None:
        if chunks not in (None, 1):
            raise ScheduleError("chunk_size", "chunk_size: give chunks or chunk_size, not both")
        chunk_size = _positive_int(chunk_size, "chunk_size")
        chunks = None
    else:
        chunks = _positive_int(chunks, "chunks")
    if op == "broadcast":
        root = ranks[0] if root is None else root
        if root not in ranks:
            raise ScheduleError("root", "root: %r is not one of the ranks (%s)" % (root, ", ".join(ranks)))
    elif root is not None:
        raise ScheduleError("root", "root: only a broadcast has a root (this is %s); remove it" % op)
    b = _Builder(ranks, size, chunks, chunk_size, channels)
    steps = _ALGORITHMS[(op, algorithm)](b, list(ranks), size, root)
    smallest, src, dst = b.smallest
    if smallest < (chunks or 1):
        what = "an empty message" if smallest == 0 else "a %d-byte message" % smallest
        if chunks and chunks > 1 and smallest > 0:
            raise ScheduleError("chunks", "chunks: %d chunks of %s (%s to %s; %s %s of %d bytes over %d ranks); use "
                                          "at most %d chunk%s, or a larger size"
                                % (chunks, what, src, dst, op, algorithm, size, len(ranks), smallest,
                                   "" if smallest == 1 else "s"))
        raise ScheduleError("size", "size: %d bytes gives %s (%s to %s; %s %s over %d ranks); give at least %d bytes"
                            % (size, what, src, dst, op, algorithm, len(ranks),
                               _minimum_size(op, algorithm, len(ranks), chunks or 1)))
    return Schedule(op, algorithm, ranks, size, chunks, chunk_size, window, root, channels, steps,
                    tuple(b.transfers))


def count_ops(op, algorithm, ranks, size, chunks=1, chunk_size=None):
    """The largest number of sends and receives (pieces) of one rank in this collective, without building it
    (arguments as ``schedule``'s, assumed valid: call ``schedule`` for the checks)."""
    counter = _Counter(list(ranks), None if chunk_size is not None else chunks, chunk_size)
    _ALGORITHMS[(op, algorithm)](counter, list(ranks), size, ranks[0] if op == "broadcast" else None)
    return max(counter.ops.values())


def _minimum_size(op, algorithm, n, chunks):
    """The smallest size whose every message has ``chunks`` bytes or more."""
    if op == "broadcast":
        return chunks
    if op == "allreduce" and algorithm == "tree":
        return 2 * chunks
    return n * chunks
