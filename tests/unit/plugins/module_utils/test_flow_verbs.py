# -*- coding: utf-8 -*-
"""The verbs transport of the job-program executor (``_flow/verbs.py``) in one process: several hosts'
VerbsProgramFlows (threads) over real loopback TCP for the hello and the queue pairs' exchange, and a fabric of
queue pairs in memory that keeps a reliable connection's rules (WRITEs delivered in order, a WRITE WITH IMMEDIATE
takes one posted receive or waits for one, the sender's completion after the receiver's). The data path on a real
kernel (soft-RoCE) is the VM lab's test (tests/vmlab/run.sh). What is checked is the order of the recorded events
and the protocol, never a duration or a rate."""
from __future__ import annotations

import importlib.util
import os
import threading
import time

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._flow import verbs as verbs_module
from ansible_collections.aifabric.lab.plugins.module_utils._flow.verbs import (
    MAX_BUFFER,
    VINFO,
    VREPLY,
    VerbsProgramFlow,
    find_gid_index,
)

# the loopback harness of the TCP transport's tests (the same programs, threads and checks)
_spec = importlib.util.spec_from_file_location(
    "_flow_program_harness", os.path.join(os.path.dirname(__file__), "test_flow_program.py"))
_harness = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_harness)
TOKEN, free_port, program, run, ok, times, ring = (_harness.TOKEN, _harness.free_port, _harness.program,
                                                   _harness.run, _harness.ok, _harness.times, _harness.ring)

RECV_WITH_IMM, WRITE, SUCCESS, REM_ACCESS_ERR = 129, 1, 0, 10


class Fabric:
    """Queue pairs by number, shared by every host's ``FakeVerbs``; one lock for all."""

    def __init__(self):
        self.lock = threading.Lock()
        self.qps = {}
        self.next_qpn = 17
        self.fail_after = None  # fail the n-th WRITE WITH IMMEDIATE (a remote access error)
        self.fail_recv_after = None  # fail the receive of the n-th (an error completion's opcode is undefined: 0)
        self.delivered = 0
        self.writes = 0


class _QP:
    def __init__(self, verbs, qpn, send_wr, recv_wr):
        self.verbs, self.qp_num, self.send_wr, self.recv_wr = verbs, qpn, send_wr, recv_wr
        self.remote = None
        self.recvs = []  # posted receive wr_ids
        self.waiting = []  # WRITEs WITH IMMEDIATE waiting for a receive (an RNR retry, in order)
        self.state = "RESET"


class FakeVerbs:
    """``verbs.Pyverbs``'s methods over ``Fabric``: completions in a list, the completion channel a pipe that gets a
    byte when a completion arrives on an armed queue."""

    def __init__(self, fabric):
        self.fabric = fabric
        self.fd = -1
        self.cq = []
        self.armed = False
        self.recv_size = self.send_size = 0
        self.closed = False
        self.writes = []  # (qpn, wr_id, nbytes, pieces, imm): what was posted, for the tests
        self.events_read = 0

    def open(self, send_bytes, recv_bytes, cq_entries):
        self._r, self._w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.fd = self._r
        self.send_size, self.recv_size = max(1, send_bytes), max(1, recv_bytes)
        self.cq_entries = cq_entries
        self.armed = True

    def receive_buffer(self):
        return 0x10000, 0xABC, self.recv_size

    def create_qp(self, send_wr, recv_wr):
        with self.fabric.lock:
            qp = _QP(self, self.fabric.next_qpn, send_wr, recv_wr)
            self.fabric.qps[qp.qp_num] = qp
            self.fabric.next_qpn += 1
        return qp

    def local(self, qp, psn, address):
        assert address == "127.0.0.1"  # the connection's local address: the GID is the one that holds it
        return qp.qp_num, psn, 0, bytes(10) + b"\xff\xff" + bytes([127, 0, 0, 1])

    def connect(self, qp, psn, remote_qpn, remote_psn, remote_lid, remote_gid, address):
        assert qp.state == "RESET" and remote_gid == bytes(10) + b"\xff\xff" + bytes([127, 0, 0, 1])
        qp.remote, qp.state = remote_qpn, "RTS"

    def _complete(self, wc):  # under the fabric's lock
        self.cq.append(wc)
        if self.armed:
            self.armed = False
            os.write(self._w, b"!")

    def post_write(self, qp, wr_id, nbytes, addr, rkey, size, imm):
        assert qp.state == "RTS" and rkey == 0xABC and addr == 0x10000
        piece = max(1, min(self.send_size, size))
        pieces = max(1, -(-nbytes // piece))
        last = nbytes - (pieces - 1) * piece
        with self.fabric.lock:
            self.writes.append((qp.qp_num, wr_id, nbytes, pieces, imm))
            peer = self.fabric.qps[qp.remote]
            self.fabric.writes += 1
            if self.fabric.fail_after is not None and self.fabric.writes > self.fabric.fail_after:
                self._complete((wr_id, REM_ACCESS_ERR, WRITE, 0, 0, qp.qp_num))
                return
            peer.waiting.append((self, qp, wr_id, last, imm))
            self._deliver(peer)

    @staticmethod
    def _deliver(peer):  # under the lock: in order, one receive each
        while peer.waiting and peer.recvs:
            sender, qp, wr_id, last, imm = peer.waiting.pop(0)
            recv_id = peer.recvs.pop(0)
            fabric = sender.fabric
            fabric.delivered += 1
            if fabric.fail_recv_after is not None and fabric.delivered > fabric.fail_recv_after:
                peer.verbs._complete((recv_id, REM_ACCESS_ERR, 0, 0, 0, peer.qp_num))
            else:
                peer.verbs._complete((recv_id, SUCCESS, RECV_WITH_IMM, last, imm, peer.qp_num))
            sender._complete((wr_id | verbs_module.LAST, SUCCESS, WRITE, 0, 0, qp.qp_num))

    def post_recv(self, qp, wr_id, count):
        with self.fabric.lock:
            assert len(qp.recvs) + count <= qp.recv_wr, "more receives posted than the queue pair holds"
            qp.recvs.extend([wr_id] * count)
            self._deliver(qp)

    def events(self):
        os.read(self._r, 64)
        self.events_read += 1
        with self.fabric.lock:
            self.armed = True
            if self.cq:  # a completion between the read and the re-arm: the channel says so again
                self.armed = False
                os.write(self._w, b"!")

    def poll(self, count=64):
        with self.fabric.lock:
            out, self.cq = self.cq[:count], self.cq[count:]
        return out

    def is_recv(self, opcode):
        return opcode == RECV_WITH_IMM

    def ok(self, status):
        return status == SUCCESS

    def status_text(self, status):
        return "remote access error (%d)" % status if status == REM_ACCESS_ERR else "status %d" % status

    def describe(self):
        return {"device": "fake0", "ib_port": 1, "gid_index": 1, "path_mtu": 1024, "qp_timeout": 14}

    def close(self):
        if not self.closed and self.fd >= 0:
            os.close(self._r)
            os.close(self._w)
        self.closed = True


def verbs_flows(programs, fabric=None):
    fabric = fabric or Fabric()
    flows = {name: VerbsProgramFlow(prog, TOKEN, name, listener=VerbsProgramFlow.listen(prog),
                                    verbs=FakeVerbs(fabric)) for name, prog in programs.items()}
    return flows, fabric


def test_two_hosts_send_and_receive_over_queue_pairs():
    ports = {"a": free_port(), "b": free_port()}
    sizes = [1, 100_000, 3_000_000]
    a = [{"id": k, "kind": "send", "peer": "b", "bytes": size, "tag": "m%d" % k} for k, size in enumerate(sizes)]
    a.append({"id": 3, "kind": "recv", "peer": "b", "bytes": 10, "deps": [2]})
    b = [{"id": k, "kind": "recv", "peer": "a", "bytes": size} for k, size in enumerate(sizes)]
    b.append({"id": 3, "kind": "send", "peer": "a", "bytes": 10, "deps": [2]})
    flows, _fabric = verbs_flows({"a": program("a", ports, a, iterations=2, window=2),
                                  "b": program("b", ports, b, iterations=2)})
    verbs = {name: flow.verbs for name, flow in flows.items()}
    results = run(flows)
    ok(results)
    ra, rb = results["a"], results["b"]
    total = 2 * sum(sizes)
    assert ra["bytes_sent"] == rb["bytes_received"] == total and rb["bytes_sent"] == ra["bytes_received"] == 20
    assert ra["transport"] == rb["transport"] == "verbs" and ra["verbs"]["device"] == "fake0"
    # one WRITE WITH IMMEDIATE a message, numbered on its connection; the buffers as large as the largest message
    assert [(n, pieces, imm) for _q, _w, n, pieces, imm in verbs["a"].writes] == [
        (size, 1, k) for k, size in enumerate(sizes * 2)]
    assert verbs["a"].send_size == 3_000_000 and verbs["b"].recv_size == 3_000_000
    for i in (0, 1):
        for j in range(3):
            start, first, end = times(ra, i, j)
            assert start == first <= end  # posted whole at its start; ended by its completion
        assert times(rb, i, 3)[0] == times(rb, i, 2)[2]  # b's send waits for its recv op 2
    assert times(ra, 1, 0)[0] >= ra["iteration_end"][0]
    assert sorted((c["peer"], c["direction"], c["messages"], c["bytes"], c["retransmits"])
                  for c in ra["connections"]) == [("b", "recv", 2, 20, None), ("b", "send", 6, total, None)]
    # the loop slept on the completion channel: it was woken, never polled blindly
    assert verbs["a"].events_read > 0 and verbs["b"].events_read > 0
    assert all(v.closed for v in verbs.values())


@pytest.mark.parametrize("window", [1, 2])
def test_a_ring_keeps_fifo_window_and_deps_over_queue_pairs(window):
    n, steps, chunks, size, iterations = 3, 2, 3, 200_000, 3
    names = ["r%d" % r for r in range(n)]
    ports = {name: free_port() for name in names}
    programs = {}
    for r, name in enumerate(names):
        ops, ids = ring(n, steps, chunks, size)
        for op in ops:
            op["peer"] = names[(r + 1) % n] if op["kind"] == "send" else names[(r - 1) % n]
        programs[name] = program(name, ports, ops, iterations=iterations, window=window)
    flows, _fabric = verbs_flows(programs)
    results = run(flows)
    ok(results)
    sends = [ids[(s, c)][0] for s in range(steps) for c in range(chunks)]
    for name, result in results.items():
        assert result["bytes_sent"] == result["bytes_received"] == iterations * steps * chunks * size
        seq = [times(result, i, j) for i in range(iterations) for j in sends]
        for k in range(1, len(seq)):
            assert seq[k][0] >= seq[k - 1][0], (name, k)  # FIFO
        for k in range(window, len(seq)):
            assert seq[k][0] >= seq[k - window][2], (name, k)  # at most `window` not completed
        for i in range(iterations):
            for s in range(1, steps):
                for c in range(chunks):
                    assert times(result, i, ids[(s, c)][0])[0] >= times(result, i, ids[(s - 1, c)][1])[2]


def test_a_message_larger_than_the_buffers_is_several_writes_the_last_one_numbered(monkeypatch):
    monkeypatch.setattr(verbs_module, "MAX_BUFFER", 1000)
    ports = {"a": free_port(), "b": free_port()}
    a = [{"id": 0, "kind": "send", "peer": "b", "bytes": 2500}, {"id": 1, "kind": "send", "peer": "b", "bytes": 10}]
    b = [{"id": 0, "kind": "recv", "peer": "a", "bytes": 2500}, {"id": 1, "kind": "recv", "peer": "a", "bytes": 10}]
    flows, _fabric = verbs_flows({"a": program("a", ports, a), "b": program("b", ports, b)})
    writer = flows["a"].verbs
    ok(run(flows))
    # 2500 bytes: WRITEs of 1000, 1000 and 500, the last with the immediate (the receiver checks its 500)
    assert [(n, pieces, imm) for _q, _w, n, pieces, imm in writer.writes] == [(2500, 3, 0), (10, 1, 1)]
    assert writer.send_size == 1000 and MAX_BUFFER == 64 * 1024 * 1024


def test_a_failed_completion_fails_the_program_naming_the_connection_and_the_status():
    ports = {"a": free_port(), "b": free_port()}
    a = [{"id": 0, "kind": "send", "peer": "b", "bytes": 1000}]
    b = [{"id": 0, "kind": "recv", "peer": "a", "bytes": 1000}]
    flows, fabric = verbs_flows({"a": program("a", ports, a, iterations=3, timeout=5),
                                 "b": program("b", ports, b, iterations=3, timeout=5)})
    fabric.fail_after = 1
    results = run(flows)
    assert results["a"]["status"] == "error"
    assert results["a"]["error"] == ("the RDMA WRITE on b (channel 0, verbs) failed: remote access error (10) (the "
                                     "adapter's completion status; the queue pair is in error now)")
    # b got the first message; the second never came: its program ends (its peer closed without its goodbye)
    assert results["b"]["status"] in ("error", "timeout") and results["b"]["bytes_received"] == 1000


def test_a_message_that_does_not_match_the_program_fails_naming_both():
    ports = {"a": free_port(), "b": free_port()}
    a = [{"id": 0, "kind": "send", "peer": "b", "bytes": 1000}]
    b = [{"id": 0, "kind": "recv", "peer": "a", "bytes": 999}]
    flows, _fabric = verbs_flows({"a": program("a", ports, a, timeout=5), "b": program("b", ports, b, timeout=5)})
    results = run(flows)
    assert results["b"]["status"] == "error"
    assert results["b"]["error"].startswith(
        "the message from a (channel 0, verbs) does not match: this host's iteration 0 op 0 (recv from a channel 0, "
        "999 bytes, tag '') expected message number 0 with a last WRITE of 999 bytes, and message number 0 came with a "
        "last WRITE of 1 bytes")  # 1000 bytes into b's buffer of 999: WRITEs of 999 and 1


def test_a_tcp_program_is_not_a_verbs_peer():
    """A verbs sender whose peer runs the TCP transport: the exchange's answer is not ``AFV1``; it is said so."""
    ports = {"a": free_port(), "b": free_port()}
    pa = program("a", ports, [{"id": 0, "kind": "send", "peer": "b", "bytes": 10}])
    pb = program("b", ports, [{"id": 0, "kind": "recv", "peer": "a", "bytes": 10}], timeout=3)
    flows = {"a": VerbsProgramFlow(pa, TOKEN, "a", verbs=FakeVerbs(Fabric())),
             "b": _harness.ProgramFlow(pb, TOKEN, "b", listener=_harness.ProgramFlow.listen(pb))}
    results = run(flows, lead=2.0)
    assert results["a"]["status"] == "error"
    assert "queue pair" in results["a"]["error"] or "not armed" in results["a"]["error"], results["a"]["error"]


def test_the_exchange_is_the_documented_bytes():
    assert VINFO.size == 4 + 4 + 4 + 2 + 16 and VREPLY.size == VINFO.size + 8 + 4 + 8
    assert VINFO.pack(b"AFV1", 1, 2, 3, bytes(16))[:4] == b"AFV1"


def test_the_gid_of_the_listen_address_is_found_in_a_soft_roce_sysfs_tree(tmp_path):
    """rxe0's port 1 as the VM lab's guest shows it: GID 0 the link-local IPv6 (RoCE v1 and v2 pairs), GID 1 the
    IPv4-mapped lab address as RoCE v2."""
    base = tmp_path / "rxe0" / "ports" / "1"
    (base / "gids").mkdir(parents=True)
    (base / "gid_attrs" / "types").mkdir(parents=True)
    rows = [("fe80:0000:0000:0000:5054:00ff:fe12:3401", "RoCE v2"),
            ("0000:0000:0000:0000:0000:ffff:c612:6401", "RoCE v2"),
            ("0000:0000:0000:0000:0000:ffff:c612:6401", "IB/RoCE v1")]
    for k, (gid, kind) in enumerate(rows):
        (base / "gids" / str(k)).write_text(gid + "\n")
        (base / "gid_attrs" / "types" / str(k)).write_text(kind + "\n")
    (base / "gids" / "3").write_text("0000:0000:0000:0000:0000:0000:0000:0000\n")
    assert find_gid_index("rxe0", 1, "198.18.100.1", sysfs=str(tmp_path)) == 1
    assert find_gid_index("rxe0", 1, "198.18.100.9", sysfs=str(tmp_path)) is None
    assert find_gid_index("mlx5_0", 1, "198.18.100.1", sysfs=str(tmp_path)) is None


def test_without_pyverbs_the_engine_says_how_to_get_it(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_pyverbs(name, *args, **kwargs):
        if name.startswith("pyverbs"):
            raise ImportError("No module named 'pyverbs'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyverbs)
    with pytest.raises(verbs_module.VerbsError, match="the verbs engine needs pyverbs in the host's Python .*apt "
                                                      "install python3-pyverbs"):
        verbs_module.Pyverbs("rxe0")


def test_a_device_that_cannot_be_opened_leaves_the_program_not_armed_saying_why():
    class NoDevice(FakeVerbs):
        def open(self, send_bytes, recv_bytes, cq_entries):
            raise verbs_module.VerbsError("opening the device (is it there: rdma link show) on rxe9 port 1: No such "
                                          "device")

    ports = {"a": free_port(), "b": free_port()}
    pa = program("a", ports, [{"id": 0, "kind": "send", "peer": "b", "bytes": 10}])
    flow = VerbsProgramFlow(pa, TOKEN, "a", verbs=NoDevice(Fabric()))
    try:
        assert flow.arm(time.time() + 2) is False
    finally:
        flow.close()
    assert flow.result["error"] == ("not armed: opening the device (is it there: rdma link show) on rxe9 port 1: No "
                                    "such device") and flow.result["status"] == "error"


def test_a_failed_receive_is_named_by_its_queue_pair_not_its_opcode():
    """An error completion's opcode is undefined (rxe says 0, a send's): the receive is known by its queue pair."""
    ports = {"a": free_port(), "b": free_port()}
    a = [{"id": 0, "kind": "send", "peer": "b", "bytes": 1000}]
    b = [{"id": 0, "kind": "recv", "peer": "a", "bytes": 1000}]
    flows, fabric = verbs_flows({"a": program("a", ports, a, iterations=2, timeout=5),
                                 "b": program("b", ports, b, iterations=2, timeout=5)})
    fabric.fail_recv_after = 1
    results = run(flows)
    assert results["b"]["status"] == "error" and results["b"]["bytes_received"] == 1000
    assert results["b"]["error"] == ("the receive on a (channel 0, verbs) failed: remote access error (10) (the "
                                     "adapter's completion status; the queue pair is in error now)")
