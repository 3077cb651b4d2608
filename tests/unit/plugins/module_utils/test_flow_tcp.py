# -*- coding: utf-8 -*-
"""The tcp engine on real loopback sockets: both sides, the start instant, refusals, stop and timeout."""
from __future__ import annotations

import re
import socket
import threading
import time

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._flow_engine import FlowSpec, wait_until
from ansible_collections.aifabric.lab.plugins.module_utils._flow_tcp import TcpEngine

ADDR = "127.0.0.1"


def free_port():
    with socket.socket() as s:
        s.bind((ADDR, 0))
        return s.getsockname()[1]


def serve_in_thread(port, token="tok", expected=1, timeout=10.0, max_bytes=None):
    out = {}
    spec = FlowSpec(role="server", address=ADDR, port=port, token=token, expected_clients=expected, timeout=timeout,
                    max_bytes=max_bytes)
    thread = threading.Thread(target=lambda: out.update(TcpEngine().serve(spec)), daemon=True)
    thread.start()
    return thread, out


def client(port, token="tok", volume=10_000_000, lead=0.4, timeout=10.0, flow_id="w1", start_at=None, **kw):
    spec = FlowSpec(role="client", address=ADDR, port=port, token=token, volume=volume, flow_id=flow_id,
                    start_at=start_at if start_at is not None else time.time() + lead, timeout=timeout, **kw)
    return TcpEngine().send(spec)


def test_volume_flow_is_timed_on_the_host():
    port = free_port()
    thread, server = serve_in_thread(port)
    result = client(port, volume=50_000_000, interval=0.01)
    thread.join(5)
    assert result["status"] == "ok", result["error"]
    assert result["bytes"] == 50_000_000
    assert 0 <= result["late_s"] < 0.001
    assert result["start"] >= result["start_at"]
    assert result["server_first_byte"] >= result["start"]
    assert result["last_byte_acked"] >= result["server_last_byte"]
    assert result["completion_s"] == pytest.approx(result["last_byte_acked"] - result["start_at"], abs=1e-5)
    assert result["gbps"] == pytest.approx(50_000_000 * 8 / result["duration_s"] / 1e9, rel=1e-3)
    assert result["samples"] and result["samples"][-1]["bytes"] >= 50_000_000
    assert server["status"] == "ok" and server["bytes"] == 50_000_000
    assert server["flows"][0]["flow_id"] == "w1"


def test_duration_flow():
    port = free_port()
    thread, server = serve_in_thread(port)
    result = client(port, volume=None, duration=0.3)
    thread.join(5)
    assert result["status"] == "ok", result["error"]
    assert 0.3 <= result["duration_s"] < 1.5
    assert result["bytes"] == server["bytes"] > 0


def test_three_clients_share_one_server_and_start_together():
    port = free_port()
    thread, server = serve_in_thread(port, expected=3)
    start_at = time.time() + 0.6
    results = [None] * 3
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(
        i, client(port, flow_id="w%d" % i, start_at=start_at, volume=5_000_000))) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    thread.join(5)
    assert [r["status"] for r in results] == ["ok"] * 3
    starts = [r["start"] for r in results]
    assert max(starts) - min(starts) < 0.005
    assert sorted(f["flow_id"] for f in server["flows"]) == ["w0", "w1", "w2"]


def test_wrong_token_is_refused_and_listed():
    port = free_port()
    thread, server = serve_in_thread(port, timeout=1.0)
    result = client(port, token="other")
    thread.join(5)
    assert result["status"] == "error"
    assert "refused the flow: wrong run token" in result["error"]
    assert server["rejected"] == [{"peer": ADDR, "reason": "wrong run token"}]
    assert server["status"] == "error" and "deadline reached" in server["error"]


def test_late_client_refuses_and_says_by_how_much():
    port = free_port()
    thread, server = serve_in_thread(port, timeout=1.0)
    result = client(port, start_at=time.time() - 0.25, timeout=5)
    thread.join(5)
    assert result["status"] == "late"
    assert result["late_s"] >= 0.25
    assert re.match(r"arrived 0\.\d{3} s after the start instant", result["error"])
    assert "start_lead" in result["error"]


def test_no_server_fails_before_the_start_instant():
    result = client(free_port(), lead=0.3)
    assert result["status"] == "error"
    assert "no flow server answered" in result["error"]


def test_volume_above_max_bytes_is_refused():
    port = free_port()
    thread, server = serve_in_thread(port, max_bytes=1000, timeout=2)
    result = client(port, volume=5000)
    thread.join(5)
    assert "exceeds the server's max_bytes 1000" in result["error"]


def test_stop_ends_a_waiting_server_with_what_it_has():
    port = free_port()
    thread, server = serve_in_thread(port, expected=2, timeout=30)
    done = client(port, volume=1_000_000)
    assert done["status"] == "ok"
    assert TcpEngine().stop(FlowSpec(role="server", address=ADDR, port=port, token="tok"))["stopped"] is True
    thread.join(5)
    assert not thread.is_alive()
    assert server["stopped"] is True and server["bytes"] == 1_000_000
    assert "stopped by request with 1 of 2" in server["error"]


def test_stop_with_nothing_listening_is_fine():
    result = TcpEngine().stop(FlowSpec(role="server", address=ADDR, port=free_port(), token="tok"))
    assert result["status"] == "ok" and result["stopped"] is False


def test_client_timeout_is_reported():
    """A server that admits the flow and then never reads: the client ends at its timeout."""
    port = free_port()
    listener = socket.socket()
    listener.bind((ADDR, port))
    listener.listen(1)
    conns = []

    def admit():
        conn = listener.accept()[0]
        conns.append(conn)
        conn.recv(64)
        conn.sendall(b"OK")  # then silence: no reading, no DONE

    t = threading.Thread(target=admit, daemon=True)
    t.start()
    try:
        result = client(port, volume=10**10, lead=0.2, timeout=1.0)
    finally:
        for c in conns:
            c.close()
        listener.close()
    assert result["status"] == "timeout"
    assert "timeout=1.0s" in result["error"]


def test_wait_until_lands_within_a_millisecond():
    for _attempt in range(5):
        target = time.time() + 0.02
        landed = wait_until(target)
        assert 0 <= landed - target < 0.001


def test_a_client_that_wakes_late_refuses(monkeypatch):
    """The host stalls while the client sleeps (here: its sleep overshoots by 50 ms): it must not start late."""
    from ansible_collections.aifabric.lab.plugins.module_utils import _flow_tcp

    real = _flow_tcp.wait_until
    monkeypatch.setattr(_flow_tcp, "wait_until", lambda instant, spin=0.003: real(instant + 0.05, spin=spin))
    port = free_port()
    thread, server = serve_in_thread(port, timeout=2.0)
    result = client(port, lead=0.3)
    thread.join(5)
    assert result["status"] == "late"
    assert result["late_s"] >= 0.05
    assert result["error"].startswith("woke 0.05")
