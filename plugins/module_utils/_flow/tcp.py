# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The built-in TCP flow engine: one elephant per client, timed on the hosts.

Wire protocol (all integers big-endian):

* client -> server, before the start instant: ``HELLO`` = b"AFL1" | token (16 bytes) | volume (u64, 0 = until EOF)
  | flow id length (u16) | flow id (utf-8). The server answers b"OK" (accepted) or b"NO" + reason and closes.
* client -> server from the start instant: the payload (zero pages sent with ``sendfile`` from a memfd).
* server -> client once the volume (or EOF) is in: ``DONE`` = bytes received (u64) | first byte (f64 epoch s)
  | last byte (f64 epoch s). The client's receipt of DONE is "last byte acknowledged by the receiver".
* anyone -> server: ``STOP`` = b"AFLS" | token. Ends a server early (a failed step), keeping what it has.

The token is checked before anything else a peer sent is read, and a peer is a stranger until its HELLO is whole:
the handshake (magic, token, volume, flow id) has ``HANDSHAKE_TIMEOUT`` seconds in all (not per read, so a peer
trickling a byte every few seconds is dropped), at most ``MAX_HANDSHAKING`` connections are in their handshake at
once (a newer one evicts the oldest), and when ``accept()`` runs out of file descriptors the server drops the
connections still in their handshake and rests ``ACCEPT_PAUSE`` s instead of ending: the admitted flows go on. A
refused peer is listed in the result's ``rejected`` (address, reason, count; bounded). Nothing a peer sends is
executed or used in a path. Every deadline is on the monotonic clock; the wall clock only times the bytes.
"""

from __future__ import annotations

import errno
import fcntl
import hmac
import os
import select
import socket
import struct
import threading
import time

from . import tcp_info as _tcp_info
from .clock import realtime, sleep_until
from .engine import ClientFlow, FlowEngine, FlowSpec, own_instant, refuse_if_late
from .refusals import Refusals

MAGIC_HELLO = b"AFL1"
MAGIC_STOP = b"AFLS"
_DONE = struct.Struct("!Qdd")
_HELLO_TAIL = struct.Struct("!QH")
_CHUNK = 4 * 1024 * 1024  # bytes per sendfile / splice call
_ZERO_FILE_SIZE = 64 * 1024 * 1024
_TCP_INFO_LEN = 232
_F_SETPIPE_SZ = 1031
# Offsets in struct tcp_info (include/uapi/linux/tcp.h): tcpi_snd_mss u32 @16, tcpi_rtt u32 @68,
# tcpi_total_retrans u32 @100, tcpi_bytes_acked u64 @120 (Linux >= 4.1), tcpi_bytes_retrans u64 @208 (Linux >= 4.19).
_MSS_OFF, _RTT_OFF, _RETRANS_OFF, _ACKED_OFF, _BYTES_RETRANS_OFF = 16, 68, 100, 120, 208
HANDSHAKE_TIMEOUT = 5.0  # s for a peer's whole HELLO (or STOP), from accept()
MAX_HANDSHAKING = 64  # connections in their handshake at once (a newer one evicts the oldest)
ACCEPT_PAUSE = 0.25  # s the server does not accept after accept() ran out of file descriptors
ACCEPT_BATCH = 32  # connections accepted per wake-up
BACKLOG = 128  # the listen queue (at least; twice the expected clients when more)
_NO_FD = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


def limits():
    """The server's limits in force (its result carries them)."""
    return {"handshake_timeout_s": HANDSHAKE_TIMEOUT, "max_handshaking": MAX_HANDSHAKING,
            "accept_pause_s": ACCEPT_PAUSE}


def _now():
    return time.monotonic()


def _readable(fileno, timeout):
    """Whether ``fileno`` is readable within ``timeout`` s (poll: select() cannot take a descriptor >= 1024)."""
    poller = select.poll()
    poller.register(fileno, select.POLLIN)
    return bool(poller.poll(max(0.0, timeout) * 1000.0))


def token_bytes(token: str) -> bytes:
    """The 16-byte wire form of a run token (any string; hashed so length and alphabet do not matter)."""
    import hashlib

    return hashlib.sha256(token.encode("utf-8")).digest()[:16]


def tcp_info(sock: socket.socket) -> dict:
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_LEN)
    info = {
        "rtt_us": struct.unpack_from("I", raw, _RTT_OFF)[0],
        "retransmits": struct.unpack_from("I", raw, _RETRANS_OFF)[0],
    }
    info["bytes_acked"] = struct.unpack_from("Q", raw, _ACKED_OFF)[0] if len(raw) >= _ACKED_OFF + 8 else None
    info["mss"] = struct.unpack_from("I", raw, _MSS_OFF)[0]
    # the kernel's own count of retransmitted payload bytes; an older kernel's is estimated as segments x MSS
    if len(raw) >= _BYTES_RETRANS_OFF + 8:
        info["bytes_retrans"] = struct.unpack_from("Q", raw, _BYTES_RETRANS_OFF)[0]
        info["bytes_retrans_source"] = "kernel"
    else:
        info["bytes_retrans"] = info["retransmits"] * info["mss"]
        info["bytes_retrans_source"] = "segments x mss"
    return info


def _recv_exact(sock: socket.socket, size: int, deadline: float | None = None) -> bytes:
    """``size`` bytes; with ``deadline`` (monotonic s), all of them by then (socket.timeout otherwise)."""
    data = bytearray()
    while len(data) < size:
        if deadline is not None:
            left = deadline - _now()
            if left <= 0:
                raise socket.timeout("timed out")
            sock.settimeout(left)
        part = sock.recv(size - len(data))
        if not part:
            raise ConnectionError("peer closed the connection after %d of %d bytes" % (len(data), size))
        data += part
    return bytes(data)


class _Sampler(threading.Thread):
    """Every ``interval`` seconds, read how many bytes the receiver has acknowledged on the flow's connections
    (TCP_INFO), summed over its streams."""

    def __init__(self, socks, t0_wall, interval):
        super().__init__(daemon=True)
        self.socks, self.t0, self.interval = list(socks), t0_wall, interval
        self.m0 = _now() - (time.time() - t0_wall)  # the first byte on the monotonic clock (the samples' schedule)
        self.samples = []
        self._stop_event = threading.Event()

    def run(self):
        last_t, last_b = 0.0, 0
        n = 1
        while not self._stop_event.is_set():
            target = self.m0 + n * self.interval
            if self._stop_event.wait(max(0.0, target - _now())):
                break
            self._take(time.time(), last_t, last_b)
            if self.samples:
                last_t, last_b = self.samples[-1]["t"], self.samples[-1]["bytes"]
            n += 1

    def _read(self):
        acked = retrans = rtt = 0
        for sock in self.socks:
            info = tcp_info(sock)
            acked += info["bytes_acked"] or 0
            retrans += info["retransmits"]
            rtt = max(rtt, info["rtt_us"])
        return acked, retrans, rtt

    def _take(self, now, last_t, last_b):
        try:
            acked, retrans, rtt = self._read()
        except OSError:
            return
        t = now - self.t0
        span = t - last_t
        self.samples.append(
            {
                "t": round(t, 6),
                "bytes": acked,
                "gbps": round((acked - last_b) * 8 / span / 1e9, 6) if span > 0 else 0.0,
                "retransmits": retrans,
                "rtt_us": rtt,
            }
        )

    def finish(self, now):
        self._stop_event.set()
        self.join(timeout=2)
        last_t = self.samples[-1]["t"] if self.samples else 0.0
        last_b = self.samples[-1]["bytes"] if self.samples else 0
        try:
            acked = self._read()[0]
        except OSError:
            acked = last_b
        # the last word is the flow's end: a periodic sample that fell just before the final ACKs is not it
        if now - self.t0 - last_t > 0.001 or acked != last_b:
            if self.samples and now - self.t0 - last_t <= 0.001:
                self.samples.pop()
                last_t = self.samples[-1]["t"] if self.samples else 0.0
                last_b = self.samples[-1]["bytes"] if self.samples else 0
            self._take(now, last_t, last_b)
        return self.samples


_FIRST_SEND = 9000  # the first bytes at the start instant: one jumbo frame, so every host's first byte leaves at once


def _zero_fd(size: int) -> int:
    fd = os.memfd_create("aifabric-flow", 0)
    os.ftruncate(fd, size)
    return fd


def _split(volume, streams):
    """Per-stream volumes: as even as bytes allow, the first streams one byte more."""
    if volume is None:
        return [None] * streams
    base, extra = divmod(volume, streams)
    return [base + (1 if i < extra else 0) for i in range(streams)]


class TcpClient(ClientFlow):
    """One client flow of the tcp engine: ``spec.streams`` connections admitted by the server before the instant,
    the payload sent with ``sendfile`` from zero pages from the instant on."""

    def __init__(self, spec: FlowSpec):
        self.spec = spec
        self.socks = []
        self.zero_fd = None
        self._aborted = None
        self._sampler = None
        self._lock = threading.Lock()
        self.result = {
            "engine": TcpEngine.name, "role": "client", "flow_id": spec.flow_id, "peer": spec.address,
            "port": spec.port, "volume_bytes": spec.volume, "duration_target_s": spec.duration,
            "streams": spec.streams, "bytes": 0, "status": "error", "error": None,
        }

    # -- arming -----------------------------------------------------------------------------------------------
    def arm(self, deadline):
        spec = self.spec
        if spec.ecn is not None:
            try:
                self.result["tcp_ecn_sysctl"] = _tcp_info.set_ecn(spec.ecn)
            except (ValueError, OSError) as exc:
                self.result["error"] = str(exc)
                return False
        volumes = _split(spec.volume, spec.streams)
        if spec.volume is not None and min(volumes) < 1:
            self.result["error"] = "streams: %d streams for %d bytes leaves a stream empty; use fewer streams" % (
                spec.streams, spec.volume)
            return False
        for i, volume in enumerate(volumes):
            name = spec.flow_id if spec.streams == 1 else "%s#%d" % (spec.flow_id, i + 1)
            sock = self._connect(name, volume, deadline, spec.source_ports[i] if spec.source_ports else 0)
            if sock is None:
                self.close()
                return False
            self.socks.append(sock)
        self._volumes = volumes
        # each stream's five-tuple is known from here on (the fabric lab checks its path against the lookup's)
        self.result["source_ports"] = [sock.getsockname()[1] for sock in self.socks]
        self.zero_fd = _zero_fd(min(_ZERO_FILE_SIZE, max(v or _ZERO_FILE_SIZE for v in volumes)))
        return True

    def _connect(self, name, volume, deadline, source_port=0):
        """Connect (from ``source_port`` when given) and pass the HELLO, retrying while the server comes up, until
        ``deadline``."""
        spec = self.spec
        flow_id = name.encode("utf-8")[:512]
        hello = MAGIC_HELLO + token_bytes(spec.token) + _HELLO_TAIL.pack(volume or 0, len(flow_id)) + flow_id
        last_error = None
        while True:
            if self._aborted:
                self.result["error"] = self._aborted
                return None
            sock = socket.socket(socket.AF_INET6 if ":" in spec.address else socket.AF_INET, socket.SOCK_STREAM)
            try:
                if source_port:
                    # a port of this flow's own (the fabric lab chose it for its path); a connection of an earlier
                    # run may still hold it in TIME_WAIT
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if spec.congestion:
                    try:
                        _tcp_info.set_congestion(sock, spec.congestion)
                    except ValueError as exc:
                        sock.close()
                        self.result["error"] = str(exc)
                        return None
                if spec.source or source_port:
                    sock.bind((spec.source or "", source_port))
                sock.settimeout(max(0.2, min(5.0, deadline - _now())))
                sock.connect((spec.address, spec.port))
                sock.sendall(hello)
                answer = _recv_exact(sock, 2)
                if answer != b"OK":
                    reason = sock.recv(512).decode("utf-8", "replace")
                    sock.close()
                    self.result["error"] = "the server at %s:%d refused the flow: %s" % (spec.address, spec.port,
                                                                                         reason)
                    return None
                sock.settimeout(None)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return sock
            except (OSError, ConnectionError) as exc:
                sock.close()
                last_error = exc
            if _now() + 0.05 >= deadline:
                self.result["error"] = (
                    "no flow server answered at %s:%d before the flow had to be armed (%s). Is the server's host "
                    "part of the step, and are the address and port right?" % (spec.address, spec.port, last_error))
                return None
            time.sleep(0.05)

    # -- firing -----------------------------------------------------------------------------------------------
    def fire(self, at):
        """Fire at the common instant ``at`` plus the spec's ``start_offset`` (the flow's own instant): ``late_s``
        against its own instant, ``completion_s`` (and each stream's) from ``at``."""
        spec, result = self.spec, self.result
        own = own_instant(result, spec, at)
        result["start_at"] = own
        # the timeout counts from the flow's own instant (its spec's timeout is the step's less the offset): the wait
        # until it (wall clock), then a monotonic timer
        watchdog = threading.Timer(max(0.0, own - time.time()) + spec.timeout, self.abort,
                                   ("flow did not complete within timeout=%ss" % spec.timeout,))
        watchdog.daemon = True
        watchdog.start()
        try:
            with realtime() as rt:
                start = sleep_until(own)
                if refuse_if_late(result, spec, start, own):
                    return result
                firsts = [os.sendfile(s.fileno(), self.zero_fd, 0, min(_FIRST_SEND, v or _FIRST_SEND))
                          for s, v in zip(self.socks, self._volumes)]
            result.update(start=start, first_byte=start, late_s=round(start - own, 6), realtime_start=rt)
            sampler = self._sampler = _Sampler(self.socks, start, spec.interval)
            sampler.start()
            outcomes = [None] * len(self.socks)
            if len(self.socks) == 1:
                outcomes[0] = self._stream(0, start, firsts[0])
            else:
                def stream(i):
                    outcomes[i] = self._stream(i, start, firsts[i])

                threads = [threading.Thread(target=stream, args=(i,), daemon=True) for i in range(len(self.socks))]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
            errors = [o for o in outcomes if isinstance(o, BaseException)]
            if errors:
                raise errors[0]
            acked = max(o[3] for o in outcomes)
            samples = sampler.finish(acked)
            received = sum(o[0] for o in outcomes)
            info = [tcp_info(s) for s in self.socks]
            result["tcp"] = _tcp_info.summary([_tcp_info.read(s) for s in self.socks],
                                              _tcp_info.congestion_of(self.socks[0]))
            duration = acked - start
            result.update(
                bytes=received,
                bytes_sent=sum(o[4] for o in outcomes),
                last_byte_acked=acked,
                duration_s=round(duration, 6),
                completion_s=round(acked - at, 6),  # from the common instant, an offset flow's too
                gbps=round(received * 8 / duration / 1e9, 6) if duration > 0 else 0.0,
                server_first_byte=min(o[1] for o in outcomes),
                server_last_byte=max(o[2] for o in outcomes),
                retransmits=sum(i["retransmits"] for i in info),
                bytes_retrans=sum(i["bytes_retrans"] for i in info),
                bytes_retrans_source=info[0]["bytes_retrans_source"],
                rtt_us=max(i["rtt_us"] for i in info),
                samples=samples,
            )
            if spec.streams > 1:
                result["stream_completion_s"] = [round(o[3] - at, 6) for o in outcomes]
            if spec.volume is not None and received != spec.volume:
                result["error"] = "the server received %d of %d bytes" % (received, spec.volume)
            else:
                result["status"] = "ok"
        except (OSError, ConnectionError) as exc:
            if self._aborted:
                timed_out = "timeout=" in self._aborted
                result["status"] = "timeout" if timed_out else "aborted"
                result["error"] = "%s (%s)" % (self._aborted, exc)
            else:
                result["error"] = "%s: %s" % (type(exc).__name__, exc)
            result["bytes"] = result.get("bytes_sent", result["bytes"])
        finally:
            watchdog.cancel()
        return result

    def _stream(self, i, start, sent):
        """Send stream ``i``'s share and wait for the receiver's DONE: (received, first, last, acked, sent)."""
        try:
            sock = self.socks[i]
            sent = self._pump(sock, self._volumes[i], start, sent)
            if self._volumes[i] is None:
                sock.shutdown(socket.SHUT_WR)
            done = _recv_exact(sock, _DONE.size)
            acked = time.time()
            received, first, last = _DONE.unpack(done)
            return received, first, last, acked, sent
        except (OSError, ConnectionError) as exc:
            return exc

    def _pump(self, sock, volume, start, sent):
        size = os.fstat(self.zero_fd).st_size
        fileno = sock.fileno()
        end = None
        if self.spec.duration is not None:
            end = _now() + max(0.0, start + self.spec.duration - time.time())
        while True:
            if volume is not None:
                left = volume - sent
                if left <= 0:
                    return sent
            else:
                if _now() >= end:
                    return sent
                left = _CHUNK
            offset = sent % size
            count = min(left, _CHUNK, size - offset)
            n = os.sendfile(fileno, self.zero_fd, offset, count)
            if n == 0:
                raise ConnectionError("the connection closed after %d bytes" % sent)
            sent += n

    def progress(self):
        """The latest interval sample (the sampler takes one every ``spec.interval`` s; no socket is read here)."""
        last = {"t": 0.0, "bytes": 0, "gbps": None}
        try:
            last = self._sampler.samples[-1]
        except (AttributeError, IndexError):  # not fired yet, or no sample yet (finish() may just have replaced it)
            pass
        return {"t": last["t"], "bytes": last["bytes"], "gbps": last["gbps"], "volume": self.spec.volume}

    def abort(self, reason):
        with self._lock:
            if self._aborted is None:
                self._aborted = reason
            for sock in self.socks:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        for sock in self.socks:
            sock.close()
        self.socks = []
        if self.zero_fd is not None:
            os.close(self.zero_fd)
            self.zero_fd = None


class _Handshakes:
    """The server's connections still in their handshake (strangers until their HELLO is whole): at most
    MAX_HANDSHAKING (a newer one evicts the oldest), each refused at most once, with the reason."""

    def __init__(self, refusals, lock):
        self.refusals, self.lock = refusals, lock
        self.waiting = {}  # conn -> (accepted at, peer)
        self.evicted = {}  # conn -> the reason it was cut (its thread records it)

    def admit(self, conn, peer):
        with self.lock:
            if len(self.waiting) >= MAX_HANDSHAKING:
                oldest = min(self.waiting, key=lambda c: self.waiting[c][0])
                self._cut(oldest, "evicted: %d connections were in their handshake" % len(self.waiting))
            self.waiting[conn] = (_now(), peer)

    def _cut(self, conn, reason):
        self.evicted[conn] = reason
        del self.waiting[conn]
        try:
            conn.shutdown(socket.SHUT_RDWR)  # its thread's read ends at once
        except OSError:
            pass

    def evict_all(self, reason, record=True):
        with self.lock:
            for conn in list(self.waiting):
                self._cut(conn, reason if record else None)

    def done(self, conn):
        """The handshake is over (admitted, stopped or refused)."""
        with self.lock:
            self.waiting.pop(conn, None)
            self.evicted.pop(conn, None)

    def refuse(self, conn, peer, reason):
        self.done(conn)
        self.refusals.add(peer, reason)

    def fail(self, conn, peer, reason):
        """The handshake broke off: the reason it was cut, if it was, else ``reason``."""
        with self.lock:
            self.waiting.pop(conn, None)
            cut = self.evicted.pop(conn, reason)
        if cut is not None:
            self.refusals.add(peer, cut)


class TcpEngine(FlowEngine):
    name = "tcp"

    def client(self, spec: FlowSpec) -> TcpClient:
        return TcpClient(spec)

    # ------------------------------------------------------------------ server
    def ready(self, spec, listener=None):
        return True  # the listener is bound and listening before the server runs

    @staticmethod
    def listen(spec: FlowSpec) -> socket.socket:
        """Bind and listen on the server's address (raises OSError: address not here, port taken...)."""
        listener = socket.socket(socket.AF_INET6 if ":" in spec.address else socket.AF_INET, socket.SOCK_STREAM)
        try:
            try:
                # the namespace's ECN setting before the first SYN comes; the accepted sockets inherit the listener's
                # congestion control (it matters for what the server sends: its ACKs, a job's replies)
                if spec.ecn is not None:
                    _tcp_info.set_ecn(spec.ecn)
                if spec.congestion:
                    _tcp_info.set_congestion(listener, spec.congestion)
            except ValueError as exc:
                raise OSError(errno.EINVAL, str(exc)) from None
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((spec.address, spec.port))
            # a backlog that holds a crowd of strangers as well as the step's clients: the server (or the rendezvous)
            # sheds the strangers quickly, and a client's SYN waits in the queue instead of being dropped behind them
            listener.listen(max(BACKLOG, spec.expected_clients * 2))
        except OSError:
            listener.close()
            raise
        return listener

    def serve(self, spec: FlowSpec, listener: socket.socket | None = None, stop=None) -> dict:
        """Receive the step's flows; ``listener`` is an already bound socket (a background server binds first);
        ``stop`` (a threading.Event) ends it early, as a STOP request does."""
        result = {
            "engine": self.name,
            "role": "server",
            "address": spec.address,
            "port": spec.port,
            "expected_clients": spec.expected_clients,
            "flows": [],
            "status": "error",
            "error": None,
            "accept_errors": 0,
            "limits": limits(),
        }
        refusals = Refusals(result)  # rejected, rejected_total, rejected_unlisted
        token = token_bytes(spec.token)
        deadline = _now() + spec.timeout
        lock = threading.Lock()
        stop = stop if stop is not None else threading.Event()
        gate = _Handshakes(refusals, lock)
        workers = []
        paused_until = None
        try:
            if listener is None:
                listener = self.listen(spec)
            listener.setblocking(False)  # accepted in batches; each connection is made blocking again
            result["listening_at"] = time.time()
            while not stop.is_set():
                with lock:
                    finished = sum(1 for f in result["flows"] if f.get("status") in ("ok", "error"))
                if finished >= spec.expected_clients:
                    break
                now = _now()
                remaining = deadline - now
                if remaining <= 0:
                    result["error"] = "deadline reached (timeout=%ss) with %d of %d flows complete" % (
                        spec.timeout, finished, spec.expected_clients)
                    break
                if paused_until is not None and now < paused_until:
                    stop.wait(min(paused_until - now, remaining))
                    continue
                if not _readable(listener.fileno(), min(0.2, remaining)):
                    continue
                for _attempt in range(ACCEPT_BATCH):
                    try:
                        conn, peer = listener.accept()
                    except (BlockingIOError, InterruptedError):
                        break
                    except OSError as exc:
                        # out of descriptors (or another transient failure): the connections still in their
                        # handshake go, the listener rests; the admitted flows are never cut
                        result["accept_errors"] += 1
                        if exc.errno in _NO_FD:
                            gate.evict_all("dropped during its handshake: the server ran out of file descriptors "
                                           "(%s)" % errno.errorcode.get(exc.errno, exc.errno))
                        paused_until = _now() + ACCEPT_PAUSE
                        break
                    conn.setblocking(True)
                    gate.admit(conn, peer[0])
                    worker = threading.Thread(
                        target=self._handle, args=(conn, peer, token, spec, deadline, result, lock, stop, gate),
                        daemon=True)
                    worker.start()
                    workers.append(worker)
                if len(workers) > 256:
                    workers = [w for w in workers if w.is_alive()]
        except OSError as exc:
            result["error"] = "cannot listen on %s:%d: %s" % (spec.address, spec.port, exc)
        finally:
            if listener is not None:
                listener.close()
            stop.set()
            gate.evict_all("the server ended during its handshake", record=False)
            for worker in workers:
                worker.join(timeout=max(0.1, deadline - _now()))
        flows = result["flows"]
        complete = sum(1 for f in flows if f.get("status") == "ok")
        if result["error"] is None:
            # The verdict comes from the flows: a STOP that arrives after every expected flow is in changes nothing.
            if any(f.get("status") != "ok" for f in flows):
                result["error"] = "; ".join(
                    "%s: %s" % (f.get("flow_id"), f.get("error")) for f in flows if f.get("status") != "ok")
            elif complete < spec.expected_clients:
                result["error"] = "%s with %d of %d flows complete" % (
                    "stopped by request" if result.get("stopped") else "ended", complete, spec.expected_clients)
            else:
                result["status"] = "ok"
        result["bytes"] = sum(f.get("bytes", 0) for f in flows)
        return result

    def _handle(self, conn, peer, token, spec, deadline, result, lock, stop, gate):
        entry = {"peer": peer[0], "status": "receiving", "bytes": 0}
        handshake = min(deadline, _now() + HANDSHAKE_TIMEOUT)  # the whole handshake, not each read
        admitted = False
        try:
            magic = _recv_exact(conn, 4, handshake)
            if magic == MAGIC_STOP:
                if hmac.compare_digest(_recv_exact(conn, 16, handshake), token):
                    gate.done(conn)
                    with lock:
                        result["stopped"] = True
                    stop.set()
                    conn.sendall(b"OK")
                else:
                    gate.refuse(conn, peer[0], "stop with a wrong token")
                return
            if magic != MAGIC_HELLO:
                gate.refuse(conn, peer[0], "not a flow client")
                return
            if not hmac.compare_digest(_recv_exact(conn, 16, handshake), token):
                gate.refuse(conn, peer[0], "wrong run token")
                conn.settimeout(0.5)
                conn.sendall(b"NOwrong run token")
                return
            volume, id_len = _HELLO_TAIL.unpack(_recv_exact(conn, _HELLO_TAIL.size, handshake))
            entry["flow_id"] = _recv_exact(conn, id_len, handshake).decode("utf-8", "replace")
            gate.done(conn)
            admitted = True
            limit = spec.max_bytes
            conn.settimeout(max(0.1, min(5.0, deadline - _now())))
            if limit is not None and volume > limit:
                entry.update(status="error", error="refused volume %d > max_bytes %d" % (volume, limit))
                with lock:
                    result["flows"].append(entry)
                conn.sendall(("NOvolume %d exceeds the server's max_bytes %d" % (volume, limit)).encode())
                return
            with lock:
                result["flows"].append(entry)
            conn.sendall(b"OK")
            conn.settimeout(None)
            entry["volume_bytes"] = volume or None
            received, first, last = self._drain(conn, volume or None, limit, deadline, stop)
            entry.update(bytes=received, first_byte=first, last_byte=last)
            if volume and received < volume:
                entry.update(status="error", error="connection ended after %d of %d bytes" % (received, volume))
                return
            conn.settimeout(2.0)
            # the receiver's side of the evidence: ECN negotiated, CE segments received (6.18), its ACKs' RTT
            entry["tcp"] = _tcp_info.summary([_tcp_info.read(conn)], _tcp_info.congestion_of(conn))
            conn.sendall(_DONE.pack(received, first or 0.0, last or 0.0))
            entry["status"] = "ok"
        except Exception as exc:  # noqa: BLE001  whatever happens to one connection is that connection's result
            if admitted:
                entry.update(status="error", error="%s: %s" % (type(exc).__name__, exc))
            else:
                gate.fail(conn, peer[0], "handshake not complete within %.0f s" % HANDSHAKE_TIMEOUT
                          if isinstance(exc, socket.timeout) else "its handshake failed (%s: %s)"
                          % (type(exc).__name__, exc))
        finally:
            gate.done(conn)
            conn.close()

    @staticmethod
    def _drain(conn, volume, limit, deadline, stop):
        """Receive until ``volume`` bytes (or EOF) through splice into /dev/null: no copy into Python. Where Python has
        no ``os.splice`` (3.9, RHEL 9's), into one reused buffer with ``recv_into`` (a copy, no allocation)."""
        if not hasattr(os, "splice"):
            return TcpEngine._drain_into_buffer(conn, volume, limit, deadline, stop)
        fileno = conn.fileno()
        pipe_r, pipe_w = os.pipe()
        try:
            fcntl.fcntl(pipe_w, _F_SETPIPE_SZ, 1 << 20)
        except OSError:
            pass  # the default 64 KiB pipe works, with more calls
        devnull = os.open(os.devnull, os.O_WRONLY)
        received, first, last = 0, None, None
        cap = volume if volume is not None else limit
        try:
            os.set_blocking(fileno, False)
            while cap is None or received < cap:
                want = _CHUNK if cap is None else min(_CHUNK, cap - received)
                try:
                    n = os.splice(fileno, pipe_w, want, flags=getattr(os, "SPLICE_F_MOVE", 1))
                except BlockingIOError:
                    if stop.is_set() or _now() >= deadline:
                        break
                    _readable(fileno, 0.2)
                    continue
                if n == 0:
                    break
                now = time.time()
                if first is None:
                    first = now
                last = now
                received += n
                while n > 0:
                    n -= os.splice(pipe_r, devnull, n)
        finally:
            os.set_blocking(fileno, True)
            for fd in (pipe_r, pipe_w, devnull):
                os.close(fd)
        return received, first, last

    @staticmethod
    def _drain_into_buffer(conn, volume, limit, deadline, stop):
        """``_drain`` without splice: the bytes land in one reused buffer and are dropped there."""
        fileno = conn.fileno()
        buf = bytearray(1 << 20)
        view = memoryview(buf)
        received, first, last = 0, None, None
        cap = volume if volume is not None else limit
        try:
            os.set_blocking(fileno, False)
            while cap is None or received < cap:
                want = len(buf) if cap is None else min(len(buf), cap - received)
                try:
                    n = conn.recv_into(view[:want])
                except BlockingIOError:
                    if stop.is_set() or _now() >= deadline:
                        break
                    _readable(fileno, 0.2)
                    continue
                if n == 0:
                    break
                now = time.time()
                if first is None:
                    first = now
                last = now
                received += n
        finally:
            os.set_blocking(fileno, True)
        return received, first, last

    def stop(self, spec: FlowSpec) -> dict:
        """Ask a running server of this run (same token) to end now."""
        result = {"engine": self.name, "role": "stop", "address": spec.address, "port": spec.port}
        try:
            with socket.create_connection((spec.address, spec.port), timeout=2.0) as sock:
                sock.sendall(MAGIC_STOP + token_bytes(spec.token))
                result["stopped"] = sock.recv(2) == b"OK"
                result["status"] = "ok" if result["stopped"] else "error"
        except OSError as exc:
            # Nothing listening: the server already ended. That is the goal of a stop.
            result.update(stopped=False, status="ok", note="no server listening (%s)" % exc)
        return result
