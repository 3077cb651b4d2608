# -*- coding: utf-8 -*-
"""Every algorithm's schedule (who sends what to whom, in which order, on which dependency) against tables written
by hand.

A row is ``(src, dst, bytes, deps)``, in the schedule's order (transfer i is row i); ``deps`` are the rows whose
operation at ``src`` must have ended first. The derivations, per algorithm, are in the comments; ranks a, b, c, d are
ranks 0..3 (r0..r7 for eight).
"""
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._job.algorithms import (
    ScheduleError,
    btree,
    bus_factor,
    dtree,
    schedule,
    split,
)

A4 = ["a", "b", "c", "d"]
R8 = ["r%d" % i for i in range(8)]


def rows(sched):
    return [(t.src, t.dst, t.nbytes, t.deps) for t in sched.transfers]


def test_split_is_even_larger_first():
    assert split(10, 3) == [4, 3, 3]
    assert split(30, 3) == [10, 10, 10]
    assert split(31, 3) == [11, 10, 10]
    assert split(5, 5) == [1, 1, 1, 1, 1]


# NCCL's trees (src/graph/trees.cc), worked by hand from ncclGetBtree: a rank's parent is (rank ^ bit) | (bit << 1)
# (or rank ^ bit when that is out of range), bit its lowest set bit; its children rank -/+ bit/2; rank 0 has one
# child, the highest power of two below n.
@pytest.mark.parametrize("n,expected", [
    (2, [(-1, -1, 1), (0, -1, -1)]),
    (3, [(-1, -1, 2), (2, -1, -1), (0, 1, -1)]),
    (4, [(-1, -1, 2), (2, -1, -1), (0, 1, 3), (2, -1, -1)]),
    (8, [(-1, -1, 4), (2, -1, -1), (4, 1, 3), (2, -1, -1), (0, 2, 6), (6, -1, -1), (4, 5, 7), (6, -1, -1)]),
])
def test_btree_by_hand(n, expected):
    assert [btree(n, r) for r in range(n)] == expected


def test_dtree_mirrors_for_even_and_shifts_for_odd():
    # n = 4: tree 1 is the mirror (rank r plays 3 - r): 3 is the root, 1 its child, 2 and 0 below 1
    assert [dtree(4, r)[1] for r in range(4)] == [(1, -1, -1), (3, 2, 0), (1, -1, -1), (-1, -1, 1)]
    # n = 3: tree 1 is the shift by one (rank r plays r - 1): 1 is the root, 0 its child, 2 below 0
    assert [dtree(3, r)[1] for r in range(3)] == [(1, 2, -1), (-1, -1, 0), (0, -1, -1)]


def test_bus_factors_are_nccl_tests():
    assert bus_factor("allreduce", 8) == pytest.approx(1.75)
    assert bus_factor("allgather", 8) == pytest.approx(0.875)
    assert bus_factor("reducescatter", 4) == pytest.approx(0.75)
    assert bus_factor("alltoall", 4) == pytest.approx(0.75)
    assert bus_factor("broadcast", 4) == 1.0


# --- ring AllReduce: at step s rank i sends segment (i - s - 1) mod n to rank i + 1 ---------------------------------

def test_allreduce_ring_3_ranks():
    # S = 30: segments of 10. s0: a sends seg 2, b seg 0, c seg 1 (nothing to wait for). s1: a sends seg 1, which c's
    # s0 transfer (row 2) reduced into it; b seg 2 (row 0); c seg 0 (row 1). s2 (all-gather): a sends seg 0 (row 5),
    # b seg 1 (row 3), c seg 2 (row 4). s3: a seg 2 (copied by row 8), b seg 0 (row 6), c seg 1 (row 7).
    s = schedule("allreduce", "ring", ["a", "b", "c"], 30)
    assert rows(s) == [
        ("a", "b", 10, ()), ("b", "c", 10, ()), ("c", "a", 10, ()),
        ("a", "b", 10, (2,)), ("b", "c", 10, (0,)), ("c", "a", 10, (1,)),
        ("a", "b", 10, (5,)), ("b", "c", 10, (3,)), ("c", "a", 10, (4,)),
        ("a", "b", 10, (8,)), ("b", "c", 10, (6,)), ("c", "a", 10, (7,)),
    ]
    assert [t.phase for t in s.transfers] == ["rs"] * 6 + ["ag"] * 6
    assert [t.step for t in s.transfers] == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert s.steps == 4 and s.factor == pytest.approx(4 / 3)


def test_allreduce_ring_2_ranks_2_chunks():
    # S = 20: segments of 10, pieces of 5. s0: a sends seg 1 (rows 0, 1), b seg 0 (rows 2, 3). s1: a sends seg 0,
    # piece c after b's piece c (rows 2, 3); b seg 1 after rows 0, 1.
    s = schedule("allreduce", "ring", ["a", "b"], 20, chunks=2, window=1)
    assert rows(s) == [
        ("a", "b", 5, ()), ("a", "b", 5, ()), ("b", "a", 5, ()), ("b", "a", 5, ()),
        ("a", "b", 5, (2,)), ("a", "b", 5, (3,)), ("b", "a", 5, (0,)), ("b", "a", 5, (1,)),
    ]
    assert [t.chunk for t in s.transfers] == [0, 1] * 4
    assert s.window == 1 and s.chunks == 2


def test_allreduce_ring_4_ranks():
    # s0: i sends seg i-1; every later row waits for the row the left neighbour sent one step before (row - 5 for
    # b, c, d: 4 rows back, one rank left; for a: the row of d one step earlier, row - 1).
    s = schedule("allreduce", "ring", A4, 40)
    assert rows(s) == [
        ("a", "b", 10, ()), ("b", "c", 10, ()), ("c", "d", 10, ()), ("d", "a", 10, ()),
        ("a", "b", 10, (3,)), ("b", "c", 10, (0,)), ("c", "d", 10, (1,)), ("d", "a", 10, (2,)),
        ("a", "b", 10, (7,)), ("b", "c", 10, (4,)), ("c", "d", 10, (5,)), ("d", "a", 10, (6,)),
        ("a", "b", 10, (11,)), ("b", "c", 10, (8,)), ("c", "d", 10, (9,)), ("d", "a", 10, (10,)),
        ("a", "b", 10, (15,)), ("b", "c", 10, (12,)), ("c", "d", 10, (13,)), ("d", "a", 10, (14,)),
        ("a", "b", 10, (19,)), ("b", "c", 10, (16,)), ("c", "d", 10, (17,)), ("d", "a", 10, (18,)),
    ]


def test_allreduce_ring_uneven_segments_with_chunk_size():
    # S = 31 over 3: segments 11, 10, 10 ([0,11) [11,21) [21,31)), pieces of 5 bytes (the last shorter).
    # s0: a sends seg 2 ([21,26) [26,31)), b seg 0 ([0,5) [5,10) [10,11)), c seg 1 ([11,16) [16,21)).
    # s1: a sends seg 1 (pieces after rows 5, 6), b seg 2 (rows 0, 1), c seg 0 (rows 2, 3, 4).
    s = schedule("allreduce", "ring", ["a", "b", "c"], 31, chunk_size=5)
    assert rows(s)[:14] == [
        ("a", "b", 5, ()), ("a", "b", 5, ()),
        ("b", "c", 5, ()), ("b", "c", 5, ()), ("b", "c", 1, ()),
        ("c", "a", 5, ()), ("c", "a", 5, ()),
        ("a", "b", 5, (5,)), ("a", "b", 5, (6,)),
        ("b", "c", 5, (0,)), ("b", "c", 5, (1,)),
        ("c", "a", 5, (2,)), ("c", "a", 5, (3,)), ("c", "a", 1, (4,)),
    ]
    assert s.chunk_size == 5 and s.chunks is None
    assert sum(t.nbytes for t in s.transfers) == 4 * 31  # 2(n-1) steps of a third: every rank sends 4/3 of S


# --- ring AllGather and ReduceScatter ----------------------------------------------------------------------------

def test_allgather_ring_3_ranks():
    # s0: i sends its own seg i; s1: i forwards seg i-1, which it received at s0 (a from c: row 2; b from a: row 0).
    s = schedule("allgather", "ring", ["a", "b", "c"], 30)
    assert rows(s) == [("a", "b", 10, ()), ("b", "c", 10, ()), ("c", "a", 10, ()),
                       ("a", "b", 10, (2,)), ("b", "c", 10, (0,)), ("c", "a", 10, (1,))]


def test_reducescatter_ring_3_ranks():
    # s0: i sends seg i-1; s1: seg i-2, reduced into it by s0 (a's seg 1 from c: row 2). a ends with seg 0.
    s = schedule("reducescatter", "ring", ["a", "b", "c"], 30)
    assert rows(s) == [("a", "b", 10, ()), ("b", "c", 10, ()), ("c", "a", 10, ()),
                       ("a", "b", 10, (2,)), ("b", "c", 10, (0,)), ("c", "a", 10, (1,))]
    assert [t.phase for t in s.transfers] == ["rs"] * 6


# --- the double binary tree --------------------------------------------------------------------------------------

def test_allreduce_tree_4_ranks():
    # tree 0: a - c - {b, d} carries bytes [0, 20); up: d, b to c, then c (after both) to a; down: a to c (after
    # c's), c to b and d (after a's). tree 1: d - b - {c, a} carries [20, 40): up c, a to b, b to d; down d to b,
    # b to c and a. Tree 1 runs on channel 1.
    s = schedule("allreduce", "tree", A4, 40)
    assert rows(s) == [
        ("d", "c", 20, ()), ("b", "c", 20, ()), ("c", "a", 20, (0, 1)),
        ("a", "c", 20, (2,)), ("c", "b", 20, (3,)), ("c", "d", 20, (3,)),
        ("c", "b", 20, ()), ("a", "b", 20, ()), ("b", "d", 20, (6, 7)),
        ("d", "b", 20, (8,)), ("b", "c", 20, (9,)), ("b", "a", 20, (9,)),
    ]
    assert [t.channel for t in s.transfers] == [0] * 6 + [1] * 6
    assert [t.phase for t in s.transfers] == ["t0up"] * 3 + ["t0down"] * 3 + ["t1up"] * 3 + ["t1down"] * 3


def test_allreduce_tree_3_ranks_2_chunks():
    # tree 0 (a - c - b): up b to c, c to a; down a to c, c to b; half [0, 10) in pieces of 5, piece by piece.
    # tree 1 (shifted: b - a - c): up c to a, a to b; down b to a, a to c; half [10, 20).
    s = schedule("allreduce", "tree", ["a", "b", "c"], 20, chunks=2)
    assert rows(s) == [
        ("b", "c", 5, ()), ("b", "c", 5, ()), ("c", "a", 5, (0,)), ("c", "a", 5, (1,)),
        ("a", "c", 5, (2,)), ("a", "c", 5, (3,)), ("c", "b", 5, (4,)), ("c", "b", 5, (5,)),
        ("c", "a", 5, ()), ("c", "a", 5, ()), ("a", "b", 5, (8,)), ("a", "b", 5, (9,)),
        ("b", "a", 5, (10,)), ("b", "a", 5, (11,)), ("a", "c", 5, (12,)), ("a", "c", 5, (13,)),
    ]


# --- recursive halving-doubling ---------------------------------------------------------------------------------

def test_allreduce_halving_doubling_4_ranks():
    # blocks of 10. RS k=0 (partner i^2): a keeps blocks 0-1 and sends 2-3 to c, c sends 0-1 to a, b <-> d alike.
    # RS k=1 (partner i^1): a sends block 1 (reduced by row 2) to b; b sends block 0 (row 3) to a; c block 3 (row 0)
    # to d; d block 2 (row 1) to c. AG k=0 (i^1): a sends block 0 (rows 2 and 5 reduced it) to b, ... AG k=1 (i^2):
    # a sends blocks 0-1: block 0 (rows 2, 5) and block 1 (copied from b by row 9).
    s = schedule("allreduce", "halving_doubling", A4, 40)
    assert rows(s) == [
        ("a", "c", 20, ()), ("b", "d", 20, ()), ("c", "a", 20, ()), ("d", "b", 20, ()),
        ("a", "b", 10, (2,)), ("b", "a", 10, (3,)), ("c", "d", 10, (0,)), ("d", "c", 10, (1,)),
        ("a", "b", 10, (2, 5)), ("b", "a", 10, (3, 4)), ("c", "d", 10, (0, 7)), ("d", "c", 10, (1, 6)),
        ("a", "c", 20, (2, 5, 9)), ("b", "d", 20, (3, 4, 8)), ("c", "a", 20, (0, 7, 11)), ("d", "b", 20, (1, 6, 10)),
    ]
    assert s.steps == 4


def test_allreduce_halving_doubling_4_ranks_2_chunks():
    # Pieces of a later step cut an earlier step's pieces differently: at RS k=1 a sends block 1 ([10,20)) as
    # [10,15) and [15,20), both inside c's piece [10,20) (row 5). At AG k=1 a sends [0,10), reduced by c's [0,10)
    # (row 4) and b's [0,5) and [5,10) (rows 10, 11), then [10,20), copied from b by rows 18 and 19.
    s = schedule("allreduce", "halving_doubling", A4, 40, chunks=2)
    assert rows(s) == [
        ("a", "c", 10, ()), ("a", "c", 10, ()), ("b", "d", 10, ()), ("b", "d", 10, ()),
        ("c", "a", 10, ()), ("c", "a", 10, ()), ("d", "b", 10, ()), ("d", "b", 10, ()),
        ("a", "b", 5, (5,)), ("a", "b", 5, (5,)), ("b", "a", 5, (6,)), ("b", "a", 5, (6,)),
        ("c", "d", 5, (1,)), ("c", "d", 5, (1,)), ("d", "c", 5, (2,)), ("d", "c", 5, (2,)),
        ("a", "b", 5, (4, 10)), ("a", "b", 5, (4, 11)), ("b", "a", 5, (7, 8)), ("b", "a", 5, (7, 9)),
        ("c", "d", 5, (0, 14)), ("c", "d", 5, (0, 15)), ("d", "c", 5, (3, 12)), ("d", "c", 5, (3, 13)),
        ("a", "c", 10, (4, 10, 11)), ("a", "c", 10, (18, 19)), ("b", "d", 10, (16, 17)), ("b", "d", 10, (7, 8, 9)),
        ("c", "a", 10, (0, 14, 15)), ("c", "a", 10, (22, 23)), ("d", "b", 10, (20, 21)), ("d", "b", 10, (3, 12, 13)),
    ]


def test_allreduce_halving_doubling_8_ranks():
    # blocks of 10. RS k=0 (i^4): i < 4 sends blocks 4-7 up, i >= 4 blocks 0-3 down (rows 0-7). RS k=1 (i^2): each
    # sends the half of its four blocks the partner keeps, reduced by the row it received at k=0 (row i^4). RS k=2
    # (i^1): one block, reduced by its k=0 and k=1 receipts. Then rank i holds block i, reduced by three rows:
    # r0 {4, 10, 17}, r1 {5, 11, 16}, r2 {6, 8, 19}, r3 {7, 9, 18}, r4 {0, 14, 21}, r5 {1, 15, 20}, r6 {2, 12, 23},
    # r7 {3, 13, 22}. AG k=0 (i^1) sends it; AG k=1 (i^2) two blocks (its own, and the one copied at AG k=0); AG k=2
    # (i^4) four (adding the two copied at AG k=1).
    s = schedule("allreduce", "halving_doubling", R8, 80)
    r = R8
    assert rows(s) == [
        (r[0], r[4], 40, ()), (r[1], r[5], 40, ()), (r[2], r[6], 40, ()), (r[3], r[7], 40, ()),
        (r[4], r[0], 40, ()), (r[5], r[1], 40, ()), (r[6], r[2], 40, ()), (r[7], r[3], 40, ()),
        (r[0], r[2], 20, (4,)), (r[1], r[3], 20, (5,)), (r[2], r[0], 20, (6,)), (r[3], r[1], 20, (7,)),
        (r[4], r[6], 20, (0,)), (r[5], r[7], 20, (1,)), (r[6], r[4], 20, (2,)), (r[7], r[5], 20, (3,)),
        (r[0], r[1], 10, (4, 10)), (r[1], r[0], 10, (5, 11)), (r[2], r[3], 10, (6, 8)), (r[3], r[2], 10, (7, 9)),
        (r[4], r[5], 10, (0, 14)), (r[5], r[4], 10, (1, 15)), (r[6], r[7], 10, (2, 12)), (r[7], r[6], 10, (3, 13)),
        (r[0], r[1], 10, (4, 10, 17)), (r[1], r[0], 10, (5, 11, 16)), (r[2], r[3], 10, (6, 8, 19)),
        (r[3], r[2], 10, (7, 9, 18)), (r[4], r[5], 10, (0, 14, 21)), (r[5], r[4], 10, (1, 15, 20)),
        (r[6], r[7], 10, (2, 12, 23)), (r[7], r[6], 10, (3, 13, 22)),
        (r[0], r[2], 20, (4, 10, 17, 25)), (r[1], r[3], 20, (5, 11, 16, 24)), (r[2], r[0], 20, (6, 8, 19, 27)),
        (r[3], r[1], 20, (7, 9, 18, 26)), (r[4], r[6], 20, (0, 14, 21, 29)), (r[5], r[7], 20, (1, 15, 20, 28)),
        (r[6], r[4], 20, (2, 12, 23, 31)), (r[7], r[5], 20, (3, 13, 22, 30)),
        (r[0], r[4], 40, (4, 10, 17, 25, 34)), (r[1], r[5], 40, (5, 11, 16, 24, 35)),
        (r[2], r[6], 40, (6, 8, 19, 27, 32)), (r[3], r[7], 40, (7, 9, 18, 26, 33)),
        (r[4], r[0], 40, (0, 14, 21, 29, 38)), (r[5], r[1], 40, (1, 15, 20, 28, 39)),
        (r[6], r[2], 40, (2, 12, 23, 31, 36)), (r[7], r[3], 40, (3, 13, 22, 30, 37)),
    ]
    assert s.steps == 6
    # every rank sends 2 (n-1)/n of S, as the ring does
    assert all(sum(t.nbytes for t in s.transfers if t.src == x) == 140 for x in R8)


def test_halving_doubling_refuses_6_ranks():
    with pytest.raises(ScheduleError, match=r"power-of-two number of ranks \(got 6\); use ring or tree, or run on 4 "
                                            r"or 8 workers") as err:
        schedule("allreduce", "halving_doubling", ["h%d" % i for i in range(6)], 600)
    assert err.value.field == "algorithm"


# --- AlltoAll -----------------------------------------------------------------------------------------------------

def test_alltoall_direct_3_ranks():
    # offset 1 (i to i+1), then offset 2 (i to i+2): block j of i goes to j; no dependencies (all at once).
    s = schedule("alltoall", "direct", ["a", "b", "c"], 30)
    assert rows(s) == [("a", "b", 10, ()), ("b", "c", 10, ()), ("c", "a", 10, ()),
                       ("a", "c", 10, ()), ("b", "a", 10, ()), ("c", "b", 10, ())]


def test_alltoall_pairwise_3_ranks():
    # round 1: i to i+1; round 2: i to i+2, after i's round-1 send and receive (a: sent row 0, received row 2).
    s = schedule("alltoall", "pairwise", ["a", "b", "c"], 30)
    assert rows(s) == [("a", "b", 10, ()), ("b", "c", 10, ()), ("c", "a", 10, ()),
                       ("a", "c", 10, (0, 2)), ("b", "a", 10, (0, 1)), ("c", "b", 10, (1, 2))]
    assert [t.step for t in s.transfers] == [0, 0, 0, 1, 1, 1]


def test_alltoall_pairwise_3_ranks_2_chunks():
    # each round waits for the last piece of the previous round's send and receive (the connection's FIFO ends
    # them in order): a's round 2 after rows 1 (its last piece to b) and 5 (the last piece from c).
    s = schedule("alltoall", "pairwise", ["a", "b", "c"], 60, chunks=2)
    assert rows(s) == [("a", "b", 10, ()), ("a", "b", 10, ()), ("b", "c", 10, ()), ("b", "c", 10, ()),
                       ("c", "a", 10, ()), ("c", "a", 10, ()),
                       ("a", "c", 10, (1, 5)), ("a", "c", 10, (1, 5)), ("b", "a", 10, (1, 3)),
                       ("b", "a", 10, (1, 3)), ("c", "b", 10, (3, 5)), ("c", "b", 10, (3, 5))]


def test_alltoall_pairwise_2_ranks():
    s = schedule("alltoall", "pairwise", ["a", "b"], 20)
    assert rows(s) == [("a", "b", 10, ()), ("b", "a", 10, ())]


# --- Broadcast --------------------------------------------------------------------------------------------------

def test_broadcast_ring_from_c_2_chunks():
    # the chain c, d, a, b; each forwards piece k after receiving it.
    s = schedule("broadcast", "ring", A4, 10, chunks=2, root="c")
    assert rows(s) == [("c", "d", 5, ()), ("c", "d", 5, ()), ("d", "a", 5, (0,)), ("d", "a", 5, (1,)),
                       ("a", "b", 5, (2,)), ("a", "b", 5, (3,))]
    assert s.root == "c" and s.factor == 1.0


def test_broadcast_tree_from_b():
    # renumbered from b: b, c, d, a are 0..3; NCCL's tree 0 -> 2 -> {1, 3}: b to d, then d to c and a.
    s = schedule("broadcast", "tree", A4, 8, root="b")
    assert rows(s) == [("b", "d", 8, ()), ("d", "c", 8, (0,)), ("d", "a", 8, (0,))]


def test_broadcast_defaults_to_the_first_rank():
    assert schedule("broadcast", "ring", A4, 8).root == "a"


# --- channels, refusals -----------------------------------------------------------------------------------------

def test_pieces_alternate_channels():
    s = schedule("allgather", "ring", ["a", "b"], 40, chunks=4, channels=2)
    assert [t.channel for t in s.transfers] == [0, 1, 0, 1] * 2


@pytest.mark.parametrize("kwargs,field,message", [
    ({"op": "allreduce", "size": 8, "chunks": 4}, "chunks",
     r"chunks: 4 chunks of a 2-byte message \(.*allreduce ring of 8 bytes over 4 ranks\); use at most 2 chunks"),
    ({"op": "allreduce", "size": 3}, "size", r"size: 3 bytes gives an empty message .*give at least 4 bytes"),
    ({"op": "alltoall", "algorithm": "direct", "size": 4, "chunks": 2}, "chunks",
     r"use at most 1 chunk, or a larger size"),
    ({"op": "allreduce", "algorithm": "tree", "size": 1}, "size", r"give at least 2 bytes"),
    ({"op": "allgather", "algorithm": "tree", "size": 40}, "algorithm", r"'tree' is not an algorithm of allgather"),
    ({"op": "gather", "size": 40}, "op", r"'gather' is not a collective"),
    ({"op": "allreduce", "size": 0}, "size", r"size: 0; give a whole number, 1 or more"),
    ({"op": "allreduce", "size": 40, "root": "a"}, "root", r"only a broadcast has a root"),
    ({"op": "broadcast", "size": 40, "root": "z"}, "root", r"'z' is not one of the ranks"),
    ({"op": "allreduce", "size": 40, "chunks": 2, "chunk_size": 4}, "chunk_size", r"not both"),
])
def test_refusals_name_the_parameter(kwargs, field, message):
    kwargs = dict(kwargs)
    op, algorithm = kwargs.pop("op"), kwargs.pop("algorithm", "ring")
    with pytest.raises(ScheduleError, match=message) as err:
        schedule(op, algorithm, A4, **kwargs)
    assert err.value.field == field


def test_ranks_are_checked():
    with pytest.raises(ScheduleError, match="2 ranks or more"):
        schedule("allreduce", "ring", ["a"], 10)
    with pytest.raises(ScheduleError, match="a listed twice"):
        schedule("allreduce", "ring", ["a", "b", "a"], 10)


def test_describe_states_algorithm_and_chunking():
    assert schedule("allreduce", "ring", A4, 40, chunks=2).describe() == \
        "allreduce ring, 2 chunks per message, window 2"
    assert schedule("broadcast", "tree", A4, 40, chunk_size=8, root="b", window=1, channels=2).describe() == \
        "broadcast tree, chunks of 8 bytes, window 1, 2 channels, root b"
