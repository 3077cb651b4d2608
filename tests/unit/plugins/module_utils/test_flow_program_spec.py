# -*- coding: utf-8 -*-
"""The job program's validation (docs/job-contract.md section 1): a table of bad programs, each refused naming its
field, and what a valid program is typed into (dependents, barrier ops, connections, windows), computed by hand."""
from __future__ import annotations

import copy

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._flow.engine import FlowError
from ansible_collections.aifabric.lab.plugins.module_utils._flow.program_spec import Endpoint, parse_program


def base():
    """The contract's example program."""
    return {
        "version": 1,
        "iterations": 20,
        "listen": {"address": "198.18.0.2", "port": 18700},
        "peers": {"worker3": {"address": "198.18.0.3", "port": 18700}},
        "window": 2,
        "ops": [
            {"id": 0, "kind": "compute", "ms": 5.0, "tag": "compute"},
            {"id": 1, "kind": "send", "peer": "worker3", "bytes": 1048576, "deps": [0], "tag": "ar0.rs.s0.c0"},
            {"id": 2, "kind": "recv", "peer": "worker1", "bytes": 1048576, "deps": [0], "tag": "ar0.rs.s0.c0"},
            {"id": 3, "kind": "send", "peer": "worker3", "bytes": 1048576, "deps": [2], "tag": "ar0.rs.s1.c0"},
            {"id": 4, "kind": "compute", "ms": 0.0, "deps": [3], "deps_prev": [], "tag": "reduce"},
        ],
    }


def test_the_contract_example_is_typed():
    program = parse_program(base())
    assert program.iterations == 20 and program.window == 2
    assert program.listen == Endpoint("198.18.0.2", 18700)
    assert program.peers == {"worker3": Endpoint("198.18.0.3", 18700)}
    assert [op.kind for op in program.ops] == ["compute", "send", "recv", "send", "compute"]
    assert program.ops[1].deps == (0,) and program.ops[4].deps_prev == ()
    # who waits for whom, by hand: 0 -> 1, 2; 2 -> 3; 3 -> 4; only op 0 has neither deps nor deps_prev
    assert program.dependents == [[1, 2], [], [3], [4], []]
    assert program.dependents_next == [[], [], [], [], []]
    assert program.barrier_ops == [0]
    assert program.sends == {("worker3", 0): [1, 3]}
    assert program.recvs == {("worker1", 0): [2]}
    assert program.need(0) == [0, 1, 1, 1, 1]
    assert program.need(1) == [1, 1, 1, 1, 1]
    assert program.bytes_per_iteration == 2 * 1048576
    assert program.channel_window(0) == 2


def test_deps_prev_windows_and_channels():
    value = base()
    value["ops"][0]["deps_prev"] = [4, 4, 0]  # repeated ids are one dependency
    value["ops"][1]["channel"] = 1
    value["ops"][1]["window"] = 4  # the first op of channel 1 sets its window
    value["window_by_channel"] = {"2": 8}
    program = parse_program(value)
    assert program.ops[0].deps_prev == (0, 4)
    assert program.barrier_ops == []
    assert program.dependents_next == [[0], [], [], [], [0]]
    assert program.need(0) == [0, 1, 1, 1, 1] and program.need(1) == [2, 1, 1, 1, 1]
    assert program.sends == {("worker3", 1): [1], ("worker3", 0): [3]}
    assert program.window_by_channel == {1: 4, 2: 8}
    assert [program.channel_window(c) for c in (0, 1, 2)] == [2, 4, 8]


def _set(path, value):
    def mutate(program):
        target = program
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return mutate


def _delete(path):
    def mutate(program):
        target = program
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
    return mutate


BAD = [
    (_set(("version",), 2), "program.version: 2 is not a version this host runs; give version: 1"),
    (_delete(("iterations",)), "program.iterations: missing; give the number of times the op list runs"),
    (_set(("iterations",), 0), "program.iterations: 0 is out of range 1..1000000"),
    (_set(("iterations",), True), "program.iterations: True is not an integer"),
    (_set(("window",), 0), "program.window: 0 is out of range 1..1024"),
    (_set(("windows",), 2), "program.windows: 2 is not a field of a program; the fields are version, iterations"),
    (_set(("ops",), []), "program.ops: [] is not a non-empty list"),
    (_set(("ops", 3, "id"), 4), "program.ops[3].id: 4 is not 3; ids are dense and in order: ops[k] has id k"),
    (_delete(("ops", 2, "id")), "program.ops[2].id: missing; give id: 2 (ops[k] has id k)"),
    (_set(("ops", 1, "kind"), "sendrecv"), "program.ops[1].kind: 'sendrecv' is not a kind; use compute, send or recv"),
    (_set(("ops", 3, "deps"), [4]), "program.ops[3].deps: 4 is not an earlier op; deps name ops of the same "
                                    "iteration before this one (ids 0..2), use deps_prev for the previous "
                                    "iteration's"),
    (_set(("ops", 3, "deps"), [3]), "program.ops[3].deps: 3 is not an earlier op"),
    (_set(("ops", 0, "deps"), [0]), "program.ops[0].deps: 0 is not an earlier op; op 0 has no earlier op"),
    (_set(("ops", 3, "deps"), 2), "program.ops[3].deps: 2 is not a list of op ids"),
    (_set(("ops", 3, "deps"), ["2"]), "program.ops[3].deps[0]: '2' is not an op id"),
    (_set(("ops", 4, "deps_prev"), [5]), "program.ops[4].deps_prev: 5 is not an op of this program; deps_prev "
                                         "names ops of the previous iteration (ids 0..4)"),
    (_set(("ops", 1, "bytes"), 0), "program.ops[1].bytes: 0 is out of range 1..1099511627776"),
    (_set(("ops", 1, "bytes"), 1.5), "program.ops[1].bytes: 1.5 is not an integer"),
    (_delete(("ops", 1, "bytes")), "program.ops[1].bytes: missing; give the message size"),
    (_set(("ops", 0, "ms"), -1), "program.ops[0].ms: -1 is out of range 0..3.6e+06"),
    (_set(("ops", 0, "ms"), float("nan")), "program.ops[0].ms: nan is not a finite number"),
    (_delete(("ops", 0, "ms")), "program.ops[0].ms: missing; give the compute time in milliseconds (0 for a join)"),
    (_set(("ops", 0, "peer"), "worker3"), "program.ops[0].peer: 'worker3' is not a field of a compute op"),
    (_set(("ops", 1, "ms"), 3), "program.ops[1].ms: 3 is not a field of a send op"),
    (_set(("ops", 1, "peer"), "worker9"), "program.ops[1].peer: worker9 is not in program.peers; add worker9: "
                                          "{address: ..., port: ...}"),
    (_delete(("ops", 1, "peer")), "program.ops[1].peer: missing; give the host it sends to"),
    (_set(("ops", 1, "peer"), "bad\nname"), "program.ops[1].peer: 'bad\\nname' has control characters"),
    (_set(("ops", 2, "peer"), ""), "program.ops[2].peer: '' is not a host name"),
    (_set(("ops", 2, "peer"), "w" * 256), "is longer than 255 bytes in UTF-8"),
    (_set(("ops", 1, "channel"), 70000), "program.ops[1].channel: 70000 is out of range 0..65535"),
    (_set(("ops", 3, "window"), 3), "program.ops[3].window: 3 is set on an op that is not the first of channel 0 "
                                    "(ops[1] is)"),
    (_set(("ops", 1, "wnidow"), 3), "program.ops[1].wnidow: 3 is not a field of an op"),
    (_set(("ops", 1, "tag"), 7), "program.ops[1].tag: 7 is not text"),
    (_set(("ops", 1, "tag"), "t" * 300), "program.ops[1].tag: "),
    (_delete(("listen",)), "program.listen: missing, but ops[2] is a recv"),
    (_set(("listen", "address"), "0.0.0.0"), "program.listen.address: 0.0.0.0 would listen on every interface"),
    (_set(("listen", "address"), "worker2.lab"), "program.listen.address: 'worker2.lab' is not an IP address"),
    (_set(("listen", "port"), 0), "program.listen.port: 0 is out of range 1..65535"),
    (_set(("listen", "host"), "x"), "program.listen.host: 'x' is not a field of an endpoint"),
    (_set(("peers", "worker3"), {"address": "198.18.0.3"}), "program.peers.worker3.port: missing"),
    (_set(("peers",), ["worker3"]), "program.peers: ['worker3'] is not a mapping"),
    (_set(("window_by_channel",), {"x": 2}), "program.window_by_channel key: 'x' is not a channel number"),
    (_set(("window_by_channel",), {"0": 0}), "program.window_by_channel.0: 0 is out of range 1..1024"),
    (_set(("timeout",), 0), "program.timeout: 0 is out of range 0.001..604800"),
]


@pytest.mark.parametrize("mutate, message", BAD, ids=[m for _f, m in BAD])
def test_bad_programs_name_the_field(mutate, message):
    program = copy.deepcopy(base())
    mutate(program)
    with pytest.raises(FlowError) as caught:
        parse_program(program)
    assert message in str(caught.value)


def test_a_window_given_twice_is_refused():
    value = base()
    value["ops"][1]["window"] = 4
    value["window_by_channel"] = {0: 3}
    with pytest.raises(FlowError, match=r"program.ops\[1\].window: channel 0's window is also in "
                                        r"program.window_by_channel; give it once"):
        parse_program(value)


def test_not_a_mapping():
    with pytest.raises(FlowError, match="program: 'x' is not a mapping"):
        parse_program("x")


def test_a_host_without_recv_needs_no_listen_and_may_name_unused_peers():
    value = {"version": 1, "iterations": 1, "peers": {"w2": {"address": "198.18.0.2", "port": 1},
                                                      "w9": {"address": "::1", "port": 2}},
             "ops": [{"id": 0, "kind": "send", "peer": "w2", "bytes": 1}]}
    program = parse_program(value)
    assert program.listen is None and program.recvs == {}
    assert program.peers["w9"] == Endpoint("::1", 2)
    assert program.window == 1  # the default
    assert program.barrier_ops == [0]
