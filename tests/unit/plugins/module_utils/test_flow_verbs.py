# -*- coding: utf-8 -*-
"""The verbs transport of the job-program executor (``_flow/verbs.py``) in one process: several hosts'
VerbsProgramFlows (threads) over real loopback TCP for the hello and the queue pairs' exchange, and a fabric of
queue pairs in memory (flow_harness.FakeVerbs) that keeps a reliable connection's rules; and ``Pyverbs`` itself over
stand-ins of pyverbs' modules (what it asks of the adapter). The data path on a real kernel (soft-RoCE) is the VM
lab's test (tests/vmlab/run.sh). What is checked is the order of the recorded events and the protocol, never a
duration or a rate. The ring that the TCP transport's tests run runs here too (test_flow_program.py, per
transport)."""
from __future__ import annotations

import socket
import sys
import threading
import time
import types

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._flow import verbs as verbs_module
from ansible_collections.aifabric.lab.plugins.module_utils._flow.program import (
    HELLO_HEAD,
    MAGIC,
    ProgramFlow,
    token_proof,
)
from ansible_collections.aifabric.lab.plugins.module_utils._flow.verbs import (
    BYE,
    IMM_LAST,
    MAX_BUFFER,
    VINFO,
    VREPLY,
    VerbsProgramFlow,
    find_gid_index,
)
from flow_harness import (
    ADDR,
    GID,
    MTU_1024,
    MTU_4096,
    TOKEN,
    Fabric,
    FakeVerbs,
    free_port,
    ok,
    program,
    run,
    times,
    verbs_flows,
)


def hello(name, channel=0):
    """A program connection's hello, as a sender with the run's token writes it."""
    raw = name.encode("utf-8")
    return HELLO_HEAD.pack(MAGIC, token_proof(TOKEN), channel, len(raw)) + raw


def recv_exactly(sock, size):
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, "the connection closed after %d of %d bytes" % (len(data), size)
        data += chunk
    return data


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
    assert [(n, pieces, number) for _q, _w, n, pieces, number in verbs["a"].writes] == [
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


def test_a_message_larger_than_the_buffers_is_several_writes_each_numbered_the_last_one_flagged(monkeypatch):
    monkeypatch.setattr(verbs_module, "MAX_BUFFER", 1000)
    ports = {"a": free_port(), "b": free_port()}
    a = [{"id": 0, "kind": "send", "peer": "b", "bytes": 2500}, {"id": 1, "kind": "send", "peer": "b", "bytes": 10}]
    b = [{"id": 0, "kind": "recv", "peer": "a", "bytes": 2500}, {"id": 1, "kind": "recv", "peer": "a", "bytes": 10}]
    flows, _fabric = verbs_flows({"a": program("a", ports, a), "b": program("b", ports, b)})
    writer, reader = flows["a"].verbs, flows["b"].verbs
    ok(run(flows))
    # 2500 bytes: WRITEs WITH IMMEDIATE of 1000, 1000 and 500, each with the message's number, the last flagged
    assert [(n, pieces, number) for _q, _w, n, pieces, number in writer.writes] == [(2500, 3, 0), (10, 1, 1)]
    assert reader.received == [(1000, 0), (1000, 0), (500, IMM_LAST | 0), (10, IMM_LAST | 1)]
    assert writer.send_size == 1000 and MAX_BUFFER == 64 * 1024 * 1024


@pytest.mark.parametrize("sent, expected, came", [
    (2000, 1000, "2000 bytes"),  # two pieces of b's buffer: the last one as long as the message b expects
    (1500, 2500, "1500 bytes"),  # 1000 + 500, where b expects 1000 + 1000 + 500
])
def test_a_message_of_another_length_fails_even_when_its_last_piece_matches(monkeypatch, sent, expected, came):
    """The receiver checks a message's whole length, not its last piece's (a length congruent to the expected one
    modulo the receive buffer)."""
    monkeypatch.setattr(verbs_module, "MAX_BUFFER", 1000)
    ports = {"a": free_port(), "b": free_port()}
    a = [{"id": 0, "kind": "send", "peer": "b", "bytes": sent}]
    b = [{"id": 0, "kind": "recv", "peer": "a", "bytes": expected}]
    flows, _fabric = verbs_flows({"a": program("a", ports, a, timeout=5), "b": program("b", ports, b, timeout=5)})
    results = run(flows)
    assert results["b"]["status"] == "error" and results["b"]["bytes_received"] == 0
    assert results["b"]["error"] == (
        "the message from a (channel 0, verbs) does not match: this host's iteration 0 op 0 (recv from a channel 0, "
        "%d bytes, tag '') expected message number 0 of %d bytes, and message number 0 came with %s; the k-th send "
        "of a to this host on channel 0 must be the k-th recv here, with the same bytes" % (expected, expected, came))


def test_a_message_that_does_not_match_the_program_fails_naming_both():
    ports = {"a": free_port(), "b": free_port()}
    a = [{"id": 0, "kind": "send", "peer": "b", "bytes": 1000}]
    b = [{"id": 0, "kind": "recv", "peer": "a", "bytes": 999}]
    flows, _fabric = verbs_flows({"a": program("a", ports, a, timeout=5), "b": program("b", ports, b, timeout=5)})
    results = run(flows)
    assert results["b"]["status"] == "error"
    assert results["b"]["error"].startswith(
        "the message from a (channel 0, verbs) does not match: this host's iteration 0 op 0 (recv from a channel 0, "
        "999 bytes, tag '') expected message number 0 of 999 bytes, and message number 0 came with 1000 bytes; ")
    # 1000 bytes into b's buffer of 999: WRITEs of 999 and 1


@pytest.mark.parametrize("sent, expected, error", [
    (1, 2, "peer a (channel 0, verbs) said BY after 1 messages, the program expects 2"),
    (2, 1, "a (channel 0, verbs) wrote a message (number 1) after the last recv this host's program expects from it "
           "on that connection"),
])
def test_a_sender_with_fewer_or_more_messages_than_the_receiver_expects_fails_the_receiver(sent, expected, error):
    """a's BY says how many messages it sent; b ends only once it has read it, so neither a message too many nor
    one too few goes unseen. a's messages are 100 ms apart: the one too many comes after b's ops all ended."""
    ports = {"a": free_port(), "b": free_port()}
    a = [{"id": 0, "kind": "send", "peer": "b", "bytes": 100}]
    for _k in range(1, sent):
        a.append({"id": len(a), "kind": "compute", "ms": 100.0, "deps": [len(a) - 1]})
        a.append({"id": len(a), "kind": "send", "peer": "b", "bytes": 100, "deps": [len(a) - 1]})
    b = [{"id": k, "kind": "recv", "peer": "a", "bytes": 100} for k in range(expected)]
    flows, _fabric = verbs_flows({"a": program("a", ports, a, timeout=5), "b": program("b", ports, b, timeout=5)})
    results = run(flows)
    assert results["a"]["status"] == "ok"  # a sent its program's messages, all acknowledged
    assert (results["b"]["status"], results["b"]["error"]) == ("error", error)


def test_a_by_that_counts_more_messages_than_the_program_expects_fails_naming_the_peer():
    """A sender (the test, by hand) that sent nothing and says BY after 5 messages, where b expects 1."""
    ports = {"a": free_port(), "b": free_port()}
    pb = program("b", ports, [{"id": 0, "kind": "recv", "peer": "a", "bytes": 10}], timeout=5)
    fabric = Fabric()
    flow = VerbsProgramFlow(pb, TOKEN, "b", listener=VerbsProgramFlow.listen(pb), verbs=FakeVerbs(fabric))
    qp = FakeVerbs(fabric).create_qp(2, 1)
    seen = {}

    def sender(_flows):
        with socket.create_connection((ADDR, ports["b"]), timeout=10) as sock:
            sock.sendall(hello("a"))
            seen["admitted"] = recv_exactly(sock, 2)
            sock.sendall(VINFO.pack(b"AFV2", qp.qp_num, 1, 0, GID, MTU_1024))
            seen["reply"] = VREPLY.unpack(recv_exactly(sock, VREPLY.size))
            sock.sendall(BYE.pack(b"BY", 5))
            seen["end"] = sock.recv(1)  # b shuts its connections when its program fails

    result = run({"b": flow}, during=sender)["b"]
    assert seen["admitted"] == b"OK" and seen["reply"][0] == b"AFV2" and seen["end"] == b""
    assert (result["status"], result["error"]) == (
        "error", "peer a (channel 0, verbs) said BY after 5 messages, the program expects 1")


@pytest.mark.parametrize("failure", ["write", "rnr", "receive"])
def test_a_failed_completion_fails_the_program_naming_the_connection_and_the_status(failure):
    """The second of a's two messages fails: its WRITE (a remote access error), its RNR retries (b never had a
    receive for it), or b's receive (whose error completion's opcode is undefined: the receive is known by its queue
    pair). The failing side names the connection and the status; its peer, what it was waiting for."""
    ports = {"a": free_port(), "b": free_port()}
    a = [{"id": 0, "kind": "send", "peer": "b", "bytes": 1000}]
    b = [{"id": 0, "kind": "recv", "peer": "a", "bytes": 1000}]
    flows, fabric = verbs_flows({"a": program("a", ports, a, iterations=2, timeout=5),
                                 "b": program("b", ports, b, iterations=2, timeout=5)})
    setattr(fabric, {"write": "fail_after", "rnr": "rnr_after", "receive": "fail_recv_after"}[failure], 1)
    results = run(flows)
    status = "the adapter's completion status; the queue pair is in error now"
    # a shut its connections when it failed: b learns it at once
    gone = ("a (channel 0, verbs) disappeared (it closed the connection) before iteration 1 op 0 (recv from a "
            "channel 0, 1000 bytes, tag '') arrived")
    expected = {
        "write": ("the RDMA WRITE on b (channel 0, verbs) failed: remote access error (10) (%s)" % status, gone),
        "rnr": ("receiver not ready: b (channel 0, verbs) had no receive posted for iteration 1 op 0 (send to b "
                "channel 0, 1000 bytes, tag '') through 6 RNR retries 40.96 ms apart (RNR retry counter exceeded "
                "(13)): its program's loop fell further behind the messages than its receive queue holds", gone),
        "receive": (None, "the receive on a (channel 0, verbs) failed: remote access error (10) (%s)" % status),
    }[failure]
    assert (results["a"]["error"], results["b"]["error"]) == expected
    assert results["a"]["status"] == ("ok" if failure == "receive" else "error") and results["b"]["status"] == "error"
    assert results["b"]["bytes_received"] == 1000  # the first message


def test_the_path_mtu_is_the_smaller_of_the_two_ports():
    """Each end's VINFO or VREPLY carries its port's active MTU: both queue pairs of a connection get the smaller."""
    ports = {"a": free_port(), "b": free_port()}
    a = [{"id": 0, "kind": "send", "peer": "b", "bytes": 10}, {"id": 1, "kind": "recv", "peer": "b", "bytes": 10}]
    b = [{"id": 0, "kind": "recv", "peer": "a", "bytes": 10}, {"id": 1, "kind": "send", "peer": "a", "bytes": 10}]
    flows, _fabric = verbs_flows({"a": program("a", ports, a), "b": program("b", ports, b)},
                                 mtus={"a": MTU_4096, "b": MTU_1024})
    verbs = [flows["a"].verbs, flows["b"].verbs]
    ok(run(flows))
    assert [[qp.path_mtu for qp in v.qps] for v in verbs] == [[MTU_1024, MTU_1024], [MTU_1024, MTU_1024]]


def test_a_second_connection_during_the_queue_pairs_exchange_is_refused():
    """b admitted a's connection and waits for its VINFO: another connection that says it is a, for the same
    channel, is refused (and recorded), not admitted beside it."""
    ports = {"a": free_port(), "b": free_port()}
    pb = program("b", ports, [{"id": 0, "kind": "recv", "peer": "a", "bytes": 10}])
    flow = VerbsProgramFlow(pb, TOKEN, "b", listener=VerbsProgramFlow.listen(pb), verbs=FakeVerbs(Fabric()))
    answers = {}

    def peers():
        try:
            with socket.create_connection((ADDR, ports["b"]), timeout=10) as first:
                first.sendall(hello("a"))
                answers["first"] = recv_exactly(first, 2)
                with socket.create_connection((ADDR, ports["b"]), timeout=10) as second:
                    second.sendall(hello("a"))
                    answers["second"] = second.recv(300)
        finally:
            flow.abort("the test is done")

    thread = threading.Thread(target=peers, daemon=True)
    thread.start()
    try:
        assert flow.arm(time.time() + 10) is False
    finally:
        thread.join(10)
        flow.close()
    reason = "a second connection from a for channel 0"
    assert answers == {"first": b"OK", "second": b"NO" + bytes([len(reason)]) + reason.encode()}
    assert flow.result["refused"] == [{"peer": ADDR, "reason": reason, "name": "a", "channel": 0}]
    assert flow.result["error"] == "not armed: the test is done"


def test_a_tcp_program_is_not_a_verbs_peer():
    """A verbs sender whose peer runs the TCP transport: the peer admits the connection and never answers the
    queue pairs' exchange; the sender names it. The TCP peer reads the exchange as a message header, which does not
    match its program."""
    ports = {"a": free_port(), "b": free_port()}
    pa = program("a", ports, [{"id": 0, "kind": "send", "peer": "b", "bytes": 10}])
    pb = program("b", ports, [{"id": 0, "kind": "recv", "peer": "a", "bytes": 10}], timeout=3)
    flows = {"a": VerbsProgramFlow(pa, TOKEN, "a", verbs=FakeVerbs(Fabric())),
             "b": ProgramFlow(pb, TOKEN, "b", listener=ProgramFlow.listen(pb))}
    results = run(flows, lead=2.0)
    assert (results["a"]["status"], results["a"]["error"]) == (
        "error", "not armed by the deadline: b at 127.0.0.1:%d (channel 0) admitted this host's connection but never "
                 "answered its queue pairs' exchange (is its engine verbs?)" % ports["b"])
    # VINFO's magic and first queue pair's number (17), read as a header's iteration and send op
    assert results["b"]["status"] == "error" and results["b"]["error"].startswith(
        "the message from a (channel 0) does not match: this host's iteration 0 op 0 (recv from a channel 0, 10 "
        "bytes, tag '') is matched with a's send op 17 of iteration %d " % int.from_bytes(b"AFV2", "big"))


def test_the_exchange_is_the_documented_bytes():
    assert VINFO.size == 4 + 4 + 4 + 2 + 16 + 1 and VREPLY.size == VINFO.size + 8 + 4 + 8 and BYE.size == 2 + 8
    assert VINFO.pack(b"AFV2", 1, 2, 3, bytes(16), 4)[:4] == b"AFV2" and BYE.pack(b"BY", 3) == b"BY" + bytes(7) + b"\3"


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


# ------------------------------------------------------------------------------------------------- Pyverbs itself
ETHERNET, INFINIBAND = 2, 1
WRITE_WITH_IMM, SIGNALED = 1, 2


def fake_pyverbs(monkeypatch, active_mtu=MTU_1024, link_layer=ETHERNET):
    """pyverbs' modules as far as ``Pyverbs`` uses them (a port of ``active_mtu`` and ``link_layer``): what it asks
    for is recorded in the namespace returned."""
    seen = types.SimpleNamespace(to_rtr=[], to_rts=[], sends=[], gids_read=[])
    enums = dict(IBV_PORT_ACTIVE=4, IBV_ACCESS_LOCAL_WRITE=1, IBV_ACCESS_REMOTE_WRITE=2, IBV_QPT_RC=2,
                 IBV_QPS_INIT=1, IBV_QPS_RTR=2, IBV_QPS_RTS=3, IBV_WR_RDMA_WRITE=0,
                 IBV_WR_RDMA_WRITE_WITH_IMM=WRITE_WITH_IMM, IBV_SEND_SIGNALED=SIGNALED, IBV_WC_SUCCESS=0,
                 IBV_WC_RNR_RETRY_EXC_ERR=13, IBV_WC_RECV_RDMA_WITH_IMM=129, IBV_LINK_LAYER_INFINIBAND=INFINIBAND,
                 IBV_LINK_LAYER_ETHERNET=ETHERNET)

    class Given:  # the attribute and work-request classes: what they were given
        def __init__(self, *args, **kwargs):
            self.args = args
            self.__dict__.update(kwargs)

        def close(self):
            pass

        def req_notify(self):
            pass

        def set_wr_rdma(self, rkey, addr):
            self.rdma = (rkey, addr)

    class MR(Given):
        buf, rkey, lkey = 0x1000, 7, 8

    class QP(Given):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.qp_num = 100 + len(seen.to_rts)

        def to_init(self, attr):
            pass

        def to_rtr(self, attr):
            seen.to_rtr.append(attr)

        def to_rts(self, attr):
            seen.to_rts.append(attr)

        def post_send(self, wr):
            seen.sends.append(wr)

        def post_recv(self, wr):
            pass

    class Context(Given):
        def query_port(self, port):
            return types.SimpleNamespace(state=4, active_mtu=active_mtu, lid=0, link_layer=link_layer)

        def query_device(self):
            return types.SimpleNamespace(max_cqe=4096, max_qp_wr=16384)

        def query_gid(self, port, index):
            seen.gids_read.append(index)
            return types.SimpleNamespace(gid="0000:0000:0000:0000:0000:ffff:c612:64%02x" % index)

    modules = {"enums": enums, "addr": dict(GID=Given, AHAttr=Given, GlobalRoute=Given),
               "cq": dict(CQ=Given, CompChannel=Given), "device": dict(Context=Context), "mr": dict(MR=MR),
               "pd": dict(PD=Given), "qp": dict(QP=QP, QPAttr=Given, QPCap=Given, QPInitAttr=Given),
               "wr": dict(SGE=Given, RecvWR=Given, SendWR=Given)}
    package = types.ModuleType("pyverbs")
    monkeypatch.setitem(sys.modules, "pyverbs", package)
    for name, names in modules.items():
        module = types.ModuleType("pyverbs." + name)
        module.__dict__.update(names)
        setattr(package, name, module)
        monkeypatch.setitem(sys.modules, "pyverbs." + name, module)
    monkeypatch.setattr(verbs_module, "_event_fd", lambda before, after: 99)
    monkeypatch.setattr(verbs_module, "find_gid_index", lambda device, port, address: (
        {"198.18.100.1": 1}.get(address)))
    pv = verbs_module.Pyverbs("rxe0")
    pv.open(1000, 1000, 64)
    return pv, seen


def test_pyverbs_gives_a_queue_pair_the_smaller_path_mtu_and_a_bounded_rnr_retry(monkeypatch):
    pv, seen = fake_pyverbs(monkeypatch, active_mtu=MTU_1024)
    for remote_mtu in (MTU_4096, 2):  # a peer's port of 4096, then of 512 bytes
        qp = pv.create_qp(4, 4)
        assert pv.local(qp, 5, "198.18.100.1")[4] == MTU_1024  # what VINFO and VREPLY carry: this port's
        pv.connect(qp, 5, 300, 6, 0, GID, remote_mtu, "198.18.100.1")
    assert [attr.path_mtu for attr in seen.to_rtr] == [MTU_1024, 2]
    # the peer's adapter waits 40.96 ms before each retry, 6 times (7 would be for ever), then fails the WRITE
    assert [(rtr.min_rnr_timer, rts.rnr_retry) for rtr, rts in zip(seen.to_rtr, seen.to_rts)] == [(24, 6), (24, 6)]
    assert pv.describe()["path_mtu"] == [512, 1024]
    assert pv.rnr(13) and not pv.rnr(12) and not pv.ok(13)


def test_pyverbs_writes_every_piece_with_the_immediate_the_last_one_flagged_and_signaled(monkeypatch):
    pv, seen = fake_pyverbs(monkeypatch)  # buffers of 1000 bytes
    qp = pv.create_qp(8, 1)
    pv.post_write(qp, 4, 2500, 0x2000, 9, 1000, 7)
    assert [(wr.wr_id, wr.opcode, wr.sg[0].args[1], wr.imm_data, wr.send_flags, wr.rdma) for wr in seen.sends] == [
        (4, WRITE_WITH_IMM, 1000, 7, 0, (9, 0x2000)), (4, WRITE_WITH_IMM, 1000, 7, 0, (9, 0x2000)),
        (4, WRITE_WITH_IMM, 500, IMM_LAST | 7, SIGNALED, (9, 0x2000))]


@pytest.mark.parametrize("link_layer", [ETHERNET, INFINIBAND])
def test_pyverbs_names_the_address_a_roce_port_has_no_gid_of(monkeypatch, link_layer):
    """No GID guessed on a RoCE port (GID 0 is its link-local address's: the peer could not answer it); an
    InfiniBand port has no address GIDs, its GID 0 is its own."""
    pv, seen = fake_pyverbs(monkeypatch, link_layer=link_layer)
    assert pv.gid_for("198.18.100.1")[0] == 1
    if link_layer == INFINIBAND:
        assert pv.gid_for("198.18.100.9")[0] == 0 and seen.gids_read == [1, 0]
        return
    with pytest.raises(verbs_module.VerbsError) as caught:
        pv.gid_for("198.18.100.9")
    assert str(caught.value) == ("rxe0 port 1 has no RoCE v2 GID of 198.18.100.9 (the local address of this host's "
                                 "program connection): put the address on the device's network interface, or give "
                                 "verbs.gid_index")
    assert seen.gids_read == [1]
