# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host side of a job program (docs/job-contract.md): one host's ops, run from the instant at the host's own pace.

``ProgramFlow`` is a ``ClientFlow``. The module's process binds the program server (``ProgramFlow.listen``) before
the daemon forks; the daemon arms (accepts the connections its recvs need, connects to every peer it sends to, per
channel) and fires at the instant. One event loop per host (epoll, non-blocking sockets, a timerfd for compute ops):
no thread per connection, nothing spins.

Wire protocol of a program connection (sender A -> receiver B, channel c; integers big-endian; docs/jobs-host.md):

* hello, A -> B, while arming: ``b"AFP1"`` | token proof (16 bytes, HMAC-SHA256 of a fixed label keyed with the run
  token) | channel (u16) | name length (u16, 1..255) | A's host name (UTF-8). B checks the proof with
  ``hmac.compare_digest`` before it reads anything else, then answers ``b"OK"`` or ``b"NO"`` | reason length (u8) |
  reason, and closes. A refused or stray connection is recorded in B's ``refused``; it never fails B's program.
* from the instant, A -> B: messages, each a header ``iteration (u32) | send op id (u32) | bytes (u64)`` and then the
  payload (zero pages: ``sendfile`` from a memfd; small ones in one ``sendmsg`` from the memfd's mapping).
* B -> A, once a whole message is in: its ack ``iteration (u32) | send op id (u32)``. B drains every message as it
  comes (``splice`` into /dev/null, or ``recv_into`` one reused buffer), whether its recv is posted or not.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import hashlib
import heapq
import hmac
import mmap
import os
import select
import socket
import struct
import time
from collections import deque

from .clock import realtime, sleep_until, tight_timers
from .engine import ClientFlow, FlowError
from .program_spec import COMPUTE, RECV, SEND, Program, check_name, parse_program

__all__ = ["ProgramFlow", "token_proof", "MAGIC", "HEADER", "ACK", "FULL_DETAIL_LIMIT"]

MAGIC = b"AFP1"
HELLO_HEAD = struct.Struct("!4s16sHH")  # magic, token proof, channel, name length
HEADER = struct.Struct("!IIQ")  # iteration, send op id, bytes
ACK = struct.Struct("!II")  # iteration, send op id
FULL_DETAIL_LIMIT = 200_000  # iterations x ops kept in full (contract section 2)
SAMPLE_FIRST, SAMPLE_LAST, SAMPLE_SLOWEST = 3, 3, 10
MAX_REFUSED = 64  # refused connections listed (all are counted)
MAX_WAITING_HELLOS = 256  # connections waiting for their hello at once (more are closed at once)
RETRY_S = 0.05  # between connection attempts to a peer whose server is not up yet

_SMALL = 64 * 1024  # a payload up to this goes out with its header in one sendmsg
_BATCH, _BATCH_BYTES = 64, 256 * 1024  # small messages queued together: at most this many in one sendmsg
_ZERO_SIZE = 64 * 1024 * 1024  # the memfd of zero pages the payload comes from
_WRITE_BUDGET = 4 * 1024 * 1024  # bytes one connection writes per turn of the loop
_READ_BUDGET = 4 * 1024 * 1024  # bytes one connection drains per turn
_FIRST_WRITE = 64 * 1024  # at the instant: every connection's first bytes before any connection's bulk
_BUF = 1024 * 1024  # the receive buffer (headers, small payloads, and everything without splice)
_PIPE = 1024 * 1024
_SPLICE_MIN = 64 * 1024  # a payload remainder at least this long is spliced
_LOWAT = 1024 * 1024  # epoll wakes a receiver when this much of a message is in (or all that it still needs)
_F_SETPIPE_SZ = 1031
_SPLICE_FLAGS = 1 | 2  # SPLICE_F_MOVE | SPLICE_F_NONBLOCK
_RETRANS_OFF = 100  # struct tcp_info: tcpi_total_retrans (u32)

_EPOLLIN, _EPOLLOUT = select.EPOLLIN, select.EPOLLOUT
_EPOLLHUP, _EPOLLERR = select.EPOLLHUP, select.EPOLLERR

# op states within one iteration
_WAIT, _READY, _STARTED, _ARRIVED, _ENDED = 0, 1, 2, 3, 4


def _kernel_at_least(major, minor):
    try:
        release = os.uname().release.split(".")
        return (int(release[0]), int("".join(c for c in release[1] if c.isdigit()) or 0)) >= (major, minor)
    except (ValueError, IndexError):
        return False


# SO_RCVLOWAT for the receivers: a kernel from 4.18 on grows the receive buffer to hold the mark (an older one could
# leave a connection waiting for bytes its window cannot take); 5.4 is taken as the safe floor
_USE_LOWAT = _kernel_at_least(5, 4)


def token_proof(token):
    """The 16 bytes a sender shows in its hello: HMAC-SHA256 of a fixed label keyed with the run token."""
    return hmac.new(token.encode("utf-8"), b"aifabric.lab program hello v1", hashlib.sha256).digest()[:16]


# ------------------------------------------------------------------------------------------------ timerfd (ctypes)
class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


def _libc():
    try:
        lib = ctypes.CDLL("libc.so.6", use_errno=True)
        lib.timerfd_create.argtypes = [ctypes.c_int, ctypes.c_int]
        lib.timerfd_settime.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(_Itimerspec),
                                        ctypes.POINTER(_Itimerspec)]
        return lib
    except (OSError, AttributeError):
        return None


_LIBC = _libc()


class _Timer:
    """A CLOCK_MONOTONIC timerfd set to absolute instants (``time.monotonic`` reads the same clock): the loop wakes
    at a compute op's end to the microsecond, where epoll's own timeout would round up to the millisecond."""

    def __init__(self):
        self.fd = -1
        if _LIBC is not None:
            fd = _LIBC.timerfd_create(1, os.O_NONBLOCK | os.O_CLOEXEC)  # CLOCK_MONOTONIC
            self.fd = fd if fd >= 0 else -1
        self.at = None

    def set(self, mono):
        if self.at == mono:
            return
        self.at = mono
        sec = int(mono)
        nsec = int((mono - sec) * 1e9) + 1  # never a nanosecond early
        if nsec >= 1_000_000_000:
            sec, nsec = sec + 1, nsec - 1_000_000_000
        spec = _Itimerspec(_Timespec(0, 0), _Timespec(sec, nsec))
        _LIBC.timerfd_settime(self.fd, 1, ctypes.byref(spec), None)  # TFD_TIMER_ABSTIME

    def clear(self):
        self.at = None
        try:
            os.read(self.fd, 8)
        except OSError:
            pass

    def close(self):
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class _Failed(Exception):
    """The program cannot go on; the message names the op (iteration, id, tag, peer)."""


class _Iter:
    """One iteration's op states and times (seconds after the instant)."""

    __slots__ = ("pending", "state", "start", "first", "end", "ended")

    def __init__(self, need, count):
        self.pending = list(need)
        self.state = [_WAIT] * count
        self.start = [None] * count
        self.first = [None] * count
        self.end = [None] * count
        self.ended = 0


class _Msg:
    __slots__ = ("i", "j", "hdr", "left", "sent")

    def __init__(self, i, j, nbytes):
        self.i, self.j, self.left, self.sent = i, j, nbytes, 0
        self.hdr = HEADER.pack(i, j, nbytes)


# ------------------------------------------------------------------------------------------------- arming
class _Listener:
    def __init__(self, flow, sock):
        self.flow, self.sock, self.fd, self.mask = flow, sock, sock.fileno(), None

    def on_event(self, _ev):
        flow = self.flow
        while True:
            try:
                conn, addr = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # out of descriptors: the waiting ones are refused by the peers' retries
                flow._refused_entry(None, "accept failed: %s" % exc)
                return
            if len(flow._hellos) >= MAX_WAITING_HELLOS:
                conn.close()
                flow._refused_entry(addr[0], "too many connections waiting for their hello")
                continue
            conn.setblocking(False)
            hello = _Hello(flow, conn, addr[0])
            flow._hellos.add(hello)
            flow._watch(hello, _EPOLLIN)


class _Hello:
    """An incoming connection until its hello is read and judged."""

    def __init__(self, flow, sock, address):
        self.flow, self.sock, self.fd, self.mask, self.address = flow, sock, sock.fileno(), None, address
        self.buf = b""
        self.need = HELLO_HEAD.size
        self.channel = None
        self.name = None

    def on_event(self, _ev):
        flow = self.flow
        while True:
            try:
                data = self.sock.recv(self.need - len(self.buf))
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if not data:
                flow._refuse(self, "closed the connection before its hello was complete")
                return
            self.buf += data
            if len(self.buf) < self.need:
                continue
            if self.channel is None:
                magic, proof, channel, name_len = HELLO_HEAD.unpack(self.buf)
                if magic != MAGIC:
                    flow._refuse(self, "not a program peer")
                    return
                if not hmac.compare_digest(proof, flow._proof):
                    flow._refuse(self, "wrong run token")
                    return
                if not 1 <= name_len <= 255:
                    flow._refuse(self, "a host name of %d bytes (1..255 allowed)" % name_len)
                    return
                self.channel = channel
                self.need += name_len
                continue
            try:
                self.name = check_name(self.buf[HELLO_HEAD.size:].decode("utf-8"), "hello")
            except (UnicodeDecodeError, FlowError):
                flow._refuse(self, "a host name that is not printable UTF-8")
                return
            flow._incoming(self)
            return


class _Dial:
    """An outgoing connection until the peer's program server admits it; retried while the server comes up."""

    def __init__(self, flow, peer, channel, endpoint):
        self.flow, self.peer, self.channel, self.endpoint = flow, peer, channel, endpoint
        name = flow.host.encode("utf-8")
        self.hello = HELLO_HEAD.pack(MAGIC, flow._proof, channel, len(name)) + name
        self.sock, self.fd, self.mask = None, -1, None
        self.phase = "waiting"
        self.retry_at = 0.0
        self.last_error = "not tried yet"
        self.answer = b""

    def where(self):
        return "%s at %s:%d (channel %d)" % (self.peer, self.endpoint.address, self.endpoint.port, self.channel)

    def start(self):
        family = socket.AF_INET6 if ":" in self.endpoint.address else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setblocking(False)
        self.fd = self.sock.fileno()
        self.answer = b""
        err = self.sock.connect_ex((self.endpoint.address, self.endpoint.port))
        if err not in (0, errno.EINPROGRESS):
            self._retry(os.strerror(err))
            return
        self.phase = "connecting"
        self.flow._watch(self, _EPOLLOUT)

    def _retry(self, why):
        self.flow._unwatch(self)
        if self.sock is not None:
            self.sock.close()
        self.sock = None
        self.last_error = why
        self.phase = "waiting"
        self.retry_at = time.time() + RETRY_S

    def on_event(self, ev):
        if self.phase == "connecting":
            if not ev & (_EPOLLOUT | _EPOLLERR | _EPOLLHUP):
                return  # a stale event of a descriptor number used before
            err = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                self._retry(os.strerror(err))
                return
            try:
                self.sock.send(self.hello)  # a few hundred bytes into an empty socket buffer: all of it
            except OSError as exc:
                self._retry(str(exc))
                return
            self.phase = "answer"
            self.flow._watch(self, _EPOLLIN)
            return
        need = 2  # b"OK", or b"NO" | reason length (u8) | reason
        if self.answer[:2] == b"NO":
            need = 3 if len(self.answer) < 3 else 3 + self.answer[2]
        try:
            data = self.sock.recv(need - len(self.answer))
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._retry(str(exc))
            return
        if not data:
            self._retry("the connection closed before the program server answered")
            return
        self.answer += data
        if self.answer == b"OK":
            self.flow._unwatch(self)
            self.phase = "admitted"
            self.flow._admitted(self)
        elif self.answer[:2] == b"NO":
            if len(self.answer) >= 3 and len(self.answer) == 3 + self.answer[2]:
                reason = self.answer[3:].decode("utf-8", "replace")
                self.flow._fatal = "the program server of %s refused this host's connection: %s" % (
                    self.where(), reason)
        elif len(self.answer) >= 2:
            self.flow._fatal = "%s is not a program server (it answered %r to the hello); is the port right?" % (
                self.where(), self.answer[:2])


# ------------------------------------------------------------------------------------------------- running
class _Out:
    """This host's sending end of one connection: FIFO, window, acks."""

    def __init__(self, flow, dial, window):
        self.flow, self.peer, self.channel = flow, dial.peer, dial.channel
        self.sock, self.fd, self.mask = dial.sock, dial.fd, None
        self.window = window
        self.sends = flow.program.sends[(dial.peer, dial.channel)]
        self.unacked = deque()
        self.queue = deque()
        self.head_i, self.head_k = 0, 0
        self.abuf = bytearray(64 * 1024)
        self.apart = b""
        self.messages = 0
        self.bytes = 0
        self.closed = False

    def describe(self):
        return "%s (channel %d)" % (self.peer, self.channel)

    def try_start(self, t):
        flow = self.flow
        sends, unacked, window = self.sends, self.unacked, self.window
        started = False
        while len(unacked) < window and self.head_i < flow.iterations:
            it = flow._live.get(self.head_i)
            if it is None:
                break
            j = sends[self.head_k]
            if it.state[j] != _READY:
                break
            it.state[j] = _STARTED
            it.start[j] = t
            unacked.append((self.head_i, j))
            self.queue.append(_Msg(self.head_i, j, flow._bytes[j]))
            self.head_k += 1
            if self.head_k == len(sends):
                self.head_k = 0
                self.head_i += 1
            started = True
        if not started:
            return
        if flow._kickoff:  # the instant's first writes: every connection's first bytes, then the bulk in turns
            if self not in flow._kicked:
                flow._kicked.append(self)
        else:
            self.write(_WRITE_BUDGET)

    def write(self, budget):
        flow = self.flow
        queue, fd, sock = self.queue, self.fd, self.sock
        zfd, zsize = flow._zero_fd, flow._zero_size
        try:
            while queue and budget > 0:
                msg = queue[0]
                if msg.hdr and msg.left <= _SMALL and msg.sent == 0 and len(msg.hdr) == HEADER.size:
                    if not self._send_small(budget):
                        break  # the socket is full: the rest on EPOLLOUT
                    budget -= _SMALL
                    continue
                if msg.hdr:
                    whole = len(msg.hdr) == HEADER.size
                    n = sock.send(msg.hdr, socket.MSG_MORE)
                    msg.hdr = msg.hdr[n:]
                    if whole and n:
                        flow._live[msg.i].first[msg.j] = flow.now()
                    budget -= n
                    if msg.hdr:
                        break  # the socket is full: the rest on EPOLLOUT
                while msg.left > 0 and budget > 0:
                    offset = msg.sent % zsize
                    n = os.sendfile(fd, zfd, offset, min(msg.left, zsize - offset, budget))
                    if n == 0:
                        raise BrokenPipeError(errno.EPIPE, "the connection closed")
                    msg.sent += n
                    msg.left -= n
                    budget -= n
                    flow.bytes_sent += n
                    self.bytes += n
                if msg.left == 0 and not msg.hdr:
                    queue.popleft()
                else:
                    break
        except (BlockingIOError, InterruptedError):
            pass
        except OSError as exc:
            self.gone("%s: %s" % (type(exc).__name__, exc.strerror or exc))
            return
        flow._watch(self, _EPOLLIN | _EPOLLOUT if queue else _EPOLLIN)

    def _send_small(self, budget):
        """The small messages at the queue's head (headers and payloads from the zero mapping) in one sendmsg;
        True when all of them went."""
        flow = self.flow
        queue, zview = self.queue, flow._zero_view
        batch, buffers, size = [], [], 0
        for msg in queue:
            if (msg.left > _SMALL or msg.sent or len(msg.hdr) != HEADER.size or len(batch) == _BATCH
                    or (batch and size + msg.left > min(budget, _BATCH_BYTES))):
                break
            batch.append(msg)
            buffers.append(msg.hdr)
            buffers.append(zview[:msg.left])
            size += HEADER.size + msg.left
        n = self.sock.sendmsg(buffers)
        complete = n == size
        now = flow.now()
        for msg in batch:
            if n <= 0:
                break
            flow._live[msg.i].first[msg.j] = now
            head = min(n, HEADER.size)
            msg.hdr = msg.hdr[head:]
            body = min(n - head, msg.left)
            n -= head + body
            msg.left -= body
            msg.sent += body
            flow.bytes_sent += body
            self.bytes += body
            if msg.left or msg.hdr:
                break
            queue.popleft()
        return complete

    def on_event(self, ev):
        if ev & (_EPOLLIN | _EPOLLHUP | _EPOLLERR):
            self.read()
        if ev & _EPOLLOUT and self.queue and not self.closed:
            self.write(_WRITE_BUDGET)

    def read(self):
        flow = self.flow
        try:
            n = self.sock.recv_into(self.abuf)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self.gone("%s: %s" % (type(exc).__name__, exc.strerror or exc))
            return
        if n == 0:
            self.gone("it closed the connection")
            return
        now = flow.now()
        data = self.apart + bytes(self.abuf[:n]) if self.apart else memoryview(self.abuf)[:n]
        whole = len(data) - len(data) % ACK.size
        unacked = self.unacked
        for offset in range(0, whole, ACK.size):
            i, s = ACK.unpack_from(data, offset)
            if not unacked:
                raise _Failed("%s acknowledged iteration %d send op %d, but no message of this host is "
                              "unacknowledged on that connection (the peers' programs disagree)"
                              % (self.describe(), i, s))
            ei, ej = unacked.popleft()
            if i != ei or s != ej:
                raise _Failed("%s acknowledged iteration %d send op %d while %s was the oldest unacknowledged "
                              "message on that connection" % (self.describe(), i, s, flow.op_name(ei, ej)))
            self.messages += 1
            flow._end(ei, ej, now)
        self.apart = bytes(data[whole:])
        self.try_start(now)

    def gone(self, why):
        flow = self.flow
        self.closed = True
        flow._unwatch(self)
        if self.unacked:
            i, j = self.unacked[0]
            raise _Failed("%s disappeared (%s) while %s was unacknowledged" % (self.describe(), why,
                                                                               flow.op_name(i, j)))
        if self.head_i < flow.iterations:
            raise _Failed("%s disappeared (%s) before %s could start" % (
                self.describe(), why, flow.op_name(self.head_i, self.sends[self.head_k])))


class _In:
    """This host's receiving end of one connection: drains every message, checks its header, acks it."""

    def __init__(self, flow, hello, name, channel):
        self.flow, self.peer, self.channel = flow, name, channel
        self.sock, self.fd, self.mask = hello.sock, hello.fd, None
        self.recvs = flow.program.recvs[(name, channel)]
        self.exp_i, self.exp_k = 0, 0
        self.cur_i = self.cur_j = self.cur_s = -1
        self.left = 0
        self.hdr = b""
        self.acks = bytearray()
        self.messages = 0
        self.bytes = 0
        self.closed = False
        self.lowat = 1

    def describe(self):
        return "%s (channel %d)" % (self.peer, self.channel)

    def on_event(self, ev):
        if ev & _EPOLLOUT and self.acks:
            self.flush()
        if ev & (_EPOLLIN | _EPOLLHUP | _EPOLLERR) and not self.closed:
            self.read()
            self.flush()
            self._lowat()

    def _lowat(self):
        """SO_RCVLOWAT: wake for a good part of a large message, never for more than it still needs (a header
        and the peer's EOF wake it at once)."""
        want = min(self.left, _LOWAT) if self.left and not self.hdr and _USE_LOWAT else 1
        if want != self.lowat and not self.closed:
            try:
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, want)
                self.lowat = want
            except OSError:
                pass

    def flush(self):
        if not self.acks or self.closed:
            return
        try:
            n = self.sock.send(self.acks)
        except (BlockingIOError, InterruptedError):
            n = 0
        except OSError as exc:
            self.acks.clear()
            self.gone("%s: %s" % (type(exc).__name__, exc.strerror or exc))
            return
        del self.acks[:n]
        self.flow._watch(self, _EPOLLIN | _EPOLLOUT if self.acks else _EPOLLIN)

    def read(self):
        flow = self.flow
        fd, sock = self.fd, self.sock
        buf, view = flow._rbuf, flow._rview
        budget = _READ_BUDGET
        while budget > 0:
            left = self.left
            if left >= _SPLICE_MIN and flow._splice:
                try:
                    n = os.splice(fd, flow._pipe_w, min(left, _PIPE), flags=_SPLICE_FLAGS)
                except (BlockingIOError, InterruptedError):
                    return
                except OSError as exc:
                    self.gone("%s: %s" % (type(exc).__name__, exc.strerror or exc))
                    return
                if n == 0:
                    self.gone("it closed the connection")
                    return
                k = n
                while k:
                    k -= os.splice(flow._pipe_r, flow._devnull, k)
                self.left = left - n
                flow.bytes_received += n
                self.bytes += n
                budget -= n
                if self.left == 0:
                    self._complete(flow.now())
                elif n < min(left, _PIPE):
                    return  # the socket had no more
                continue
            # the next message is known from the program: when it is large, read no further than its header, so that
            # its payload is spliced, not copied; small ones are read many at a time
            want = _BUF
            if flow._splice and self.exp_i < flow.iterations and flow._bytes[self.recvs[self.exp_k]] >= _SPLICE_MIN:
                want = left + HEADER.size - len(self.hdr)
            try:
                n = sock.recv_into(buf, want)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                self.gone("%s: %s" % (type(exc).__name__, exc.strerror or exc))
                return
            if n == 0:
                self.gone("it closed the connection")
                return
            now = flow.now()
            budget -= n
            pos = 0
            while pos < n:
                left = self.left
                if left:
                    take = left if left <= n - pos else n - pos
                    pos += take
                    self.left = left - take
                    flow.bytes_received += take
                    self.bytes += take
                    if self.left == 0:
                        self._complete(now)
                    continue
                if self.hdr or n - pos < HEADER.size:
                    piece = bytes(view[pos:pos + HEADER.size - len(self.hdr)])
                    self.hdr += piece
                    pos += len(piece)
                    if len(self.hdr) < HEADER.size:
                        break
                    fields = HEADER.unpack(self.hdr)
                    self.hdr = b""
                else:
                    fields = HEADER.unpack_from(buf, pos)
                    pos += HEADER.size
                self._header(fields, now)
            if n < want:
                return  # the socket had no more; epoll says when it has

    def _header(self, fields, now):
        flow = self.flow
        hi, hs, hb = fields
        if self.exp_i >= flow.iterations:
            raise _Failed("%s sent a message (its send op %d of iteration %d, %d bytes) after the last recv this "
                          "host's program expects from it on that connection" % (self.describe(), hs, hi, hb))
        i, j = self.exp_i, self.recvs[self.exp_k]
        if hi != i or hb != flow._bytes[j]:
            raise _Failed("the message from %s does not match: this host's %s is matched with %s's send op %d of "
                          "iteration %d (%d bytes); the k-th send of %s to this host on channel %d must be the k-th "
                          "recv here, with the same bytes" % (
                              self.describe(), flow.op_name(i, j), self.peer, hs, hi, hb, self.peer, self.channel))
        self.exp_k += 1
        if self.exp_k == len(self.recvs):
            self.exp_k = 0
            self.exp_i += 1
        self.cur_i, self.cur_j, self.cur_s, self.left = i, j, hs, hb
        flow._iter(i).first[j] = now

    def _complete(self, now):
        self.acks += ACK.pack(self.cur_i, self.cur_s)
        self.messages += 1
        self.flow._arrived(self.cur_i, self.cur_j, now)

    def gone(self, why):
        flow = self.flow
        self.closed = True
        self.acks.clear()  # nobody to tell
        flow._unwatch(self)
        if self.left:
            raise _Failed("%s disappeared (%s) in the middle of %s (%d bytes missing)" % (
                self.describe(), why, flow.op_name(self.cur_i, self.cur_j), self.left))
        if self.exp_i < flow.iterations:
            raise _Failed("%s disappeared (%s) before %s arrived" % (
                self.describe(), why, flow.op_name(self.exp_i, self.recvs[self.exp_k])))


class ProgramFlow(ClientFlow):
    """One host's program of a synchronized step (docs/job-contract.md sections 1 and 2).

    ``program``: the ``program`` dict (or a parsed ``Program``); ``token``: the run token; ``host``: this host's
    name as its peers' programs call it; ``listener``: the socket ``ProgramFlow.listen`` bound in the module's
    process (None: bound at ``arm``; not needed without recv ops); ``timeout``: seconds from the instant when the
    program has no ``timeout`` of its own."""

    def __init__(self, program, token, host, listener=None, timeout=300.0, full_detail_limit=FULL_DETAIL_LIMIT,
                 use_splice=None):
        self.program = program if isinstance(program, Program) else parse_program(program)
        prog = self.program
        self.host = check_name(host, "host")
        self.listener = listener
        self.timeout = prog.timeout if prog.timeout is not None else float(timeout)
        self.full = prog.iterations * len(prog.ops) <= full_detail_limit
        self._splice = hasattr(os, "splice") if use_splice is None else bool(use_splice and hasattr(os, "splice"))
        self.iterations = prog.iterations
        self._count = len(prog.ops)
        self._kinds = [op.kind for op in prog.ops]
        self._bytes = [op.bytes for op in prog.ops]
        self._ms = [op.ms for op in prog.ops]
        self._need0 = prog.need(0)
        self._need = prog.need(1)
        self._proof = token_proof(token)
        self._aborted = None
        self._fatal = None
        self._armed = False
        self._fired = False
        self._kickoff = False
        self._kicked = []  # the connections that queued messages at the instant, for their first writes
        self._closed = False
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._ep = None
        self._handlers = {}
        self._hellos = set()
        self._admitted_keys = set()  # (peer, channel) of every connection admitted (its OK sent)
        self._dials = []
        self._outs = {}
        self._ins = {}
        self._op_out = {}
        self._timer = None
        self._timers = []
        self._seq = 0
        self._work = deque()
        self._draining = False
        self._live = {}
        self._kept = {}  # iteration -> _Iter of ended iterations whose times the result keeps
        self._slowest = []  # (iteration time, iteration) min-heap of the sampled mode's slowest
        self._last = deque()
        self._iteration_end = [None] * prog.iterations
        self._latest_end = 0.0
        self.iterations_done = 0
        self.bytes_sent = 0
        self.bytes_received = 0
        self._mono0 = None
        self._cpu = 0.0
        self._progress_last = None
        self._zero_fd = self._zero_map = self._zero_view = None
        self._zero_size = 0
        self._pipe_r = self._pipe_w = self._devnull = None
        self._rbuf = self._rview = None
        self._refused_count = 0
        self.result = {"engine": "program", "flow_id": "program", "host": self.host, "status": "error", "error": None,
                       "iterations": prog.iterations, "ops": self._count, "refused": []}

    # -------------------------------------------------------------------------------------------- the server
    @staticmethod
    def listen(program):
        """Bind the program server on ``program.listen`` (in the module's process, before the daemon forks).
        Returns the listening socket, or None when the program has no recv op. Raises OSError naming the address
        and port (taken port, address not on this host)."""
        prog = program if isinstance(program, Program) else parse_program(program)
        if not prog.recvs:
            return None
        address, port = prog.listen.address, prog.listen.port
        if address in ("0.0.0.0", "::"):
            raise FlowError("program.listen.address: %s would listen on every interface; give this host's lab "
                            "address" % address)
        sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((address, port))
            sock.listen(max(64, 2 * len(prog.recvs)))
        except OSError as exc:
            sock.close()
            if exc.errno == errno.EADDRINUSE:
                why = "port %d on %s is taken (another program server or process listens there); give " \
                      "program.listen another port or end that process" % (port, address)
            elif exc.errno == errno.EADDRNOTAVAIL:
                why = "%s is not an address of this host; give program.listen.address this host's lab address" % (
                    address,)
            else:
                why = "cannot listen on %s port %d: %s" % (address, port, exc.strerror or exc)
            raise OSError(exc.errno, why) from None
        return sock

    # -------------------------------------------------------------------------------------------- the loop's seams
    def now(self):
        return time.monotonic() - self._mono0

    def _watch(self, handler, mask):
        if handler.mask == mask:
            return
        if handler.mask is None:
            self._ep.register(handler.fd, mask)
            self._handlers[handler.fd] = handler
        else:
            self._ep.modify(handler.fd, mask)
        handler.mask = mask

    def _unwatch(self, handler):
        if handler.mask is not None:
            try:
                self._ep.unregister(handler.fd)
            except (OSError, ValueError):
                pass
            self._handlers.pop(handler.fd, None)
            handler.mask = None

    def _dispatch(self, timeout):
        for fd, ev in self._ep.poll(timeout):
            handler = self._handlers.get(fd)
            if handler is not None:
                handler.on_event(ev)

    def _open(self):
        if self._ep is not None:
            return
        self._ep = select.epoll()
        self._ep.register(self._wake_r, _EPOLLIN)
        self._handlers[self._wake_r] = self
        self.mask = _EPOLLIN
        largest = max([op.bytes for op in self.program.ops if op.kind == SEND] or [0])
        if largest:
            self._zero_size = min(_ZERO_SIZE, largest)
            self._zero_fd = os.memfd_create("aifabric-program", os.MFD_CLOEXEC)
            os.ftruncate(self._zero_fd, self._zero_size)
            self._zero_map = mmap.mmap(self._zero_fd, self._zero_size, prot=mmap.PROT_READ)
            self._zero_view = memoryview(self._zero_map)
        if self.program.recvs:
            self._rbuf = bytearray(_BUF)
            self._rview = memoryview(self._rbuf)
            if self._splice:
                self._pipe_r, self._pipe_w = os.pipe2(os.O_CLOEXEC)
                try:
                    fcntl.fcntl(self._pipe_w, _F_SETPIPE_SZ, _PIPE)
                except OSError:
                    pass  # the default 64 KiB pipe works, with more calls
                self._devnull = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
        self._timer = _Timer()
        if self._timer.fd >= 0:
            self._timer_handler = _TimerHandler(self)
            self._watch(self._timer_handler, _EPOLLIN)

    def on_event(self, _ev):  # the wake pipe: abort() was called
        try:
            os.read(self._wake_r, 64)
        except OSError:
            pass

    # -------------------------------------------------------------------------------------------- arming
    def arm(self, deadline):
        """Accept the connections this host's recvs need and connect to every peer it sends to (per channel),
        until ``deadline`` (epoch s). True when armed; else ``result['error']`` says what is missing."""
        cpu = time.thread_time()
        armed = False
        try:
            armed = self._arm(deadline)
        except OSError as exc:
            self.result["error"] = "not armed: %s" % (exc.strerror or exc)
        finally:
            self._cpu += time.thread_time() - cpu
            if not armed:
                self._not_started("error", self.result["error"])
        return armed

    def _arm(self, deadline):
        prog = self.program
        if prog.recvs and self.listener is None:
            self.listener = self.listen(prog)
        self._open()
        if self.listener is not None:
            self.listener.setblocking(False)
            self._watch(_Listener(self, self.listener), _EPOLLIN)
        self._dials = [_Dial(self, peer, channel, prog.peers[peer]) for peer, channel in prog.sends]
        for dial in self._dials:
            dial.start()
        while True:
            if self._aborted:
                self.result["error"] = "not armed: %s" % self._aborted
                return False
            if self._fatal:
                self.result["error"] = "not armed: %s" % self._fatal
                return False
            if len(self._outs) == len(self._dials) and len(self._ins) == len(prog.recvs):
                break
            now = time.time()
            if now >= deadline:
                self.result["error"] = "not armed by the deadline: %s" % self._missing()
                return False
            wait = deadline - now
            for dial in self._dials:
                if dial.phase == "waiting":
                    wait = min(wait, max(0.0, dial.retry_at - now))
            self._dispatch(wait)
            now = time.time()
            for dial in self._dials:
                if dial.phase == "waiting" and dial.retry_at <= now and not self._fatal:
                    dial.start()
        self._armed = True
        self.result["armed_at"] = time.time()
        for conn in list(self._outs.values()) + list(self._ins.values()):
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return True

    def _missing(self):
        parts = []
        for dial in self._dials:
            if dial.phase == "answer":
                parts.append("%s accepted the connection but did not admit it (is its program armed?)"
                             % dial.where())
            elif dial.phase != "admitted":
                parts.append("no program server answered for %s: %s" % (dial.where(), dial.last_error))
        for peer, channel in self.program.recvs:
            if (peer, channel) not in self._admitted_keys:
                parts.append("%s never connected for channel %d (this host's recv ops from it need it)"
                             % (peer, channel))
        return "; ".join(parts)

    def _admitted(self, dial):
        out = _Out(self, dial, self.program.channel_window(dial.channel))
        self._outs[(dial.peer, dial.channel)] = out
        for j in out.sends:
            self._op_out[j] = out

    def _incoming(self, hello):
        """A hello was read whole: judged by ``_admit`` (every transport's), then the admitted connection is the
        transport's (``_accept``)."""
        if self._admit(hello):
            self._accept(hello)

    def _admit(self, hello):
        """Admit the connection of a good hello (``OK``) or refuse it; True when admitted."""
        self._unwatch(hello)
        self._hellos.discard(hello)
        name, channel = hello.name, hello.channel
        key = (name, channel)
        # (once armed, every expected connection is in: whatever comes later is refused as one of these two)
        if key not in self.program.recvs:
            self._refuse(hello, "this program has no recv op from %s on channel %d" % (name, channel), name, channel)
            return False
        if key in self._admitted_keys:  # (the first one may still be arming: a verbs queue pairs' exchange)
            self._refuse(hello, "a second connection from %s for channel %d" % (name, channel), name, channel)
            return False
        try:
            hello.sock.send(b"OK")
        except OSError:
            hello.sock.close()
            return False
        self._admitted_keys.add(key)
        return True

    def _accept(self, hello):
        """The TCP transport's side of an admitted connection (``VerbsProgramFlow`` exchanges queue pairs on it)."""
        self._ins[(hello.name, hello.channel)] = _In(self, hello, hello.name, hello.channel)

    def _refuse(self, hello, reason, name=None, channel=None):
        self._unwatch(hello)
        self._hellos.discard(hello)
        text = reason.encode("utf-8")[:255]
        try:
            hello.sock.send(b"NO" + bytes([len(text)]) + text)
        except OSError:
            pass
        hello.sock.close()
        self._refused_entry(hello.address, reason, name, channel)

    def _refused_entry(self, address, reason, name=None, channel=None):
        self._refused_count += 1
        if len(self.result["refused"]) < MAX_REFUSED:
            entry = {"peer": address, "reason": reason}
            if name is not None:
                entry.update(name=name, channel=channel)
            self.result["refused"].append(entry)

    # -------------------------------------------------------------------------------------------- firing
    def fire(self, at):
        """Wait for the instant ``at`` (epoch s; an absolute timer, no spin), run the program, return the result
        (contract section 2)."""
        result = self.result
        result["at"] = at
        if not self._armed or self._fired:
            result["error"] = result["error"] or ("fired twice" if self._fired else "fired before it was armed")
            return result
        self._fired = True
        cpu = time.thread_time()
        tight_timers()
        lead = at - time.time()
        if lead > 0.1:  # abortable until just before the instant, then the absolute timer
            select.select([self._wake_r], [], [], lead - 0.05)
        if self._aborted:
            self._cpu += time.thread_time() - cpu
            self._not_started("aborted", "not started: %s" % self._aborted)
            for conn in list(self._outs.values()) + list(self._ins.values()):
                try:
                    conn.sock.shutdown(socket.SHUT_RDWR)  # the peers learn at once
                except OSError:
                    pass
            return result
        status, error = "ok", None
        try:
            with realtime() as rt:
                woke = sleep_until(at)
                mono, wall = time.monotonic(), time.time()
                self._mono0 = mono - (wall - at)
                result.update(late_s=round(woke - at, 6), realtime_start=rt)
                self._start()
            self._run()
        except _Failed as exc:
            status, error = "error", str(exc)
        except _Timeout as exc:
            status, error = "timeout", str(exc)
        except _Aborted:
            status, error = "aborted", self._aborted
        except Exception as exc:  # noqa: BLE001  a bug must not cost the host what it measured
            status, error = "error", "the program executor crashed: %r" % (exc,)
        finally:
            self._cpu += time.thread_time() - cpu
            self._finish(status, error)
        return result

    def _start(self):
        self._kickoff = True
        it = self._iter(0)
        t = self.now()
        for conn in self._ins.values():
            self._watch(conn, _EPOLLIN)
        for out in self._outs.values():
            self._watch(out, _EPOLLIN)
        for j in range(self._count):
            if it.pending[j] == 0:
                self._ready(0, it, j, t)
        self._kickoff = False
        kicked, self._kicked = self._kicked, []
        for out in kicked:  # every connection's first bytes, then the bulk in turns
            out.write(_FIRST_WRITE)
        self._drain()

    def _run(self):
        deadline = self._mono0 + self.timeout
        timer = self._timer
        while True:
            if self._aborted:
                raise _Aborted()
            if self.iterations_done == self.iterations and self._settled():
                return
            now = time.monotonic()
            if now >= deadline:
                raise _Timeout("the program did not end within timeout=%gs: %s" % (self.timeout, self._waiting()))
            wait = deadline - now
            if self._timers:
                if timer.fd >= 0:
                    timer.set(self._mono0 + self._timers[0][0])
                else:
                    wait = min(wait, max(0.0, self._mono0 + self._timers[0][0] - now))
            self._dispatch(min(wait, 1.0))
            if timer.fd < 0 and self._timers:
                self._expire()

    def _settled(self):
        """Whether the loop may end once every op ended: every ack written (the verbs transport waits for its
        senders' ``BY`` instead)."""
        return not any(c.acks for c in self._ins.values())

    def _expire(self):
        now = self.now()
        timers = self._timers
        while timers and timers[0][0] <= now + 1e-9:
            _t, _seq, i, j = heapq.heappop(timers)
            self._end(i, j, now)

    def _waiting(self):
        """The first ops not ended (for a timeout's sentence)."""
        if not self._live:
            return "every op ended"
        i = min(self._live)
        it = self._live[i]
        names = {_WAIT: "waiting for its deps", _READY: "started", _STARTED: "sent, not acknowledged",
                 _ARRIVED: "arrived, deps not met"}
        pending = [j for j in range(self._count) if it.state[j] != _ENDED][:3]
        out = []
        for j in pending:
            state = it.state[j]
            what = names[state]
            if state == _READY and self._kinds[j] == SEND:
                what = "waiting for the connection's FIFO or window"
            elif state == _READY and self._kinds[j] == RECV:
                what = "posted, its message not all in"
            out.append("%s %s" % (self.op_name(i, j), what))
        return "; ".join(out)

    def op_name(self, i, j):
        op = self.program.ops[j]
        return "iteration %d op %d (%s)" % (i, j, op.describe())

    # -------------------------------------------------------------------------------------------- the DAG
    def _iter(self, i):
        it = self._live.get(i)
        if it is None:
            it = self._live[i] = _Iter(self._need0 if i == 0 else self._need, self._count)
        return it

    def _ready(self, i, it, j, t):
        kind = self._kinds[j]
        if kind == COMPUTE:
            it.start[j] = t
            it.state[j] = _READY
            ms = self._ms[j]
            if ms <= 0.0:
                self._work.append((i, j, t))
            else:
                self._seq += 1
                heapq.heappush(self._timers, (t + ms / 1000.0, self._seq, i, j))
        elif kind == RECV:
            it.start[j] = t
            if it.state[j] == _ARRIVED:
                self._work.append((i, j, t))  # its message was in before it was posted: it ends at the posting
            else:
                it.state[j] = _READY
        else:
            it.state[j] = _READY
            self._op_out[j].try_start(t)

    def _arrived(self, i, j, t):
        it = self._iter(i)
        if it.state[j] == _READY:
            self._end(i, j, t)
        else:
            it.state[j] = _ARRIVED

    def _end(self, i, j, t):
        self._work.append((i, j, t))
        self._drain()

    def _drain(self):
        if self._draining:
            return
        self._draining = True
        try:
            work = self._work
            while work:
                self._apply_end(*work.popleft())
        finally:
            self._draining = False

    def _apply_end(self, i, j, t):
        prog = self.program
        it = self._live[i]
        it.end[j] = t
        it.state[j] = _ENDED
        it.ended += 1
        for d in prog.dependents[j]:
            it.pending[d] -= 1
            if it.pending[d] == 0:
                self._ready(i, it, d, t)
        if i + 1 < self.iterations and prog.dependents_next[j]:
            nxt = self._iter(i + 1)
            for d in prog.dependents_next[j]:
                nxt.pending[d] -= 1
                if nxt.pending[d] == 0:
                    self._ready(i + 1, nxt, d, t)
        if it.ended == self._count:
            self._iteration_done(i, it)

    def _iteration_done(self, i, it):
        end = max(it.end)
        self._iteration_end[i] = end
        del self._live[i]
        it.pending = it.state = None
        self.iterations_done += 1
        self._keep(i, it, end - self._latest_end)
        self._latest_end = max(self._latest_end, end)
        if i + 1 < self.iterations and self.program.barrier_ops:
            nxt = self._iter(i + 1)
            for d in self.program.barrier_ops:
                nxt.pending[d] -= 1
                if nxt.pending[d] == 0:
                    self._ready(i + 1, nxt, d, end)

    def _keep(self, i, it, took):
        """Full detail: every iteration. Sampled: the first 3, the last 3, the slowest 10 (by this host's iteration
        time: its end minus the latest end of the iterations before it)."""
        kept = self._kept
        kept[i] = it
        if self.full or i < SAMPLE_FIRST:
            return
        self._last.append(i)
        if len(self._last) > SAMPLE_LAST:
            self._drop(self._last.popleft())
        heapq.heappush(self._slowest, (took, i))
        if len(self._slowest) > SAMPLE_SLOWEST:
            self._drop(heapq.heappop(self._slowest)[1])

    def _drop(self, i):
        if i < SAMPLE_FIRST or i in self._last or any(k == i for _t, k in self._slowest):
            return
        self._kept.pop(i, None)

    # -------------------------------------------------------------------------------------------- the result
    def _finish(self, status, error):
        result = self.result
        if status != "ok":
            for conn in list(self._outs.values()) + list(self._ins.values()):
                try:
                    conn.sock.shutdown(socket.SHUT_RDWR)  # the peers learn at once, not at their timeout
                except OSError:
                    pass
        for hello in list(self._hellos):
            self._refuse(hello, "its hello was not complete when the program ended")
        if self.full:
            sampled = list(range(self.iterations))
        else:
            sampled = sorted(set(self._kept) | set(self._live))
        rows = {}
        rows.update(self._kept)
        rows.update(self._live)
        empty = [None] * self._count

        def table(name):
            out = []
            for i in sampled:
                it = rows.get(i)
                values = getattr(it, name) if it is not None else empty
                out.append([None if v is None else round(v, 6) for v in values])
            return out

        result.update(
            status=status, error=error, detail="full" if self.full else "sampled", sampled=sampled,
            t={"start": table("start"), "first": table("first"), "end": table("end")},
            iteration_end=[None if v is None else round(v, 6) for v in self._iteration_end],
            bytes_sent=self.bytes_sent, bytes_received=self.bytes_received, cpu_s=round(self._cpu, 6),
            timeout_s=self.timeout, refused_count=self._refused_count,
            connections=[self._connection(c, "send") for c in self._outs.values()]
            + [self._connection(c, "recv") for c in self._ins.values()],
        )

    def not_started(self, status, error):
        """The result of a program that was never fired (the step was aborted before its instant): the contract's
        keys, nothing measured."""
        self._not_started(status, error)

    def _not_started(self, status, error):
        """The result of a program that never ran: the contract's keys, nothing measured."""
        self.result.update(status=status, error=error, detail="full" if self.full else "sampled", sampled=[],
                           t={"start": [], "first": [], "end": []}, iteration_end=[], bytes_sent=0,
                           bytes_received=0, cpu_s=round(self._cpu, 6), timeout_s=self.timeout,
                           refused_count=self._refused_count, connections=[])

    @staticmethod
    def _connection(conn, direction):
        entry = {"peer": conn.peer, "channel": conn.channel, "direction": direction, "messages": conn.messages,
                 "bytes": conn.bytes}
        if direction == "send":
            try:
                raw = conn.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
                entry["retransmits"] = struct.unpack_from("I", raw, _RETRANS_OFF)[0]
            except (OSError, struct.error):
                entry["retransmits"] = None
        return entry

    def progress(self):
        """While the program runs (another thread may ask): seconds since the instant, iterations done, bytes sent
        and received so far, the volume this host sends in all, the sending rate since the previous call."""
        t = round(time.monotonic() - self._mono0, 3) if self._mono0 is not None else 0.0
        sent = self.bytes_sent
        gbps = None
        if self._progress_last is not None and t > self._progress_last[0]:
            gbps = round((sent - self._progress_last[1]) * 8 / (t - self._progress_last[0]) / 1e9, 6)
        self._progress_last = (t, sent)
        return {"t": t, "iteration": self.iterations_done - 1, "iterations_done": self.iterations_done,
                "iterations": self.iterations, "bytes": sent, "bytes_received": self.bytes_received,
                "volume": self.program.bytes_per_iteration * self.iterations, "gbps": gbps}

    def abort(self, reason):
        """End the program now (any thread): the loop wakes, stops, and the result keeps what was measured."""
        if self._aborted is None:
            self._aborted = reason
        wake = self._wake_w
        if wake is not None:
            try:
                os.write(wake, b"!")
            except OSError:
                pass

    def close(self):
        if self._closed:
            return
        self._closed = True
        for conn in list(self._outs.values()) + list(self._ins.values()):
            conn.sock.close()
        for dial in self._dials:
            if dial.sock is not None and dial.phase != "admitted":
                dial.sock.close()
        for hello in list(self._hellos):
            hello.sock.close()
        if self.listener is not None:
            self.listener.close()
        if self._timer is not None:
            self._timer.close()
        if self._zero_view is not None:
            self._zero_view.release()
            self._zero_map.close()
        wake, self._wake_w = self._wake_w, None
        for fd in (self._zero_fd, self._pipe_r, self._pipe_w, self._devnull, self._wake_r, wake):
            if fd is not None:
                os.close(fd)
        if self._ep is not None:
            self._ep.close()


class _TimerHandler:
    def __init__(self, flow):
        self.flow, self.fd, self.mask = flow, flow._timer.fd, None

    def on_event(self, _ev):
        self.flow._timer.clear()
        self.flow._expire()


class _Timeout(Exception):
    pass


class _Aborted(Exception):
    pass
