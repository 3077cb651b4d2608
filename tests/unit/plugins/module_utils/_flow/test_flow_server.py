# -*- coding: utf-8 -*-
"""Background servers for real: a daemon on loopback, a client flow, stop and collect, and the failure paths."""
from __future__ import annotations

import json
import os
import socket
import time

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils import _proc
from ansible_collections.aifabric.lab.plugins.module_utils._flow import server as _flow_server
from ansible_collections.aifabric.lab.plugins.module_utils._flow.engine import FlowSpec
from ansible_collections.aifabric.lab.plugins.module_utils._flow.tcp import TcpEngine


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spec(port, role="server", token="tok", **kw):
    return FlowSpec(role=role, address="127.0.0.1", port=port, token=token, **kw)


def wait_gone(pid, seconds=5.0):
    end = time.time() + seconds
    while _flow_server.alive(pid) and time.time() < end:
        time.sleep(0.05)
    return not _flow_server.alive(pid)


def test_start_send_stop_collect(tmp_path):
    port = free_port()
    started = _flow_server.start(TcpEngine(), spec(port, expected_clients=1, timeout=20), str(tmp_path))
    assert started["status"] == "started" and started["pid"] > 0 and _flow_server.alive(started["pid"])
    flow = TcpEngine().send(spec(port, role="client", volume=5_000_000, start_at=time.time() + 0.3, timeout=10))
    assert flow["status"] == "ok"
    collected = _flow_server.stop_and_collect(TcpEngine(), spec(port), str(tmp_path))
    assert collected["status"] == "ok" and collected["bytes"] == 5_000_000
    assert "killed" not in collected
    assert wait_gone(started["pid"])
    assert os.listdir(str(tmp_path)) == []  # result and pid files removed


def test_stop_before_any_client_ends_the_daemon_with_what_it_has(tmp_path):
    port = free_port()
    started = _flow_server.start(TcpEngine(), spec(port, expected_clients=3, timeout=60), str(tmp_path))
    collected = _flow_server.stop_and_collect(TcpEngine(), spec(port), str(tmp_path), wait=5)
    assert collected["status"] == "error" and "stopped by request with 0 of 3" in collected["error"]
    assert collected["stop_request"] == "answered"
    assert wait_gone(started["pid"])


def test_a_taken_port_fails_at_start(tmp_path):
    port = free_port()
    holder = socket.socket()
    holder.bind(("127.0.0.1", port))
    holder.listen(1)
    try:
        with pytest.raises(OSError):
            _flow_server.start(TcpEngine(), spec(port), str(tmp_path))
    finally:
        holder.close()


def test_another_runs_server_is_not_stopped(tmp_path):
    port = free_port()
    started = _flow_server.start(TcpEngine(), spec(port, timeout=30), str(tmp_path))
    try:
        other = _flow_server.stop_and_collect(TcpEngine(), spec(port, token="other"), str(tmp_path), wait=1)
        assert "belongs to another run" in other["error"]
        assert _flow_server.alive(started["pid"])
    finally:
        _flow_server.stop_and_collect(TcpEngine(), spec(port), str(tmp_path), wait=5)
    assert wait_gone(started["pid"])


def test_nothing_to_collect(tmp_path):
    out = _flow_server.stop_and_collect(TcpEngine(), spec(free_port()), str(tmp_path), wait=0.2)
    assert "no background server of this run" in out["error"]


def test_a_daemon_that_overstays_is_killed_by_its_pid(tmp_path, monkeypatch):
    """A server that ignores the STOP (here: the stop request is lost) is ended by its PID after the wait."""
    port = free_port()
    started = _flow_server.start(TcpEngine(), spec(port, expected_clients=2, timeout=60), str(tmp_path))
    monkeypatch.setattr(TcpEngine, "stop", lambda self, s: {"stopped": False})
    collected = _flow_server.stop_and_collect(TcpEngine(), spec(port), str(tmp_path), wait=0.3)
    assert collected["killed"] == "SIGTERM"
    assert "wrote no result" in collected["error"] or collected.get("status") == "error"
    assert wait_gone(started["pid"])


def _pid_file(tmp_path, port, info, token="tok"):
    _result, pid_path = _flow_server.paths(str(tmp_path), spec(port))
    with open(pid_path, "w") as handle:
        json.dump(dict(info, run=_flow_server.run_id(token)), handle)


def test_the_pid_file_holds_the_process_identity(tmp_path):
    port = free_port()
    started = _flow_server.start(TcpEngine(), spec(port, timeout=30), str(tmp_path))
    _result, pid_path = _flow_server.paths(str(tmp_path), spec(port))
    with open(pid_path) as handle:
        info = json.load(handle)
    assert info["pid"] == started["pid"] and info["start_ticks"] == _proc.start_ticks(started["pid"])
    assert _proc.same_process(info) and _flow_server.owner(info) == "running"
    _flow_server.stop_and_collect(TcpEngine(), spec(port), str(tmp_path), wait=5)
    assert wait_gone(started["pid"])


def test_a_reused_pid_is_never_signalled(tmp_path):
    """The PID file names a PID that runs (this test's own), with another start time: a reused PID. Nothing is
    signalled; the server is reported as gone."""
    port = free_port()
    me = _proc.identity()
    _pid_file(tmp_path, port, dict(me, start_ticks=me["start_ticks"] + 777))
    signals = []
    out = _flow_server.stop_and_collect(TcpEngine(), spec(port), str(tmp_path), wait=0.2,
                                        kill=lambda pid, sig: signals.append((pid, sig)))
    assert signals == [] and "killed" not in out and "not_signalled" not in out
    assert "wrote no result" in out["error"]


def test_an_old_pid_file_without_a_start_time_is_reported_not_signalled(tmp_path):
    port = free_port()
    _pid_file(tmp_path, port, {"pid": os.getpid(), "started_at": 1.0})
    signals = []
    out = _flow_server.stop_and_collect(TcpEngine(), spec(port), str(tmp_path), wait=0.2,
                                        kill=lambda pid, sig: signals.append((pid, sig)))
    assert signals == [] and "killed" not in out
    assert out["not_signalled"].startswith("process %d still runs, but its PID file (from an older version)"
                                           % os.getpid())
    assert os.listdir(str(tmp_path)) == []
