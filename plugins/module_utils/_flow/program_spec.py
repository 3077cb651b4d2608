# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The job program of one host (docs/job-contract.md section 1), checked and typed before anything is bound or sent.

``parse_program(value)`` returns a ``Program`` or raises ``FlowError`` whose message names the exact field
(``program.ops[12].deps``), the value and the fix. Everything the executor (``program.py``) needs is computed here
once: each op's dependents, the iteration-barrier ops, the connections (peer, channel) with their op lists and
windows. Python 3.9 compatible (hosts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .engine import FlowError, check_address

__all__ = ["Program", "Op", "Endpoint", "parse_program", "COMPUTE", "SEND", "RECV", "LIMITS"]

COMPUTE, SEND, RECV = "compute", "send", "recv"
KINDS = (COMPUTE, SEND, RECV)

# Bounds of one host's program (documented in docs/jobs-host.md). The wire carries iteration and op id as u32, the
# channel as u16 and a message's bytes as u64; the bounds below are far inside those.
LIMITS = {
    "iterations": 1_000_000,
    "ops": 100_000,  # per iteration
    "bytes": 1 << 40,  # one message (1 TiB)
    "ms": 3_600_000.0,  # one compute op (an hour)
    "channel": 65535,
    "window": 1024,
    "name_bytes": 255,  # a peer's name in UTF-8 (it travels in the hello)
    "tag_chars": 256,
    "timeout": 7 * 86400.0,
}

_TOP = ("version", "iterations", "listen", "peers", "window", "window_by_channel", "ops", "timeout")
_OP = ("id", "kind", "peer", "bytes", "ms", "channel", "window", "deps", "deps_prev", "tag", "coll", "step", "chunk")


@dataclass(frozen=True)
class Endpoint:
    address: str
    port: int


@dataclass
class Op:
    id: int
    kind: str
    peer: str | None = None
    bytes: int = 0
    ms: float = 0.0
    channel: int = 0
    deps: tuple = ()
    deps_prev: tuple = ()
    tag: str = ""

    @property
    def barrier(self):
        """No deps and no deps_prev: in iterations after the first it waits for every op of the previous one."""
        return not self.deps and not self.deps_prev

    def describe(self):
        """``send to worker3 channel 0, tag 'ar0.rs.s0.c0'`` (for error sentences)."""
        if self.kind == COMPUTE:
            what = "compute %g ms" % self.ms
        else:
            direction = "to" if self.kind == SEND else "from"
            what = "%s %s %s channel %d, %d bytes" % (self.kind, direction, self.peer, self.channel, self.bytes)
        return "%s, tag %r" % (what, self.tag)


@dataclass
class Program:
    version: int
    iterations: int
    ops: list  # Op, ops[k].id == k
    listen: Endpoint | None = None
    peers: dict = field(default_factory=dict)  # name -> Endpoint
    window: int = 1
    window_by_channel: dict = field(default_factory=dict)  # channel -> window (only channels given explicitly)
    timeout: float | None = None
    # derived (parse_program fills them)
    dependents: list = field(default_factory=list)  # op id -> ids of the same iteration that list it in deps
    dependents_next: list = field(default_factory=list)  # op id -> ids of the next iteration that list it in deps_prev
    barrier_ops: list = field(default_factory=list)  # ids with neither deps nor deps_prev
    sends: dict = field(default_factory=dict)  # (peer, channel) -> [send op ids in program order]
    recvs: dict = field(default_factory=dict)  # (peer, channel) -> [recv op ids in program order]

    def channel_window(self, channel):
        return self.window_by_channel.get(channel, self.window)

    @property
    def bytes_per_iteration(self):
        return sum(op.bytes for op in self.ops if op.kind == SEND)

    def need(self, iteration):
        """How many ends each op of ``iteration`` waits for (deps, deps_prev, the barrier's one iteration end)."""
        if iteration == 0:
            return [len(op.deps) for op in self.ops]
        return [len(op.deps) + len(op.deps_prev) + (1 if op.barrier else 0) for op in self.ops]


def _where(path, value, problem, fix):
    return FlowError("%s: %r %s; %s" % (path, value, problem, fix))


def _missing(path, fix):
    return FlowError("%s: missing; %s" % (path, fix))


def _int(value, path, low, high, fix):
    if isinstance(value, bool) or not isinstance(value, int):
        raise _where(path, value, "is not an integer", fix)
    if value < low or value > high:
        raise _where(path, value, "is out of range %d..%d" % (low, high), fix)
    return value


def _number(value, path, low, high, fix):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _where(path, value, "is not a finite number", fix)
    if value < low or value > high:
        raise _where(path, value, "is out of range %g..%g" % (low, high), fix)
    return float(value)


def check_name(value, path):
    """A host name as the program uses it: printable text of 1..255 UTF-8 bytes (it only ever reaches the wire and
    the report, never a path or a command)."""
    if not isinstance(value, str) or not value:
        raise _where(path, value, "is not a host name", "give the peer's inventory name (e.g. worker3)")
    if not value.isprintable() or value != value.strip():
        raise _where(path, value, "has control characters or surrounding spaces",
                     "give the peer's inventory name as printable text")
    if len(value.encode("utf-8")) > LIMITS["name_bytes"]:
        raise _where(path, value[:40] + "...", "is longer than %d bytes in UTF-8" % LIMITS["name_bytes"],
                     "use a shorter host name")
    return value


def _endpoint(value, path):
    if not isinstance(value, dict):
        raise _where(path, value, "is not a mapping", "give {address: 198.18.0.3, port: 18700}")
    unknown = sorted(set(value) - {"address", "port"})
    if unknown:
        raise _where("%s.%s" % (path, unknown[0]), value[unknown[0]], "is not a field of an endpoint",
                     "an endpoint has only address and port")
    for name in ("address", "port"):
        if name not in value:
            raise _missing("%s.%s" % (path, name), "give {address: 198.18.0.3, port: 18700}")
    address = check_address(value["address"], "%s.address" % path)
    port = _int(value["port"], "%s.port" % path, 1, 65535, "give the TCP port of the host's program server")
    return Endpoint(address, port)


def _ids(value, path, op_id, count, same_iteration):
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise _where(path, value, "is not a list of op ids", "give a list such as [0, 2] (or [] for none)")
    seen = []
    for k, dep in enumerate(value):
        if isinstance(dep, bool) or not isinstance(dep, int):
            raise _where("%s[%d]" % (path, k), dep, "is not an op id", "give the integer id of an op")
        if same_iteration and not 0 <= dep < op_id:
            raise FlowError("%s: %d is not an earlier op; deps name ops of the same iteration before this one "
                            "(ids 0..%d), use deps_prev for the previous iteration's" % (path, dep, op_id - 1)
                            if op_id else
                            "%s: %d is not an earlier op; op 0 has no earlier op to depend on, use deps_prev for "
                            "the previous iteration's" % (path, dep))
        if not same_iteration and not 0 <= dep < count:
            raise FlowError("%s: %d is not an op of this program; deps_prev names ops of the previous iteration "
                            "(ids 0..%d)" % (path, dep, count - 1))
        if dep not in seen:  # a repeated id is one dependency
            seen.append(dep)
    return tuple(sorted(seen))


def _op(value, k, count):
    path = "program.ops[%d]" % k
    if not isinstance(value, dict):
        raise _where(path, value, "is not a mapping", "give {id: %d, kind: compute|send|recv, ...}" % k)
    unknown = sorted(set(value) - set(_OP))
    if unknown:
        raise _where("%s.%s" % (path, unknown[0]), value[unknown[0]], "is not a field of an op",
                     "the fields are %s" % ", ".join(_OP))
    if "id" not in value:
        raise _missing("%s.id" % path, "give id: %d (ops[k] has id k)" % k)
    op_id = value["id"]
    if isinstance(op_id, bool) or not isinstance(op_id, int) or op_id != k:
        raise _where("%s.id" % path, op_id, "is not %d" % k, "ids are dense and in order: ops[k] has id k")
    kind = value.get("kind")
    if kind not in KINDS:
        raise _where("%s.kind" % path, kind, "is not a kind", "use compute, send or recv")
    tag = value.get("tag", "")
    if not isinstance(tag, str):
        raise _where("%s.tag" % path, tag, "is not text", "give the tag as a string")
    if len(tag) > LIMITS["tag_chars"]:
        raise _where("%s.tag" % path, tag[:40] + "...", "is longer than %d characters" % LIMITS["tag_chars"],
                     "shorten the tag (structured detail belongs in coll, step, chunk)")
    op = Op(id=op_id, kind=kind, tag=tag,
            deps=_ids(value.get("deps"), "%s.deps" % path, op_id, count, True),
            deps_prev=_ids(value.get("deps_prev"), "%s.deps_prev" % path, op_id, count, False))
    if kind == COMPUTE:
        for name in ("peer", "bytes", "channel", "window"):
            if name in value:
                raise _where("%s.%s" % (path, name), value[name], "is not a field of a compute op",
                             "a compute op has only ms (and deps, deps_prev, tag)")
        if "ms" not in value:
            raise _missing("%s.ms" % path, "give the compute time in milliseconds (0 for a join)")
        op.ms = _number(value["ms"], "%s.ms" % path, 0.0, LIMITS["ms"], "give the compute time in milliseconds")
        return op, None
    if "ms" in value:
        raise _where("%s.ms" % path, value["ms"], "is not a field of a %s op" % kind,
                     "ms belongs to compute ops; a transfer's time is measured")
    if "peer" not in value:
        raise _missing("%s.peer" % path, "give the host it %s" % ("sends to" if kind == SEND else "receives from"))
    op.peer = check_name(value["peer"], "%s.peer" % path)
    if "bytes" not in value:
        raise _missing("%s.bytes" % path, "give the message size in bytes (at least 1)")
    op.bytes = _int(value["bytes"], "%s.bytes" % path, 1, LIMITS["bytes"], "give the message size in bytes")
    op.channel = _int(value.get("channel", 0), "%s.channel" % path, 0, LIMITS["channel"],
                      "give the channel number (one connection per sender, receiver and channel)")
    window = None
    if "window" in value:
        window = _int(value["window"], "%s.window" % path, 1, LIMITS["window"],
                      "give the messages allowed unacknowledged on this channel's connections")
    return op, window


def parse_program(value):
    """The typed ``Program`` of a ``program`` dict, or FlowError naming the field, the value and the fix."""
    if not isinstance(value, dict):
        raise _where("program", value, "is not a mapping", "give the host's program (version, iterations, ops, ...)")
    unknown = sorted(set(value) - set(_TOP))
    if unknown:
        raise _where("program.%s" % unknown[0], value[unknown[0]], "is not a field of a program",
                     "the fields are %s" % ", ".join(_TOP))
    if value.get("version") != 1:
        raise _where("program.version", value.get("version"), "is not a version this host runs",
                     "give version: 1 (and update the collection on the hosts if the controller is newer)")
    if "iterations" not in value:
        raise _missing("program.iterations", "give the number of times the op list runs")
    iterations = _int(value["iterations"], "program.iterations", 1, LIMITS["iterations"],
                      "give how many times the op list runs")
    window = _int(value.get("window", 1), "program.window", 1, LIMITS["window"],
                  "give the messages allowed unacknowledged on a connection (1 = one at a time)")
    timeout = value.get("timeout")
    if timeout is not None:
        timeout = _number(timeout, "program.timeout", 0.001, LIMITS["timeout"],
                          "give the seconds the program may run from the instant")
    ops_value = value.get("ops")
    if not isinstance(ops_value, list) or not ops_value:
        raise _where("program.ops", ops_value, "is not a non-empty list",
                     "give this host's ops of one iteration, ids 0..M-1 in order")
    if len(ops_value) > LIMITS["ops"]:
        raise FlowError("program.ops: %d ops in one iteration, more than %d; split the job into fewer, larger "
                        "messages" % (len(ops_value), LIMITS["ops"]))
    count = len(ops_value)
    ops, op_windows = [], {}
    for k, raw in enumerate(ops_value):
        op, op_window = _op(raw, k, count)
        ops.append(op)
        if op.kind != COMPUTE and op_window is not None:
            op_windows.setdefault(op.channel, []).append((k, op_window))
    peers = {}
    peers_value = value.get("peers") or {}
    if not isinstance(peers_value, dict):
        raise _where("program.peers", peers_value, "is not a mapping",
                     "give name -> {address, port} for every host this host sends to")
    for name, endpoint in peers_value.items():
        peers[check_name(name, "program.peers key")] = _endpoint(endpoint, "program.peers.%s" % name)
    listen = None
    if value.get("listen") is not None:
        listen = _endpoint(value["listen"], "program.listen")
    by_channel = {}
    wbc = value.get("window_by_channel") or {}
    if not isinstance(wbc, dict):
        raise _where("program.window_by_channel", wbc, "is not a mapping", "give channel -> window, e.g. {1: 4}")
    for key, win in wbc.items():
        try:
            channel = int(key)
        except (TypeError, ValueError):
            channel = None
        if channel is None or isinstance(key, bool) or not 0 <= channel <= LIMITS["channel"]:
            raise _where("program.window_by_channel key", key, "is not a channel number",
                         "give channel -> window, e.g. {1: 4}")
        by_channel[channel] = _int(win, "program.window_by_channel.%s" % key, 1, LIMITS["window"],
                                   "give the messages allowed unacknowledged on this channel's connections")
    first_of_channel = {}
    for op in ops:
        if op.kind != COMPUTE:
            first_of_channel.setdefault(op.channel, op.id)
    for channel, given in sorted(op_windows.items()):
        for k, win in given:
            if k != first_of_channel[channel]:
                raise FlowError("program.ops[%d].window: %d is set on an op that is not the first of channel %d "
                                "(ops[%d] is); give a channel's window once, on its first op or in "
                                "window_by_channel" % (k, win, channel, first_of_channel[channel]))
            if channel in by_channel:
                raise FlowError("program.ops[%d].window: channel %d's window is also in program.window_by_channel; "
                                "give it once" % (k, channel))
            by_channel[channel] = win
    program = Program(version=1, iterations=iterations, ops=ops, listen=listen, peers=peers, window=window,
                      window_by_channel=by_channel, timeout=timeout)
    for op in ops:
        if op.kind == SEND and op.peer not in peers:
            raise FlowError("program.ops[%d].peer: %s is not in program.peers; add %s: {address: ..., port: ...} "
                            "(where its program server listens)" % (op.id, op.peer, op.peer))
        if op.kind == RECV and listen is None:
            raise FlowError("program.listen: missing, but ops[%d] is a recv; give listen: {address: <this host's lab "
                            "address>, port: ...} so the senders can connect" % op.id)
    _derive(program)
    return program


def _derive(program):
    count = len(program.ops)
    program.dependents = [[] for _op in range(count)]
    program.dependents_next = [[] for _op in range(count)]
    for op in program.ops:
        for dep in op.deps:
            program.dependents[dep].append(op.id)
        for dep in op.deps_prev:
            program.dependents_next[dep].append(op.id)
        if op.barrier:
            program.barrier_ops.append(op.id)
        if op.kind == SEND:
            program.sends.setdefault((op.peer, op.channel), []).append(op.id)
        elif op.kind == RECV:
            program.recvs.setdefault((op.peer, op.channel), []).append(op.id)
