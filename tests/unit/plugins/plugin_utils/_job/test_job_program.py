# -*- coding: utf-8 -*-
"""Per-host programs (docs/job-contract.md section 1): a small one written out by hand, and every algorithm's programs
through a checker written here, independent of the code under test: ids dense, deps to lower ids, every send's
matching receive (k-th send of A to B on a channel = k-th receive of B from A there) with the same bytes, and an
abstract run of two iterations (FIFO, the window, the barrier) that reaches every op (no cycle, no deadlock)."""
from __future__ import annotations

import copy

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._job.program import (
    ProgramError,
    build_programs,
    check_program,
    match_connections,
)
from ansible_collections.aifabric.lab.plugins.plugin_utils._job.spec import parse_job


def endpoints(hosts):
    return {h: ("198.18.0.%d" % (i + 1), 18700) for i, h in enumerate(hosts)}


def programs_of(job, hosts):
    return build_programs(parse_job(job, hosts), endpoints(hosts))


# --- the independent checker --------------------------------------------------------------------------------------

def check(programs, iterations=2):
    """Assert the contract's rules on ``programs``; returns the number of op instances the abstract run reached."""
    sends, recvs = {}, {}
    for h, p in programs.items():
        ops = p["ops"]
        assert [op["id"] for op in ops] == list(range(len(ops))), h
        for op in ops:
            assert op["kind"] in ("send", "recv", "compute")
            assert all(0 <= d < op["id"] for d in op.get("deps") or []), (h, op)
            assert all(0 <= d < len(ops) for d in op.get("deps_prev") or []), (h, op)
            if op["kind"] != "compute":
                assert op["bytes"] >= 1 and op["peer"] != h
                key = (h, op["peer"], op.get("channel", 0)) if op["kind"] == "send" else \
                    (op["peer"], h, op.get("channel", 0))
                (sends if op["kind"] == "send" else recvs).setdefault(key, []).append(op)
            if op["kind"] == "send":
                assert op["peer"] in p["peers"], (h, op)
        if any(op["kind"] == "recv" for op in ops):
            assert "listen" in p
    assert set(sends) == set(recvs)
    for key in sends:
        assert [op["bytes"] for op in sends[key]] == [op["bytes"] for op in recvs[key]], key
    # the abstract run: an op fires when its deps fired (deps_prev: previous iteration; neither: every op of the
    # previous iteration); a send also after the previous send of its connection (FIFO) and the receive of the
    # send `window` messages earlier (acknowledged); a receive after its matching send.
    fired = set()
    order = {key: [op["id"] for op in ops] for key, ops in sends.items()}
    rorder = {key: [op["id"] for op in ops] for key, ops in recvs.items()}
    where = {}
    for key, ids in order.items():
        for slot, j in enumerate(ids):
            where[(key[0], j)] = (key, slot)
    for key, ids in rorder.items():
        for slot, j in enumerate(ids):
            where[(key[1], j)] = (key, slot)

    def ok(h, i, op):
        deps, prev = op.get("deps") or [], op.get("deps_prev") or []
        if any((h, i, d) not in fired for d in deps):
            return False
        if i > 0 and prev and any((h, i - 1, d) not in fired for d in prev):
            return False
        if i > 0 and not deps and not prev and any((h, i - 1, d) not in fired for d in range(len(
                programs[h]["ops"]))):
            return False
        if op["kind"] == "compute":
            return True
        key, slot = where[(h, op["id"])]
        m = len(order[key])
        k = i * m + slot
        if op["kind"] == "send":
            window = programs[h].get("window", 1)
            if k > 0 and (h, (k - 1) // m, order[key][(k - 1) % m]) not in fired:
                return False
            if k >= window and (key[1], (k - window) // m, rorder[key][(k - window) % m]) not in fired:
                return False
            return True
        return (key[0], i, order[key][slot]) in fired

    progress = True
    while progress:
        progress = False
        for h, p in programs.items():
            for i in range(iterations):
                for op in p["ops"]:
                    if (h, i, op["id"]) not in fired and ok(h, i, op):
                        fired.add((h, i, op["id"]))
                        progress = True
    total = sum(len(p["ops"]) for p in programs.values()) * iterations
    assert len(fired) == total, "the abstract run stops: %d of %d ops fired" % (len(fired), total)
    return total


# --- a program written by hand -------------------------------------------------------------------------------------

def test_two_host_ring_allreduce_by_hand():
    # S = 20: segments of 10. Step 0: a sends seg 1 to b, b seg 0 to a; step 1: a forwards seg 0 (after receiving
    # it), b seg 1. Schedule order: a->b, b->a, a->b, b->a: each host lists its part in that order.
    p = programs_of({"iterations": 3, "compute_ms": 5, "collectives": [{"op": "allreduce", "size": 20}]}, ["a", "b"])
    assert p["a"] == {
        "version": 1, "iterations": 3,
        "listen": {"address": "198.18.0.1", "port": 18700},
        "peers": {"b": {"address": "198.18.0.2", "port": 18700}},
        "window": 2,
        "ops": [
            {"id": 0, "kind": "compute", "ms": 5.0, "tag": "compute"},
            {"id": 1, "kind": "send", "peer": "b", "deps": [0], "bytes": 10, "tag": "ar0.rs.s0.c0", "coll": 0,
             "step": 0, "chunk": 0},
            {"id": 2, "kind": "recv", "peer": "b", "deps": [0], "bytes": 10, "tag": "ar0.rs.s0.c0", "coll": 0,
             "step": 0, "chunk": 0},
            {"id": 3, "kind": "send", "peer": "b", "deps": [2], "bytes": 10, "tag": "ar0.ag.s1.c0", "coll": 0,
             "step": 1, "chunk": 0},
            {"id": 4, "kind": "recv", "peer": "b", "deps": [0], "bytes": 10, "tag": "ar0.ag.s1.c0", "coll": 0,
             "step": 1, "chunk": 0},
            {"id": 5, "kind": "compute", "ms": 0.0, "deps": [1, 3, 4], "tag": "join0"},
        ]}
    assert [(op["id"], op["kind"], op.get("deps")) for op in p["b"]["ops"]] == [
        (0, "compute", None), (1, "recv", [0]), (2, "send", [0]), (3, "recv", [0]), (4, "send", [1]),
        (5, "compute", [2, 3, 4])]
    check(p)


def test_overlap_lets_the_next_compute_run_under_the_collectives():
    p = programs_of({"iterations": 2, "compute_ms": 5, "overlap": True,
                     "collectives": [{"op": "allreduce", "size": 20}, {"op": "allgather", "size": 20}]},
                    ["a", "b"])["a"]["ops"]
    # compute waits only for the previous compute; the start op for this compute and the last join before it
    assert p[0] == {"id": 0, "kind": "compute", "ms": 5.0, "tag": "compute", "deps_prev": [0]}
    assert p[1] == {"id": 1, "kind": "compute", "ms": 0.0, "deps": [0], "deps_prev": [9], "tag": "start"}
    assert p[2]["deps"] == [1] and p[6]["tag"] == "join0" and p[6]["deps"] == [2, 4, 5]
    assert p[7]["deps"] == [6] and p[7]["tag"] == "ag1.ag.s0.c0"  # the second collective starts after the first's join
    # the allgather over two hosts is one step: a sends (7) and receives (8), then joins
    assert p[9] == {"id": 9, "kind": "compute", "ms": 0.0, "deps": [7, 8], "tag": "join1"} and len(p) == 10
    check(programs_of({"iterations": 2, "compute_ms": 5, "overlap": True,
                       "collectives": [{"op": "allreduce", "size": 20}, {"op": "allgather", "size": 20}]},
                      ["a", "b"]), iterations=3)


def test_a_smaller_window_becomes_a_dependency():
    # window 1 for the allgather, 3 for the alltoall: the program's window is 3; the allgather's second piece on a
    # connection waits for its first to end (be acknowledged).
    p = programs_of({"collectives": [{"op": "allgather", "size": 40, "chunks": 2, "window": 1},
                                     {"op": "alltoall", "size": 40, "chunks": 2, "window": 3}]}, ["a", "b"])
    a = p["a"]
    assert a["window"] == 3
    sends = [(op["id"], op["deps"], op["tag"]) for op in a["ops"] if op["kind"] == "send"]
    assert sends == [(1, [0], "ag0.ag.s0.c0"), (2, [1], "ag0.ag.s0.c1"),
                     (6, [5], "a2a1.a2a.s0.c0"), (7, [5], "a2a1.a2a.s0.c1")]
    check(p)


def test_channels_and_trees():
    p = programs_of({"channels": 2, "collectives": [{"op": "allreduce", "algorithm": "tree", "size": 40,
                                                     "chunks": 2}]}, ["a", "b", "c", "d"])
    channels = sorted({op.get("channel", 0) for h in p for op in p[h]["ops"] if op["kind"] != "compute"})
    assert channels == [0, 1, 2, 3]  # tree 0 on channels 0-1, tree 1 on 2-3
    assert all("channel" not in op or op["channel"] != 0 for h in p for op in p[h]["ops"])
    check(p)


@pytest.mark.parametrize("op,algorithm,ns", [
    ("allreduce", "ring", (2, 3, 4, 8)), ("allreduce", "tree", (2, 3, 4, 5, 8)),
    ("allreduce", "halving_doubling", (2, 4, 8)), ("allgather", "ring", (2, 3, 5)),
    ("reducescatter", "ring", (2, 3, 5)), ("alltoall", "direct", (2, 3, 5)), ("alltoall", "pairwise", (2, 3, 5)),
    ("broadcast", "ring", (2, 3, 5)), ("broadcast", "tree", (2, 3, 5, 8)),
])
@pytest.mark.parametrize("chunks,window,overlap", [(1, 1, False), (3, 2, True)])
def test_every_algorithm_passes_the_checker(op, algorithm, ns, chunks, window, overlap):
    for n in ns:
        hosts = ["h%d" % i for i in range(n)]
        c = {"op": op, "algorithm": algorithm, "size": 3 * 16 * n, "chunks": chunks, "window": window}
        if op == "broadcast":
            c["root"] = hosts[-1]
        p = programs_of({"iterations": 2, "compute_ms": 1, "overlap": overlap, "collectives": [c]}, hosts)
        check(p)
        conns = match_connections(p)
        assert sum(len(x.sends) for x in conns.values()) == len(parse_job(
            {"collectives": [c]}, hosts).schedules()[0].transfers)


# --- the refusals -----------------------------------------------------------------------------------------------

def two():
    return programs_of({"collectives": [{"op": "allreduce", "size": 20}]}, ["a", "b"])


def test_mismatched_bytes_are_named():
    p = two()
    p["b"]["ops"][1]["bytes"] = 11
    with pytest.raises(ProgramError, match=r"^a op 1 \(ar0\.rs\.s0\.c0\) sends 10 bytes to b, whose matching op 1 "
                                           r"\(ar0\.rs\.s0\.c0\) receives 11"):
        match_connections(p)


def test_a_send_without_its_receive_is_named():
    p = two()
    p["b"]["ops"][3]["kind"] = "compute"
    with pytest.raises(ProgramError, match=r"^a op 3 \(ar0\.ag\.s1\.c0\) sends to b on channel 0 with no matching "
                                           r"receive: a sends 2 messages there per iteration, b receives 1"):
        match_connections(p)


def test_a_receive_without_its_send_is_named():
    p = two()
    p["a"]["ops"][3]["kind"] = "compute"
    with pytest.raises(ProgramError, match=r"^b op 3 \(ar0\.ag\.s1\.c0\) receives from a on channel 0 with no "
                                           r"matching send"):
        match_connections(p)


def test_a_host_without_program_is_named():
    p = two()
    del p["b"]
    with pytest.raises(ProgramError, match=r"^a: op 1 sends to b, which has no program"):
        match_connections(p)


def test_iterations_must_agree():
    p = two()
    p["b"]["iterations"] = 2
    with pytest.raises(ProgramError, match=r"a runs 1 iterations and b 2"):
        match_connections(p)


@pytest.mark.parametrize("change,message", [
    (lambda ops: ops[3].update(deps=[4]), r"^a: op 3 depends on op 4 of the same iteration: deps point to lower ids"),
    (lambda ops: ops[3].update(deps=[9]), r"^a: op 3: deps names 9, which is not an op id \(0 to 5\)"),
    (lambda ops: ops[2].update(kind="wait"), r"^a: op 2 has kind 'wait'; use send, recv or compute"),
    (lambda ops: ops[1].update(peer="c"), r"^a: op 1 sends to c, which is not in the program's peers"),
    (lambda ops: ops[1].update(bytes=0), r"^a: op 1 moves 0 bytes"),
    (lambda ops: ops[0].update(ms=-1), r"^a: op 0: ms -1"),
    (lambda ops: ops[4].update(id=7), r"^a: op 4 has id 7; ids are dense"),
])
def test_check_program_refusals(change, message):
    p = copy.deepcopy(two()["a"])
    change(p["ops"])
    with pytest.raises(ProgramError, match=message):
        check_program("a", p)


def test_endpoints_are_checked():
    spec = parse_job({"collectives": [{"op": "allreduce", "size": 20}]}, ["a", "b"])
    with pytest.raises(ProgramError, match=r"^endpoints: no program server address for b"):
        build_programs(spec, {"a": ("198.18.0.1", 18700)})
    with pytest.raises(ProgramError, match=r"^endpoints\.b: port 0; give a port from 1 to 65535"):
        build_programs(spec, {"a": ("198.18.0.1", 18700), "b": {"address": "198.18.0.2", "port": 0}})


def test_window_by_channel_and_per_op_window_are_read():
    p = two()
    p["a"]["window_by_channel"] = {"0": 4}
    p["b"]["ops"][2]["window"] = 3
    conns = match_connections(p)
    assert conns[("a", "b", 0)].window == 4 and conns[("b", "a", 0)].window == 3
    assert conns[("a", "b", 0)].sends == (1, 3) and conns[("a", "b", 0)].recvs == (1, 3)
