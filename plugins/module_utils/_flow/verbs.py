# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A job program over RDMA verbs (docs/jobs-host.md, "The verbs engine"): the same ops, dependencies and times as
``program.ProgramFlow``, the data in RC queue pairs.

Each program connection (sender A -> receiver B, channel c) keeps its TCP connection for the hello and the token
proof (``program``'s protocol), and adds one reliable-connected queue pair at each end:

* arming, over the TCP connection once B has admitted A: A -> B ``VINFO`` (``b"AFV2"`` | QP number (u32) | first
  PSN (u32) | LID (u16) | GID (16 bytes) | the port's active MTU (u8, the verbs enum: 1 = 256 .. 5 = 4096 bytes));
  B makes its queue pair, moves it to RTR with the smaller of the two MTUs as its path MTU, posts its receives and
  answers ``VREPLY`` (the same fields of its own, then its receive buffer's address (u64), rkey (u32) and size
  (u64)); A moves its queue pair to RTR (the same path MTU) and RTS. Both are non-blocking steps of the host's one
  event loop (a ring's hosts arm each other at once: nobody waits on anybody);
* from the instant, every message is RDMA WRITEs WITH IMMEDIATE of its bytes into B's receive buffer: one, or
  several when it is larger than the buffers (a queue pair delivers them in order). Each immediate is the
  connection's message number (modulo 2^31), the last piece's with its top bit set; B sums a message's pieces and
  checks the number and the whole length against its program. A's send op ends with its last WRITE's completion: a
  reliable connection completes a WRITE once B's adapter has acknowledged it. B's recv op has its message when B's
  receive of the last piece completes. The receiver sees no first byte: its ``first`` is the arrival;
* completions reach the event loop through a completion channel (its file descriptor in the same epoll as the
  sockets and the compute timer): the loop sleeps until the adapter has news, then polls the completion queue dry.
  Nothing spins;
* the TCP connection carries no data after the instant but A's ``BY`` (``b"BY"`` | the number of messages A sent
  (u64)), once its last message on the connection completed. B checks the number against its program and ends
  only when every connection it receives on said BY (or closed after all its messages): B's queue pair stays up
  until A has every acknowledgement. A connection that closes without it fails the op waiting on it, as the TCP
  transport's does.

The device, its port, the GID (default: the port's RoCE v2 GID of the connection's local address; an arming error
when the port has none, GID 0 on an InfiniBand port), the port's active MTU and the queue pairs' retransmission
timeout (``qp_timeout``, as perftest's ``-u``) come from the ``verbs`` options. Every verbs call goes through
``Pyverbs`` (pyverbs: Debian's python3-pyverbs), so the transport's logic runs in the unit tests with a fabric of
queue pairs in one process (tests/unit/plugins/module_utils/test_flow_verbs.py) and on soft-RoCE in the VM lab
(tests/vmlab).
"""

from __future__ import annotations

import os
import struct
from collections import deque

from . import program as _p
from .engine import FlowError

__all__ = ["VerbsProgramFlow", "Pyverbs", "VerbsError", "VINFO", "VREPLY", "BYE", "MAX_BUFFER", "find_gid_index",
           "pyverbs_missing", "write_pieces"]

VMAGIC = b"AFV2"
VINFO = struct.Struct("!4sIIH16sB")  # magic, QP number, PSN, LID, GID, active MTU (enum)
VREPLY = struct.Struct("!4sIIH16sBQIQ")  # the same, then the receive buffer's address, rkey, size
BYE = struct.Struct("!2sQ")  # b"BY", the messages the sender sent on the connection
BY = b"BY"
MAX_BUFFER = 64 * 1024 * 1024  # the largest send or receive buffer registered (bigger messages: several WRITEs)
RECV_DEPTH_MIN = 64  # receives posted per queue pair at least (each WRITE WITH IMMEDIATE takes one)
RECV_DEPTH_MAX = 4096  # ... at most (below every adapter's max_qp_wr the lab meets)
IMM_LAST = 1 << 31  # in a WRITE's immediate: the message's last piece
IMM_NUMBER = IMM_LAST - 1  # in a WRITE's immediate: the message's number on its connection (modulo 2^31)
MTU_BYTES = {1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096}  # enum ibv_mtu
# receiver not ready: the receiver's adapter answers a WRITE WITH IMMEDIATE that finds no receive posted with an RNR
# NAK; the sender's adapter waits RNR_TIMER (the IB encoding: 24 is 40.96 ms) and retries, RNR_RETRY times (7 would
# be for ever: a stalled receiver would be silent until the program's timeout), then fails the WRITE
RNR_TIMER, RNR_TIMER_MS, RNR_RETRY = 24, 40.96, 6

_EPOLLIN = _p._EPOLLIN


class VerbsError(FlowError):
    """A verbs resource or call failed; the message names the device, the call and the fix."""


def pyverbs_missing():
    """None when pyverbs imports in this Python; else the sentence that says how to get it."""
    try:
        import pyverbs.device  # noqa: F401  pylint: disable=unused-import,import-outside-toplevel
    except ImportError as exc:
        return ("the verbs engine needs pyverbs in the host's Python (%s); Debian: apt install python3-pyverbs, and "
                "give the host that Python (ansible_python_interpreter: /usr/bin/python3)" % (exc,))
    return None


def write_pieces(nbytes, piece, number):
    """The WRITEs WITH IMMEDIATE of a message of ``nbytes``, each at most ``piece`` bytes: ``(bytes, immediate)``
    in order. Every immediate is the message's ``number`` (modulo 2^31), the last one's with ``IMM_LAST`` set: the
    receiver sums the pieces and checks the message's whole length."""
    piece = max(1, piece)
    number &= IMM_NUMBER
    left = nbytes
    while True:
        n = min(left, piece)
        left -= n
        yield n, number | (IMM_LAST if left == 0 else 0)
        if left == 0:
            return


def _pieces(nbytes):
    """How many WRITEs a message of ``nbytes`` is when the buffers are as large as they get."""
    return max(1, -(-nbytes // MAX_BUFFER))


def find_gid_index(device, port, address, sysfs="/sys/class/infiniband"):
    """The index of ``device`` port ``port``'s RoCE v2 GID that holds the IPv4 ``address`` (``::ffff:a.b.c.d``), or
    None when it has none (an InfiniBand port, or an address the port does not carry)."""
    base = os.path.join(sysfs, device, "ports", str(port))
    try:
        parts = [int(x) for x in address.split(".")]
    except (AttributeError, ValueError):
        return None
    if len(parts) != 4:
        return None
    want = "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x" % tuple(parts)
    try:
        names = os.listdir(os.path.join(base, "gids"))
    except OSError:
        return None
    for name in sorted(names, key=lambda n: int(n) if n.isdigit() else 1 << 30):
        try:
            with open(os.path.join(base, "gids", name)) as handle:
                gid = handle.read().strip()
            with open(os.path.join(base, "gid_attrs", "types", name)) as handle:
                kind = handle.read().strip()
        except OSError:
            continue
        if gid == want and kind.lower().replace(" ", "") == "rocev2":
            return int(name)
    return None


class Pyverbs:
    """The verbs calls the transport makes, through pyverbs (imported here: a host without it gets a VerbsError that
    says how to install it). ``open`` makes the context, protection domain, completion channel, one completion queue
    and the two buffers; the rest works on queue pairs it made."""

    def __init__(self, device, ib_port=1, gid_index=None, qp_timeout=14):
        self.device, self.ib_port, self.qp_timeout = device, int(ib_port), int(qp_timeout)
        self.gid_index = gid_index
        self._gids = {}  # local address -> (GID index, GID's 16 bytes)
        self._path_mtus = set()  # the path MTUs (enum) the queue pairs were given
        self.fd = -1
        self.active_mtu = self.lid = self.link_layer = None
        self._ctx = self._pd = self._cc = self._cq = self._smr = self._rmr = None
        self._qps = []
        try:
            import pyverbs.enums as e
            from pyverbs.addr import GID, AHAttr, GlobalRoute
            from pyverbs.cq import CQ, CompChannel
            from pyverbs.device import Context
            from pyverbs.mr import MR
            from pyverbs.pd import PD
            from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
            from pyverbs.wr import SGE, RecvWR, SendWR
        except ImportError:
            raise VerbsError(pyverbs_missing() or "pyverbs did not import") from None
        self.e = e
        self._cls = dict(GID=GID, AHAttr=AHAttr, GlobalRoute=GlobalRoute, CQ=CQ, CompChannel=CompChannel,
                         Context=Context, MR=MR, PD=PD, QP=QP, QPAttr=QPAttr, QPCap=QPCap, QPInitAttr=QPInitAttr,
                         SGE=SGE, RecvWR=RecvWR, SendWR=SendWR)

    def _call(self, what, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001  pyverbs raises its own PyverbsRDMAError/PyverbsError
            raise VerbsError("%s on %s port %d: %s" % (what, self.device, self.ib_port, exc)) from None

    def open(self, send_bytes, recv_bytes, cq_entries):
        c, e = self._cls, self.e
        self._ctx = self._call("opening the device (is it there: rdma link show)", c["Context"], name=self.device)
        port = self._call("querying the port", self._ctx.query_port, self.ib_port)
        if port.state != e.IBV_PORT_ACTIVE:
            raise VerbsError("%s port %d is not active (state %d); bring its link up"
                             % (self.device, self.ib_port, port.state))
        self.active_mtu = port.active_mtu
        self.lid = port.lid
        self.link_layer = getattr(port, "link_layer", None)
        self._pd = self._call("allocating a protection domain", c["PD"], self._ctx)
        before = _fd_links()
        self._cc = self._call("creating a completion channel", c["CompChannel"], self._ctx)
        self.fd = _event_fd(before, _fd_links())
        device = self._call("querying the device", self._ctx.query_device)
        cq_entries = max(1, min(cq_entries, device.max_cqe))
        self.max_qp_wr = device.max_qp_wr
        self._cq = self._call("creating a completion queue of %d entries" % cq_entries, c["CQ"], self._ctx,
                              cq_entries, None, self._cc, 0)
        self._call("arming the completion queue's notification", self._cq.req_notify)
        self._smr = self._call("registering the send buffer (%d bytes)" % send_bytes, c["MR"], self._pd,
                               max(1, send_bytes), e.IBV_ACCESS_LOCAL_WRITE)
        self._rmr = self._call("registering the receive buffer (%d bytes)" % recv_bytes, c["MR"], self._pd,
                               max(1, recv_bytes), e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
        self.send_size, self.recv_size = max(1, send_bytes), max(1, recv_bytes)

    def receive_buffer(self):
        return self._rmr.buf, self._rmr.rkey, self.recv_size

    def create_qp(self, send_wr, recv_wr):
        c, e = self._cls, self.e
        cap = c["QPCap"](max_send_wr=max(1, min(send_wr, self.max_qp_wr)),
                         max_recv_wr=max(1, min(recv_wr, self.max_qp_wr)), max_send_sge=1, max_recv_sge=1)
        qp = self._call("creating an RC queue pair", c["QP"], self._pd,
                        c["QPInitAttr"](qp_type=e.IBV_QPT_RC, scq=self._cq, rcq=self._cq, cap=cap, sq_sig_all=0))
        self._qps.append(qp)
        return qp

    def gid_for(self, address):
        """(index, 16 bytes) of the GID a queue pair that talks from ``address`` uses: ``gid_index`` when given,
        else the port's RoCE v2 GID of that address (GID 0 on an InfiniBand port, which has no address GIDs); a
        VerbsError naming the device, port and address when a RoCE port has none."""
        if address not in self._gids:
            index = self.gid_index
            if index is None:
                index = find_gid_index(self.device, self.ib_port, address)
            if index is None and self.link_layer == self.e.IBV_LINK_LAYER_INFINIBAND:
                index = 0
            if index is None:
                raise VerbsError("%s port %d has no RoCE v2 GID of %s (the local address of this host's program "
                                 "connection): put the address on the device's network interface, or give "
                                 "verbs.gid_index" % (self.device, self.ib_port, address))
            gid = self._call("reading GID %d" % index, self._ctx.query_gid, self.ib_port, index)
            self._gids[address] = (index, bytes.fromhex(gid.gid.replace(":", "")))
        return self._gids[address]

    def local(self, qp, psn, address):
        """What the peer needs of ``qp`` (which talks from the local ``address``): number, PSN, LID, GID, the port's
        active MTU (enum)."""
        return qp.qp_num, psn, self.lid, self.gid_for(address)[1], self.active_mtu

    def connect(self, qp, psn, remote_qpn, remote_psn, remote_lid, remote_gid, remote_mtu, address):
        """RESET -> INIT -> RTR -> RTS, toward the peer's queue pair, from the local ``address``'s GID; the path MTU
        is the smaller of the two ports' active MTUs (``remote_mtu``: the peer's)."""
        c, e = self._cls, self.e
        init = c["QPAttr"]()
        init.qp_state = e.IBV_QPS_INIT
        init.pkey_index = 0
        init.port_num = self.ib_port
        init.qp_access_flags = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
        self._call("moving a queue pair to INIT", qp.to_init, init)
        hexgid = remote_gid.hex()
        gid = c["GID"](":".join(hexgid[k:k + 4] for k in range(0, 32, 4)))
        route = c["GlobalRoute"](dgid=gid, sgid_index=self.gid_for(address)[0])
        route.hop_limit = 64
        path_mtu = min(self.active_mtu, remote_mtu)
        rtr = c["QPAttr"]()
        rtr.qp_state = e.IBV_QPS_RTR
        rtr.path_mtu = path_mtu
        rtr.dest_qp_num = remote_qpn
        rtr.rq_psn = remote_psn
        rtr.max_dest_rd_atomic = 1
        rtr.min_rnr_timer = RNR_TIMER  # what this end asks its peer's adapter to wait before a retry
        rtr.ah_attr = c["AHAttr"](dlid=remote_lid, sl=0, port_num=self.ib_port, is_global=1, gr=route)
        self._call("moving a queue pair to RTR (toward QP %d, path MTU %d)" % (remote_qpn, MTU_BYTES.get(path_mtu, 0)),
                   qp.to_rtr, rtr)
        rts = c["QPAttr"]()
        rts.qp_state = e.IBV_QPS_RTS
        rts.sq_psn = psn
        rts.timeout = self.qp_timeout
        rts.retry_cnt = 7
        rts.rnr_retry = RNR_RETRY
        rts.max_rd_atomic = 1
        self._call("moving a queue pair to RTS", qp.to_rts, rts)
        self._path_mtus.add(path_mtu)

    def post_write(self, qp, wr_id, nbytes, addr, rkey, size, number):
        """``nbytes`` into the peer's buffer (``addr``, ``rkey``, ``size`` bytes): ``write_pieces``, each a WRITE
        WITH IMMEDIATE, the last one alone signaled (an adapter still completes the others when they fail)."""
        c, e = self._cls, self.e
        pieces = write_pieces(nbytes, min(self.send_size, size), number)
        for n, imm in pieces:
            last = imm & IMM_LAST
            wr = c["SendWR"](wr_id=wr_id, opcode=e.IBV_WR_RDMA_WRITE_WITH_IMM, num_sge=1,
                             sg=[c["SGE"](self._smr.buf, n, self._smr.lkey)],
                             send_flags=e.IBV_SEND_SIGNALED if last else 0)
            wr.imm_data = imm
            wr.set_wr_rdma(rkey, addr)
            self._call("posting an RDMA WRITE", qp.post_send, wr)

    def post_recv(self, qp, wr_id, count):
        c = self._cls
        # a WRITE WITH IMMEDIATE writes where its sender says and takes the receive only for its completion; pyverbs
        # wants a scatter element all the same: one byte of the receive buffer, never written
        sge = c["SGE"](self._rmr.buf, 1, self._rmr.lkey)
        for _k in range(count):
            self._call("posting a receive", qp.post_recv, c["RecvWR"](wr_id=wr_id, num_sge=1, sg=[sge]))

    def events(self):
        """The completion channel is readable: take its event, acknowledge it, ask for the next."""
        self._call("reading the completion event", self._cc.get_cq_event, self._cq)
        self._cq.ack_events(1)
        self._call("re-arming the completion queue", self._cq.req_notify)

    def poll(self, count=64):
        _n, wcs = self._call("polling the completion queue", self._cq.poll, count)
        return [(wc.wr_id, wc.status, wc.opcode, wc.byte_len, wc.imm_data, wc.qp_num) for wc in wcs]

    def is_recv(self, opcode):
        return opcode == self.e.IBV_WC_RECV_RDMA_WITH_IMM

    def ok(self, status):
        return status == self.e.IBV_WC_SUCCESS

    def rnr(self, status):
        """Whether a completion's status is the RNR retries' exhaustion (the receiver had no receive posted)."""
        return status == self.e.IBV_WC_RNR_RETRY_EXC_ERR

    def status_text(self, status):
        try:
            from pyverbs.cq import cqe_status_to_str  # pylint: disable=import-outside-toplevel
            return "%s (%d)" % (cqe_status_to_str(status), status)
        except (ImportError, Exception):  # noqa: BLE001
            return "status %d" % status

    def describe(self):
        """The result's ``verbs``: a single value where every queue pair had the same (GID index, path MTU), else
        the sorted list; the path MTU is the port's active MTU while no queue pair was connected."""
        def one_or_list(values):
            values = sorted(values)
            return values[0] if len(values) == 1 else values or None

        mtus = self._path_mtus or ({self.active_mtu} if self.active_mtu else set())
        return {"device": self.device, "ib_port": self.ib_port,
                "gid_index": self.gid_index if self.gid_index is not None else one_or_list(
                    {index for index, _gid in self._gids.values()}),
                "path_mtu": one_or_list({MTU_BYTES.get(mtu, 128 << int(mtu)) for mtu in mtus}),
                "qp_timeout": self.qp_timeout}

    def close(self):
        for obj in self._qps + [self._smr, self._rmr, self._cq, self._cc, self._pd, self._ctx]:
            if obj is not None:
                try:
                    obj.close()
                except Exception:  # noqa: BLE001  closing is best effort; the process ends soon after
                    pass
        self._qps = []
        self._ctx = self._pd = self._cc = self._cq = self._smr = self._rmr = None


def _fd_links():
    """``{fd: what it is}`` of this process (``/proc/self/fd``'s links; the listing's own descriptor left out)."""
    out = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            out[int(name)] = os.readlink("/proc/self/fd/%s" % name)
        except OSError:
            continue
    return out


def _event_fd(before, after):
    """The completion channel's file descriptor: the ``[infinibandevent]`` anon inode its creation opened (pyverbs
    does not give it out; the context's asynchronous event file is one too, older). A number may have been the
    listing's own descriptor before: what counts is what it is now."""
    new = [fd for fd, link in sorted(after.items()) if "infinibandevent" in link and before.get(fd) != link]
    if len(new) == 1:
        return new[0]
    raise VerbsError("the completion channel's file descriptor was not found (%d new [infinibandevent] descriptors "
                     "in /proc/self/fd: %s): this pyverbs or kernel is not one the verbs engine knows"
                     % (len(new), new))


# --------------------------------------------------------------------------------------------------- arming
class _Exchange:
    """A TCP program connection's queue-pair exchange while arming (sender: after the admission; receiver: after
    its OK), read without blocking. ``waiting``: what an arming that ends before it is done says."""

    def __init__(self, flow, sock, need, done, waiting):
        self.flow, self.sock, self.fd, self.mask = flow, sock, sock.fileno(), None
        self.need, self.done, self.waiting = need, done, waiting
        self.data = b""

    def on_event(self, _ev):
        try:
            chunk = self.sock.recv(self.need - len(self.data))
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self.fail("%s: %s" % (type(exc).__name__, exc.strerror or exc))
            return
        if not chunk:
            self.fail("the connection closed during the queue pairs' exchange")
            return
        self.data += chunk
        if len(self.data) == self.need:
            self.flow._unwatch(self)
            self.flow._exchanges.discard(self)
            self.done(self.data)

    def fail(self, why):
        self.flow._unwatch(self)
        self.flow._exchanges.discard(self)
        self.sock.close()
        self.flow._fatal = why


# --------------------------------------------------------------------------------------------------- running
class _VConn:
    """One program connection's end (``_VOut``, ``_VIn``): its TCP socket (the hello's; after the instant only the
    sender's BY crosses it), its queue pair, the messages and bytes that crossed it."""

    def __init__(self, flow, peer, channel, sock, qp, index):
        self.flow, self.peer, self.channel = flow, peer, channel
        self.sock, self.fd, self.mask = sock, sock.fileno(), None
        self.qp, self.index = qp, index  # (index: the work requests' id)
        self.messages = 0
        self.bytes = 0

    def describe(self):
        return "%s (channel %d, verbs)" % (self.peer, self.channel)

    def _read(self, size):
        """Up to ``size`` bytes of the TCP side; None when it has none now, or when it ended (``gone`` was told)."""
        try:
            data = self.sock.recv(size)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError as exc:
            self.gone("%s: %s" % (type(exc).__name__, exc.strerror or exc))
            return None
        if not data:
            self.gone("it closed the connection")
            return None
        return data


class _VOut(_VConn):
    """This host's sending end of one connection: its queue pair, the peer's buffer, the FIFO of its sends."""

    def __init__(self, flow, peer, channel, sock, qp, index, remote):
        super().__init__(flow, peer, channel, sock, qp, index)
        self.addr, self.rkey, self.size = remote
        self.window = flow.program.channel_window(channel)
        self.sends = flow.program.sends[(peer, channel)]
        self.unacked = deque()
        self.head_i = self.head_k = 0
        self.seq = 0

    def try_start(self, t):
        flow = self.flow
        sends, unacked = self.sends, self.unacked
        while len(unacked) < self.window and self.head_i < flow.iterations:
            it = flow._live.get(self.head_i)
            if it is None:
                break
            j = sends[self.head_k]
            if it.state[j] != _p._READY:
                break
            it.state[j] = _p._STARTED
            it.start[j] = t
            it.first[j] = t  # the adapter sends from the post on; its first byte is not seen apart
            try:
                flow.verbs.post_write(self.qp, self.index, flow._bytes[j], self.addr, self.rkey, self.size, self.seq)
            except VerbsError as exc:
                raise _p._Failed("%s to %s: %s" % (flow.op_name(self.head_i, j), self.describe(), exc)) from None
            self.seq += 1
            unacked.append((self.head_i, j))
            self.head_k += 1
            if self.head_k == len(sends):
                self.head_k = 0
                self.head_i += 1

    def completed(self, now):
        if not self.unacked:
            raise _p._Failed("a completion for %s came with no message posted on it" % self.describe())
        i, j = self.unacked.popleft()
        nbytes = self.flow._bytes[j]
        self.messages += 1
        self.bytes += nbytes
        self.flow.bytes_sent += nbytes
        if self.head_i >= self.flow.iterations and not self.unacked:
            try:  # every message of this connection was acknowledged: say how many
                self.sock.send(BYE.pack(BY, self.messages))
            except OSError:
                pass  # the receiver sees the connection close after all its messages came: not a failure
        self.flow._end(i, j, now)
        self.try_start(now)

    def on_event(self, _ev):
        self._read(64)  # (the receiver writes nothing on it: only its end is news)

    def gone(self, why):
        flow = self.flow
        flow._unwatch(self)
        flow._poll_all()  # completions the closing overtook
        if self.unacked:
            i, j = self.unacked[0]
            raise _p._Failed("%s disappeared (%s) while %s was not acknowledged" % (self.describe(), why,
                                                                                    flow.op_name(i, j)))
        if self.head_i < flow.iterations:
            raise _p._Failed("%s disappeared (%s) before %s could start" % (
                self.describe(), why, flow.op_name(self.head_i, self.sends[self.head_k])))


class _VIn(_VConn):
    """This host's receiving end of one connection: its queue pair's receives, checked against the program, and
    its sender's BY."""

    def __init__(self, flow, peer, channel, sock, qp, index):
        super().__init__(flow, peer, channel, sock, qp, index)
        self.recvs = flow.program.recvs[(peer, channel)]
        self.expected = flow.iterations * len(self.recvs)  # messages in all on this connection
        self.exp_i = self.exp_k = 0
        self.seq = 0
        self.got = 0  # bytes of the message whose pieces are coming
        self.bye = b""  # the sender's BY so far
        self.settled = False  # its BY was read (or it closed after every message came): the loop may end

    def arrived(self, imm, byte_len, now):
        """One piece (a WRITE WITH IMMEDIATE's receive) is in."""
        flow = self.flow
        number, last = imm & IMM_NUMBER, imm & IMM_LAST
        if self.exp_i >= flow.iterations:
            raise _p._Failed("%s wrote a message (number %d) after the last recv this host's program expects from it "
                             "on that connection" % (self.describe(), number))
        i, j = self.exp_i, self.recvs[self.exp_k]
        nbytes = flow._bytes[j]
        self.got += byte_len
        if number != self.seq & IMM_NUMBER or self.got > nbytes or (last and self.got != nbytes):
            raise _p._Failed("the message from %s does not match: this host's %s expected message number %d of %d "
                             "bytes, and message number %d came with %s%d bytes; the k-th send of %s to this host on "
                             "channel %d must be the k-th recv here, with the same bytes" % (
                                 self.describe(), flow.op_name(i, j), self.seq & IMM_NUMBER, nbytes, number,
                                 "" if last else "at least ", self.got, self.peer, self.channel))
        if last:
            self.got = 0
            self.seq += 1
            self.exp_k += 1
            if self.exp_k == len(self.recvs):
                self.exp_k = 0
                self.exp_i += 1
            self.messages += 1
            self.bytes += nbytes
            flow.bytes_received += nbytes
        if self.exp_i < flow.iterations:
            try:
                flow.verbs.post_recv(self.qp, self.index, 1)  # the one this piece took
            except VerbsError as exc:
                raise _p._Failed("%s from %s: %s" % (flow.op_name(i, j), self.describe(), exc)) from None
        if last:
            flow._iter(i).first[j] = now  # the receiver sees the message when it is all in
            flow._arrived(i, j, now)

    def on_event(self, _ev):
        if self.settled:
            self._read(64)  # (nothing comes after the BY: only the connection's end)
            return
        data = self._read(BYE.size - len(self.bye))
        if data is None:
            return
        self.bye += data
        if len(self.bye) < BYE.size:
            return
        word, count = BYE.unpack(self.bye)
        if word != BY:
            raise _p._Failed("%s wrote %r on its program connection after the instant, not BY" % (
                self.describe(), self.bye))
        self.flow._poll_all()  # the messages the BY overtook
        if count != self.expected:
            raise _p._Failed("peer %s said BY after %d messages, the program expects %d" % (
                self.describe(), count, self.expected))
        self.settled = True

    def gone(self, why):
        flow = self.flow
        flow._unwatch(self)
        if self.settled:
            return
        flow._poll_all()
        if self.exp_i < flow.iterations:
            raise _p._Failed("%s disappeared (%s) before %s arrived" % (
                self.describe(), why, flow.op_name(self.exp_i, self.recvs[self.exp_k])))
        self.settled = True  # every message came; its sender's program ended elsewhere


class _Completions:
    """The completion channel in the loop's epoll: poll the completion queue dry on each event."""

    def __init__(self, flow):
        self.flow, self.fd, self.mask = flow, flow.verbs.fd, None

    def on_event(self, _ev):
        try:
            self.flow.verbs.events()
        except VerbsError as exc:
            raise _p._Failed(str(exc)) from None
        self.flow._poll_all()


class VerbsProgramFlow(_p.ProgramFlow):
    """``ProgramFlow`` with its data in RC queue pairs (this module's docstring). ``verbs``: the ``Pyverbs`` (or a
    stand-in with the same methods) that makes the calls; ``device``, ``ib_port``, ``gid_index``, ``qp_timeout``
    build one when it is not given."""

    def __init__(self, program, token, host, listener=None, timeout=300.0, verbs=None, device=None, ib_port=1,
                 gid_index=None, qp_timeout=14, **kwargs):
        super().__init__(program, token, host, listener=listener, timeout=timeout, **kwargs)
        if verbs is None:
            if not device:
                raise FlowError("verbs.device: the verbs engine needs the RDMA device (e.g. mlx5_0 or rxe0)")
            verbs = Pyverbs(device, ib_port, gid_index, qp_timeout)
        self.verbs = verbs
        self._exchanges = set()
        self._vouts, self._vins = [], []
        self._by_qpn = {}
        self._psn = int.from_bytes(os.urandom(3), "big")
        self._opened = False
        self.result["transport"] = "verbs"

    # the buffers: each as large as this host's largest message that way, at most MAX_BUFFER
    def _open(self):
        super()._open()
        if self._opened:
            return
        prog = self.program
        largest_send = max([op.bytes for op in prog.ops if op.kind == _p.SEND] or [0])
        largest_recv = max([op.bytes for op in prog.ops if op.kind == _p.RECV] or [0])
        depth_send = sum(prog.channel_window(c) * _pieces(largest_send) + 1 for _peer, c in prog.sends)
        depth_recv = sum(self._recv_depth(peer, c) for peer, c in prog.recvs)
        self.verbs.open(min(largest_send, MAX_BUFFER), min(largest_recv, MAX_BUFFER), depth_send + depth_recv + 16)
        self._opened = True
        self._watch(_Completions(self), _EPOLLIN)

    def _arm(self, deadline):
        try:
            return super()._arm(deadline)
        except VerbsError as exc:  # the device, its port or a resource: said, the program not armed
            self.result["error"] = "not armed: %s" % exc
            return False

    def _recv_depth(self, peer, channel):
        """Receives posted on the connection: twice what its window lets the sender have in flight (each piece of
        a message takes one), within RECV_DEPTH_MIN..RECV_DEPTH_MAX. A cushion, not a guarantee: the adapter
        acknowledges a message before this host's loop takes it and posts the next receive (docs/jobs-host.md)."""
        largest = max(self._bytes[j] for j in self.program.recvs[(peer, channel)])
        want = 2 * self.program.channel_window(channel) * _pieces(largest)
        return min(RECV_DEPTH_MAX, max(RECV_DEPTH_MIN, want))

    def _psn_next(self):
        self._psn = (self._psn + 4099) & 0xFFFFFF
        return self._psn

    # sender: the peer admitted the TCP connection; exchange queue pairs on it
    def _admitted(self, dial):
        largest = max([self._bytes[j] for j in self.program.sends[(dial.peer, dial.channel)]] or [1])
        psn = self._psn_next()
        address = dial.sock.getsockname()[0]  # the lab address the kernel sends from toward this peer
        try:
            qp = self.verbs.create_qp(self.program.channel_window(dial.channel) * _pieces(largest) + 1, 1)
            qpn, _psn, lid, gid, mtu = self.verbs.local(qp, psn, address)
        except VerbsError as exc:
            self._fatal = "%s: %s" % (dial.where(), exc)
            return
        try:
            dial.sock.sendall(VINFO.pack(VMAGIC, qpn, psn, lid, gid, mtu))
        except OSError as exc:
            self._fatal = "%s: sending the queue pair's address failed: %s" % (dial.where(), exc)
            return

        def done(data):
            magic, rqpn, rpsn, rlid, rgid, rmtu, addr, rkey, size = VREPLY.unpack(data)
            if magic != VMAGIC or rmtu not in MTU_BYTES:
                dial.sock.close()
                self._fatal = "%s answered the queue pairs' exchange with %r (MTU %d): not a verbs program server " \
                              "of this version (is its engine verbs?)" % (dial.where(), magic, rmtu)
                return
            try:
                self.verbs.connect(qp, psn, rqpn, rpsn, rlid, rgid, rmtu, address)
            except VerbsError as exc:
                dial.sock.close()
                self._fatal = "%s: %s" % (dial.where(), exc)
                return
            out = _VOut(self, dial.peer, dial.channel, dial.sock, qp, len(self._vouts), (addr, rkey, size))
            self._by_qpn[qpn] = out
            self._vouts.append(out)
            self._outs[(dial.peer, dial.channel)] = out
            for j in out.sends:
                self._op_out[j] = out

        exchange = _Exchange(self, dial.sock, VREPLY.size, done, "%s admitted this host's connection but never "
                             "answered its queue pairs' exchange (is its engine verbs?)" % dial.where())
        self._exchanges.add(exchange)
        self._watch(exchange, _EPOLLIN)

    # receiver: ``_admit`` sent OK; take the sender's queue pair and answer with ours
    def _accept(self, hello):
        name, channel = hello.name, hello.channel

        def done(data):
            magic, rqpn, rpsn, rlid, rgid, rmtu = VINFO.unpack(data)
            if magic != VMAGIC or rmtu not in MTU_BYTES:
                self._admitted_keys.discard((name, channel))  # its sender may come back right
                self._refused_entry(hello.address, "its queue pairs' exchange began with %r (MTU %d): not a verbs "
                                                   "program of this version (is its engine verbs?)" % (magic, rmtu),
                                    name, channel)
                hello.sock.close()
                return
            depth = self._recv_depth(name, channel)
            psn = self._psn_next()
            address = hello.sock.getsockname()[0]  # this host's listen address
            try:
                qp = self.verbs.create_qp(1, depth)
                self.verbs.connect(qp, psn, rqpn, rpsn, rlid, rgid, rmtu, address)
                vin = _VIn(self, name, channel, hello.sock, qp, len(self._vins))
                self.verbs.post_recv(qp, vin.index, depth)
                qpn, _psn, lid, gid, mtu = self.verbs.local(qp, psn, address)
            except VerbsError as exc:
                hello.sock.close()
                self._fatal = "%s (channel %d): %s" % (name, channel, exc)
                return
            addr, rkey, size = self.verbs.receive_buffer()
            try:
                hello.sock.sendall(VREPLY.pack(VMAGIC, qpn, psn, lid, gid, mtu, addr, rkey, size))
            except OSError as exc:
                hello.sock.close()
                self._fatal = "%s (channel %d): answering the queue pairs' exchange failed: %s" % (name, channel, exc)
                return
            self._vins.append(vin)
            self._by_qpn[qpn] = vin
            self._ins[(name, channel)] = vin

        exchange = _Exchange(self, hello.sock, VINFO.size, done, "%s connected for channel %d but never began its "
                             "queue pairs' exchange (is its engine verbs?)" % (name, channel))
        self._exchanges.add(exchange)
        self._watch(exchange, _EPOLLIN)

    def _missing(self):
        return "; ".join([t for t in [super()._missing()] + sorted(x.waiting for x in self._exchanges) if t])

    def _settled(self):
        return all(vin.settled for vin in self._vins)

    def _waiting(self):
        text = super()._waiting()
        late = [vin.describe() for vin in self._vins if not vin.settled]
        if late and not self._live:
            text += "; no BY yet from %s" % ", ".join(late)
        return text

    def _poll_all(self):
        """Every completion the queue holds, each to its connection."""
        verbs = self.verbs
        while True:
            try:
                wcs = verbs.poll(64)
            except VerbsError as exc:
                raise _p._Failed(str(exc)) from None
            if not wcs:
                return
            now = self.now() if self._mono0 is not None else 0.0
            for _wr_id, status, opcode, byte_len, imm, qp_num in wcs:
                # by its queue pair, not its opcode (undefined in a completion with an error)
                conn = self._by_qpn.get(qp_num)
                recv = isinstance(conn, _VIn)
                if not verbs.ok(status):
                    where = conn.describe() if conn is not None else "queue pair %d" % qp_num
                    if isinstance(conn, _VOut) and verbs.rnr(status):
                        raise _p._Failed(
                            "receiver not ready: %s had no receive posted for %s through %d RNR retries %g ms apart "
                            "(%s): its program's loop fell further behind the messages than its receive queue "
                            "holds" % (where, self.op_name(*conn.unacked[0]) if conn.unacked else "a message",
                                       RNR_RETRY, RNR_TIMER_MS, verbs.status_text(status)))
                    raise _p._Failed("the %s on %s failed: %s (the adapter's completion status; the queue pair is "
                                     "in error now)" % ("receive" if recv else "RDMA WRITE", where,
                                                        verbs.status_text(status)))
                if conn is None or recv != verbs.is_recv(opcode):
                    raise _p._Failed("a completion (opcode %d) came for queue pair %d, which is none of this "
                                     "program's %s" % (opcode, qp_num, "receives" if verbs.is_recv(opcode) else
                                                       "sends"))
                if recv:
                    conn.arrived(imm, byte_len, now)
                else:
                    conn.completed(now)
            if len(wcs) < 64:
                return

    def _finish(self, status, error):
        self.result["verbs"] = self.verbs.describe()
        super()._finish(status, error)

    @staticmethod
    def _connection(conn, direction):
        return {"peer": conn.peer, "channel": conn.channel, "direction": direction, "messages": conn.messages,
                "bytes": conn.bytes, "retransmits": None}

    def close(self):
        if self._closed:
            return
        for exchange in list(self._exchanges):
            exchange.sock.close()
        super().close()
        self.verbs.close()
