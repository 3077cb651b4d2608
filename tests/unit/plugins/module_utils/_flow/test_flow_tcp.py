# -*- coding: utf-8 -*-
"""The tcp engine on real loopback sockets: both sides, the start instant, lateness, streams, refusals, stop, timeout.

No test asserts a duration or a skew: those are figures for benchmarks/, and this machine may be slow."""
from __future__ import annotations

import os
import re
import socket
import threading
import time

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._flow import tcp as _tcp
from ansible_collections.aifabric.lab.plugins.module_utils._flow.clock import sleep_until
from ansible_collections.aifabric.lab.plugins.module_utils._flow.engine import FlowSpec
from ansible_collections.aifabric.lab.plugins.module_utils._flow.tcp import TcpEngine

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
    assert result["start"] >= result["start_at"]
    assert result["server_first_byte"] >= result["start"]
    assert result["last_byte_acked"] >= result["server_last_byte"]
    assert result["gbps"] == pytest.approx(50_000_000 * 8 / result["duration_s"] / 1e9, rel=1e-3)
    assert result["samples"] and result["samples"][-1]["bytes"] >= 50_000_000
    assert server["status"] == "ok" and server["bytes"] == 50_000_000
    assert server["flows"][0]["flow_id"] == "w1"


@pytest.mark.parametrize("volume", [50_000_000, 3 * (1 << 20) + 7])
def test_without_splice_the_server_drains_into_a_buffer_and_counts_every_byte(monkeypatch, volume):
    """Python 3.9 (RHEL 9's) has no os.splice: the same bytes and times, received with recv_into."""
    monkeypatch.delattr(os, "splice", raising=False)  # 3.9 has none to remove
    port = free_port()
    thread, server = serve_in_thread(port)
    result = client(port, volume=volume)
    thread.join(5)
    assert result["status"] == "ok", result["error"]
    assert server["status"] == "ok" and server["bytes"] == volume and server["flows"][0]["bytes"] == volume
    assert server["flows"][0]["first_byte"] <= server["flows"][0]["last_byte"]


def test_duration_flow():
    port = free_port()
    thread, server = serve_in_thread(port)
    result = client(port, volume=None, duration=0.3)
    thread.join(5)
    assert result["status"] == "ok", result["error"]
    assert result["duration_s"] >= 0.3
    assert result["bytes"] == server["bytes"] > 0


def test_three_clients_share_one_server_and_start_together():
    port = free_port()
    thread, server = serve_in_thread(port, expected=3)
    start_at = time.time() + 1.5
    results = [None] * 3
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(
        i, client(port, flow_id="w%d" % i, start_at=start_at, volume=5_000_000)))
        for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    thread.join(5)
    assert [r["status"] for r in results] == ["ok"] * 3, [r.get("error") for r in results]
    # each started at or after the instant, and says how late; how close they were is benchmarks/start_skew.py's
    assert all(r["start_at"] == start_at and r["start"] >= start_at for r in results)
    assert sorted(f["flow_id"] for f in server["flows"]) == ["w0", "w1", "w2"]


def test_lateness_is_the_wake_after_the_instant_and_the_completion_counts_from_the_instant(monkeypatch):
    """The host wakes 2.5 ms after the instant (its clock read on waking, set here): late_s is 2.5 ms, the start is
    the instant plus 2.5 ms, and the completion (from the instant) is the duration (from the start) plus 2.5 ms."""
    woke_late = 0.0025

    def late_wake(instant):
        sleep_until(instant)
        return instant + woke_late

    monkeypatch.setattr(_tcp, "sleep_until", late_wake)
    port = free_port()
    thread, server = serve_in_thread(port)
    start_at = time.time() + 0.3
    result = client(port, volume=5_000_000, start_at=start_at)
    thread.join(5)
    assert result["status"] == "ok", result["error"]
    assert result["late_s"] == woke_late and result["start"] == start_at + woke_late
    assert result["completion_s"] - result["duration_s"] == pytest.approx(woke_late, abs=2e-6)  # each rounded to 1 us


@pytest.mark.parametrize("offset", [0.0, 0.3])
def test_a_flow_with_a_start_offset_starts_after_the_common_instant_and_counts_its_completion_from_it(monkeypatch,
                                                                                                      offset):
    """A step's late joiner (FlowSpec.start_offset) is fired with the common instant: it starts at the instant plus
    its offset (its own instant, start_at), late_s is against its own instant (a wake 2.5 ms after it, set here), and
    its completion, and each stream's, counts from the common instant: its duration plus the offset and the lateness.
    A flow without an offset says none."""
    woke_late = 0.0025

    def late_wake(instant):
        # really asleep until the late wake: no byte leaves before the start the flow is told (loopback carries a
        # stream's 2.5 MB in less than the 2.5 ms)
        sleep_until(instant + woke_late)
        return instant + woke_late

    monkeypatch.setattr(_tcp, "sleep_until", late_wake)
    port = free_port()
    thread, server = serve_in_thread(port, expected=2)
    flow = TcpEngine().client(FlowSpec(role="client", address=ADDR, port=port, token="tok", volume=5_000_000,
                                       flow_id="w2", streams=2, timeout=10.0, start_offset=offset))
    try:
        assert flow.arm(time.monotonic() + 5) is True, flow.result["error"]
        common = time.time() + 0.2
        result = flow.fire(common)
    finally:
        flow.close()
    thread.join(5)
    assert result["status"] == "ok", result["error"]
    assert result.get("start_offset_s") == (offset or None)
    assert result["start_at"] == common + offset
    assert result["late_s"] == woke_late and result["start"] == common + offset + woke_late
    assert result["completion_s"] - result["duration_s"] == pytest.approx(offset + woke_late, abs=2e-6)
    assert result["completion_s"] == pytest.approx(max(result["stream_completion_s"]), abs=1e-5)
    assert min(result["stream_completion_s"]) >= offset + woke_late
    assert server["status"] == "ok" and server["bytes"] == 5_000_000


def test_wrong_token_is_refused_and_listed():
    port = free_port()
    thread, server = serve_in_thread(port, timeout=1.0)
    result = client(port, token="other")
    thread.join(5)
    assert result["status"] == "error"
    assert "refused the flow: wrong run token" in result["error"]
    assert [(r["peer"], r["reason"], r["count"]) for r in server["rejected"]] == [(ADDR, "wrong run token", 1)]
    assert server["rejected_total"] == 1
    assert server["status"] == "error" and "deadline reached" in server["error"]


def test_late_client_starts_and_counts_its_lateness_in_the_completion():
    """Late is measured, not fatal: the flow goes, and its completion counts from the instant."""
    port = free_port()
    thread, server = serve_in_thread(port, timeout=5.0)
    start_at = time.time() - 0.25
    result = client(port, start_at=start_at, timeout=5)
    thread.join(5)
    assert result["status"] == "ok", result["error"]
    assert result["late_s"] >= 0.25
    assert result["completion_s"] >= result["late_s"] + result["duration_s"] - 1e-5


def test_late_client_refuses_with_strict_start():
    port = free_port()
    thread, server = serve_in_thread(port, timeout=1.0)
    result = client(port, start_at=time.time() - 0.25, timeout=5, strict_start=True, start_tolerance=0.001)
    thread.join(5)
    assert result["status"] == "late"
    assert result["late_s"] >= 0.25
    assert re.match(r"started 0\.\d{6} s after the start instant, more than start_tolerance=0\.001000 s with "
                    r"strict_start", result["error"])
    assert result.get("bytes_sent") is None


def test_streams_split_the_volume_and_the_flow_ends_with_its_last_stream():
    port = free_port()
    thread, server = serve_in_thread(port, expected=3)
    result = client(port, volume=10_000_001, streams=3)
    thread.join(5)
    assert result["status"] == "ok", result["error"]
    assert result["bytes"] == 10_000_001 and result["streams"] == 3
    assert sorted(f["flow_id"] for f in server["flows"]) == ["w1#1", "w1#2", "w1#3"]
    assert sorted(f["bytes"] for f in server["flows"]) == [3_333_333, 3_333_334, 3_333_334]
    assert result["completion_s"] == pytest.approx(max(result["stream_completion_s"]), abs=1e-5)


def test_an_armed_flow_can_be_aborted_before_it_fires():
    port = free_port()
    thread, server = serve_in_thread(port, timeout=5.0)
    flow = TcpEngine().client(FlowSpec(role="client", address=ADDR, port=port, token="tok", volume=10**9,
                                       flow_id="w1", timeout=5))
    assert flow.arm(time.monotonic() + 5) is True
    flow.abort("the step was aborted: w2 did not arm")
    result = flow.fire(time.time())
    flow.close()
    TcpEngine().stop(FlowSpec(role="server", address=ADDR, port=port, token="tok"))
    thread.join(5)
    assert result["status"] == "aborted"
    assert result["error"].startswith("the step was aborted: w2 did not arm")


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


def test_sleep_until_never_wakes_before_the_instant():
    for _attempt in range(5):
        target = time.time() + 0.02
        assert sleep_until(target) >= target
    assert sleep_until(time.time() - 1) < time.time() + 1  # an instant in the past returns at once


CLIENT = r"""
import json, sys
from ansible_collections.aifabric.lab.plugins.module_utils._flow.engine import FlowSpec
from ansible_collections.aifabric.lab.plugins.module_utils._flow.tcp import TcpEngine
port, start_at, strict = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3] == "strict"
print(json.dumps(TcpEngine().send(FlowSpec(role="client", address="127.0.0.1", port=port, token="tok",
                                           volume=100000, start_at=start_at, timeout=10, strict_start=strict))))
"""


@pytest.mark.parametrize("mode", ["record", "strict"])
def test_a_client_that_stalls_while_waiting_wakes_late(mode):
    """A real stall: the client is admitted and sleeping toward the instant when its process is stopped (SIGSTOP)
    until after the instant. By default it starts and records how late; with strict_start it refuses."""
    import json
    import signal
    import subprocess
    import sys

    port = free_port()
    thread, server = serve_in_thread(port, timeout=8.0)
    start_at = time.time() + 1.2
    child = subprocess.Popen([sys.executable, "-c", CLIENT, str(port), repr(start_at), mode], stdout=subprocess.PIPE,
                             text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    try:
        time.sleep(0.7)  # admitted by the server, now sleeping toward the instant
        child.send_signal(signal.SIGSTOP)
        time.sleep(1.0)  # the instant passes while the process cannot run
        child.send_signal(signal.SIGCONT)
        out = child.communicate(timeout=10)[0]
    finally:
        if child.poll() is None:
            child.kill()
    if mode == "strict":
        TcpEngine().stop(FlowSpec(role="server", address=ADDR, port=port, token="tok"))
    thread.join(9)
    result = json.loads(out)
    assert result["late_s"] >= 0.4
    if mode == "strict":
        assert result["status"] == "late" and "strict_start" in result["error"]
        assert result.get("bytes_sent") is None  # nothing was sent
    else:
        assert result["status"] == "ok" and result["bytes"] == 100000
        assert result["completion_s"] >= result["late_s"]
