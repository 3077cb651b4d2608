# -*- coding: utf-8 -*-
"""The job-program executor's loopback harness, shared by its transports' tests (test_flow_program.py: TCP,
test_flow_verbs.py: RDMA verbs): several hosts' flows (threads) over real loopback sockets, each with its own program
server; and, for the verbs transport, a fabric of queue pairs in memory (``FakeVerbs`` in place of pyverbs) that
keeps a reliable connection's rules: WRITEs WITH IMMEDIATE delivered in order, each taking one posted receive or
waiting for one (an RNR retry), the sender's completion after the receiver's."""
from __future__ import annotations

import os
import socket
import threading
import time

from ansible_collections.aifabric.lab.plugins.module_utils._flow import verbs as verbs_module
from ansible_collections.aifabric.lab.plugins.module_utils._flow.program import ProgramFlow
from ansible_collections.aifabric.lab.plugins.module_utils._flow.verbs import VerbsProgramFlow

ADDR = "127.0.0.1"
TOKEN = "run-token"


def free_port():
    with socket.socket() as s:
        s.bind((ADDR, 0))
        return s.getsockname()[1]


def program(name, ports, ops, iterations=1, window=1, **extra):
    """``name``'s program: its server on ports[name], every other host of ``ports`` a peer."""
    value = {"version": 1, "iterations": iterations, "window": window, "ops": ops,
             "peers": {p: {"address": ADDR, "port": port} for p, port in ports.items() if p != name}}
    if any(op["kind"] == "recv" for op in ops):
        value["listen"] = {"address": ADDR, "port": ports[name]}
    value.update(extra)
    return value


def flows_for(programs, **kw):
    return {name: ProgramFlow(prog, TOKEN, name, listener=ProgramFlow.listen(prog), **kw)
            for name, prog in programs.items()}


def run(flows, lead=0.5, during=None):
    """Arm every flow (each in its own thread, at once), fire all at one instant, return their results by host.
    ``during(flows)`` runs in the test's thread while they run."""
    at = time.time() + lead
    results, armed = {}, {}

    def host(name, flow):
        armed[name] = flow.arm(at - 0.05)
        results[name] = flow.fire(at) if armed[name] else flow.result

    threads = [threading.Thread(target=host, args=item, daemon=True) for item in flows.items()]
    for thread in threads:
        thread.start()
    try:
        if during is not None:
            during(flows)
        for thread in threads:
            thread.join(20)
        assert not any(t.is_alive() for t in threads), "a host's program did not end"
    finally:
        for flow in flows.values():
            flow.close()
    return results


def ok(results):
    bad = {name: r["error"] for name, r in results.items() if r["status"] != "ok"}
    assert not bad, bad


def row(result, i):
    """(start, first, end) of every op of iteration ``i``."""
    k = result["sampled"].index(i)
    return result["t"]["start"][k], result["t"]["first"][k], result["t"]["end"][k]


def times(result, i, j):
    start, first, end = row(result, i)
    return start[j], first[j], end[j]


def ring(n, steps, chunks, size):
    """Rank r: for each step s and chunk c, send chunk c to r+1 (after chunk c of step s-1 arrived from r-1) and
    receive chunk c from r-1. Returns (ops, {(s, c): (send id, recv id)})."""
    ops, ids = [], {}
    for s in range(steps):
        for c in range(chunks):
            send = {"id": len(ops), "kind": "send", "peer": None, "bytes": size, "tag": "s%d.c%d" % (s, c)}
            if s:
                send["deps"] = [ids[(s - 1, c)][1]]
            ops.append(send)
            ops.append({"id": len(ops), "kind": "recv", "peer": None, "bytes": size, "tag": "s%d.c%d" % (s, c)})
            ids[(s, c)] = (send["id"], send["id"] + 1)
    return ops, ids


# ------------------------------------------------------------------------------------------------- the verbs fabric
RECV_WITH_IMM, WRITE, SUCCESS, REM_ACCESS_ERR, RNR_RETRY_EXC_ERR = 129, 1, 0, 10, 13
MTU_1024, MTU_4096 = 3, 5
GID = bytes(10) + b"\xff\xff" + bytes([127, 0, 0, 1])  # ::ffff:127.0.0.1, every host's


class Fabric:
    """Queue pairs by number, shared by every host's ``FakeVerbs``; one lock for all."""

    def __init__(self):
        self.lock = threading.Lock()
        self.qps = {}
        self.next_qpn = 17
        self.fail_after = None  # fail the message after the n-th (a remote access error)
        self.rnr_after = None  # the message after the n-th finds its receiver not ready, for good (RNR retries out)
        self.fail_recv_after = None  # fail the receive of the n-th piece (an error completion's opcode is undefined)
        self.delivered = 0
        self.writes = 0


class _QP:
    def __init__(self, verbs, qpn, send_wr, recv_wr):
        self.verbs, self.qp_num, self.send_wr, self.recv_wr = verbs, qpn, send_wr, recv_wr
        self.remote = None
        self.path_mtu = None
        self.recvs = []  # posted receive wr_ids
        self.waiting = []  # WRITEs WITH IMMEDIATE waiting for a receive (an RNR retry, in order)
        self.state = "RESET"


class FakeVerbs:
    """``verbs.Pyverbs``'s methods over ``Fabric``: completions in a list, the completion channel a pipe that gets a
    byte when a completion arrives on an armed queue. ``mtu``: the port's active MTU (the verbs enum)."""

    def __init__(self, fabric, mtu=MTU_1024):
        self.fabric, self.mtu = fabric, mtu
        self.fd = -1
        self.cq = []
        self.armed = False
        self.recv_size = self.send_size = 0
        self.closed = False
        self.qps = []
        self.writes = []  # (qpn, wr_id, nbytes, pieces, number): what was posted, for the tests
        self.received = []  # (bytes, immediate) of every piece this host's queue pairs received
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
        self.qps.append(qp)
        return qp

    def local(self, qp, psn, address):
        assert address == ADDR  # the connection's local address: the GID is the one that holds it
        return qp.qp_num, psn, 0, GID, self.mtu

    def connect(self, qp, psn, remote_qpn, remote_psn, remote_lid, remote_gid, remote_mtu, address):
        assert qp.state == "RESET" and remote_gid == GID and address == ADDR
        qp.remote, qp.state, qp.path_mtu = remote_qpn, "RTS", min(self.mtu, remote_mtu)

    def _complete(self, wc):  # under the fabric's lock
        self.cq.append(wc)
        if self.armed:
            self.armed = False
            os.write(self._w, b"!")

    def post_write(self, qp, wr_id, nbytes, addr, rkey, size, number):
        assert qp.state == "RTS" and rkey == 0xABC and addr == 0x10000
        pieces = list(verbs_module.write_pieces(nbytes, min(self.send_size, size), number))
        fabric = self.fabric
        with fabric.lock:
            self.writes.append((qp.qp_num, wr_id, nbytes, len(pieces), number))
            peer = fabric.qps[qp.remote]
            fabric.writes += 1
            if fabric.fail_after is not None and fabric.writes > fabric.fail_after:
                self._complete((wr_id, REM_ACCESS_ERR, WRITE, 0, 0, qp.qp_num))
                return
            if fabric.rnr_after is not None and fabric.writes > fabric.rnr_after:
                self._complete((wr_id, RNR_RETRY_EXC_ERR, WRITE, 0, 0, qp.qp_num))
                return
            for k, (n, imm) in enumerate(pieces):
                peer.waiting.append((self, qp, wr_id, n, imm, k == len(pieces) - 1))  # only the last is signaled
            self._deliver(peer)

    @staticmethod
    def _deliver(peer):  # under the lock: in order, one receive each
        while peer.waiting and peer.recvs:
            sender, qp, wr_id, n, imm, signaled = peer.waiting.pop(0)
            recv_id = peer.recvs.pop(0)
            fabric = sender.fabric
            fabric.delivered += 1
            if fabric.fail_recv_after is not None and fabric.delivered > fabric.fail_recv_after:
                peer.verbs._complete((recv_id, REM_ACCESS_ERR, 0, 0, 0, peer.qp_num))
            else:
                peer.verbs.received.append((n, imm))
                peer.verbs._complete((recv_id, SUCCESS, RECV_WITH_IMM, n, imm, peer.qp_num))
            if signaled:
                sender._complete((wr_id, SUCCESS, WRITE, 0, 0, qp.qp_num))

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

    def rnr(self, status):
        return status == RNR_RETRY_EXC_ERR

    def status_text(self, status):
        return {REM_ACCESS_ERR: "remote access error (10)",
                RNR_RETRY_EXC_ERR: "RNR retry counter exceeded (13)"}.get(status, "status %d" % status)

    def describe(self):
        return {"device": "fake0", "ib_port": 1, "gid_index": 1, "path_mtu": 1024, "qp_timeout": 14}

    def close(self):
        if not self.closed and self.fd >= 0:
            os.close(self._r)
            os.close(self._w)
        self.closed = True


def verbs_flows(programs, fabric=None, mtus=None):
    """A VerbsProgramFlow per program over one ``Fabric`` (``mtus``: a host's port MTU, by name)."""
    fabric = fabric or Fabric()
    flows = {name: VerbsProgramFlow(prog, TOKEN, name, listener=VerbsProgramFlow.listen(prog),
                                    verbs=FakeVerbs(fabric, (mtus or {}).get(name, MTU_1024)))
             for name, prog in programs.items()}
    return flows, fabric


def _verbs_flows_only(programs):
    return verbs_flows(programs)[0]


# the transports a test of the executor's scheduling runs on: name -> flows for {host: program}
TRANSPORTS = {"tcp": flows_for, "verbs": _verbs_flows_only}
