# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rendezvous of a synchronized step: every host arms, one coordinator fires them all at one instant.

One host of the step (the sink, by default) runs the coordinator on its lab address; every host's part of the step
(``step.py``) is a *party* that connects to it over the lab network, the same way in the netns lab, between VMs and on
real hardware. Messages are JSON lines on one TCP connection per party::

    party -> coordinator   hello {run, party}            the run id (a hash of the run token) and the host's name
                           armed {t, flows}              every flow of the host is connected and admitted
                           arm_failed {error}            a flow could not be armed (fails the step at once)
                           pong {seq, t}                 answer to a ping, with the party's clock
                           progress {t, flows}           each flow's latest interval sample, twice a second
                                                         while the flows run (only when the controller watches)
                           result {result}               the host's results, at the end
    coordinator -> party   ping {seq}                    the probe rounds, once everybody armed
                           fire {at, at_coordinator, offset_s, margin_s, progress}
                           abort {error}                 the step will not run (or must end now)
                           ack                           the result is safe with the coordinator
    control -> coordinator hello {run, control: true}, then abort {error}, collecting (the controller only waits
                           from now on: the step may fire), watch / progress (the same, and the answer is the
                           step's progress: watch once the flows have run PROGRESS_HOLD s, progress at once)

Once every expected party has armed, the coordinator sends ``ping`` to all of them at once, ``PROBES`` times, and
measures how long the slowest answer takes (the fan-out) and each party's clock offset (NTP's midpoint estimate,
from its fastest round). The start instant is then *now + margin*, the margin twice the slowest fan-out (plus half
a millisecond): measured on this lab at this moment, never a constant to tune. Each party gets the instant in its
own clock (coordinator instant + its offset), so hosts whose clocks disagree (VMs, labs without PTP) still start
together. With a fixed ``start_at`` (labs whose clocks are PTP-synchronized), every party gets that instant as it is.

A party that does not arm by the arm deadline, fails to arm, or whose process ends fails the step before anything
is sent: the coordinator aborts every party with the reason, naming the hosts.
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import time

from .clock import set_normal, set_realtime

__all__ = ["Channel", "Coordinator", "Party", "RendezvousError", "control_abort", "control_collect", "control_progress",
           "PROBES", "PROGRESS_HOLD"]

PROBES = 3
_PING_WAIT = 5.0  # seconds the coordinator waits for every pong of one round
_MAX_LINE = 64 * 1024 * 1024  # a host's result with many samples stays far below this


PROGRESS_HOLD = 0.3  # s after the instant before the first progress answer (the flows are under way by then)
SEND_TIMEOUT = 10.0  # s a message may take to leave (the peer reads all the time; a stuck one is given up on)


class RendezvousError(Exception):
    """The rendezvous cannot go on; the message says why."""


class Channel:
    """JSON lines over a TCP socket."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def send(self, op, **fields):
        fields["op"] = op
        # not the timeout a last recv() left (a progress poll's can be a millisecond): a host's whole result goes out
        self.sock.settimeout(SEND_TIMEOUT)
        self.sock.sendall(json.dumps(fields, separators=(",", ":"), sort_keys=True).encode("utf-8") + b"\n")

    def feed(self):
        """Read what the socket has (it is readable) and return the complete messages; EOFError when it closed."""
        data = self.sock.recv(1 << 20)
        if not data:
            raise EOFError("connection closed")
        self.buf += data
        if len(self.buf) > _MAX_LINE:
            raise EOFError("message too long")
        messages = []
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            try:
                msg = json.loads(line.decode("utf-8"))
            except ValueError:
                raise EOFError("not a rendezvous message") from None
            if not isinstance(msg, dict) or "op" not in msg:
                raise EOFError("not a rendezvous message")
            messages.append(msg)
        return messages

    def recv(self, timeout):
        """The next message, or None at ``timeout`` seconds; EOFError when the connection closed."""
        end = time.time() + timeout
        pending = self._pending()
        if pending:
            return pending
        while True:
            left = end - time.time()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(1 << 20)
            except socket.timeout:
                return None
            if not data:
                raise EOFError("connection closed")
            self.buf += data
            pending = self._pending()
            if pending:
                return pending

    def _pending(self):
        if b"\n" not in self.buf:
            return None
        line, self.buf = self.buf.split(b"\n", 1)
        try:
            msg = json.loads(line.decode("utf-8"))
        except ValueError:
            raise EOFError("not a rendezvous message") from None
        return msg

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class _Conn:
    def __init__(self, sock, peer):
        self.channel = Channel(sock)
        self.peer = peer
        self.party = None
        self.control = False


class Coordinator:
    """Arms, probes, fires and collects one step. ``run()`` returns the step's record (also when it failed)."""

    def __init__(self, listener, run_id, parties, arm_deadline, timeout, start_at=None, grace=30.0,
                 clock=time.time, wait_for_controller=True):
        self.listener = listener
        self.run_id = run_id
        self.expected = list(parties)
        self.arm_deadline = arm_deadline
        self.timeout = timeout
        self.start_at = start_at
        self.grace = grace
        self.wait_for_controller = wait_for_controller
        self.controller_at = None
        self.clock = clock
        self.sel = selectors.DefaultSelector()
        self.conns = {}
        self.by_party = {}
        self.info = {p: {} for p in self.expected}
        self.results = {}
        self.rejected = []
        self.errors = []
        self.progress = {}  # party -> its flows' latest interval samples, while they run (only when watched)
        self.watchers = []  # the controller's "watch" connections, answered once the flows have run a moment
        self.watched = False
        self.record = {"run": run_id, "coordinator_pid": os.getpid(), "parties": self.info, "hosts": self.results,
                       "rejected": self.rejected,
                       "mode": "fixed" if start_at is not None else "rendezvous", "status": "error", "error": None,
                       "started_at": clock()}

    # -- plumbing ---------------------------------------------------------------------------------------------
    def _send(self, conn, op, **fields):
        try:
            conn.channel.send(op, **fields)
            return True
        except OSError:
            return False

    def _drop(self, conn):
        try:
            self.sel.unregister(conn.channel.sock)
        except (KeyError, ValueError):
            pass
        conn.channel.close()
        self.conns.pop(conn.channel.sock, None)
        if conn in self.watchers:
            self.watchers.remove(conn)

    def _poll(self, until, on_message):
        """Serve the sockets until ``until`` (epoch s) or until ``on_message`` returns True."""
        while True:
            left = until - self.clock()
            if left <= 0:
                return False
            self._answer_watchers()
            for key, _mask in self.sel.select(min(left, 0.05 if self.watchers else 0.5)):
                if key.fileobj is self.listener:
                    try:
                        sock, peer = self.listener.accept()
                    except OSError:
                        continue
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    conn = _Conn(sock, peer[0])
                    self.conns[sock] = conn
                    self.sel.register(sock, selectors.EVENT_READ, conn)
                    continue
                conn = key.data
                try:
                    messages = conn.channel.feed()
                except (EOFError, OSError) as exc:
                    self._drop(conn)
                    if conn.party and self._closed(conn, str(exc)):
                        return True
                    continue
                for msg in messages:
                    if self._message(conn, msg, on_message):
                        return True

    def _message(self, conn, msg, on_message):
        op = msg.get("op")
        if op == "hello":
            if msg.get("run") != self.run_id:
                self.rejected.append({"peer": conn.peer, "reason": "another run's token"})
                self._send(conn, "refused", error="this rendezvous belongs to another run")
                self._drop(conn)
                return False
            if msg.get("control"):
                conn.control = True
                return False
            party = msg.get("party")
            if party not in self.info:
                self.rejected.append({"peer": conn.peer, "reason": "not a party of this step: %r" % (party,)})
                self._send(conn, "refused", error="%r is not a host of this step (expected: %s)"
                           % (party, ", ".join(self.expected)))
                self._drop(conn)
                return False
            if party in self.by_party:
                self.rejected.append({"peer": conn.peer, "reason": "second connection for %s" % party})
                self._send(conn, "refused", error="%s is already connected" % party)
                self._drop(conn)
                return False
            conn.party = party
            self.by_party[party] = conn
            self.info[party].update(connected_at=self.clock(), peer=conn.peer, pid=msg.get("pid"))
            return on_message(conn, msg)
        if conn.control and op == "abort":
            self.errors.append(msg.get("error") or "aborted by the controller")
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
            self.progress[conn.party] = {"t": msg.get("t"), "flows": msg.get("flows") or {}}
            return False
        if conn.control and op == "collecting":
            # the controller's collect task is running (and from now on only waits): the step may fire
            self.controller_at = self.clock()
            self._send(conn, "ack")
            return on_message(conn, msg)
        if conn.party is None:
            self._drop(conn)
            return False
        return on_message(conn, msg)

    def _progress(self):
        """What the controller's progress query gets: the phase, the instant, each party's latest samples."""
        fire = self.record.get("fire") or {}
        phase = ("ended" if self._settled() and self.results else "running" if fire else "arming")
        return {"phase": phase, "now": self.clock(), "fire_at": fire.get("at"), "expected": self.expected,
                "done": sorted(self.results), "parties": self.progress, "errors": list(self.errors)}

    def _answer_watchers(self):
        if not self.watchers:
            return
        fire = self.record.get("fire") or {}
        if not (fire and self.clock() >= fire["at"] + PROGRESS_HOLD) and not self.errors:
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
        for party in self.expected:
            conn = self.by_party.get(party)
            if conn is not None and party not in self.results:
                self._send(conn, "abort", error=error)

    # -- phases -----------------------------------------------------------------------------------------------
    def _arm(self):
        def on_message(conn, msg):
            if msg["op"] == "armed":
                self.info[conn.party].update(armed_at=self.clock(), flows=msg.get("flows"))
            elif msg["op"] == "arm_failed":
                self.info[conn.party]["arm_error"] = msg.get("error")
                self.errors.append("%s could not arm: %s" % (conn.party, msg.get("error")))
                return True
            elif msg["op"] == "result":
                self._store(conn, msg)
                self.errors.append("%s ended before the step was fired: %s" % (
                    conn.party, (msg.get("result") or {}).get("error")))
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
                sent[party] = self.clock()
                if not self._send(self.by_party[party], "ping", seq=seq):
                    self.errors.append("%s: its step process ended without a result (the rendezvous connection "
                                       "failed during the probe)" % party)
                    return None
            answered = {}
            on_message = self._pong_handler(seq, sent, answered)
            start = min(sent.values())
            self._poll(self.clock() + _PING_WAIT, on_message)
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
        midpoint estimate); the fastest round trip's offset is kept."""
        def on_message(conn, msg):
            if msg["op"] == "pong" and msg.get("seq") == seq:
                now = self.clock()
                rtt = now - sent[conn.party]
                offset = float(msg["t"]) - (sent[conn.party] + now) / 2
                answered[conn.party] = now
                best = self.info[conn.party].get("rtt_s")
                if best is None or rtt < best:
                    self.info[conn.party].update(rtt_s=round(rtt, 6), offset_s=round(offset, 6))
            elif msg["op"] in ("result", "arm_failed"):
                self.errors.append("%s left during the probe: %s" % (conn.party, msg.get("error") or (
                    msg.get("result") or {}).get("error")))
                if msg["op"] == "result":
                    self._store(conn, msg)
                return True
            return len(answered) == len(self.expected)

        return on_message

    def _store(self, conn, msg):
        self.results[conn.party] = msg.get("result") or {}
        self.info[conn.party]["result_at"] = self.clock()
        self._send(conn, "ack")

    def _settled(self):
        return all(p in self.results or "lost" in self.info[p] for p in self.expected)

    def _collect(self, until):
        """Results until every party has sent one or is lost, or ``until``. After the fire, a lost host does not end
        the others' flows: the step is failed either way, and what they measure is kept."""
        def on_message(conn, msg):
            if msg["op"] == "result":
                self._store(conn, msg)
            return self._settled()

        while not self._settled():
            if not self._poll(until, on_message):
                break
        for party in self.expected:
            if party not in self.results and "lost" not in self.info[party]:
                self.info[party]["lost"] = "no result within the step's timeout"

    def run(self):
        self.sel.register(self.listener, selectors.EVENT_READ, None)
        # Real-time: it only waits and answers (arming, probes, the fire, the results). A coordinator pre-empted
        # between two parties' fire messages would start them apart; one that turned normal while holding the GIL
        # would hold up the real-time threads of its own host (priority inversion through the GIL).
        set_realtime()
        try:
            if not self._arm():
                self._fail_before_fire()
                return self.record
            fanouts = self._probe()
            if fanouts is None:
                self._fail_before_fire()
                return self.record
            margin = round(3 * max(fanouts) + 0.001, 6)
            now = self.clock()
            at = self.start_at if self.start_at is not None else now + margin
            self.record["fire"] = {"at": at, "margin_s": margin if self.start_at is None else None,
                                   "controller_at": self.controller_at,
                                   "probe_fanout_s": [round(f, 6) for f in fanouts], "decided_at": now,
                                   "armed_last_at": max(self.info[p]["armed_at"] for p in self.expected)}
            for party in self.expected:
                offset = self.info[party].get("offset_s", 0.0) if self.start_at is None else 0.0
                self.info[party]["fire_sent_at"] = self.clock()
                self._send(self.by_party[party], "fire", at=at + offset, at_coordinator=at, offset_s=offset,
                           margin_s=margin, progress=self.watched)
            self._collect(at + self.timeout + self.grace)
            failed = [p for p in self.expected if p not in self.results]
            if self.errors or failed:
                self.record["status"] = "failed"
                self.record["error"] = "; ".join(self.errors + ["%s: %s" % (p, self.info[p].get("lost", "no result"))
                                                                for p in failed if not any(
                                                                    e.startswith(p + ":") for e in self.errors)])
            else:
                self.record["status"] = "ok"
            return self.record
        finally:
            set_normal()
            self.record["ended_at"] = self.clock()
            for conn in list(self.conns.values()):
                self._drop(conn)
            self.sel.close()
            self.listener.close()

    def _fail_before_fire(self):
        error = "; ".join(self.errors)
        for party in self.expected:
            if party not in self.by_party and "lost" not in self.info[party]:
                self.info[party]["lost"] = "never reached the rendezvous"
        self._abort_all("the step was not started: %s" % error)
        # the parties answer an abort with what they have (counters, servers' partial results): keep it
        self._collect(self.clock() + 10.0)
        self.record.update(status="aborted", error="the step was not started: %s" % error)


class Party:
    """One host's side of the rendezvous."""

    def __init__(self, address, port, run_id, name):
        self.address, self.port, self.run_id, self.name = address, port, run_id, name
        self.channel = None

    def connect(self, deadline, aborted=lambda: None):
        """Connect (retrying while the coordinator comes up) and say hello; RendezvousError at ``deadline``."""
        last = None
        while True:
            reason = aborted()
            if reason:
                raise RendezvousError(reason)
            sock = socket.socket(socket.AF_INET6 if ":" in self.address else socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.settimeout(max(0.2, min(2.0, deadline - time.time())))
                sock.connect((self.address, self.port))
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.settimeout(None)
                self.channel = Channel(sock)
                self.channel.send("hello", run=self.run_id, party=self.name, pid=_pid())
                return
            except OSError as exc:
                sock.close()
                last = exc
            if time.time() + 0.05 >= deadline:
                raise RendezvousError("no rendezvous answered at %s:%d before the arm deadline (%s): is the "
                                      "coordinating host part of the step?" % (self.address, self.port, last))
            time.sleep(0.05)

    def send(self, op, **fields):
        try:
            self.channel.send(op, **fields)
        except OSError as exc:
            raise RendezvousError("lost the rendezvous at %s:%d (%s)" % (self.address, self.port, exc)) from None

    def wait_fire(self, deadline, aborted=lambda: None):
        """Answer probes until the coordinator fires or aborts: ``("fire", msg)`` or ``("abort", reason)``."""
        while True:
            left = deadline - time.time()
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
            op = msg.get("op")
            if op == "ping":
                self.send("pong", seq=msg.get("seq"), t=time.time())
            elif op == "fire":
                return "fire", msg
            elif op in ("abort", "refused"):
                return "abort", msg.get("error") or op

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
        if msg is not None and msg.get("op") == "abort":
            return msg.get("error") or "aborted"
        return None

    def report(self, result, wait=10.0):
        """Send the host's result; True when the coordinator acknowledged it."""
        if self.channel is None:
            return False
        try:
            self.channel.send("result", result=result)
        except OSError:
            return False
        end = time.time() + wait
        while time.time() < end:
            try:
                msg = self.channel.recv(max(0.01, end - time.time()))
            except (EOFError, OSError):
                return False
            if msg is not None and msg.get("op") == "ack":
                return True
        return False

    def close(self):
        if self.channel is not None:
            self.channel.close()


def _pid():
    return os.getpid()


def control_abort(address, port, run_id, error, timeout=5.0):
    """Tell a running coordinator to abort its step (the controller knows a host will never arm). True when it
    acknowledged; False when none was listening (it had already ended)."""
    try:
        with socket.create_connection((address, port), timeout=timeout) as sock:
            channel = Channel(sock)
            channel.send("hello", run=run_id, control=True)
            channel.send("abort", error=error)
            msg = channel.recv(timeout)
            return bool(msg and msg.get("op") == "ack")
    except (OSError, EOFError):
        return False


def control_progress(address, port, run_id, watch=False, timeout=5.0):
    """The step's progress from its coordinator (``Coordinator._progress``), or None when none is listening (the step
    has ended, or never started). ``watch``: the first query of a step, which (like "collecting") lets the step fire,
    and is answered once the flows have run ``PROGRESS_HOLD`` s, so that the asking process sleeps through the
    instant; later queries are answered at once."""
    try:
        with socket.create_connection((address, port), timeout=timeout) as sock:
            channel = Channel(sock)
            channel.send("hello", run=run_id, control=True)
            channel.send("watch" if watch else "progress")
            end = time.time() + timeout
            while time.time() < end:
                msg = channel.recv(max(0.01, end - time.time()))
                if msg is not None and msg.get("op") == "progress":
                    msg.pop("op")
                    return msg
            return {"phase": "waiting"}
    except (OSError, EOFError):
        return None


def control_collect(address, port, run_id, wait, timeout=5.0):
    """Tell a coordinator that the controller is collecting (the step may fire: nothing of the controller's runs on
    the hosts any more), then block - without polling - until it closes the connection at the end of the step.
    Returns "ended" (the coordinator closed), "timeout" (``wait`` passed) or "unreachable"."""
    try:
        sock = socket.create_connection((address, port), timeout=timeout)
    except OSError:
        return "unreachable"
    channel = Channel(sock)
    try:
        channel.send("hello", run=run_id, control=True)
        channel.send("collecting")
        end = time.time() + wait
        while time.time() < end:
            try:
                channel.recv(min(60.0, max(0.01, end - time.time())))
            except (EOFError, OSError):
                return "ended"
        return "timeout"
    except OSError:
        return "ended"
    finally:
        channel.close()
