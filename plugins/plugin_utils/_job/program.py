# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A job's per-host programs, exactly per docs/job-contract.md section 1, and the connections that pair them.

``build_programs(job, endpoints)`` turns a ``spec.JobSpec`` into ``{host: program}``. One iteration of one host is:

- op 0, ``compute`` (``job.compute_ms``, tag ``compute``): no deps (it waits, after the first iteration, for every op
  of the previous iteration: the contract's local iteration barrier); with ``overlap``, ``deps_prev: [0]`` (it waits
  only for the previous compute);
- with ``overlap``, op 1, ``compute`` of 0 ms tagged ``start``: ``deps: [0]``, ``deps_prev: [the last join]`` (the
  collectives of this iteration wait for this compute and for the previous iteration's collectives);
- per collective k, its sends and receives in the schedule's order (so that on every connection the sends of the
  sender and the receives of the receiver come in the same order: FIFO matching holds by construction), then a
  ``compute`` of 0 ms tagged ``join<k>`` whose deps are the collective's last operations on this host. A send's deps
  are the operations here of its schedule dependencies (``algorithms.Transfer.deps``), or the collective's start (op
  0, the ``start`` op or the previous join) when it has none; a receive's deps are the collective's start.

Tags: ``<op><k>.<phase>.s<step>.c<chunk>`` (``ar0.rs.s3.c1``: allreduce 0, reduce-scatter, step 3, chunk 1), with the
structured fields ``coll``, ``step``, ``chunk``; ``channel`` when not 0. The program's ``window`` is the largest of
the collectives' windows; a collective with a smaller window gets it as a dependency instead (its n-th send on a
connection waits for the end, i.e. the acknowledgement, of its (n - window)-th: the contract's window exactly).

``match_connections(programs)`` pairs the programs the other way (the simulator and the analysis read it): per
connection (sender, receiver, channel), the sender's sends and the receiver's receives in op order, checked to match
in number and bytes. ``check_program(host, program)`` checks one program's structure (dense ids, known kinds, deps
to lower ids only, peers with a program server).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ProgramError", "Connection", "build_programs", "match_connections", "check_program", "endpoint"]

_KINDS = ("send", "recv", "compute")


class ProgramError(ValueError):
    """Programs that do not fit together; the message names the host, the op and the fix."""


@dataclass(frozen=True)
class Connection:
    """One connection (``src`` -> ``dst`` on ``channel``): the op ids of its sends on ``src`` and of its receives on
    ``dst``, in program order (one iteration's), their bytes, and its window."""

    src: str
    dst: str
    channel: int
    sends: tuple
    recvs: tuple
    nbytes: tuple
    window: int


def endpoint(value, name):
    """``{"address": ..., "port": ...}`` from such a dict or an ``(address, port)`` pair."""
    if isinstance(value, dict):
        address, port = value.get("address"), value.get("port")
    elif isinstance(value, (list, tuple)) and len(value) == 2:
        address, port = value
    else:
        raise ProgramError("%s: expected {address, port} or (address, port), got %r" % (name, value))
    if not address or not isinstance(address, str):
        raise ProgramError("%s: address %r; give the host's lab address" % (name, address))
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ProgramError("%s: port %r; give a port from 1 to 65535" % (name, port))
    return {"address": address, "port": port}


def _host_program(job, schedules, mine_by_schedule, host, endpoints, window):
    ops = []

    def add(kind, **fields):
        op = {"id": len(ops), "kind": kind}
        op.update(fields)
        ops.append(op)
        return op["id"]

    compute = add("compute", ms=job.compute_ms, tag="compute")
    start = compute
    first = None
    if job.overlap:
        ops[compute]["deps_prev"] = [compute]
        first = start = add("compute", ms=0.0, deps=[compute], deps_prev=[], tag="start")
    peers, listens = set(), False
    for k, sched in enumerate(schedules):
        local, depended, mine = {}, set(), []
        sent_on = {}  # (peer, channel) -> this collective's send ids on that connection, in order
        for t in mine_by_schedule[k].get(host, ()):
            fields = {"bytes": t.nbytes, "tag": "%s%d.%s.s%d.c%d" % (sched.abbrev, k, t.phase, t.step, t.chunk),
                      "coll": k, "step": t.step, "chunk": t.chunk}
            if t.channel:
                fields["channel"] = t.channel
            if t.src == host:
                deps = {local[d] for d in t.deps}
                seq = sent_on.setdefault((t.dst, t.channel), [])
                if sched.window < window and len(seq) >= sched.window:
                    deps.add(seq[-sched.window])
                deps = sorted(deps) or [start]
                op_id = add("send", peer=t.dst, deps=deps, **fields)
                seq.append(op_id)
                peers.add(t.dst)
            else:
                deps = [start]
                op_id = add("recv", peer=t.src, deps=deps, **fields)
                listens = True
            depended.update(deps)
            local[t.index] = op_id
            mine.append(op_id)
        sinks = [i for i in mine if i not in depended] or [start]
        start = add("compute", ms=0.0, deps=sinks, tag="join%d" % k)
    if first is not None:
        ops[first]["deps_prev"] = [start]
    program = {"version": 1, "iterations": job.iterations}
    if listens:
        program["listen"] = dict(endpoints[host])
    program["peers"] = {p: dict(endpoints[p]) for p in sorted(peers)}
    program["window"] = window
    program["ops"] = ops
    return program


def build_programs(job, endpoints):
    """``{host: program}`` for every worker of ``job`` (a ``spec.JobSpec``). ``endpoints``: ``{host: {address,
    port}}`` (or ``(address, port)``), where each worker's program server listens."""
    missing = [h for h in job.ranks if h not in endpoints]
    if missing:
        raise ProgramError("endpoints: no program server address for %s; give every worker {address, port}"
                           % ", ".join(missing))
    ends = {h: endpoint(endpoints[h], "endpoints.%s" % h) for h in job.ranks}
    schedules = job.schedules()
    window = max(s.window for s in schedules)
    by_host = []  # per schedule, each host's transfers in the schedule's order
    for sched in schedules:
        mine = {}
        for t in sched.transfers:
            mine.setdefault(t.src, []).append(t)
            mine.setdefault(t.dst, []).append(t)
        by_host.append(mine)
    return {h: _host_program(job, schedules, by_host, h, ends, window) for h in job.ranks}


def _int_field(op, key, host, default=None):
    value = op.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProgramError("%s: op %r has %s %r; expected an integer" % (host, op.get("id"), key, value))
    return value


def check_program(host, program):
    """Check one program's structure; returns its op list. Raises ``ProgramError`` naming the op and the fix."""
    if not isinstance(program, dict) or not isinstance(program.get("ops"), list) or not program["ops"]:
        raise ProgramError("%s: a program is a dict with a non-empty op list, got %r" % (host, type(program).__name__))
    iterations = program.get("iterations")
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise ProgramError("%s: iterations %r; give a whole number, 1 or more" % (host, iterations))
    ops = program["ops"]
    peers = program.get("peers") or {}
    for i, op in enumerate(ops):
        if not isinstance(op, dict) or op.get("id") != i:
            raise ProgramError("%s: op %d has id %r; ids are dense, 0 to %d in order"
                               % (host, i, op.get("id") if isinstance(op, dict) else op, len(ops) - 1))
        kind = op.get("kind")
        if kind not in _KINDS:
            raise ProgramError("%s: op %d has kind %r; use send, recv or compute" % (host, i, kind))
        for key in ("deps", "deps_prev"):
            refs = op.get(key) or []
            if not isinstance(refs, list):
                raise ProgramError("%s: op %d: %s %r is not a list of op ids" % (host, i, key, refs))
            for ref in refs:
                if isinstance(ref, bool) or not isinstance(ref, int) or not 0 <= ref < len(ops):
                    raise ProgramError("%s: op %d: %s names %r, which is not an op id (0 to %d)"
                                       % (host, i, key, ref, len(ops) - 1))
                if key == "deps" and ref >= i:
                    raise ProgramError("%s: op %d depends on op %d of the same iteration: deps point to lower ids "
                                       "(the op list is topologically ordered)" % (host, i, ref))
        if kind == "compute":
            ms = op.get("ms", 0)
            if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not 0 <= ms < float("inf"):
                raise ProgramError("%s: op %d: ms %r; give milliseconds, 0 or more" % (host, i, ms))
        else:
            if _int_field(op, "bytes", host) < 1:
                raise ProgramError("%s: op %d moves %r bytes; give 1 or more" % (host, i, op.get("bytes")))
            _int_field(op, "channel", host, 0)
            if op.get("peer") in (None, host):
                raise ProgramError("%s: op %d (%s) has peer %r; give another host" % (host, i, kind, op.get("peer")))
            if kind == "send" and op["peer"] not in peers:
                raise ProgramError("%s: op %d sends to %s, which is not in the program's peers"
                                   % (host, i, op["peer"]))
    return ops


def _window(program, channel, first_send):
    by_channel = program.get("window_by_channel") or {}
    for key in (channel, str(channel)):
        if key in by_channel:
            return by_channel[key]
    if first_send is not None and "window" in first_send:
        return first_send["window"]
    return program.get("window", 1)


def match_connections(programs):
    """``{(src, dst, channel): Connection}`` over ``{host: program}``; raises ``ProgramError`` when a connection's
    sends and receives do not match (count, bytes, iterations), naming both ops."""
    sends, recvs = {}, {}
    for host in sorted(programs):
        for op in check_program(host, programs[host]):
            if op["kind"] == "send":
                sends.setdefault((host, op["peer"], op.get("channel", 0)), []).append(op)
            elif op["kind"] == "recv":
                recvs.setdefault((op["peer"], host, op.get("channel", 0)), []).append(op)
    out = {}
    for key in sorted(set(sends) | set(recvs), key=lambda k: (str(k[0]), str(k[1]), k[2])):
        src, dst, channel = key
        s, r = sends.get(key, []), recvs.get(key, [])
        if src not in programs or dst not in programs:
            where = (src, s[0]["id"], "sends to", dst) if s else (dst, r[0]["id"], "receives from", src)
            raise ProgramError("%s: op %d %s %s, which has no program; give every host of the job its program"
                               % where)
        if programs[src]["iterations"] != programs[dst]["iterations"]:
            raise ProgramError("%s runs %d iterations and %s %d: hosts that exchange data run the same iterations"
                               % (src, programs[src]["iterations"], dst, programs[dst]["iterations"]))
        for a, b in zip(s, r):
            if a["bytes"] != b["bytes"]:
                raise ProgramError("%s op %d (%s) sends %d bytes to %s, whose matching op %d (%s) receives %d: a "
                                   "connection's k-th send and k-th receive carry the same bytes"
                                   % (src, a["id"], a.get("tag", ""), a["bytes"], dst, b["id"], b.get("tag", ""),
                                      b["bytes"]))
        if len(s) > len(r):
            op = s[len(r)]
            raise ProgramError("%s op %d (%s) sends to %s on channel %d with no matching receive: %s sends %d "
                               "messages there per iteration, %s receives %d"
                               % (src, op["id"], op.get("tag", ""), dst, channel, src, len(s), dst, len(r)))
        if len(r) > len(s):
            op = r[len(s)]
            raise ProgramError("%s op %d (%s) receives from %s on channel %d with no matching send: %s receives %d "
                               "messages there per iteration, %s sends %d"
                               % (dst, op["id"], op.get("tag", ""), src, channel, dst, len(r), src, len(s)))
        window = _window(programs[src], channel, s[0] if s else None)
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ProgramError("%s: window %r on channel %d to %s; give a whole number, 1 or more"
                               % (src, window, channel, dst))
        out[key] = Connection(src, dst, channel, tuple(a["id"] for a in s), tuple(b["id"] for b in r),
                              tuple(a["bytes"] for a in s), window)
    return out
