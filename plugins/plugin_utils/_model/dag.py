# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A job's programs through a dependency-aware, event-driven max-min simulation (issue 26, item 5).

``predict(programs, paths, factor=1.0, latency=0.0)`` runs the per-host programs of docs/job-contract.md section 1
the way the contract says a host runs them, with the network as max-min fair sharing, and returns every op's predicted
``start``/``first``/``end`` per iteration, each host's ``iteration_end`` and byte counts **in the shape of the
contract's section 2** (one result per host), so the report lays the prediction beside the measurement.

The model, op by op (times in s from the common instant, 0):

- an op is **ready** when its ``deps`` (same iteration) and ``deps_prev`` (previous iteration; ignored in iteration 0)
  have ended; an op with neither waits, after the first iteration, for every op of its host's previous iteration;
- ``compute``: starts when ready, ends ``ms`` later;
- ``send``: starts when ready, every earlier send on its connection (sender, receiver, channel; in the order
  iteration, op id) has started (FIFO), and fewer than ``window`` of them are unacknowledged. A connection is one
  byte stream: its started messages are transmitted one after the other, the next one's first byte (``first``) when
  the previous one's last byte has left; a message in transmission is one flow. The send ends when it is
  acknowledged: one round trip (2 x ``latency``) after its last byte has left;
- ``recv``: starts (is posted) when ready; ``first`` is the arrival of the message's first byte (``latency`` after it
  left), and it ends at max(arrival of the last byte, its posting): bytes are drained, and acknowledged, on arrival,
  whether the receive is posted or not (the contract's receiver always drains);
- the network: every flow in transmission crosses the links of its path (``paths(src, dst)``: ``[(link, bit/s),
  ...]``) and gets its max-min fair wire rate among the flows in transmission (progressive filling); its payload
  advances at rate x ``factor`` (goodput per frame). Rates change only when a flow starts or ends; max-min over
  disjoint sets of links decomposes, so an event recomputes only the connected component (flows linked through
  shared links) of the flows whose state changed, not the whole network. With ``latency`` 0 (the default) a window
  changes nothing (an acknowledgement is immediate); with a latency, window 1 costs a round trip per message.

``_simulate.py``'s vectorized solver refills every flow of a step at once (fast for 100,000 flows that start
together, slow for thousands that start one by one); here flows start one by one, each event touching a handful of
flows, so this is plain Python with per-component refills (benchmarks/job_predict.py gives the cost).
"""

from __future__ import annotations

import heapq
from collections import deque

from ansible_collections.aifabric.lab.plugins.plugin_utils._job.program import ProgramError, match_connections

__all__ = ["ModelError", "predict", "DETAIL_LIMIT"]

DETAIL_LIMIT = 200_000  # iterations x ops per host up to which every iteration's times are returned (the contract)
_EPS_CAP = 1e-9  # a link is full within 1e-9 of its capacity (as _fair_share, _simulate)
_EPS_T = 1e-12  # events within 1 ps are one instant
_SEND, _RECV, _COMPUTE = 1, 2, 0
_EV_TX, _EV_COMPUTE, _EV_ARRIVE, _EV_ACK = 0, 1, 2, 3


class ModelError(ValueError):
    """Input the simulator cannot use, or programs that cannot finish; the message names what and the fix."""


def _per_pair(value, name, src, dst, minimum, positive):
    v = value(src, dst) if callable(value) else value.get((src, dst), value.get("default")) \
        if isinstance(value, dict) else value
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v < float("inf") or v < minimum or (
            positive and v <= 0):
        raise ModelError("%s: %r for %s -> %s; give a finite number %s"
                         % (name, v, src, dst, "> 0" if positive else ">= 0"))
    return float(v)


def _path(paths, src, dst):
    try:
        path = paths(src, dst) if callable(paths) else paths[(src, dst)]
    except KeyError:
        raise ModelError("paths: no path for %s -> %s; give every sending pair its links [(link, bit/s), ...]"
                         % (src, dst)) from None
    out = []
    for hop in path or []:
        if isinstance(hop, dict):
            name, bps = hop.get("link"), hop.get("bps", hop.get("rate"))
            if isinstance(bps, str):
                from ansible_collections.aifabric.lab.plugins.module_utils._units import UnitError, parse_rate

                try:
                    bps = parse_rate(bps, "paths[%s -> %s].%s" % (src, dst, name))
                except UnitError as exc:
                    raise ModelError(str(exc)) from None
        elif isinstance(hop, (list, tuple)) and len(hop) == 2:
            name, bps = hop
        else:
            raise ModelError("paths: %s -> %s has hop %r; give (link, bit/s) or {link, rate}" % (src, dst, hop))
        if isinstance(bps, bool) or not isinstance(bps, (int, float)) or not 0 < bps < float("inf"):
            raise ModelError("paths: link %r of %s -> %s has capacity %r; give bit/s, a number > 0 (e.g. 8e9)"
                             % (name, src, dst, bps))
        out.append((name, float(bps)))
    if not out:
        raise ModelError("paths: %s -> %s has no link: give the links it crosses (a flow on no link is limited by "
                         "nothing)" % (src, dst))
    if len({hop[0] for hop in out}) != len(out):
        raise ModelError("paths: %s -> %s names a link twice; a path lists each link it crosses once" % (src, dst))
    return out


class _Conn:
    __slots__ = ("key", "src", "dst", "m", "sends", "recvs", "nbytes", "window", "links", "factor", "latency",
                 "total", "ready", "next_start", "acked", "queue", "active", "remaining", "rate", "t_last",
                 "version", "arrived", "posted", "first_byte", "transmitting", "solved", "dirty", "stamp", "new_rate")

    def __init__(self, conn, iterations, hosts):
        self.key = (conn.src, conn.dst, conn.channel)
        self.src, self.dst = hosts[conn.src], hosts[conn.dst]
        self.m = len(conn.sends)
        self.sends, self.recvs, self.nbytes, self.window = conn.sends, conn.recvs, conn.nbytes, conn.window
        self.total = self.m * iterations
        self.ready = bytearray(self.total)
        self.next_start = self.acked = 0
        self.queue = deque()
        self.active = -1
        self.remaining = self.rate = self.t_last = 0.0
        self.version = 0
        self.arrived, self.posted, self.first_byte = {}, set(), {}
        self.transmitting = self.solved = self.dirty = False
        self.stamp = -1  # the solve that last put it in a component
        self.new_rate = 0.0


class _Host:
    __slots__ = ("name", "m", "kind", "ms", "conn", "slot", "dependents", "dependents_prev", "barrier", "init0",
                 "init", "its", "tags", "iterations")

    def __init__(self, name, program):
        ops = program["ops"]
        self.name, self.m, self.iterations = name, len(ops), program["iterations"]
        self.kind = [_SEND if op["kind"] == "send" else _RECV if op["kind"] == "recv" else _COMPUTE for op in ops]
        self.ms = [float(op.get("ms", 0) or 0) / 1000.0 for op in ops]
        self.tags = [op.get("tag", "") for op in ops]
        self.conn = [None] * self.m
        self.slot = [0] * self.m
        self.dependents = [[] for _op in ops]
        self.dependents_prev = [[] for _op in ops]
        self.barrier = []
        self.init0, self.init = [0] * self.m, [0] * self.m
        for op in ops:
            j, deps, prev = op["id"], op.get("deps") or [], op.get("deps_prev") or []
            for d in deps:
                self.dependents[d].append(j)
            for d in prev:
                self.dependents_prev[d].append(j)
            self.init0[j] = len(deps)
            if not deps and not prev:
                self.barrier.append(j)
                self.init[j] = 1
            else:
                self.init[j] = len(deps) + len(prev)
        self.its = []  # per iteration: [pending, start, first, end, ended count, max end]


class _Sim:
    def __init__(self, programs, paths, factor, latency):
        try:
            connections = match_connections(programs)
        except ProgramError as exc:
            raise ModelError("programs: %s" % exc) from None
        self.names = sorted(programs)
        index = {h: i for i, h in enumerate(self.names)}
        self.hosts = [_Host(h, programs[h]) for h in self.names]
        self.link_index, self.cap, self.link_conns = {}, [], []
        self.conns = []
        for key in sorted(connections, key=lambda k: (str(k[0]), str(k[1]), k[2])):
            c = _Conn(connections[key], programs[key[0]]["iterations"], index)
            links = []
            for name, bps in _path(paths, key[0], key[1]):
                if name not in self.link_index:
                    self.link_index[name] = len(self.cap)
                    self.cap.append(bps)
                    self.link_conns.append(set())
                elif self.cap[self.link_index[name]] != bps:
                    raise ModelError("paths: link %r has capacity %r on %s -> %s and %r elsewhere; a link has one "
                                     "capacity" % (name, bps, key[0], key[1], self.cap[self.link_index[name]]))
                links.append(self.link_index[name])
            c.links = tuple(links)
            c.factor = _per_pair(factor, "factor", key[0], key[1], 0.0, True)
            c.latency = _per_pair(latency, "latency", key[0], key[1], 0.0, False)
            n = len(self.conns)
            self.conns.append(c)
            src, dst = self.hosts[c.src], self.hosts[c.dst]
            for slot, j in enumerate(c.sends):
                src.conn[j], src.slot[j] = n, slot
            for slot, j in enumerate(c.recvs):
                dst.conn[j], dst.slot[j] = n, slot
        self.link_stamp = [-1] * len(self.cap)
        self.heap, self.seq, self.stack, self.dirty = [], 0, [], []
        self.now = 0.0
        self.events = self.solves = self.refilled = 0

    # --- ops ---------------------------------------------------------------------------------------------------

    def _it(self, h, i):
        host = self.hosts[h]
        while len(host.its) <= i:
            k = len(host.its)
            m = host.m
            host.its.append([list(host.init0 if k == 0 else host.init), [None] * m, [None] * m, [None] * m, 0, 0.0])
        return host.its[i]

    def _push(self, t, code, a, b, c):
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, code, a, b, c))

    def _ready(self, h, i, j):
        host = self.hosts[h]
        it = host.its[i]
        now = self.now
        kind = host.kind[j]
        if kind != _SEND:  # a send starts when FIFO and the window let it (_try_start)
            it[1][j] = now
        if kind == _COMPUTE:
            if host.ms[j] > 0:
                self._push(now + host.ms[j], _EV_COMPUTE, h, i, j)
            else:
                self.stack.append((h, i, j))
            return
        c = self.conns[host.conn[j]]
        k = i * c.m + host.slot[j]
        if kind == _SEND:
            c.ready[k] = 1
            self._try_start(c)
        else:
            if k in c.arrived:
                del c.arrived[k]
                it[2][j] = c.first_byte.pop(k)
                self.stack.append((h, i, j))
            else:
                c.posted.add(k)

    def _end(self, h, i, j):
        host = self.hosts[h]
        it = host.its[i]
        now = self.now
        it[3][j] = now
        it[4] += 1
        if now > it[5]:
            it[5] = now
        pend = it[0]
        for d in host.dependents[j]:
            pend[d] -= 1
            if pend[d] == 0:
                self._ready(h, i, d)
        if i + 1 < host.iterations:
            nxt = None
            for d in host.dependents_prev[j]:
                nxt = nxt or self._it(h, i + 1)
                nxt[0][d] -= 1
                if nxt[0][d] == 0:
                    self._ready(h, i + 1, d)
            if it[4] == host.m:
                nxt = nxt or self._it(h, i + 1)
                for d in host.barrier:
                    nxt[0][d] -= 1
                    if nxt[0][d] == 0:
                        self._ready(h, i + 1, d)

    # --- connections -------------------------------------------------------------------------------------------

    def _try_start(self, c):
        host = self.hosts[c.src]
        while c.next_start < c.total and c.ready[c.next_start] and c.next_start - c.acked < c.window:
            k = c.next_start
            host.its[k // c.m][1][c.sends[k % c.m]] = self.now
            c.queue.append(k)
            c.next_start += 1
        if c.active < 0 and c.queue:
            self._begin(c, c.queue.popleft())

    def _begin(self, c, k):
        now = self.now
        c.active = k
        self.hosts[c.src].its[k // c.m][2][c.sends[k % c.m]] = now
        c.first_byte[k] = now + c.latency
        c.remaining = c.nbytes[k % c.m] * 8.0
        c.t_last = now
        c.transmitting = True
        if c.solved:  # in transmission at the last solve, its rate holds (the solve re-rates it if its component moved)
            c.version += 1
            self._push(now + c.remaining / (c.rate * c.factor), _EV_TX, 0, c.version, c)
        else:
            self._mark(c)

    def _transmitted(self, c):
        k = c.active
        c.active = -1
        c.remaining = 0.0
        c.transmitting = False
        self._mark(c)
        if c.latency > 0:
            self._push(self.now + c.latency, _EV_ARRIVE, 0, k, c)
            self._push(self.now + 2 * c.latency, _EV_ACK, 0, k, c)
        else:
            self._arrive(c, k)
            self._ack(c, k)
        if c.active < 0 and c.queue:
            self._begin(c, c.queue.popleft())

    def _arrive(self, c, k):
        if k in c.posted:
            c.posted.discard(k)
            i, j = k // c.m, c.recvs[k % c.m]
            self.hosts[c.dst].its[i][2][j] = c.first_byte.pop(k)
            self.stack.append((c.dst, i, j))
        else:
            c.arrived[k] = self.now

    def _ack(self, c, k):
        c.acked += 1
        self.stack.append((c.src, k // c.m, c.sends[k % c.m]))
        self._try_start(c)

    # --- rates -------------------------------------------------------------------------------------------------

    def _mark(self, c):
        if not c.dirty:
            c.dirty = True
            self.dirty.append(c)

    def _solve(self):
        changed = []
        for c in self.dirty:
            c.dirty = False
            if c.transmitting != c.solved:
                changed.append(c)
        self.dirty = []
        if not changed:
            return
        self.solves += 1
        stamp = self.solves
        link_conns, link_stamp = self.link_conns, self.link_stamp
        for c in changed:
            c.solved = c.transmitting
            if c.transmitting:
                for link in c.links:
                    link_conns[link].add(c)
            else:
                c.rate = 0.0
                for link in c.links:
                    link_conns[link].discard(c)
        for c in changed:
            for seed in c.links:
                if link_stamp[seed] == stamp:
                    continue
                comp, todo = [], [seed]
                link_stamp[seed] = stamp
                while todo:
                    link = todo.pop()
                    for f in link_conns[link]:
                        if f.stamp != stamp:
                            f.stamp = stamp
                            comp.append(f)
                            for other in f.links:
                                if link_stamp[other] != stamp:
                                    link_stamp[other] = stamp
                                    todo.append(other)
                if comp:
                    self._fill(comp)

    def _fill(self, comp):
        """Progressive filling of one component; re-rates and reschedules the flows whose rate changed."""
        cap, link_conns = self.cap, self.link_conns
        self.refilled += len(comp)
        if len(comp) == 1:  # a flow alone on its links: the slowest of them
            f = comp[0]
            f.new_rate = min(cap[link] for link in f.links)
        else:
            users, residual = {}, {}
            for f in comp:
                f.new_rate = -1.0
                for link in f.links:
                    users[link] = users.get(link, 0) + 1
            for link in users:
                residual[link] = cap[link]
            level = 0.0
            left = len(comp)
            while left:
                inc = min(residual[link] / n for link, n in users.items() if n)
                level += inc
                full = []
                for link, n in users.items():
                    if n:
                        residual[link] -= inc * n
                        if residual[link] <= _EPS_CAP * cap[link]:
                            full.append(link)
                for link in full:
                    for f in link_conns[link]:
                        if f.new_rate < 0:
                            f.new_rate = level
                            left -= 1
                            for other in f.links:
                                users[other] -= 1
        now = self.now
        for f in comp:
            rate = f.new_rate
            if rate != f.rate:
                if f.rate > 0:
                    f.remaining -= f.rate * f.factor * (now - f.t_last)
                f.t_last = now
                f.rate = rate
                f.version += 1
                self._push(now + max(f.remaining, 0.0) / (rate * f.factor), _EV_TX, 0, f.version, f)

    # --- the run -----------------------------------------------------------------------------------------------

    def _drain(self):
        stack = self.stack
        while stack:
            self._end(*stack.pop())

    def run(self):
        for h, host in enumerate(self.hosts):
            it = self._it(h, 0)
            for j in range(host.m):
                if it[0][j] == 0:
                    self._ready(h, 0, j)
        self._drain()
        self._solve()
        heap = self.heap
        while heap:
            t0 = heap[0][0]
            self.now = t0
            while heap and heap[0][0] <= t0 + _EPS_T:
                _t, _s, code, a, b, c = heapq.heappop(heap)
                if code == _EV_TX:
                    if b != c.version or c.active < 0:
                        continue
                    self.events += 1
                    self._transmitted(c)
                elif code == _EV_COMPUTE:
                    self.events += 1
                    self._end(a, b, c)
                elif code == _EV_ARRIVE:
                    self.events += 1
                    self._arrive(c, b)
                else:
                    self.events += 1
                    self._ack(c, b)
                self._drain()
            self._solve()
        self._check_finished()

    def _check_finished(self):
        for host in self.hosts:
            for i in range(host.iterations):
                it = host.its[i] if i < len(host.its) else None
                if it is not None and it[4] == host.m:
                    continue
                j = 0 if it is None else next(x for x in range(host.m) if it[3][x] is None)
                state = "never became ready" if it is None or it[1][j] is None else "started but never ended"
                raise ModelError("the programs cannot finish: %s iteration %d op %d (%s) %s; check its deps, and "
                                 "that every receive has its send" % (host.name, i, j, host.tags[j], state))

    # --- the result --------------------------------------------------------------------------------------------

    def results(self, detail_limit):
        out = {}
        for host in self.hosts:
            n = host.iterations
            ends = [host.its[i][5] for i in range(n)]
            own = [ends[i] - (ends[i - 1] if i else 0.0) for i in range(n)]
            if n * host.m <= detail_limit:
                sampled, detail = list(range(n)), "full"
            else:
                slowest = sorted(range(n), key=lambda i: (-own[i], i))[:10]
                sampled, detail = sorted(set(range(min(3, n))) | set(range(max(0, n - 3), n)) | set(slowest)), \
                    "sampled"
            sent = received = 0
            for j, kind in enumerate(host.kind):
                if kind != _COMPUTE:
                    c = self.conns[host.conn[j]]
                    if kind == _SEND:
                        sent += c.nbytes[host.slot[j]]
                    else:
                        received += c.nbytes[host.slot[j]]
            out[host.name] = {
                "status": "ok", "error": None, "at": 0.0, "iterations": n, "ops": host.m, "detail": detail,
                "sampled": sampled,
                "t": {key: [[None if x is None else round(x, 9) for x in host.its[i][col]] for i in sampled]
                      for key, col in (("start", 1), ("first", 2), ("end", 3))},
                "iteration_end": [_round(x) for x in ends],
                "bytes_sent": sent * n, "bytes_received": received * n, "cpu_s": None,
            }
        return out


def _round(x):
    return None if x is None else round(x, 9)


def predict(programs, paths, factor=1.0, latency=0.0, detail_limit=DETAIL_LIMIT):
    """Predict ``{host: program}`` (docs/job-contract.md section 1) on a network.

    ``paths``: ``{(src, dst): [(link, bit/s), ...]}`` or a function ``(src, dst) -> [...]`` (hops may also be
    ``{link, rate}`` dicts with tc rates, ``8gbit``, as the plan writes them); a link named in several paths has one
    capacity. ``factor``: the goodput factor (payload per wire bit), a number or per pair (dict with an optional
    ``default`` key, or a function); ``latency``: one-way seconds, likewise (default 0).

    Returns ``{"results": {host: section-2 result}, "events", "solves", "refilled"}`` (the last three: the work it
    took: events processed, component refills, flows re-rated over all refills).
    """
    if not isinstance(programs, dict) or not programs:
        raise ModelError("programs: expected {host: program} with at least one host, got %r" % (programs,))
    sim = _Sim(programs, paths, factor, latency)
    sim.run()
    return {"results": sim.results(detail_limit), "events": sim.events, "solves": sim.solves,
            "refilled": sim.refilled}
