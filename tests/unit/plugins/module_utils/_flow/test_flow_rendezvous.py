# -*- coding: utf-8 -*-
"""The rendezvous protocol on loopback with real parties (``Party``): clock offsets, refusals, a party that leaves,
and every byte from the network treated as hostile - each attack against a real Coordinator while a real step goes
on, which must still complete, with the attacker listed in ``rejected``."""
from __future__ import annotations

import errno
import json
import os
import resource
import signal
import socket
import threading
import time

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._flow import rendezvous as _rdv
from ansible_collections.aifabric.lab.plugins.module_utils._flow import step as _step
from ansible_collections.aifabric.lab.plugins.module_utils._flow.engine import FlowSpec
from ansible_collections.aifabric.lab.plugins.module_utils._flow.rendezvous import (
    Channel,
    Coordinator,
    Party,
    RendezvousError,
    control_abort,
    first_line,
    run_id,
)
from ansible_collections.aifabric.lab.plugins.module_utils._flow.server import pid_record
from ansible_collections.aifabric.lab.plugins.module_utils._flow.server import run_id as server_run_id
from ansible_collections.aifabric.lab.plugins.module_utils._flow.state import step_paths, step_results_dir
from ansible_collections.aifabric.lab.plugins.module_utils._flow.tcp import TcpEngine
from ansible_collections.aifabric.lab.plugins.module_utils._netns_enter import fork_in_namespace, gather

ADDR = "127.0.0.1"
TOKEN = "tok-rendezvous-1"


@pytest.fixture(autouse=True)
def short_hello_deadline(monkeypatch):
    """A peer that never authenticates is dropped after 1 s here (3 s in use): the tests stay short."""
    monkeypatch.setattr(_rdv, "HELLO_DEADLINE", 1.0)


def listener():
    """The rendezvous' listener as flow_step's start binds it (TcpEngine.listen: the lab address, its backlog)."""
    return TcpEngine.listen(FlowSpec(role="server", address=ADDR, port=0, token=TOKEN, expected_clients=3))


def coordinator(parties, arm_timeout=15.0, token=TOKEN, **kw):
    sock = listener()
    port = sock.getsockname()[1]
    out = {}
    kw.setdefault("wait_for_controller", False)  # no controller collects in these tests
    coord = kw.pop("cls", Coordinator)(sock, token, parties, time.monotonic() + arm_timeout, timeout=5.0, grace=2.0,
                                       **kw)
    out["coordinator"] = coord
    thread = threading.Thread(target=lambda: out.update(record=coord.run()), daemon=True)
    thread.start()
    return port, thread, out


def fake_party(port, name, skew=0.0, result=None, leave_after_arm=False, armed=None, token=TOKEN, hold=None,
               until_abort=False):
    """A party whose clock reads ``skew`` seconds ahead of the machine's; returns what it saw. ``armed`` (an Event) is
    set once its ``armed`` is sent; ``hold`` (an Event): it reports only once it is set; ``until_abort``: after the
    fire it waits (as running flows do) until the coordinator aborts, then reports."""
    seen = {}

    def run():
        party = Party(ADDR, port, token, name)
        try:
            talk(party)
        except (EOFError, OSError, RendezvousError) as exc:  # the coordinator ended the step and closed first
            seen["lost"] = str(exc)
        finally:
            party.close()

    def talk(party):
        party.connect(time.monotonic() + 10)
        party.send("armed", t=time.time() + skew, flows=[name])
        if armed is not None:
            armed.set()
        if leave_after_arm:
            return
        while True:
            msg = party.channel.recv(10)
            if msg is None:
                return
            if msg["op"] == "ping":
                party.send("pong", seq=msg["seq"], t=time.time() + skew)
            elif msg["op"] in ("fire", "abort"):
                seen[msg["op"]] = msg
                break
        if "fire" not in seen:
            return
        if until_abort:
            end = time.monotonic() + 10
            while time.monotonic() < end and "abort_after_fire" not in seen:
                reason = party.poll_abort(0.1)
                if reason:
                    seen["abort_after_fire"] = reason
        if hold is not None:
            hold.wait(20)
        seen["acked"] = party.report(result or {"host": name, "clients": []})
        seen["durable"] = party.ack_durable

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, seen


def run_step(port, thread, out, parties=("a", "b")):
    """Real parties through a whole step; the coordinator's record."""
    threads = [fake_party(port, p)[0] for p in parties]
    for t in threads + [thread]:
        t.join(30)
    return out["record"]


def reasons(record):
    return {r["reason"]: r["count"] for r in record["rejected"]}


def wait_closed(sock, timeout=10.0):
    """Block until the coordinator closes ``sock`` (or ``timeout``); True when it did."""
    sock.settimeout(timeout)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except socket.timeout:
        return False
    except OSError:
        return True


# -- the protocol ---------------------------------------------------------------------------------------------------
def test_the_first_line_proves_the_token_without_giving_it():
    line = first_line(TOKEN)
    magic, run, proof = line.rstrip(b"\n").split(b" ")
    assert magic == b"AFRV2" and len(line) < _rdv.FIRST_LINE_MAX
    # the run id is the flow servers' (a hash of the token); the proof is an HMAC that the run id alone cannot make
    assert run.decode() == run_id(TOKEN) == server_run_id(TOKEN)
    assert TOKEN.encode() not in line and proof != first_line("another")[-65:-1]


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
    assert seen_b["fire"]["at"] - seen_a["fire"]["at"] == pytest.approx(5.0, abs=0.2)  # b's clock is 5 s ahead
    assert seen_a["acked"] and seen_b["acked"]
    assert seen_a["durable"] is False  # no store: acknowledged, kept in memory only
    assert record["hosts"] == {"a": {"host": "a", "clients": []}, "b": {"host": "b", "clients": []}}
    assert record["rejected"] == [] and record["rejected_total"] == 0


class StillClock:
    """A monotonic clock that stands still until a party moves it forward (never back): a probe round's fan-out is
    then exactly what the parties say it is."""

    def __init__(self, now=100.0):
        self.now = now
        self.lock = threading.Lock()

    def __call__(self):
        return self.now

    def advance_to(self, instant):
        with self.lock:
            self.now = max(self.now, instant)


def probed_party(port, name, clock, answers):
    """A party that answers probe round ``seq`` once the still clock reads ``answers[seq]``; returns what it saw."""
    seen = {}

    def run():
        party = Party(ADDR, port, TOKEN, name)
        try:
            party.connect(time.monotonic() + 10)
            party.send("armed", t=time.time(), flows=[name])
            while "fire" not in seen:
                msg = party.channel.recv(10)
                if msg is None or msg["op"] == "abort":
                    seen["abort"] = msg
                    return
                if msg["op"] == "ping":
                    clock.advance_to(answers[msg["seq"]])  # before the pong: the coordinator reads it after
                    party.send("pong", seq=msg["seq"], t=time.time())
                elif msg["op"] == "fire":
                    seen["fire"] = msg
            seen["acked"] = party.report({"host": name, "clients": []})
        finally:
            party.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, seen


def test_the_margin_is_three_times_the_slowest_probe_round_plus_a_millisecond():
    """Fan-outs set by hand. The clock reads 100.000 when round 1's pings go; a answers it 2 ms later, b 5 ms later:
    round 1 takes 5 ms, and round 2's pings go at 100.005. There a answers after 10 ms (100.015), b after 1 ms: 10 ms.
    Round 3 starts at 100.015: a after 4 ms, b after 7 ms (100.022): 7 ms. The slowest round is 10 ms, so the margin
    is 3 x 10 ms + 1 ms = 31 ms, and the instant lies 31 ms after the coordinator decided it."""
    clock = StillClock(100.0)
    sock = listener()
    coord = Coordinator(sock, TOKEN, ["a", "b"], clock() + 15.0, timeout=5.0, grace=2.0, wait_for_controller=False,
                        monotonic=clock)
    out = {}
    thread = threading.Thread(target=lambda: out.update(record=coord.run()), daemon=True)
    thread.start()
    port = sock.getsockname()[1]
    ta, seen_a = probed_party(port, "a", clock, {1: 100.002, 2: 100.015, 3: 100.019})
    tb, seen_b = probed_party(port, "b", clock, {1: 100.005, 2: 100.006, 3: 100.022})
    for t in (ta, tb, thread):
        t.join(20)
    assert not thread.is_alive(), "the coordinator did not end"
    record = out["record"]
    assert record["status"] == "ok", record["error"]
    fire = record["fire"]
    assert fire["probe_fanout_s"] == [0.005, 0.01, 0.007]
    assert fire["margin_s"] == 0.031
    assert fire["at"] - fire["decided_at"] == pytest.approx(0.031, abs=1e-6)  # the wall clock: ulps of 2.4e-7
    assert seen_a["fire"]["margin_s"] == seen_b["fire"]["margin_s"] == 0.031
    assert seen_a["acked"] and seen_b["acked"]


def test_a_fixed_instant_ignores_the_offsets():
    port, thread, out = coordinator(["a", "b"], start_at=time.time() + 1.0)
    ta, seen_a = fake_party(port, "a")
    tb, seen_b = fake_party(port, "b", skew=5.0)
    for t in (ta, tb, thread):
        t.join(15)
    assert seen_a["fire"]["at"] == seen_b["fire"]["at"] == out["record"]["fire"]["at"]


@pytest.mark.parametrize("instant", [float("inf"), float("nan")])
def test_a_coordinator_refuses_an_instant_that_is_not_one(instant):
    with pytest.raises(ValueError, match="start_at"):
        Coordinator(listener(), TOKEN, ["a"], time.monotonic() + 1, timeout=1.0, start_at=instant)


def test_another_runs_party_and_a_stranger_are_refused_and_listed():
    port, thread, out = coordinator(["a"])
    with socket.create_connection((ADDR, port)) as sock:
        sock.sendall(first_line("another run's token") + b'{"op":"hello","party":"a"}\n')
        assert Channel(sock).recv(5) == {"op": "refused", "error": "this rendezvous belongs to another run"}
    with pytest.raises(RendezvousError, match="'zz' is not a host of this step"):
        Party(ADDR, port, TOKEN, "zz").connect(time.monotonic() + 5)
    ta, seen = fake_party(port, "a")
    for t in (ta, thread):
        t.join(15)
    record = out["record"]
    assert record["status"] == "ok"
    assert [(r["peer"], r["reason"], r["count"]) for r in record["rejected"]] == [
        (ADDR, "another run's token", 1), (ADDR, "not a party of this step: 'zz'", 1)]


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


def test_a_channel_reads_a_long_line_without_rescanning_and_refuses_one_past_its_limit():
    a, b = socket.socketpair()
    channel = Channel(b, max_line=10_000)
    a.sendall(b'{"op":"x","pad":"' + b"y" * 5000)
    channel.fill()
    assert channel.messages() == [] and channel._scan == len(channel.buf)  # the next search starts past these bytes
    a.sendall(b'"}\n{"op":"z"}\n')
    channel.fill()
    assert [m["op"] for m in channel.messages()] == ["x", "z"]
    a.sendall(b"q" * 10_001)
    with pytest.raises(_rdv.ProtocolError, match="longer than 10000 bytes"):
        while True:
            channel.fill()
            channel.messages()
    a.close()
    b.close()


@pytest.mark.parametrize("line, why", [
    (b"[" * 100_000, "RecursionError"),
    (b"\xff\xfe not utf-8", "UnicodeDecodeError"),
    (b"{not json", "JSONDecodeError"),
    (b"[1, 2]", "no op"),
    (b'{"op": 5}', "no op"),
])
def test_whatever_a_line_holds_the_channel_gives_a_message_or_a_protocol_error(line, why):
    with pytest.raises(_rdv.ProtocolError, match=why):
        Channel.parse(line)


# -- attacks: each against a real coordinator while a real step goes on ------------------------------------------------
def _send_quietly(sock, data):
    try:
        sock.sendall(data)
    except OSError:
        pass  # the coordinator cut it off: that is the point


@pytest.mark.parametrize("attack, reason", [
    (b"GET / HTTP/1.1\r\nHost: sink\r\n\r\n", "not a rendezvous client of this version"),
    (b'{"op":"hello","party":"a","run":"' + run_id(TOKEN).encode() + b'"}\n',
     "not a rendezvous client of this version"),  # the old protocol's hello: no first line, never parsed
    (b"[" * 100_000 + b"\n", "a line longer than 1024 bytes"),
    (b"AFRV2 " + run_id(TOKEN).encode() + b" " + b"0" * 64 + b"\n", "a wrong token (its proof does not match"),
    (first_line("not this step's token"), "another run's token"),
])
def test_a_stranger_is_refused_before_anything_it_sent_is_parsed(attack, reason):
    port, thread, out = coordinator(["a", "b"])
    with socket.create_connection((ADDR, port)) as sock:
        _send_quietly(sock, attack)
        assert wait_closed(sock)
    record = run_step(port, thread, out)
    assert record["status"] == "ok", record["error"]
    listed = [r for r in record["rejected"] if r["reason"].startswith(reason)]
    assert listed and listed[0]["peer"] == ADDR and listed[0]["count"] == 1


def test_a_line_of_100000_brackets_from_a_peer_with_the_token_drops_that_peer_only():
    """The issue's attack with the token known: the JSON parser's RecursionError ends that connection, not the
    coordinator."""
    port, thread, out = coordinator(["a", "b"])
    with socket.create_connection((ADDR, port)) as sock:
        _send_quietly(sock, first_line(TOKEN) + b'{"control":true,"op":"hello"}\n' + b"[" * 100_000 + b"\n")
        assert wait_closed(sock)
    record = run_step(port, thread, out)
    assert record["status"] == "ok", record["error"]
    assert reasons(record) == {"not a rendezvous message (RecursionError)": 1}


def test_a_100_mb_line_is_cut_off_at_the_limits():
    """100 MB without a newline: a stranger is cut off after its first kilobytes; a peer with the token at the
    authenticated line limit (64 MiB). The step completes either way."""
    port, thread, out = coordinator(["a", "b"])
    chunk = b"x" * (1 << 20)

    def flood(prefix):
        with socket.create_connection((ADDR, port)) as sock:
            try:
                sock.sendall(prefix)
                for _chunk in range(100):
                    sock.sendall(chunk)
            except OSError:
                pass
            assert wait_closed(sock, 30)

    flood(b"")
    flood(first_line(TOKEN) + b'{"control":true,"op":"hello"}\n')
    record = run_step(port, thread, out)
    assert record["status"] == "ok", record["error"]
    assert reasons(record) == {"a line longer than 1024 bytes": 1,
                               "a line longer than %d bytes" % _rdv.MAX_LINE: 1}


def test_a_slow_trickle_is_dropped_at_the_connection_deadline_not_per_read():
    """One byte of a valid first line every 0.3 s: each read is quick, the whole line never comes in time."""
    port, thread, out = coordinator(["a", "b"])
    line = first_line(TOKEN)
    with socket.create_connection((ADDR, port)) as sock:
        sock.settimeout(0.3)
        closed = False
        for byte in line:
            try:
                sock.sendall(bytes([byte]))
                if sock.recv(1) == b"":
                    closed = True
                    break
            except socket.timeout:
                continue
            except OSError:
                closed = True
                break
        assert closed, "the trickle was never cut off"
    record = run_step(port, thread, out)
    assert record["status"] == "ok", record["error"]
    assert reasons(record) == {"no authenticated first line within 1 s of connecting": 1}


def test_a_peer_that_connects_and_never_speaks_is_dropped():
    port, thread, out = coordinator(["a", "b"])
    silent = [socket.create_connection((ADDR, port)) for _peer in range(3)]
    try:
        assert all(wait_closed(s) for s in silent)
    finally:
        for s in silent:
            s.close()
    record = run_step(port, thread, out)
    assert record["status"] == "ok", record["error"]
    assert reasons(record) == {"no authenticated first line within 1 s of connecting": 3}


def test_a_peer_with_the_token_that_never_says_hello_is_dropped_and_one_that_says_nonsense_too():
    port, thread, out = coordinator(["a", "b"])
    with socket.create_connection((ADDR, port)) as mute, socket.create_connection((ADDR, port)) as rude:
        mute.sendall(first_line(TOKEN))
        rude.sendall(first_line(TOKEN) + b'{"op":"result","result":{}}\n')
        assert wait_closed(mute) and wait_closed(rude)
    record = run_step(port, thread, out)
    assert record["status"] == "ok", record["error"]
    assert reasons(record) == {"no hello within 1 s of connecting": 1, "spoke ('result') before its hello": 1}


def _raise_nofile(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def _open_many(port, count):
    """``count`` connections opened as fast as the kernel takes them (non-blocking connects), held open."""
    socks = []
    for _peer in range(count):
        sock = socket.socket()
        sock.setblocking(False)
        err = sock.connect_ex((ADDR, port))
        if err not in (0, errno.EINPROGRESS):
            sock.close()
            break
        socks.append(sock)
    return socks


def test_2000_connections_do_not_keep_the_parties_out():
    soft = _raise_nofile(4400)
    count = min(2000, soft - 300)
    port, thread, out = coordinator(["a", "b"], arm_timeout=60.0)
    crowd = _open_many(port, count)
    try:
        # the parties come once the crowd fills the coordinator (strangers evicting strangers); the kernel hands the
        # rest over as their SYNs are retried, while the step runs
        end = time.monotonic() + 20
        live = out["coordinator"].record
        while live["rejected_total"] < 4 * _rdv.MAX_UNAUTHENTICATED and time.monotonic() < end:
            time.sleep(0.05)
        record = run_step(port, thread, out)
    finally:
        for sock in crowd:
            sock.close()
    assert record["status"] == "ok", record["error"]
    assert len(crowd) == count
    evicted = sum(n for r, n in reasons(record).items() if r.startswith("evicted:"))
    assert evicted >= 3 * _rdv.MAX_UNAUTHENTICATED  # at most MAX_UNAUTHENTICATED strangers waited at once
    assert len(record["rejected"]) <= 32 and record["rejected_total"] <= count
    assert record["rejected_total"] == sum(r["count"] for r in record["rejected"]) + record["rejected_unlisted"]


def test_accept_out_of_file_descriptors_is_survived_without_a_busy_loop():
    """The coordinator in a child whose descriptor limit is low (RLIMIT_NOFILE): strangers exhaust it, accept()
    fails with EMFILE, the strangers are dropped, the listener rests - and the parties still get in."""
    sock = listener()
    port = sock.getsockname()[1]

    def work(_write_fd):
        used = len(os.listdir("/proc/self/fd"))
        resource.setrlimit(resource.RLIMIT_NOFILE, (used + 16, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        coord = Coordinator(sock, TOKEN, ["a", "b"], time.monotonic() + 20, timeout=5.0, grace=2.0,
                            wait_for_controller=False)
        record = coord.run()
        return {"status": record["status"], "error": record["error"], "rejected": record["rejected"],
                "accept_errors": record["accept_errors"], "cpu_s": sum(os.times()[:2])}

    child, read_fd = fork_in_namespace(None, work)
    sock.close()
    crowd = _open_many(port, 60)
    try:
        time.sleep(0.5)
        threads = [fake_party(port, p)[0] for p in ("a", "b")]
        for t in threads:
            t.join(30)
        record = gather(child, read_fd)
    finally:
        for s in crowd:
            s.close()
    assert record["status"] == "ok", record
    assert record["accept_errors"] >= 1
    assert any(r["reason"].startswith("dropped before it authenticated: the coordinating host ran out of file "
                                      "descriptors (EMFILE)") for r in record["rejected"]), record["rejected"]
    print("coordinator CPU through the EMFILE storm: %.2f s" % record["cpu_s"])


# -- after the fire -----------------------------------------------------------------------------------------------
def test_an_abort_after_the_fire_reaches_every_party_and_keeps_what_they_report():
    port, thread, out = coordinator(["a", "b"])
    ta, seen_a = fake_party(port, "a", until_abort=True)
    tb, seen_b = fake_party(port, "b", until_abort=True)
    end = time.monotonic() + 15
    while not ("fire" in seen_a and "fire" in seen_b) and time.monotonic() < end:
        time.sleep(0.05)
    assert control_abort(ADDR, port, TOKEN, "the operator stopped the step") is True
    for t in (ta, tb, thread):
        t.join(20)
    record = out["record"]
    assert seen_a["abort_after_fire"] == seen_b["abort_after_fire"] == "the operator stopped the step"
    assert record["status"] == "failed" and "the operator stopped the step" in record["error"]
    assert set(record["hosts"]) == {"a", "b"}  # they reported what they had


def test_acknowledged_means_on_the_coordinators_disk(tmp_path):
    store = str(tmp_path / "results")
    os.makedirs(store)
    hold = threading.Event()
    port, thread, out = coordinator(["a", "b"], store=store)
    ta, seen_a = fake_party(port, "a", result={"host": "a", "bytes": 1})
    tb, seen_b = fake_party(port, "b", hold=hold)
    ta.join(15)
    # a is acknowledged while the step still runs (b holds): its result is on disk, whole
    assert seen_a["acked"] is True and seen_a["durable"] is True
    with open(os.path.join(store, "host-a.json")) as handle:
        stored = json.load(handle)
    assert stored["party"] == "a" and stored["result"] == {"host": "a", "bytes": 1} and stored["run"] == run_id(TOKEN)
    with open(os.path.join(store, "step.json")) as handle:
        assert json.load(handle)["parties"] == ["a", "b"]
    hold.set()
    for t in (tb, thread):
        t.join(15)
    assert out["record"]["status"] == "ok" and out["record"]["stored"] == ["a", "b"]


class _CrashAfterTwo(Coordinator):
    """A coordinator with a bug that strikes once two results are in (outside any peer's message)."""

    def _answer_watchers(self):
        if len(self.results) >= 2:
            raise RuntimeError("a bug in the coordinator")
        super()._answer_watchers()


def test_a_coordinator_that_crashes_still_returns_every_result_it_had(tmp_path):
    store = str(tmp_path / "results")
    os.makedirs(store)
    hold = threading.Event()
    port, thread, out = coordinator(["a", "b", "c"], store=store, cls=_CrashAfterTwo)
    ta, seen_a = fake_party(port, "a")
    tb, seen_b = fake_party(port, "b")
    tc, seen_c = fake_party(port, "c", hold=hold)
    for t in (ta, tb, thread):
        t.join(20)
    hold.set()
    tc.join(15)
    record = out["record"]
    assert record["status"] == "error"
    assert record["error"].startswith("the coordinator crashed: RuntimeError('a bug in the coordinator')")
    assert set(record["hosts"]) == {"a", "b"} and sorted(record["stored"]) == ["a", "b"]
    assert record["parties"]["c"]["lost"] == "the coordinator crashed before its result"
    assert seen_c["acked"] is False  # c was told, or found the rendezvous gone; its result stays on its host


def test_a_coordinator_killed_after_two_of_three_acks_leaves_both_results_for_collect(tmp_path):
    """SIGKILL of the process running the coordinator (a forked child) after a and b were acknowledged: collect()
    assembles a record from what it stored - a's and b's results, and c named as lost."""
    state_dir = str(tmp_path)
    run = run_id(TOKEN)
    store = step_results_dir(state_dir, run)
    os.makedirs(store)
    sock = listener()
    port = sock.getsockname()[1]

    def work(_write_fd):
        Coordinator(sock, TOKEN, ["a", "b", "c"], time.monotonic() + 20, timeout=30.0, grace=2.0,
                    wait_for_controller=False, store=store).run()
        return {"status": "ended"}

    child, read_fd = fork_in_namespace(None, work)
    sock.close()
    _result_path, pid_path = step_paths(state_dir, run, "a")
    with open(pid_path, "w") as handle:  # what start() writes for the coordinating host's part
        json.dump(pid_record(child, run), handle)
    hold = threading.Event()
    ta, seen_a = fake_party(port, "a", result={"host": "a", "clients": [{"flow_id": "a", "bytes": 10}]})
    tb, seen_b = fake_party(port, "b", result={"host": "b", "clients": [{"flow_id": "b", "bytes": 20}]})
    tc, seen_c = fake_party(port, "c", hold=hold)
    try:
        ta.join(20)
        tb.join(20)
        assert seen_a["acked"] and seen_b["acked"] and seen_a["durable"] and seen_b["durable"]
    finally:
        os.kill(child, signal.SIGKILL)
        gather(child, read_fd)
        hold.set()
    tc.join(20)
    assert seen_c.get("acked") is not True
    part = _step.HostPart(party="a", token=TOKEN, engine="tcp", step="s1",
                          rendezvous={"host": "a", "address": ADDR, "port": port, "parties": ["a", "b", "c"],
                                      "expected_flows": {"a": ["a"], "b": ["b"], "c": ["c"]}})
    record = _step.collect(part, state_dir, wait=10)
    assert record["status"] == "failed" and record["recovered"] is True
    assert record["hosts"] == {"a": {"host": "a", "clients": [{"flow_id": "a", "bytes": 10}]},
                               "b": {"host": "b", "clients": [{"flow_id": "b", "bytes": 20}]}}
    assert record["survived"] == ["a", "b"] and record["lost"] == ["c"]
    assert "a, b survived" in record["error"] and "lost: c" in record["error"]
    assert record["parties"]["c"]["lost"] and "armed_at" in record["parties"]["a"]
    assert record["expected_flows"] == {"a": ["a"], "b": ["b"], "c": ["c"]} and record["step"] == "s1"
    assert record["fire"]["at"] > 0  # the header written at the fire survived too
    assert os.path.isdir(store)  # kept for a re-run of collect ...
    assert _step.collect(part, state_dir, wait=5)["hosts"] == record["hosts"]
    stopped = _step.stop(part, state_dir)  # ... and the failed step's cleanup removes it
    assert stopped["step"]["survived"] == ["a", "b"] and stopped["signal"] is None
    assert os.listdir(state_dir) == []
