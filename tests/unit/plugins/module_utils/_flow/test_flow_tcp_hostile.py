# -*- coding: utf-8 -*-
"""The tcp engine's flow server on a lab network that is not friendly: each attack against a real server on loopback
while a real client flow runs through it. The flow must complete, and the attacker be listed in ``rejected``.

No test asserts a duration; the handshake deadline is shortened to 1 s here (5 s in use) to keep them short."""
from __future__ import annotations

import errno
import os
import resource
import select
import socket
import threading
import time

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._flow import tcp as _tcp
from ansible_collections.aifabric.lab.plugins.module_utils._flow.engine import FlowSpec
from ansible_collections.aifabric.lab.plugins.module_utils._flow.tcp import MAGIC_HELLO, TcpEngine, token_bytes
from ansible_collections.aifabric.lab.plugins.module_utils._netns_enter import fork_in_namespace, gather

ADDR = "127.0.0.1"
TOKEN = "tok-hostile"


@pytest.fixture(autouse=True)
def short_handshake(monkeypatch):
    monkeypatch.setattr(_tcp, "HANDSHAKE_TIMEOUT", 1.0)


def listener():
    sock = TcpEngine.listen(FlowSpec(role="server", address=ADDR, port=0, token=TOKEN))
    return sock, sock.getsockname()[1]


def serve(sock, port, expected=1, timeout=30.0):
    out = {}
    spec = FlowSpec(role="server", address=ADDR, port=port, token=TOKEN, expected_clients=expected, timeout=timeout)
    thread = threading.Thread(target=lambda: out.update(TcpEngine().serve(spec, sock)), daemon=True)
    thread.start()
    return thread, out


def send(port, flow_id="w1", volume=2_000_000):
    """A client flow, armed as a step arms it (up to 30 s: a SYN behind a crowd is retried after a second), fired at
    once."""
    flow = TcpEngine().client(FlowSpec(role="client", address=ADDR, port=port, token=TOKEN, volume=volume,
                                       flow_id=flow_id, timeout=20))
    try:
        if not flow.arm(time.monotonic() + 30.0):
            return flow.result
        return flow.fire(time.time() + 0.05)
    finally:
        flow.close()


def reasons(result):
    return {r["reason"]: r["count"] for r in result["rejected"]}


def wait_closed(sock, timeout=10.0):
    sock.settimeout(timeout)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except socket.timeout:
        return False
    except OSError:
        return True


def flow_through(port, thread, server):
    flow = send(port)
    thread.join(20)
    assert flow["status"] == "ok", flow["error"]
    assert server["status"] == "ok", server["error"]
    assert [f["flow_id"] for f in server["flows"]] == ["w1"] and server["bytes"] == 2_000_000
    return server


@pytest.mark.parametrize("attack, reason", [
    (b"GET / HTTP/1.1\r\nHost: sink\r\n\r\n", "not a flow client"),
    (b"[" * 100_000, "not a flow client"),
    (MAGIC_HELLO + b"\x00" * 16 + b"\x00" * 10, "wrong run token"),
    (b"AFLS" + b"\x01" * 16, "stop with a wrong token"),
])
def test_a_stranger_is_refused_and_the_flow_completes(attack, reason):
    sock, port = listener()
    thread, server = serve(sock, port)
    with socket.create_connection((ADDR, port)) as peer:
        try:
            peer.sendall(attack)
        except OSError:
            pass
        assert wait_closed(peer)
    result = flow_through(port, thread, server)
    assert reasons(result) == {reason: 1} and result["rejected"][0]["peer"] == ADDR


def test_a_100_mb_stream_of_garbage_costs_four_bytes_of_reading():
    sock, port = listener()
    thread, server = serve(sock, port)
    with socket.create_connection((ADDR, port)) as peer:
        chunk = b"x" * (1 << 20)
        try:
            for _chunk in range(100):
                peer.sendall(chunk)
        except OSError:
            pass  # reset: the server read the first 4 bytes and closed
        assert wait_closed(peer)
    assert reasons(flow_through(port, thread, server)) == {"not a flow client": 1}


def test_a_trickle_of_a_byte_every_so_often_is_dropped_at_the_handshake_deadline():
    """Each read would be quick (a byte every 0.3 s): the whole handshake still has one deadline."""
    sock, port = listener()
    thread, server = serve(sock, port)
    hello = MAGIC_HELLO + token_bytes(TOKEN) + _tcp._HELLO_TAIL.pack(1000, 2) + b"w9"
    with socket.create_connection((ADDR, port)) as peer:
        peer.settimeout(0.3)
        closed = False
        for byte in hello:
            try:
                peer.sendall(bytes([byte]))
                if peer.recv(1) == b"":
                    closed = True
                    break
            except socket.timeout:
                continue
            except OSError:
                closed = True
                break
        assert closed, "the trickle was never cut off"
    assert reasons(flow_through(port, thread, server)) == {"handshake not complete within 1 s": 1}


def test_peers_that_connect_and_never_speak_are_dropped():
    sock, port = listener()
    thread, server = serve(sock, port)
    silent = [socket.create_connection((ADDR, port)) for _peer in range(3)]
    try:
        assert all(wait_closed(s) for s in silent)
    finally:
        for s in silent:
            s.close()
    assert reasons(flow_through(port, thread, server)) == {"handshake not complete within 1 s": 3}


def test_a_silent_peer_does_not_hold_the_server_after_its_flows():
    """The flows are done while a stranger still sits in its handshake: the server ends at once, without it."""
    sock, port = listener()
    thread, server = serve(sock, port)
    _tcp.HANDSHAKE_TIMEOUT = 30.0  # (restored by the fixture) it would sit there for 30 s
    with socket.create_connection((ADDR, port)) as peer:
        time.sleep(0.2)
        result = flow_through(port, thread, server)  # joins the server within 20 s
        assert wait_closed(peer, 5)
    assert result["rejected"] == []  # the server's own ending is not the stranger's refusal


def _open_many(port, count):
    socks = []
    for _peer in range(count):
        sock = socket.socket()
        sock.setblocking(False)
        if sock.connect_ex((ADDR, port)) not in (0, errno.EINPROGRESS):
            sock.close()
            break
        socks.append(sock)
    return socks


def _cut_off(socks, at_least, timeout=20.0):
    """Wait until ``at_least`` of ``socks`` were closed by the server (readable with nothing to read)."""
    poller = select.poll()
    by_fd = {s.fileno(): s for s in socks}
    for fd in by_fd:
        poller.register(fd, select.POLLIN | select.POLLHUP)
    closed = set()
    end = time.monotonic() + timeout
    while len(closed) < at_least and time.monotonic() < end:
        for fd, _event in poller.poll(100):
            try:
                data = by_fd[fd].recv(1)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                closed.add(fd)
                poller.unregister(fd)
    return len(closed) >= at_least


def test_2000_connections_do_not_keep_the_flow_out():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 4400:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(4400, hard), hard))
    count = min(2000, resource.getrlimit(resource.RLIMIT_NOFILE)[0] - 300)
    sock, port = listener()
    thread, server = serve(sock, port)
    crowd = _open_many(port, count)
    try:
        # the flow comes once the server has cut strangers off (evicted: their end sees EOF); the kernel hands the
        # rest of the crowd over while the flow runs
        assert _cut_off(crowd, _tcp.MAX_HANDSHAKING + 1), "the server never cut a stranger off"
        result = flow_through(port, thread, server)
    finally:
        for s in crowd:
            s.close()
    assert len(crowd) == count
    assert sum(n for r, n in reasons(result).items() if r.startswith("evicted:")) >= 1
    assert len(result["rejected"]) <= 32
    assert result["rejected_total"] == sum(r["count"] for r in result["rejected"]) + result["rejected_unlisted"]


def test_accept_out_of_file_descriptors_does_not_end_the_server():
    """The server in a child with a low RLIMIT_NOFILE: strangers exhaust it, accept() fails with EMFILE - the server
    drops the connections still in their handshake, rests, and the flow is admitted and completes."""
    sock, port = listener()

    def work(_write_fd):
        used = len(os.listdir("/proc/self/fd"))
        resource.setrlimit(resource.RLIMIT_NOFILE, (used + 12, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        spec = FlowSpec(role="server", address=ADDR, port=port, token=TOKEN, expected_clients=1, timeout=30.0)
        return TcpEngine().serve(spec, sock)

    child, read_fd = fork_in_namespace(None, work)
    sock.close()
    crowd = _open_many(port, 60)
    try:
        time.sleep(0.5)
        flow = send(port)
        result = gather(child, read_fd)
    finally:
        for s in crowd:
            s.close()
    assert flow["status"] == "ok", flow["error"]
    assert result["status"] == "ok", result
    assert result["accept_errors"] >= 1
    assert any(r["reason"].startswith("dropped during its handshake: the server ran out of file descriptors (EMFILE)")
               for r in result["rejected"]), result["rejected"]
