# -*- coding: utf-8 -*-
"""The job-program executor on real loopback sockets: several hosts' ProgramFlows (threads, or a forked process that
is killed), each with its own program server. What is checked is the ORDER of the recorded events (FIFO, window,
deps, deps_prev, the iteration barrier), the bytes, and the failures' sentences; never a duration or a rate (those
are benchmarks/program_executor.py's)."""
from __future__ import annotations

import os
import signal
import socket
import struct
import threading
import time

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._flow import program as program_module
from ansible_collections.aifabric.lab.plugins.module_utils._flow.engine import FlowError
from ansible_collections.aifabric.lab.plugins.module_utils._flow.program import (
    HELLO_HEAD,
    MAGIC,
    ProgramFlow,
    token_proof,
)
from flow_harness import ADDR, TOKEN, TRANSPORTS, flows_for, free_port, ok, program, ring, row, run, times


# ------------------------------------------------------------------------------------------------- two hosts
def test_two_hosts_send_and_receive():
    ports = {"a": free_port(), "b": free_port()}
    sizes = [1, 100_000, 3_000_000]  # one byte, one spliced remainder, several socket buffers
    a = [{"id": k, "kind": "send", "peer": "b", "bytes": size, "tag": "m%d" % k} for k, size in enumerate(sizes)]
    a.append({"id": 3, "kind": "recv", "peer": "b", "bytes": 10, "deps": [2]})
    b = [{"id": k, "kind": "recv", "peer": "a", "bytes": size} for k, size in enumerate(sizes)]
    b.append({"id": 3, "kind": "send", "peer": "a", "bytes": 10, "deps": [2]})
    results = run(flows_for({"a": program("a", ports, a, iterations=2, window=2),
                             "b": program("b", ports, b, iterations=2)}))
    ok(results)
    ra, rb = results["a"], results["b"]
    total = 2 * sum(sizes)
    assert ra["bytes_sent"] == rb["bytes_received"] == total
    assert rb["bytes_sent"] == ra["bytes_received"] == 20
    assert ra["detail"] == "full" and ra["sampled"] == [0, 1] and ra["iterations"] == 2 and ra["ops"] == 4
    assert ra["at"] == rb["at"] and ra["late_s"] >= 0
    for result in (ra, rb):
        assert len(result["iteration_end"]) == 2
        for i in (0, 1):
            start, first, end = row(result, i)
            assert all(s is not None and e is not None and f is not None for s, f, e in zip(start, first, end))
            assert all(e >= s for s, e in zip(start, end))
            assert result["iteration_end"][i] == max(end)
    for i in (0, 1):
        for j in range(3):  # a send's first byte is written after its start, and it ends when acked, later
            start, first, end = times(ra, i, j)
            assert start <= first <= end
        # b's send (op 3) waits for its recv op 2; a's recv op 3 is a barrier op: posted at the iteration's start
        assert times(rb, i, 3)[0] == times(rb, i, 2)[2]
    assert times(ra, 1, 0)[0] >= ra["iteration_end"][0]  # iteration 1 of a barrier op waits for all of iteration 0
    assert sorted((c["peer"], c["direction"], c["messages"], c["bytes"]) for c in ra["connections"]) == [
        ("b", "recv", 2, 20), ("b", "send", 6, total)]
    assert ra["refused"] == [] and ra["cpu_s"] >= 0


def test_progress_after_the_end_and_without_splice_or_low_water_mark(monkeypatch):
    """b drains as a Python 3.9 host does (recv_into, no splice) on a kernel without a trusted SO_RCVLOWAT."""
    monkeypatch.setattr(program_module, "_USE_LOWAT", False)
    ports = {"a": free_port(), "b": free_port()}
    a = [{"id": 0, "kind": "send", "peer": "b", "bytes": 2_500_000, "channel": 1},
         {"id": 1, "kind": "send", "peer": "b", "bytes": 7, "channel": 0}]
    b = [{"id": 0, "kind": "recv", "peer": "a", "bytes": 2_500_000, "channel": 1},
         {"id": 1, "kind": "recv", "peer": "a", "bytes": 7, "channel": 0}]
    flows = {"a": ProgramFlow(program("a", ports, a, iterations=3), TOKEN, "a"),
             "b": ProgramFlow(program("b", ports, b, iterations=3), TOKEN, "b", use_splice=False)}
    seen = {}

    def during(flows):
        while not seen.get("done"):
            time.sleep(0.02)
            if flows["a"].iterations_done == 3:
                seen["done"] = flows["a"].progress()

    results = run(flows, during=during)
    ok(results)
    assert results["b"]["bytes_received"] == 3 * 2_500_007
    assert seen["done"]["iterations_done"] == 3 and seen["done"]["iteration"] == 2
    assert seen["done"]["bytes"] == seen["done"]["volume"] == 3 * 2_500_007
    # one connection per (sender, receiver, channel)
    assert sorted((c["channel"], c["direction"]) for c in results["a"]["connections"]) == [(0, "send"), (1, "send")]
    assert sorted((c["channel"], c["bytes"]) for c in results["b"]["connections"]) == [(0, 21), (1, 7_500_000)]


# ------------------------------------------------------------------------------------------------- a ring
@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
@pytest.mark.parametrize("window", [1, 2])
def test_ring_with_chunks_keeps_fifo_window_and_deps(window, transport):
    """The same ring on every transport (TCP; RDMA verbs over the fake fabric of queue pairs)."""
    n, steps, chunks, size, iterations = 3, 2, 3, 200_000, 3
    names = ["r%d" % r for r in range(n)]
    ports = {name: free_port() for name in names}
    programs = {}
    for r, name in enumerate(names):
        ops, ids = ring(n, steps, chunks, size)
        for op in ops:
            op["peer"] = names[(r + 1) % n] if op["kind"] == "send" else names[(r - 1) % n]
        programs[name] = program(name, ports, ops, iterations=iterations, window=window)
    results = run(TRANSPORTS[transport](programs))
    ok(results)
    sends = [ids[(s, c)][0] for s in range(steps) for c in range(chunks)]
    for name, result in results.items():
        assert result["bytes_sent"] == result["bytes_received"] == iterations * steps * chunks * size
        # the sends on the one connection, in the order (iteration, op id)
        seq = [times(result, i, j) for i in range(iterations) for j in sends]
        for k in range(1, len(seq)):
            assert seq[k][0] >= seq[k - 1][0], (name, k)  # FIFO: no send starts before an earlier one
            assert seq[k][1] >= seq[k - 1][1], (name, k)  # ... nor writes its first byte before it
        for k in range(window, len(seq)):
            assert seq[k][0] >= seq[k - window][2], (name, k)  # at most `window` unacknowledged
        for i in range(iterations):
            for s in range(1, steps):
                for c in range(chunks):
                    send, _recv = ids[(s, c)]
                    assert times(result, i, send)[0] >= times(result, i, ids[(s - 1, c)][1])[2]
            if i:
                # the step-0 sends and every recv have neither deps nor deps_prev: the iteration barrier
                for j in [ids[(0, c)][0] for c in range(chunks)] + [ids[k][1] for k in ids]:
                    assert times(result, i, j)[0] >= result["iteration_end"][i - 1]
        assert result["iteration_end"] == sorted(result["iteration_end"])


# ------------------------------------------------------------------------------------------------- deps_prev, compute
def test_deps_prev_runs_ahead_of_the_barrier():
    """b's op 1 depends only on itself in the previous iteration: it runs on while b's recv of iteration 0 waits
    for a's 100 ms compute; b's recv (a barrier op) waits for all of b's previous iteration."""
    ports = {"a": free_port(), "b": free_port()}
    a = [{"id": 0, "kind": "compute", "ms": 100.0}, {"id": 1, "kind": "send", "peer": "b", "bytes": 1000, "deps": [0]}]
    b = [{"id": 0, "kind": "recv", "peer": "a", "bytes": 1000},
         {"id": 1, "kind": "compute", "ms": 2.0, "deps_prev": [1]}]
    results = run(flows_for({"a": program("a", ports, a, iterations=3), "b": program("b", ports, b, iterations=3)}))
    ok(results)
    rb, ra = results["b"], results["a"]
    for i in (1, 2):
        assert times(rb, i, 1)[0] == times(rb, i - 1, 1)[2]  # deps_prev is its only wait
        assert times(rb, i, 0)[0] >= rb["iteration_end"][i - 1]  # the barrier
        assert times(ra, i, 0)[0] == ra["iteration_end"][i - 1]
    assert times(rb, 1, 1)[0] < times(rb, 0, 0)[2]  # iteration 1 began before iteration 0 ended
    assert times(rb, 0, 1)[0] == pytest.approx(0.0, abs=0.05)  # deps_prev is ignored in iteration 0
    assert rb["iteration_end"][0] == max(times(rb, 0, 0)[2], times(rb, 0, 1)[2])


@pytest.mark.parametrize("timer", ["timerfd", "epoll timeout"])
def test_compute_ops_wait_on_a_timer_without_burning_cpu(timer, monkeypatch):
    if timer == "epoll timeout":  # a host where ctypes cannot reach timerfd: epoll's own timeout, no spin either
        monkeypatch.setattr(program_module, "_LIBC", None)
    ops = [{"id": 0, "kind": "compute", "ms": 30.0},
           {"id": 1, "kind": "compute", "ms": 0.0, "deps": [0]},
           {"id": 2, "kind": "compute", "ms": 10.0, "deps": [0]},
           {"id": 3, "kind": "compute", "ms": 0.0, "deps": [1, 2], "tag": "join"}]
    flow = ProgramFlow({"version": 1, "iterations": 10, "ops": ops}, TOKEN, "solo")
    result = run({"solo": flow})["solo"]
    ok({"solo": result})
    for i in range(10):
        start, first, end = row(result, i)
        assert first == [None] * 4  # a compute op writes no byte
        for j, ms in enumerate((30.0, 0.0, 10.0, 0.0)):
            assert end[j] - start[j] >= ms / 1000 - 2e-6  # a timer never ends early (times are to 1 us)
        assert start[1] == start[2] == end[0]
        assert start[3] == max(end[1], end[2]) and end[3] == start[3]
        if i:
            assert start[0] == result["iteration_end"][i - 1]
    # waiting is sleeping: 10 x 40 ms of program, a spinning loop would burn about all of it
    assert result["cpu_s"] < 0.5 * result["iteration_end"][-1]
    assert result["bytes_sent"] == result["bytes_received"] == 0 and result["connections"] == []


def test_the_program_timeout_ends_it_naming_what_waits():
    ops = [{"id": 0, "kind": "compute", "ms": 5.0}, {"id": 1, "kind": "compute", "ms": 60_000.0, "deps": [0],
                                                     "tag": "forever"}]
    flow = ProgramFlow({"version": 1, "iterations": 2, "ops": ops, "timeout": 0.3}, TOKEN, "solo")
    result = run({"solo": flow})["solo"]
    assert result["status"] == "timeout"
    assert result["error"].startswith("the program did not end within timeout=0.3s: iteration 0 op 1 (compute "
                                      "60000 ms, tag 'forever') started")
    assert times(result, 0, 0)[2] is not None and times(result, 0, 1)[2] is None
    assert result["iteration_end"] == [None, None]


# ------------------------------------------------------------------------------------------------- failures
@pytest.mark.parametrize("case", ["bytes", "iteration"])
def test_a_header_mismatch_fails_naming_both_ops(case):
    ports = {"a": free_port(), "b": free_port()}
    if case == "bytes":
        a = [{"id": 0, "kind": "send", "peer": "b", "bytes": 1000, "tag": "x"}]
        b = [{"id": 0, "kind": "recv", "peer": "a", "bytes": 2000, "tag": "y"}]
        expected = ("the message from a (channel 0) does not match: this host's iteration 0 op 0 (recv from a "
                    "channel 0, 2000 bytes, tag 'y') is matched with a's send op 0 of iteration 0 "
                    "(1000 bytes)")
    else:  # a sends twice per iteration, b receives once: a's second message is not b's iteration 1
        a = [{"id": 0, "kind": "send", "peer": "b", "bytes": 1000},
             {"id": 1, "kind": "send", "peer": "b", "bytes": 1000, "deps": [0]}]
        b = [{"id": 0, "kind": "recv", "peer": "a", "bytes": 1000, "tag": "y"}]
        expected = ("this host's iteration 1 op 0 (recv from a channel 0, 1000 bytes, tag 'y') is "
                    "matched with a's send op 1 of iteration 0 (1000 bytes)")
    results = run(flows_for({"a": program("a", ports, a, iterations=2), "b": program("b", ports, b, iterations=2)}))
    assert results["b"]["status"] == "error"
    assert expected in results["b"]["error"]
    # a learns at once that b is gone (b shut its connections), naming its own op
    assert results["a"]["status"] == "error"
    assert results["a"]["error"].startswith("b (channel 0) disappeared")
    assert "op %d (send to b channel 0" % (0 if case == "bytes" else 1) in results["a"]["error"]


def test_a_peer_that_dies_mid_program_fails_it_naming_the_op_and_peer():
    ports = {"a": free_port(), "b": free_port()}
    a = [{"id": 0, "kind": "send", "peer": "b", "bytes": 100_000, "tag": "ping"},
         {"id": 1, "kind": "recv", "peer": "b", "bytes": 100_000, "deps": [0], "tag": "pong"},
         {"id": 2, "kind": "compute", "ms": 1.0, "deps": [1]}]
    b = [{"id": 0, "kind": "recv", "peer": "a", "bytes": 100_000},
         {"id": 1, "kind": "send", "peer": "a", "bytes": 100_000, "deps": [0]}]
    programs = {"a": program("a", ports, a, iterations=100_000, timeout=30.0),
                "b": program("b", ports, b, iterations=100_000, timeout=30.0)}
    at = time.time() + 0.8
    pid = os.fork()
    if pid == 0:  # b, in a process of its own that the test kills
        try:
            flow = ProgramFlow(programs["b"], TOKEN, "b", listener=ProgramFlow.listen(programs["b"]))
            if flow.arm(at - 0.05):
                flow.fire(at)
        finally:
            os._exit(0)
    flow = ProgramFlow(programs["a"], TOKEN, "a", listener=ProgramFlow.listen(programs["a"]))
    out = {}
    try:
        assert flow.arm(at - 0.05), flow.result["error"]
        thread = threading.Thread(target=lambda: out.update(flow.fire(at)), daemon=True)
        thread.start()
        end = time.time() + 15
        while flow.iterations_done < 3 and time.time() < end:
            time.sleep(0.01)
        os.kill(pid, signal.SIGKILL)
        thread.join(20)
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        flow.close()
    assert out["status"] == "error"
    assert out["error"].startswith("b (channel 0) disappeared (")
    assert " iteration " in out["error"] and ("(send to b" in out["error"] or "(recv from b" in out["error"])
    # what was measured is kept: the iterations before the death, op by op
    done = [i for i, end in enumerate(out["iteration_end"]) if end is not None]
    assert done[:3] == [0, 1, 2]
    assert out["detail"] == "sampled" and {0, 1, 2} <= set(out["sampled"])
    assert all(v is not None for v in row(out, 0)[2])


def test_abort_mid_program_keeps_what_was_measured():
    ports = {"a": free_port(), "b": free_port()}
    a = [{"id": 0, "kind": "compute", "ms": 5.0}, {"id": 1, "kind": "send", "peer": "b", "bytes": 1000, "deps": [0]}]
    b = [{"id": 0, "kind": "recv", "peer": "a", "bytes": 1000}]
    flows = flows_for({"a": program("a", ports, a, iterations=2000), "b": program("b", ports, b, iterations=2000)})

    def during(flows):
        end = time.time() + 15
        while flows["a"].iterations_done < 3 and time.time() < end:
            time.sleep(0.005)
        flows["a"].abort("stopped by the test")

    results = run(flows, during=during)
    ra = results["a"]
    assert ra["status"] == "aborted" and ra["error"] == "stopped by the test"
    done = [i for i, end in enumerate(ra["iteration_end"]) if end is not None]
    assert len(done) >= 3 and done == list(range(len(done)))
    for i in done:
        assert all(v is not None for v in row(ra, i)[2])
    assert ra["bytes_sent"] >= 3000
    assert results["b"]["status"] == "error" and "a (channel 0) disappeared" in results["b"]["error"]


def test_a_wrong_token_and_a_stray_are_refused_and_recorded_while_the_program_completes():
    ports = {"a": free_port(), "b": free_port()}
    a = [{"id": 0, "kind": "compute", "ms": 20.0}, {"id": 1, "kind": "send", "peer": "b", "bytes": 5000, "deps": [0]}]
    b = [{"id": 0, "kind": "recv", "peer": "a", "bytes": 5000}]
    flows = flows_for({"a": program("a", ports, a, iterations=5), "b": program("b", ports, b, iterations=5)})
    answers = {}

    def rogue(label, proof, name):
        with socket.create_connection((ADDR, ports["b"]), timeout=10) as sock:
            sock.sendall(HELLO_HEAD.pack(MAGIC, proof, 0, len(name)) + name)
            answers[label] = sock.recv(300)

    rogues = [threading.Thread(target=rogue, args=("wrong", token_proof("another run"), b"a"), daemon=True),
              threading.Thread(target=rogue, args=("stranger", token_proof(TOKEN), b"mallory"), daemon=True)]
    for thread in rogues:
        thread.start()
    time.sleep(0.1)  # both wait in b's backlog before anyone arms
    results = run(flows)
    for thread in rogues:
        thread.join(5)
    ok(results)
    assert answers["wrong"] == b"NO\x0fwrong run token"
    assert answers["stranger"].startswith(b"NO") and b"no recv op from mallory" in answers["stranger"]
    assert sorted(results["b"]["refused"], key=lambda e: e["reason"]) == [
        {"peer": ADDR, "reason": "this program has no recv op from mallory on channel 0", "name": "mallory",
         "channel": 0},
        {"peer": ADDR, "reason": "wrong run token"}]
    assert results["b"]["refused_count"] == 2
    assert results["b"]["bytes_received"] == 5 * 5000


def test_a_sender_with_the_wrong_token_is_not_armed():
    ports = {"a": free_port(), "b": free_port()}
    pa = program("a", ports, [{"id": 0, "kind": "send", "peer": "b", "bytes": 10}])
    pb = program("b", ports, [{"id": 0, "kind": "recv", "peer": "a", "bytes": 10}])
    flows = {"a": ProgramFlow(pa, "not the run's", "a"), "b": ProgramFlow(pb, TOKEN, "b")}
    results = run(flows, lead=0.6)
    assert results["a"]["status"] == "error"
    assert results["a"]["error"] == ("not armed: the program server of b at 127.0.0.1:%d (channel 0) refused this "
                                     "host's connection: wrong run token" % ports["b"])
    assert results["b"]["error"] == "not armed by the deadline: a never connected for channel 0 (this host's recv " \
                                    "ops from it need it)"
    assert results["b"]["refused"] == [{"peer": ADDR, "reason": "wrong run token"}]


def test_abort_while_arming_ends_it_at_once():
    value = {"version": 1, "iterations": 1, "peers": {"w3": {"address": ADDR, "port": free_port()}},
             "ops": [{"id": 0, "kind": "send", "peer": "w3", "bytes": 10}]}
    flow = ProgramFlow(value, TOKEN, "w1")
    timer = threading.Timer(0.2, flow.abort, ("the step failed elsewhere",))
    timer.start()
    try:
        assert flow.arm(time.time() + 30) is False  # returns long before its deadline
        assert flow.result["error"] == "not armed: the step failed elsewhere"
    finally:
        timer.cancel()
        flow.close()
    flow.abort("after the close")  # harmless


def test_all_to_all_on_two_channels():
    """Six hosts, each sending to and receiving from every other on two channels: 20 connections per host, one
    event loop each."""
    names = ["w%d" % k for k in range(6)]
    ports = {name: free_port() for name in names}
    programs = {}
    for name in names:
        ops = [{"id": 0, "kind": "compute", "ms": 2.0}]
        for other in names:
            if other == name:
                continue
            for channel in (0, 1):
                ops.append({"id": len(ops), "kind": "send", "peer": other, "bytes": 50_000 * (channel + 1),
                            "channel": channel, "deps": [0]})
                ops.append({"id": len(ops), "kind": "recv", "peer": other, "bytes": 50_000 * (channel + 1),
                            "channel": channel})
        ops.append({"id": len(ops), "kind": "compute", "ms": 0.0, "deps": list(range(1, len(ops)))})
        programs[name] = program(name, ports, ops, iterations=3, window=2)
    results = run(flows_for(programs), lead=0.8)
    ok(results)
    for result in results.values():
        assert result["bytes_sent"] == result["bytes_received"] == 3 * 5 * 150_000
        assert len(result["connections"]) == 20
        last = result["ops"] - 1
        for i in range(3):  # the join ends with the last of the iteration's transfers
            start, _first, end = row(result, i)
            assert start[last] == max(end[1:last]) and result["iteration_end"][i] == end[last]


def test_abort_before_the_instant_starts_nothing():
    ports = {"a": free_port(), "b": free_port()}
    flows = flows_for({"a": program("a", ports, [{"id": 0, "kind": "send", "peer": "b", "bytes": 10}]),
                       "b": program("b", ports, [{"id": 0, "kind": "recv", "peer": "a", "bytes": 10}])})

    def during(flows):
        while not all(f.result.get("armed_at") for f in flows.values()):
            time.sleep(0.01)
        flows["a"].abort("the rendezvous failed")

    results = run(flows, lead=1.5, during=during)
    assert results["a"]["status"] == "aborted" and results["a"]["error"] == "not started: the rendezvous failed"
    assert results["a"]["bytes_sent"] == 0 and results["a"]["sampled"] == []
    # b learns it at once (a shut its connection), not at its timeout
    assert results["b"]["status"] == "error"
    assert results["b"]["error"].startswith("a (channel 0) disappeared (it closed the connection) before iteration "
                                            "0 op 0 (recv from a channel 0, 10 bytes, tag '') arrived")


def test_arming_names_the_peer_whose_server_never_came_up():
    port = free_port()  # nobody listens there
    value = {"version": 1, "iterations": 1, "peers": {"w3": {"address": ADDR, "port": port}},
             "ops": [{"id": 0, "kind": "send", "peer": "w3", "bytes": 10}]}
    flow = ProgramFlow(value, TOKEN, "w1")
    try:
        assert flow.arm(time.time() + 0.3) is False
        assert flow.result["error"] == ("not armed by the deadline: no program server answered for w3 at "
                                        "127.0.0.1:%d (channel 0): Connection refused" % port)
        # the contract's keys, nothing measured
        assert flow.result["status"] == "error" and flow.result["sampled"] == [] and flow.result["t"] == {
            "start": [], "first": [], "end": []} and flow.result["iteration_end"] == []
        assert flow.fire(time.time())["error"].startswith("not armed")
    finally:
        flow.close()


# ------------------------------------------------------------------------------------------------- listen, detail
def test_listen_binds_the_given_address_only_and_names_a_taken_port():
    port = free_port()
    value = program("b", {"a": 1, "b": port}, [{"id": 0, "kind": "recv", "peer": "a", "bytes": 1}])
    listener = ProgramFlow.listen(value)
    try:
        assert listener.getsockname() == (ADDR, port)
        with pytest.raises(OSError) as caught:
            ProgramFlow.listen(value)
        assert caught.value.strerror == ("port %d on 127.0.0.1 is taken (another program server or process listens "
                                         "there); give program.listen another port or end that process" % port)
    finally:
        listener.close()
    assert ProgramFlow.listen({"version": 1, "iterations": 1, "ops": [{"id": 0, "kind": "compute", "ms": 1}]}) is None
    with pytest.raises(FlowError, match="would listen on every interface"):
        ProgramFlow.listen(dict(value, listen={"address": "0.0.0.0", "port": port}))


def test_sampled_detail_keeps_the_first_last_and_slowest_iterations():
    ops = [{"id": 0, "kind": "compute", "ms": 1.0}, {"id": 1, "kind": "compute", "ms": 0.0, "deps": [0]}]
    flow = ProgramFlow({"version": 1, "iterations": 40, "ops": ops}, TOKEN, "solo", full_detail_limit=79)
    result = run({"solo": flow})["solo"]
    ok({"solo": result})
    assert result["detail"] == "sampled"
    ends = result["iteration_end"]
    assert len(ends) == 40 and None not in ends
    took = [ends[0]] + [ends[i] - ends[i - 1] for i in range(1, 40)]
    sampled = result["sampled"]
    assert sampled == sorted(sampled) and len(result["t"]["start"]) == len(sampled)
    assert {0, 1, 2, 37, 38, 39} <= set(sampled)
    slow = [i for i in sampled if 2 < i < 37]
    assert len(slow) >= 10 - 3  # the slowest 10 of iterations 3..39, some may be among the last 3
    # no iteration left out was slower than the slowest kept ones (1 us: the rounding of the times)
    floor = sorted(took[i] for i in range(3, 40))[-10]
    assert all(took[i] <= floor + 2e-6 for i in range(3, 40) if i not in sampled)


def test_the_host_name_is_checked():
    with pytest.raises(FlowError, match="host: 'bad\\\\nname' has control characters"):
        ProgramFlow({"version": 1, "iterations": 1, "ops": [{"id": 0, "kind": "compute", "ms": 1}]}, TOKEN,
                    "bad\nname")


def test_the_hello_is_the_documented_bytes():
    """docs/jobs-host.md: magic, 16-byte proof, channel u16, name length u16, name (big-endian)."""
    proof = token_proof("t")
    assert len(proof) == 16
    assert HELLO_HEAD.pack(MAGIC, proof, 3, 2) + b"w1" == b"AFP1" + proof + struct.pack("!HH", 3, 2) + b"w1"
