# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rendezvous of a synchronized step: every host arms, one coordinator fires them all at one instant.

One host of the step (the sink, by default) runs the coordinator on its lab address; every host's part of the step
(``step.py``) is a *party* that connects to it over the lab network, the same way in the netns lab, between VMs and on
real hardware.

Every connection starts with one bounded line (at most ``FIRST_LINE_MAX`` bytes) that proves the peer holds the
step's token, checked before anything else the peer sent is parsed::

    AFRV2 <run> <proof>\\n     run: the run id (a hash of the token); proof: HMAC-SHA256(token, "aifabric.lab
                              rendezvous 2 " + run), hex. Compared with hmac.compare_digest.

Only then come JSON lines on the same connection::

    party -> coordinator   hello {party, pid}                the host's name (answered with welcome, or refused)
                           armed {t, flows}              every flow of the host is connected and admitted
                           arm_failed {error}            a flow could not be armed (fails the step at once)
                           pong {seq, t}                 answer to a ping, with the party's clock
                           progress {t, flows}           each flow's latest interval sample, twice a second
                                                         while the flows run (only when the controller watches)
                           result {result}               the host's results, at the end
    coordinator -> party   welcome                       the party is in the step
                           ping {seq}                    the probe rounds, once everybody armed
                           fire {at, at_coordinator, offset_s, margin_s, progress}
                           abort {error}                 the step will not run, or must end now (also after the fire)
                           ack {durable}                 the result is safe with the coordinator (durable: on its disk)
    control -> coordinator hello {control: true}, then abort {error}, collecting (the controller only waits
                           from now on: the step may fire), watch / progress (the same, and the answer is the
                           step's progress: watch once the flows have run PROGRESS_HOLD s, progress at once)

Everything a peer sends is hostile until its first line checks out: a peer that does not authenticate within
``HELLO_DEADLINE`` seconds, sends a longer first line, another run's id or a wrong proof, or anything the coordinator
cannot read (bad UTF-8, bad JSON, JSON nested too deep, a message without an op) is dropped - that peer only - and
listed in the record's ``rejected`` (address, reason, count). At most ``MAX_UNAUTHENTICATED`` connections wait for
their first line at once (a newer one evicts the oldest), at most ``MAX_CONTROL`` control connections are open, an
authenticated line may be ``MAX_LINE`` bytes; when ``accept()`` runs out of file descriptors the coordinator drops
every unauthenticated connection and stops accepting for ``ACCEPT_PAUSE`` s (no busy loop in a real-time thread).
A stray peer never fails a step.

Once every expected party has armed, the coordinator sends ``ping`` to all of them at once, ``PROBES`` times, and
measures how long the slowest answer takes (the fan-out) and each party's clock offset (NTP's midpoint estimate,
from its fastest round). The start instant is then *now + margin*, the margin three times the slowest fan-out (plus
a millisecond): measured on this lab at this moment, never a constant to tune. Each party gets the instant in its
own clock (coordinator instant + its offset), so hosts whose clocks disagree (VMs, labs without PTP) still start
together. With a fixed ``start_at`` (labs whose clocks are PTP-synchronized), every party gets that instant as it is.

A party that does not arm by the arm deadline, fails to arm, or whose process ends fails the step before anything
is sent: the coordinator aborts every party with the reason, naming the hosts. An abort after the fire (the
controller's, or the coordinator's own when it crashes or gives up) reaches every party that has not reported.

Acknowledged means durable: with a ``store`` directory, each host's result is written there (atomically, fsynced)
before its ``ack``; a coordinator that dies leaves them for ``step.collect`` to assemble a record from.

Every deadline is on the monotonic clock; the wall clock is only the start instant and the timestamps in the record.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import math
import os
import selectors
import socket
import time
import traceback

from .._atomic import write_text
from .._proc import identity
from .clock import set_normal, set_realtime
from .refusals import Refusals
from .refusals import short as _short
from .state import step_header_path, step_stored_result_path

__all__ = ["Channel", "Coordinator", "Party", "ProtocolError", "RendezvousError", "control_abort",
           "control_collect", "control_progress", "first_line", "limits", "run_id", "PROBES", "PROGRESS_HOLD"]

PROBES = 3
_PING_WAIT = 5.0  # seconds the coordinator waits for every pong of one round
MAGIC = b"AFRV2"
FIRST_LINE_MAX = 1024  # bytes: the authenticating first line (about 110 in practice)
MAX_LINE = 64 * 1024 * 1024  # an authenticated message: a host's result with many samples stays far below this
MAX_CONN_BYTES = 1024 * 1024 * 1024  # everything one authenticated connection may send over a step
HELLO_DEADLINE = 3.0  # s from accept() to the first line and the hello
MAX_UNAUTHENTICATED = 64  # connections waiting for their first line at once (a newer one evicts the oldest)
MAX_CONTROL = 16  # control connections open at once (the controller uses one or two)
ACCEPT_PAUSE = 0.25  # s the listener is not selected after accept() ran out of file descriptors
ACCEPT_BATCH = 32  # connections accepted per wake-up
ABORT_GRACE = 10.0  # s the coordinator waits for the parties' results after an abort
_PROOF_LABEL = b"aifabric.lab rendezvous 2 "
_NO_FD = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


def limits():
    """The limits in force (the record carries them)."""
    return {"first_line_max_bytes": FIRST_LINE_MAX, "max_line_bytes": MAX_LINE, "max_connection_bytes": MAX_CONN_BYTES,
            "hello_deadline_s": HELLO_DEADLINE, "max_unauthenticated": MAX_UNAUTHENTICATED, "max_control": MAX_CONTROL,
            "accept_pause_s": ACCEPT_PAUSE}


PROGRESS_HOLD = 0.3  # s after the instant before the first progress answer (the flows are under way by then)
SEND_TIMEOUT = 10.0  # s a message may take to leave (the peer reads all the time; a stuck one is given up on)


class RendezvousError(Exception):
    """The rendezvous cannot go on; the message says why."""


class ProtocolError(EOFError):
    """A peer sent what the rendezvous cannot read; the connection is given up (an EOFError: it is over)."""


def run_id(token):
    """The run id of ``token`` (the same as the flow servers' ``server.run_id``): never the token itself."""
    return hashlib.sha256(token.encode("utf-8")).digest()[:16].hex()


def _proof(token, run):
    return hmac.new(token.encode("utf-8"), _PROOF_LABEL + run.encode("ascii"), hashlib.sha256).hexdigest()


def first_line(token):
    """The line that opens every connection to the rendezvous of ``token``'s step."""
    run = run_id(token)
    return b"%s %s %s\n" % (MAGIC, run.encode("ascii"), _proof(token, run).encode("ascii"))


def _now():
    return time.monotonic()


class Channel:
    """JSON lines over a TCP socket. Reading is bounded (``max_line``) and defensive: whatever a line holds, the
    caller gets a dict with a string ``op`` or a ProtocolError."""

    def __init__(self, sock, max_line=MAX_LINE):
        self.sock = sock
        self.buf = bytearray()
        self.max_line = max_line
        self._scan = 0  # where the search for the next newline resumes (no quadratic rescans of a long line)
        self.received = 0

    def send(self, op, **fields):
        fields["op"] = op
        # not the timeout a last recv() left (a progress poll's can be a millisecond): a host's whole result goes out
        self.sock.settimeout(SEND_TIMEOUT)
        self.sock.sendall(json.dumps(fields, separators=(",", ":"), sort_keys=True).encode("utf-8") + b"\n")

    def take_line(self):
        """The next complete line in the buffer (without its newline), or None; ProtocolError past ``max_line``."""
        index = self.buf.find(b"\n", self._scan)
        if index < 0:
            self._scan = len(self.buf)
            if len(self.buf) > self.max_line:
                raise ProtocolError("a line longer than %d bytes" % self.max_line)
            return None
        if index > self.max_line:
            raise ProtocolError("a line longer than %d bytes" % self.max_line)
        line = bytes(self.buf[:index])
        del self.buf[:index + 1]
        self._scan = 0
        return line

    @staticmethod
    def parse(line):
        """One line as a message; ProtocolError for anything else (bad UTF-8, bad or too deeply nested JSON...)."""
        try:
            msg = json.loads(line.decode("utf-8"))
        except Exception as exc:  # noqa: BLE001  ValueError, UnicodeError, RecursionError: all the peer's doing
            raise ProtocolError("not a rendezvous message (%s)" % type(exc).__name__) from None
        if not isinstance(msg, dict) or not isinstance(msg.get("op"), str):
            raise ProtocolError("not a rendezvous message (no op)")
        return msg

    def fill(self, size=1 << 20):
        """Read what the socket has (it is readable); EOFError when it closed."""
        data = self.sock.recv(size)
        if not data:
            raise EOFError("connection closed")
        self.received += len(data)
        self.buf += data

    def messages(self):
        """Every complete message in the buffer."""
        out = []
        while True:
            line = self.take_line()
            if line is None:
                return out
            out.append(self.parse(line))

    def feed(self):
        """Read what the socket has (it is readable) and return the complete messages; EOFError when it closed."""
        self.fill()
        return self.messages()

    def recv(self, timeout):
        """The next message, or None at ``timeout`` seconds; EOFError when the connection closed."""
        end = _now() + timeout
        while True:
            line = self.take_line()
            if line is not None:
                return self.parse(line)
            left = end - _now()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                self.fill()
            except socket.timeout:
                return None

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class _Conn:
    def __init__(self, sock, peer, accepted):
        self.channel = Channel(sock, max_line=FIRST_LINE_MAX)
        self.peer = peer
        self.accepted = accepted
        self.deadline = accepted + HELLO_DEADLINE  # for the first line and the hello; None once it said hello
        self.authenticated = False
        self.party = None
        self.control = False
        self.closed = False
        self.pending = []  # messages read but not yet handled (a phase ended in the middle of a batch)


class Coordinator:
    """Arms, probes, fires and collects one step. ``run()`` returns the step's record (also when it failed, and when
    it crashed). ``token``: the step's token (the peers prove they hold it); ``store``: a directory where each host's
    result is written before it is acknowledged (None: results are kept in memory only)."""

    def __init__(self, listener, token, parties, arm_deadline, timeout, start_at=None, grace=30.0,
                 clock=time.time, wait_for_controller=True, store=None, monotonic=_now):
        if start_at is not None and not math.isfinite(start_at):
            raise ValueError("start_at: %r is not an instant" % (start_at,))
        self.listener = listener
        self.listener.setblocking(False)
        self.token = token
        self.run_id = run_id(token)
        self._first_line = first_line(token).rstrip(b"\n")
        self.expected = list(parties)
        self.arm_deadline = arm_deadline  # on the monotonic clock
        self.timeout = timeout
        self.start_at = start_at
        self.grace = grace
        self.wait_for_controller = wait_for_controller
        self.controller_at = None
        self.clock = clock
        self.mono = monotonic
        self.store = store
        self.sel = selectors.DefaultSelector()
        self.conns = {}
        self.by_party = {}
        self.info = {p: {} for p in self.expected}
        self.results = {}
        self.errors = []
        self.abort_reason = None  # an abort asked for (by the controller) or decided (by the coordinator)
        self.abort_sent = False
        self.abort_error = None  # what the parties were told when the step was aborted (a late one is told too)
        self.fire_mono = None  # the instant on the monotonic clock (for the watchers)
        self.listener_paused_until = None
        self.progress = {}  # party -> its flows' latest interval samples, while they run (only when watched)
        self.watchers = []  # the controller's "watch" connections, answered once the flows have run a moment
        self.watched = False
        self.record = {"run": self.run_id, "coordinator_pid": os.getpid(), "coordinator": identity(),
                       "parties": self.info, "hosts": self.results, "accept_errors": 0, "limits": limits(),
                       "stored": [], "store_errors": {}, "mode": "fixed" if start_at is not None else "rendezvous",
                       "status": "error", "error": None, "started_at": clock()}
        self.refusals = Refusals(self.record, clock=clock)  # record: rejected, rejected_total, rejected_unlisted

    # -- plumbing ---------------------------------------------------------------------------------------------
    def _send(self, conn, op, **fields):
        try:
            conn.channel.send(op, **fields)
            return True
        except OSError:
            return False

    @staticmethod
    def _tell(conn, op, **fields):
        """A short message to a peer that is not trusted: never blocks (what does not fit in its buffer is lost)."""
        fields["op"] = op
        try:
            conn.channel.sock.send(json.dumps(fields, sort_keys=True).encode("utf-8") + b"\n", socket.MSG_DONTWAIT)
        except OSError:
            pass

    def _drop(self, conn):
        if conn.closed:
            return
        conn.closed = True
        try:
            self.sel.unregister(conn.channel.sock)
        except (KeyError, ValueError):
            pass
        conn.channel.close()
        self.conns.pop(conn.channel.sock, None)
        if conn in self.watchers:
            self.watchers.remove(conn)

    def _reject(self, peer, reason):
        """List a refused peer: one entry per (address, reason), with a count; past the list's size, counted only."""
        self.refusals.add(peer, reason)

    def _refuse(self, conn, reason, tell=None):
        """Drop ``conn``, list it as refused; ``tell``: what the peer is told (best effort, never blocking)."""
        self._reject(conn.peer, reason)
        if tell:
            self._tell(conn, "refused", error=tell)
        self._drop(conn)

    def _unauthenticated(self):
        return [c for c in self.conns.values() if c.deadline is not None]

    def _accept(self):
        for _attempt in range(ACCEPT_BATCH):
            try:
                sock, address = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                self.record["accept_errors"] += 1
                if exc.errno in _NO_FD:
                    # out of descriptors: those waiting for their first line go (a real party reconnects), and the
                    # listener rests, so that a real-time thread does not spin on a readable listener
                    why = "dropped before it authenticated: the coordinating host ran out of file descriptors (%s)" % (
                        errno.errorcode.get(exc.errno, exc.errno))
                    for conn in self._unauthenticated():
                        self._refuse(conn, why)
                self._pause_listener()
                return
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
            waiting = self._unauthenticated()
            if len(waiting) >= MAX_UNAUTHENTICATED:
                oldest = min(waiting, key=lambda c: c.accepted)
                self._refuse(oldest, "evicted: %d connections were waiting for their first line" % len(waiting))
            conn = _Conn(sock, address[0], self.mono())
            self.conns[sock] = conn
            self.sel.register(sock, selectors.EVENT_READ, conn)

    def _pause_listener(self):
        if self.listener_paused_until is None:
            try:
                self.sel.unregister(self.listener)
            except (KeyError, ValueError):
                pass
        self.listener_paused_until = self.mono() + ACCEPT_PAUSE

    def _resume_listener(self, now):
        if self.listener_paused_until is not None and now >= self.listener_paused_until:
            self.listener_paused_until = None
            self.sel.register(self.listener, selectors.EVENT_READ, None)

    def _expire(self, now):
        """Drop the connections that did not authenticate and say hello within HELLO_DEADLINE."""
        for conn in self._unauthenticated():
            if now >= conn.deadline:
                self._refuse(conn, "no %s within %.0f s of connecting" % (
                    "hello" if conn.authenticated else "authenticated first line", HELLO_DEADLINE))

    def _authenticate(self, conn, line):
        """Check the first line (the token's proof); True when the peer may go on."""
        parts = line.split(b" ")
        if len(parts) != 3 or parts[0] != MAGIC:
            self._refuse(conn, "not a rendezvous client of this version (its first line is not %s <run> <proof>)"
                         % MAGIC.decode())
            return False
        expected = self._first_line.split(b" ")
        if not hmac.compare_digest(parts[1], expected[1]):
            self._refuse(conn, "another run's token", tell="this rendezvous belongs to another run")
            return False
        if not hmac.compare_digest(parts[2], expected[2]):
            self._refuse(conn, "a wrong token (its proof does not match this run's)",
                         tell="wrong token for this run")
            return False
        conn.authenticated = True
        conn.channel.max_line = MAX_LINE
        return True

    def _read(self, conn):
        """Read from a readable connection; its complete messages (none before it authenticated)."""
        channel = conn.channel
        channel.fill(4096 if not conn.authenticated else 1 << 20)
        if channel.received > MAX_CONN_BYTES:
            raise ProtocolError("more than %d bytes on one connection" % MAX_CONN_BYTES)
        if not conn.authenticated:
            line = channel.take_line()
            if line is None or not self._authenticate(conn, line):
                return []
        return channel.messages()

    def _poll(self, until, on_message):
        """Serve the sockets until ``until`` (monotonic s) or until ``on_message`` returns True."""
        while True:
            for conn in list(self.conns.values()):
                while conn.pending and not conn.closed:
                    if self._handle(conn, conn.pending.pop(0), on_message):
                        return True
            now = self.mono()
            left = until - now
            if left <= 0:
                return False
            self._resume_listener(now)
            self._answer_watchers()
            wait = min(left, 0.05 if self.watchers else 0.5)
            waiting = [c.deadline for c in self._unauthenticated()]
            if waiting:
                wait = min(wait, max(0.0, min(waiting) - now) + 0.001)
            if self.listener_paused_until is not None:
                wait = min(wait, max(0.0, self.listener_paused_until - now) + 0.001)
            for key, _mask in self.sel.select(wait):
                if key.fileobj is self.listener:
                    self._accept()
                    continue
                conn = key.data
                if conn.closed:
                    continue
                try:
                    messages = self._read(conn)
                except ProtocolError as exc:
                    self._refuse(conn, str(exc))
                    if conn.party and self._closed(conn, "it sent %s" % exc):
                        return True
                    continue
                except (EOFError, OSError) as exc:
                    if conn.deadline is not None:
                        self._reject(conn.peer, "closed the connection before its hello")
                    self._drop(conn)
                    if conn.party and self._closed(conn, str(exc)):
                        return True
                    continue
                conn.pending.extend(messages)
                while conn.pending and not conn.closed:
                    if self._handle(conn, conn.pending.pop(0), on_message):
                        return True
            # after what was readable was read: a coordinator that could not run for a while (a busy guest) does not
            # drop a peer whose first line has been waiting in its buffer
            self._expire(self.mono())

    def _handle(self, conn, msg, on_message):
        """One message; whatever it does to the coordinator's code is that peer's fault: the peer is dropped."""
        try:
            return self._message(conn, msg, on_message)
        except Exception as exc:  # noqa: BLE001  a message that breaks the handling drops its sender only
            self._refuse(conn, "a message the coordinator could not handle (%s: %s)" % (type(exc).__name__, exc))
            if conn.party:
                return self._closed(conn, "its %r message could not be handled (%s: %s)"
                                    % (msg.get("op"), type(exc).__name__, exc))
            return False

    def _message(self, conn, msg, on_message):
        op = msg["op"]
        if conn.deadline is not None:  # authenticated, not yet said hello
            if op != "hello":
                self._refuse(conn, "spoke (%r) before its hello" % _short(op, 40))
                return False
            if msg.get("control"):
                controls = sum(1 for c in self.conns.values() if c.control)
                if controls >= MAX_CONTROL:
                    self._refuse(conn, "more than %d control connections" % MAX_CONTROL, tell="too many connections")
                    return False
                conn.control = True
                conn.deadline = None
                return False
            party = msg.get("party")
            if not isinstance(party, str) or party not in self.info:
                self._refuse(conn, "not a party of this step: %r" % (_short(party, 80),),
                             tell="%r is not a host of this step (expected: %s)" % (
                                 _short(party, 80), ", ".join(self.expected)))
                return False
            if party in self.by_party:
                self._refuse(conn, "second connection for %s" % party, tell="%s is already connected" % party)
                return False
            conn.party = party
            conn.deadline = None
            self.by_party[party] = conn
            pid = msg.get("pid")
            self.info[party].update(connected_at=self.clock(), peer=conn.peer,
                                    pid=pid if isinstance(pid, int) and not isinstance(pid, bool) else None)
            self._send(conn, "welcome")
            if self.abort_error is not None:
                # the step was aborted before this party came: it is told at once (else it would wait for a fire),
                # and what it reports is waited for like the others'
                self._send(conn, "abort", error=self.abort_error)
                self.info[party]["abort_sent_at"] = self.clock()
                if self.info[party].get("lost") == "never reached the rendezvous":
                    del self.info[party]["lost"]
            return on_message(conn, msg)
        if conn.control and op == "abort":
            self._abort_asked(_short(msg.get("error") or "aborted by the controller", 2000))
            self._send(conn, "ack")
            return True
        if conn.control and op in ("watch", "progress"):
            # the controller shows the step's progress (and, like "collecting", only waits from now on): "watch" is
            # answered once the flows have run PROGRESS_HOLD s (so that the asking process is asleep at the instant),
            # "progress" at once
            self.watched = True
            if self.controller_at is None:
                self.controller_at = self.clock()
            if op == "watch":
                self.watchers.append(conn)
                self._answer_watchers()
            else:
                self._send(conn, "progress", **self._progress())
            return on_message(conn, msg)
        if conn.party is not None and op == "progress":
            flows = msg.get("flows")
            self.progress[conn.party] = {"t": msg.get("t"), "flows": flows if isinstance(flows, dict) else {}}
            return False
        if conn.control and op == "collecting":
            # the controller's collect task is running (and from now on only waits): the step may fire
            self.controller_at = self.clock()
            self._send(conn, "ack")
            return on_message(conn, msg)
        if conn.party is None:
            self._refuse(conn, "a control connection sent %r" % _short(op, 40))
            return False
        return on_message(conn, msg)

    def _abort_asked(self, reason):
        self.errors.append(reason)
        if self.abort_reason is None:
            self.abort_reason = reason

    def _progress(self):
        """What the controller's progress query gets: the phase, the instant, each party's latest samples."""
        fire = self.record.get("fire") or {}
        phase = ("ended" if self._settled() and self.results else "running" if fire else "arming")
        return {"phase": phase, "now": self.clock(), "fire_at": fire.get("at"), "expected": self.expected,
                "done": sorted(self.results), "parties": self.progress, "errors": list(self.errors)}

    def _answer_watchers(self):
        if not self.watchers:
            return
        if not (self.fire_mono is not None and self.mono() >= self.fire_mono + PROGRESS_HOLD) and not self.errors:
            return
        for conn in self.watchers:
            self._send(conn, "progress", **self._progress())
        self.watchers = []

    def _closed(self, conn, why):
        """A party's connection ended. Before its result, that fails the step."""
        if conn.party in self.results:
            return False
        self.info[conn.party]["lost"] = why
        self.errors.append("%s: its step process ended without a result (%s)" % (conn.party, why))
        return True

    def _abort_all(self, error):
        self.abort_sent = True
        self.abort_error = error
        for party in self.expected:
            conn = self.by_party.get(party)
            if conn is not None and not conn.closed and party not in self.results:
                if self._send(conn, "abort", error=error):
                    self.info[party]["abort_sent_at"] = self.clock()

    # -- the durable store ------------------------------------------------------------------------------------
    def _write(self, path, data):
        write_text(path, json.dumps(data, sort_keys=True, separators=(",", ":")), mode=0o600)
        try:  # the rename itself on disk too (the file's data is, before the rename)
            fd = os.open(os.path.dirname(path), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError:
            pass

    def _header(self):
        if self.store is None:
            return
        try:
            self._write(step_header_path(self.store), {
                "run": self.run_id, "parties": self.expected, "started_at": self.record["started_at"],
                "mode": self.record["mode"], "fire": self.record.get("fire"),
                "coordinator": self.record["coordinator"]})
        except OSError as exc:
            self.record["store_errors"]["step"] = "%s: %s" % (type(exc).__name__, exc)

    def _persist(self, party, result):
        """Write ``party``'s result to the store (before its ack); True when it is on disk."""
        if self.store is None:
            return False
        try:
            self._write(step_stored_result_path(self.store, party), {
                "run": self.run_id, "party": party, "result": result, "info": dict(self.info[party]),
                "stored_at": self.clock()})
        except (OSError, ValueError) as exc:
            self.info[party]["store_error"] = self.record["store_errors"][party] = "%s: %s" % (type(exc).__name__, exc)
            return False
        self.record["stored"].append(party)
        return True

    # -- phases -----------------------------------------------------------------------------------------------
    def _arm(self):
        def on_message(conn, msg):
            if msg["op"] == "armed":
                flows = msg.get("flows")
                self.info[conn.party].update(armed_at=self.clock(), flows=flows if isinstance(flows, list) else None)
            elif msg["op"] == "arm_failed":
                self.info[conn.party]["arm_error"] = _short(msg.get("error"), 4000)
                self.errors.append("%s could not arm: %s" % (conn.party, self.info[conn.party]["arm_error"]))
                return True
            elif msg["op"] == "result":
                self._store(conn, msg)
                self.errors.append("%s ended before the step was fired: %s" % (
                    conn.party, self.results[conn.party].get("error")))
                return True
            return ready()

        def ready():
            return all("armed_at" in self.info[p] for p in self.expected) and (
                self.controller_at is not None or not self.wait_for_controller)

        if ready():
            return True
        if self._poll(self.arm_deadline, on_message):
            return not self.errors
        missing = [p for p in self.expected if "armed_at" not in self.info[p]]
        now = self.clock()
        if not missing:
            self.errors.append("every host armed, but the controller did not come to collect the step within the arm "
                               "timeout (%.1f s after the rendezvous opened): was the collect task run?"
                               % (now - self.record["started_at"]))
            return False
        for party in missing:
            self.info[party]["not_armed"] = True
        armed = len(self.expected) - len(missing)
        self.errors.append(
            "%s did not arm within the arm timeout (%.1f s after the rendezvous opened; %d of %d hosts armed): %s"
            % (", ".join(missing), now - self.record["started_at"], armed, len(self.expected),
               "; ".join("%s %s" % (p, "connected but its flows did not arm" if "connected_at" in self.info[p]
                                    else "never reached the rendezvous") for p in missing)))
        return False

    def _probe(self):
        fanouts = []
        for seq in range(1, PROBES + 1):
            sent = {}
            for party in self.expected:
                sent[party] = self.mono()
                if not self._send(self.by_party[party], "ping", seq=seq):
                    self.errors.append("%s: its step process ended without a result (the rendezvous connection "
                                       "failed during the probe)" % party)
                    return None
            answered = {}
            on_message = self._pong_handler(seq, sent, answered)
            start = min(sent.values())
            self._poll(self.mono() + _PING_WAIT, on_message)
            if self.errors:
                return None
            if len(answered) < len(self.expected):
                late = [p for p in self.expected if p not in answered]
                self.errors.append("%s did not answer the rendezvous probe within %.0f s"
                                   % (", ".join(late), _PING_WAIT))
                return None
            fanouts.append(max(answered.values()) - start)
        return fanouts

    def _pong_handler(self, seq, sent, answered):
        """The message handler of probe round ``seq``: each pong gives a round trip and a clock offset (NTP's
        midpoint estimate); the fastest round trip's offset is kept. The round trip is timed on the monotonic clock,
        the offset against the wall clock read at the same moments."""
        def on_message(conn, msg):
            if msg["op"] == "pong" and msg.get("seq") == seq:
                now = self.mono()
                wall = self.clock()
                t = float(msg["t"])
                if not math.isfinite(t):
                    raise ValueError("its clock reads %r" % (msg["t"],))
                rtt = now - sent[conn.party]
                offset = t - (wall - rtt + wall) / 2  # the midpoint of the round trip, on the wall clock
                answered[conn.party] = now
                best = self.info[conn.party].get("rtt_s")
                if best is None or rtt < best:
                    self.info[conn.party].update(rtt_s=round(rtt, 6), offset_s=round(offset, 6))
            elif msg["op"] in ("result", "arm_failed"):
                self.errors.append("%s left during the probe: %s" % (conn.party, msg.get("error") or (
                    msg.get("result") if isinstance(msg.get("result"), dict) else {}).get("error")))
                if msg["op"] == "result":
                    self._store(conn, msg)
                return True
            return len(answered) == len(self.expected)

        return on_message

    def _store(self, conn, msg):
        result = msg.get("result")
        if not isinstance(result, dict):
            result = {"status": "error", "error": "the host sent a result that is not a mapping: %s"
                      % _short(repr(result), 200)}
        self.results[conn.party] = result
        self.info[conn.party]["result_at"] = self.clock()
        durable = self._persist(conn.party, result)
        self.info[conn.party]["ack_durable"] = durable
        self._send(conn, "ack", durable=durable)

    def _settled(self):
        return all(p in self.results or "lost" in self.info[p] for p in self.expected)

    def _collect(self, until):
        """Results until every party has sent one or is lost, or ``until``. After the fire, a lost host does not end
        the others' flows: the step is failed either way, and what they measure is kept. An abort (the
        controller's) is passed on to every party that has not reported; they answer with what they have."""
        def on_message(conn, msg):
            if msg["op"] == "result":
                self._store(conn, msg)
            return self._settled()

        timed_out = False
        while not self._settled():
            if self.abort_reason is not None and not self.abort_sent:
                self._abort_all(self.abort_reason)
                until = min(until, self.mono() + ABORT_GRACE)
            if not self._poll(until, on_message):
                if self.abort_sent:
                    break
                # the step's time is up: whoever has not reported is told (its flows end, it says what it has)
                timed_out = True
                self.abort_reason = "the coordinator stopped waiting: no result within the step's timeout"
                self._abort_all(self.abort_reason)
                until = self.mono() + ABORT_GRACE
        for party in self.expected:
            if party not in self.results and "lost" not in self.info[party]:
                self.info[party]["lost"] = ("no result within the step's timeout" if timed_out
                                            else "no result within %.0f s of the abort" % ABORT_GRACE)

    def run(self):
        self.sel.register(self.listener, selectors.EVENT_READ, None)
        # Real-time: it only waits and answers (arming, probes, the fire, the results). A coordinator pre-empted
        # between two parties' fire messages would start them apart; one that turned normal while holding the GIL
        # would hold up the real-time threads of its own host (priority inversion through the GIL).
        set_realtime()
        try:
            self._header()
            self._run()
        except Exception as exc:  # noqa: BLE001  the controller gets a record whatever happened, with every result
            where = traceback.extract_tb(exc.__traceback__)[-1]
            error = "the coordinator crashed: %r (%s:%d)" % (exc, os.path.basename(where.filename), where.lineno)
            self.errors.append(error)
            self.record.update(status="error", error="; ".join(self.errors))
            try:
                self._abort_all(error)
            except Exception:  # noqa: BLE001  best effort: the parties end at their own deadlines otherwise
                pass
            for party in self.expected:
                if party not in self.results:
                    self.info[party].setdefault("lost", "the coordinator crashed before its result")
        finally:
            set_normal()
            self.record["ended_at"] = self.clock()
            for conn in list(self.conns.values()):
                self._drop(conn)
            self.sel.close()
            self.listener.close()
        return self.record

    def _run(self):
        if not self._arm():
            self._fail_before_fire()
            return
        fanouts = self._probe()
        if fanouts is None:
            self._fail_before_fire()
            return
        margin = round(3 * max(fanouts) + 0.001, 6)
        now = self.clock()
        at = self.start_at if self.start_at is not None else now + margin
        self.fire_mono = self.mono() + (at - now)
        self.record["fire"] = {"at": at, "margin_s": margin if self.start_at is None else None,
                               "controller_at": self.controller_at,
                               "probe_fanout_s": [round(f, 6) for f in fanouts], "decided_at": now,
                               "armed_last_at": max(self.info[p]["armed_at"] for p in self.expected)}
        for party in self.expected:
            offset = self.info[party].get("offset_s", 0.0) if self.start_at is None else 0.0
            self.info[party]["fire_sent_at"] = self.clock()
            self._send(self.by_party[party], "fire", at=at + offset, at_coordinator=at, offset_s=offset,
                       margin_s=margin, progress=self.watched)
        self._header()
        self._collect(self.fire_mono + self.timeout + self.grace)
        failed = [p for p in self.expected if p not in self.results]
        if self.errors or failed:
            self.record["status"] = "failed"
            self.record["error"] = "; ".join(self.errors + ["%s: %s" % (p, self.info[p].get("lost", "no result"))
                                                            for p in failed if not any(
                                                                e.startswith(p + ":") for e in self.errors)])
        else:
            self.record["status"] = "ok"

    def _fail_before_fire(self):
        error = "; ".join(self.errors)
        for party in self.expected:
            if party not in self.by_party and "lost" not in self.info[party]:
                self.info[party]["lost"] = "never reached the rendezvous"
        self._abort_all("the step was not started: %s" % error)
        # the parties answer an abort with what they have (counters, servers' partial results): keep it
        self._collect(self.mono() + ABORT_GRACE)
        self.record.update(status="aborted", error="the step was not started: %s" % error)


class Party:
    """One host's side of the rendezvous. Deadlines are on the monotonic clock."""

    def __init__(self, address, port, token, name):
        self.address, self.port, self.token, self.name = address, port, token, name
        self.run_id = run_id(token)
        self.channel = None
        self.ack_durable = None  # after report(): whether the coordinator had the result on its disk

    def connect(self, deadline, aborted=lambda: None):
        """Connect (retrying while the coordinator comes up, or after it dropped an unauthenticated connection
        because strangers crowded it) and say hello; RendezvousError when refused or at ``deadline``."""
        last = None
        while True:
            reason = aborted()
            if reason:
                raise RendezvousError(reason)
            sock = socket.socket(socket.AF_INET6 if ":" in self.address else socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.settimeout(max(0.2, min(2.0, deadline - _now())))
                sock.connect((self.address, self.port))
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                channel = Channel(sock)
                hello = json.dumps({"op": "hello", "party": self.name, "pid": _pid()}, sort_keys=True)
                channel.sock.sendall(first_line(self.token) + hello.encode("utf-8") + b"\n")
                answer = self._welcome(channel, deadline, aborted)
            except (OSError, EOFError) as exc:
                sock.close()
                last = exc
            except RendezvousError:
                sock.close()
                raise
            else:
                if answer is None:
                    sock.settimeout(None)
                    self.channel = channel
                    return
                sock.close()
                raise RendezvousError("the rendezvous at %s:%d refused %s: %s" % (
                    self.address, self.port, self.name, answer))
            if _now() + 0.05 >= deadline:
                raise RendezvousError("no rendezvous answered at %s:%d before the arm deadline (%s): is the "
                                      "coordinating host part of the step?" % (self.address, self.port, last))
            time.sleep(0.05)

    @staticmethod
    def _welcome(channel, deadline, aborted):
        """Wait for the answer to the hello: None (welcome), or the refusal's or abort's reason."""
        while True:
            reason = aborted()
            if reason:
                raise RendezvousError(reason)
            left = deadline - _now()
            if left <= 0:
                raise socket.timeout("no answer to the hello")
            msg = channel.recv(min(left, 0.2))
            if msg is None:
                continue
            if msg["op"] == "welcome":
                return None
            if msg["op"] in ("refused", "abort"):
                return msg.get("error") or msg["op"]

    def send(self, op, **fields):
        try:
            self.channel.send(op, **fields)
        except OSError as exc:
            raise RendezvousError("lost the rendezvous at %s:%d (%s)" % (self.address, self.port, exc)) from None

    def wait_fire(self, deadline, aborted=lambda: None):
        """Answer probes until the coordinator fires or aborts: ``("fire", msg)`` or ``("abort", reason)``."""
        while True:
            left = deadline - _now()
            if left <= 0:
                return "abort", "the rendezvous at %s:%d neither fired nor aborted in time" % (self.address, self.port)
            reason = aborted()
            if reason:
                return "abort", reason
            try:
                msg = self.channel.recv(min(left, 0.2))
            except (EOFError, OSError) as exc:
                return "abort", "lost the rendezvous at %s:%d (%s)" % (self.address, self.port, exc)
            if msg is None:
                continue
            op = msg["op"]
            if op == "ping":
                self.send("pong", seq=msg.get("seq"), t=time.time())
            elif op == "fire":
                return "fire", msg
            elif op in ("abort", "refused"):
                return "abort", str(msg.get("error") or op)

    def poll_abort(self, timeout):
        """After the fire: wait up to ``timeout`` s for an abort from the coordinator; its reason, or None. A lost
        connection is not an abort: the flows are the measurement and go on (the result stays on the host)."""
        if self.channel is None:
            time.sleep(timeout)
            return None
        try:
            msg = self.channel.recv(timeout)
        except (EOFError, OSError):
            self.channel.close()
            self.channel = None
            return None
        if msg is not None and msg["op"] == "abort":
            return str(msg.get("error") or "aborted")
        return None

    def report(self, result, wait=10.0):
        """Send the host's result; True when the coordinator acknowledged it (``ack_durable``: whether it had it on
        its disk first)."""
        if self.channel is None:
            return False
        try:
            self.channel.send("result", result=result)
        except OSError:
            return False
        end = _now() + wait
        while _now() < end:
            try:
                msg = self.channel.recv(max(0.01, end - _now()))
            except (EOFError, OSError):
                return False
            if msg is not None and msg["op"] == "ack":
                self.ack_durable = msg.get("durable") is True
                return True
        return False

    def close(self):
        if self.channel is not None:
            self.channel.close()


def _pid():
    return os.getpid()


def _control(address, port, token, timeout):
    """An authenticated control connection (socket, channel)."""
    sock = socket.create_connection((address, port), timeout=timeout)
    channel = Channel(sock)
    try:
        sock.sendall(first_line(token) + b'{"control":true,"op":"hello"}\n')
    except OSError:
        sock.close()
        raise
    return sock, channel


def control_abort(address, port, token, error, timeout=5.0):
    """Tell a running coordinator to abort its step (before the fire: nothing starts; after it: every host's flows
    end and report what they have). True when it acknowledged; False when none was listening (it had ended)."""
    try:
        sock, channel = _control(address, port, token, timeout)
        with sock:
            channel.send("abort", error=error)
            msg = channel.recv(timeout)
            return bool(msg and msg["op"] == "ack")
    except (OSError, EOFError):
        return False


def control_progress(address, port, token, watch=False, timeout=5.0):
    """The step's progress from its coordinator (``Coordinator._progress``), or None when none is listening (the step
    has ended, or never started). ``watch``: the first query of a step, which (like "collecting") lets the step fire,
    and is answered once the flows have run ``PROGRESS_HOLD`` s, so that the asking process sleeps through the
    instant; later queries are answered at once."""
    try:
        sock, channel = _control(address, port, token, timeout)
        with sock:
            channel.send("watch" if watch else "progress")
            end = _now() + timeout
            while _now() < end:
                msg = channel.recv(max(0.01, end - _now()))
                if msg is not None and msg["op"] == "progress":
                    msg.pop("op")
                    return msg
            return {"phase": "waiting"}
    except (OSError, EOFError):
        return None


def control_collect(address, port, token, wait, timeout=5.0):
    """Tell a coordinator that the controller is collecting (the step may fire: nothing of the controller's runs on
    the hosts any more), then block - without polling - until it closes the connection at the end of the step.
    Returns "ended" (the coordinator closed), "timeout" (``wait`` passed) or "unreachable"."""
    try:
        sock, channel = _control(address, port, token, timeout)
    except OSError:
        return "unreachable"
    try:
        channel.send("collecting")
        end = _now() + wait
        while _now() < end:
            try:
                channel.recv(min(60.0, max(0.01, end - _now())))
            except (EOFError, OSError):
                return "ended"
        return "timeout"
    except OSError:
        return "ended"
    finally:
        channel.close()
