# -*- coding: utf-8 -*-
"""The rendezvous protocol with hand-driven parties on loopback: clock offsets, refusals, a party that leaves."""
from __future__ import annotations

import socket
import threading
import time

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._flow.rendezvous import (
    Channel,
    Coordinator,
    Party,
    RendezvousError,
)

ADDR = "127.0.0.1"


def coordinator(parties, arm_timeout=10.0, **kw):
    listener = socket.socket()
    listener.bind((ADDR, 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    out = {}
    kw.setdefault("wait_for_controller", False)  # no controller collects in these tests
    coord = Coordinator(listener, "run1", parties, time.time() + arm_timeout, timeout=5.0, grace=2.0, **kw)
    thread = threading.Thread(target=lambda: out.update(record=coord.run()), daemon=True)
    thread.start()
    return port, thread, out


def fake_party(port, name, skew=0.0, result=None, leave_after_arm=False, armed=None):
    """A party whose clock reads ``skew`` seconds ahead of the machine's; returns what it saw. ``armed`` (an Event) is
    set once its ``armed`` is sent."""
    seen = {}

    def run():
        party = Party(ADDR, port, "run1", name)
        try:
            talk(party)
        except (EOFError, OSError, RendezvousError) as exc:  # the coordinator ended the step and closed first
            seen["lost"] = str(exc)
        finally:
            party.close()

    def talk(party):
        party.connect(time.time() + 5)
        party.send("armed", t=time.time() + skew, flows=[name])
        if armed is not None:
            armed.set()
        if leave_after_arm:
            return
        while True:
            msg = party.channel.recv(5)
            if msg is None:
                return
            if msg["op"] == "ping":
                party.send("pong", seq=msg["seq"], t=time.time() + skew)
            elif msg["op"] in ("fire", "abort"):
                seen[msg["op"]] = msg
                break
        if "fire" in seen:
            seen["acked"] = party.report(result or {"host": name, "clients": []})

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, seen


def test_each_party_gets_the_instant_in_its_own_clock():
    port, thread, out = coordinator(["a", "b"])
    ta, seen_a = fake_party(port, "a")
    tb, seen_b = fake_party(port, "b", skew=5.0)  # a host whose clock is 5 s ahead (a VM without NTP)
    for t in (ta, tb, thread):
        t.join(15)
    record = out["record"]
    assert record["status"] == "ok", record["error"]
    assert record["parties"]["b"]["offset_s"] == pytest.approx(5.0, abs=0.2)
    assert record["parties"]["a"]["offset_s"] == pytest.approx(0.0, abs=0.2)
    at = record["fire"]["at"]
    assert seen_a["fire"]["at_coordinator"] == seen_b["fire"]["at_coordinator"] == at
    assert seen_b["fire"]["at"] - at == pytest.approx(record["parties"]["b"]["offset_s"], abs=1e-6)
    assert seen_a["acked"] and seen_b["acked"]
    assert record["hosts"] == {"a": {"host": "a", "clients": []}, "b": {"host": "b", "clients": []}}


def test_a_fixed_instant_ignores_the_offsets():
    port, thread, out = coordinator(["a", "b"], start_at=time.time() + 1.0)
    ta, seen_a = fake_party(port, "a")
    tb, seen_b = fake_party(port, "b", skew=5.0)
    for t in (ta, tb, thread):
        t.join(15)
    assert seen_a["fire"]["at"] == seen_b["fire"]["at"] == out["record"]["fire"]["at"]


def test_another_runs_party_and_a_stranger_are_refused_and_listed():
    port, thread, out = coordinator(["a"])
    with socket.create_connection((ADDR, port)) as sock:
        Channel(sock).send("hello", run="another", party="a")
        assert Channel(sock).recv(5)["op"] == "refused"
    with socket.create_connection((ADDR, port)) as sock:
        channel = Channel(sock)
        channel.send("hello", run="run1", party="zz")
        answer = channel.recv(5)
        assert answer["op"] == "refused" and "'zz' is not a host of this step" in answer["error"]
    ta, seen = fake_party(port, "a")
    for t in (ta, thread):
        t.join(15)
    record = out["record"]
    assert record["status"] == "ok"
    assert [r["reason"] for r in record["rejected"]] == ["another run's token", "not a party of this step: 'zz'"]


def test_a_party_that_leaves_after_arming_fails_the_step_by_name():
    port, thread, out = coordinator(["a", "b"])
    a_armed = threading.Event()
    ta, seen_a = fake_party(port, "a", armed=a_armed)
    # b starts once a's hello and armed are on the wire: the coordinator then reads them before it can notice b
    # leave, so a is sure to be a party it must tell (not one that merely finds the rendezvous closed)
    assert a_armed.wait(15), "party a did not arm"
    tb, seen_b = fake_party(port, "b", leave_after_arm=True)
    for t in (ta, tb, thread):
        t.join(20)
    record = out["record"]
    # b left before the fire: nothing was fired, the step was aborted, b named as the reason
    assert record["status"] == "aborted" and "fire" not in record
    assert record["error"].startswith("the step was not started: b: its step process ended without a result (")
    assert record["parties"]["b"]["lost"]  # the reason is the socket's (closed, or reset): not asserted
    # a was told exactly that: one abort with the step's error, no fire, so nothing reported
    assert seen_a == {"abort": {"op": "abort", "error": record["error"]}}
    assert seen_b == {}
    assert record["hosts"] == {}


def test_a_large_message_leaves_whole_after_a_short_poll():
    """A host polls for an abort with a millisecond timeout while its flows run, then sends its whole result: the
    send must not inherit the poll's timeout."""
    a, b = socket.socketpair()
    received = []

    def slow_reader():
        time.sleep(0.3)
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = b.recv(1 << 20)
            if not chunk:
                break
            buf += chunk
        received.append(buf)

    reader = threading.Thread(target=slow_reader, daemon=True)
    reader.start()
    channel = Channel(a)
    assert channel.recv(0.002) is None  # the poll times out, as poll_abort's do
    channel.send("result", result={"payload": "x" * (4 << 20)})
    reader.join(10)
    assert len(received[0]) > 4 << 20
    a.close()
    b.close()
