# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A job's figures from the hosts' returned times (docs/job-contract.md sections 2 and 3; issue 26, item 4).

Every function takes ``results`` (``{host: the "program" part of its result}``: the contract's section 2, measured or
predicted by ``_model.dag.predict``, which returns the same shape) and returns plain dicts for the report. Times are
seconds from the common instant.

**JCT** = max over hosts of ``iteration_end[-1]``. **Iteration i's time** T_i = E_i - E_(i-1), E_i = max over hosts of
``iteration_end[i]`` (E_(-1) = 0). Its distribution: min, mean, p50, p90, p99 (nearest rank: the ceil(p n / 100)-th
smallest), max, the population standard deviation sigma and the **coefficient of variation** sigma / mean (the
draft's repeatability figure, draft-calabria-bmwg-ai-fabric-training-bench-03 section 13 item 7).

**Waiting on a dependency** (the job's idle silicon). For an op o of host h in iteration i, its dependencies are the
ops named by ``deps`` (iteration i), by ``deps_prev`` (iteration i-1), or, for an op with neither after the first
iteration, every op of iteration i-1 (the contract's barrier). Its *host constraint*, for a send, is the end of the
previous send on its connection (the connection was busy until then; none for the first message). Let d* be the
dependency that ended last. o **waited on d*** when d* is a receive that ended on its data (its end is more than
1 us after its posting: the bytes were not there when it was posted) and ended no earlier than every other
dependency: the wait is the interval from max(the other dependencies' ends, o's host constraint, d*'s posting) to
d*'s end, when not empty. Host h's idle time in iteration i is the length of the union of its ops' wait intervals
(so concurrent waits count once); ``waited_for[p]`` is the union of the intervals whose d* came from peer p (the
host it waited for directly), ``root_cause[q]`` of those whose delay started at q: the receive's matching send (on
q', the peer) is followed back while that send itself waited, i.e. its latest constraint was a receive that ended on
its data (leading to that receive's sender), or any other op (leading to what held that op: a compute waits for its
iteration barrier, whose latest op may be a receive); the chain stops at an op held by its own host (a send whose
connection was still busy with the previous message, an op with no dependency): that host is the root cause (a
sender whose link is slow keeps its connection busy). In a ring with one slow link every worker waits, each on
its left neighbour, and the root cause of all of it is the slow link's sender.

**Straggler** of an iteration: the host to which the largest root-cause wait (summed over the waiting hosts) is
attributed in it (an iteration in which nobody waited has none); ``straggler_count``: in how many iterations each
host was the straggler.

**A collective's time** in an iteration: max over hosts of its ops' last end minus max over hosts of its ops' first
start (from the moment the last host entered it to the moment the last host left it); its time is the mean over the
iterations (nccl-tests averages too); algbw = S / time, busbw = algbw x ``bus_factor`` (nccl-tests'), both in GB/s
(1e9 bytes/s) as nccl-tests prints them, efficiency = busbw x 8 / B.

**Roofline** (draft-calabria-bmwg-ai-fabric-training-bench-03 section 10.1, one term per collective):
Roofline_seq = iterations x (C + sum over collectives of 8 x S x algo_factor / B), JCT Ratio = JCT / Roofline_seq,
Overlap_Fraction = 1 - (JCT - C_total) / Comm_time with C_total = iterations x C and Comm_time = iterations x sum of
8 x S x algo_factor / B, Effective_Comm_Overhead = JCT - C_total. C is ``compute_ms`` / 1000, S a collective's
``size`` (bytes), algo_factor its ``bus_factor`` and B the line rate of one worker (bit/s: the plan's line rate,
``lab_line_rate``: the wire, not the payload, so a perfect TCP run at MTU 9000 still shows a ratio of about 1.01).

**Prediction error**: (predicted - measured) / measured, per iteration time and for the JCT.
"""

from __future__ import annotations

import math

from ansible_collections.aifabric.lab.plugins.plugin_utils._job.algorithms import bus_factor
from ansible_collections.aifabric.lab.plugins.plugin_utils._job.program import match_connections

__all__ = ["jct", "iteration_times", "distribution", "waiting", "collectives", "roofline", "prediction_error",
           "analyze", "DATA_BOUND"]

DATA_BOUND = 1e-6  # a receive that ended more than this after its posting ended on its data (the contract's 1 us)


def _ends(results):
    """Per iteration, the max over hosts of ``iteration_end`` (None where a host has no end for it)."""
    lists = [r.get("iteration_end") or [] for r in results.values()]
    if not lists:
        return []
    n = max(len(x) for x in lists)
    out = []
    for i in range(n):
        vals = [x[i] if i < len(x) else None for x in lists]
        out.append(None if any(v is None for v in vals) else max(vals))
    return out


def jct(results):
    """Max over hosts of ``iteration_end[-1]``; None unless every host is ``ok`` with every iteration ended."""
    if not results or any(r.get("status") != "ok" for r in results.values()):
        return None
    ends = _ends(results)
    want = max(r.get("iterations", 0) for r in results.values())
    if len(ends) < want or any(e is None for e in ends):
        return None
    return ends[-1] if ends else None


def iteration_times(results):
    """T_i = E_i - E_(i-1) for every iteration every host ended (the prefix of complete iterations)."""
    out, prev = [], 0.0
    for e in _ends(results):
        if e is None:
            break
        out.append(e - prev)
        prev = e
    return out


def _rank(sorted_values, p):
    return sorted_values[max(0, math.ceil(p / 100.0 * len(sorted_values)) - 1)]


def distribution(series):
    """``{n, min, mean, p50, p90, p99, max, stdev, cv, series}`` of a list of times (nearest-rank percentiles,
    population standard deviation, cv = stdev / mean)."""
    series = list(series)
    if not series:
        return {"n": 0, "series": []}
    s = sorted(series)
    n = len(s)
    mean = sum(s) / n
    stdev = math.sqrt(sum((x - mean) ** 2 for x in s) / n)
    return {"n": n, "min": s[0], "mean": mean, "p50": _rank(s, 50), "p90": _rank(s, 90), "p99": _rank(s, 99),
            "max": s[-1], "stdev": stdev, "cv": stdev / mean if mean > 0 else None, "series": series}


# --- waiting on a dependency ---------------------------------------------------------------------------------------


class _Times:
    """Measured times by (host, iteration, op), from the sampled iterations."""

    def __init__(self, results, programs):
        self.ops = {h: programs[h]["ops"] for h in programs}
        self.rows = {}
        for h, r in results.items():
            t = r.get("t") or {}
            cols = [t.get(key) or [] for key in ("start", "first", "end")]
            for pos, i in enumerate(r.get("sampled") or []):
                self.rows[(h, i)] = tuple(col[pos] if pos < len(col) and col[pos] is not None else []
                                          for col in cols)

    def has(self, h, i):
        return (h, i) in self.rows

    def get(self, h, i, j, col):
        row = self.rows.get((h, i))
        if row is None or j >= len(row[col]):
            return None
        return row[col][j]

    def end(self, h, i, j):
        return self.get(h, i, j, 2)

    def start(self, h, i, j):
        return self.get(h, i, j, 0)


def _union(intervals):
    total, cur_a, cur_b = 0.0, None, None
    for a, b in sorted(intervals):
        if cur_b is None or a > cur_b:
            if cur_b is not None:
                total += cur_b - cur_a
            cur_a, cur_b = a, b
        else:
            cur_b = max(cur_b, b)
    if cur_b is not None:
        total += cur_b - cur_a
    return total


class _Waits:
    def __init__(self, results, programs):
        self.times = _Times(results, programs)
        self.ops = self.times.ops
        self.conns = match_connections(programs)
        self.conn_of = {}  # (host, op id) -> (connection, slot)
        for c in self.conns.values():
            for slot, j in enumerate(c.sends):
                self.conn_of[(c.src, j)] = (c, slot)
            for slot, j in enumerate(c.recvs):
                self.conn_of[(c.dst, j)] = (c, slot)
        self.roots = {}

    def deps(self, h, i, j):
        """The dependency instances (iteration, op id) of op j; None when some of them were not sampled."""
        op = self.ops[h][j]
        deps, prev = op.get("deps") or [], op.get("deps_prev") or []
        out = [(i, d) for d in deps]
        if i > 0:
            if not deps and not prev:
                if not self.times.has(h, i - 1):
                    return None
                out = [(i - 1, d) for d in range(len(self.ops[h]))]
            else:
                if prev and not self.times.has(h, i - 1):
                    return None
                out += [(i - 1, d) for d in prev]
        return out

    def fifo_prev_end(self, h, i, j):
        """The end of the send before this one on its connection (None for the first, or when not sampled)."""
        c, slot = self.conn_of[(h, j)]
        k = i * len(c.sends) + slot - 1
        if k < 0:
            return None
        return self.times.end(h, k // len(c.sends), c.sends[k % len(c.sends)])

    def binding(self, h, i, j):
        """(d*, its end, the latest other constraint) of op j, or None when its times are unknown."""
        deps = self.deps(h, i, j)
        if deps is None:
            return None
        ends = []
        for (di, d) in deps:
            e = self.times.end(h, di, d)
            if e is not None:
                ends.append((e, di, d))
        if not ends:
            return None
        ends.sort()
        e_star, di, d = ends[-1]
        other = ends[-2][0] if len(ends) > 1 else None
        if self.ops[h][j]["kind"] == "send":
            f = self.fifo_prev_end(h, i, j)
            if f is not None:
                other = f if other is None else max(other, f)
        return (di, d), e_star, other

    def data_bound_recv(self, h, i, j):
        op = self.ops[h][j]
        if op["kind"] != "recv":
            return False
        s, e = self.times.start(h, i, j), self.times.end(h, i, j)
        return s is not None and e is not None and e - s > DATA_BOUND

    def sender(self, h, i, j):
        """The send instance matching receive (h, i, j)."""
        c, slot = self.conn_of[(h, j)]
        return c.src, i, c.sends[slot]

    def root(self, h, i, j):
        """The root-cause host of data-bound receive (h, i, j): from its matching send, follow what held each op (its
        latest dependency: a receive that ended on its data leads to that receive's sender, any other op to its own
        latest dependency) until an op held by its host (a send whose connection was busy, an op with no
        dependency, an op whose times were not sampled): that op's host."""
        node = self.sender(h, i, j)
        path, seen = [], set()
        result = None
        while result is None:
            if node in self.roots:
                result = self.roots[node]
                break
            if node in seen:  # cannot happen with programs that run; a guard against ones that cannot
                result = node[0]
                break
            seen.add(node)
            path.append(node)
            host, it, op = node
            b = self.binding(host, it, op) if self.times.has(host, it) else None
            if b is None:
                result = host
                break
            (di, d), e_star, other = b
            if other is not None and other > e_star:  # the previous send on its connection held it
                result = host
            elif self.data_bound_recv(host, di, d):
                node = self.sender(host, di, d)
            else:
                node = (host, di, d)
        for key in path:
            self.roots[key] = result
        return result

    def of(self, h, i):
        """The wait intervals of host h in iteration i: [(a, b, peer, root), ...]."""
        out = []
        for j in range(len(self.ops[h])):
            if self.times.end(h, i, j) is None and self.times.start(h, i, j) is None:
                continue
            b = self.binding(h, i, j)
            if b is None:
                continue
            (di, d), e_star, other = b
            if not self.data_bound_recv(h, di, d):
                continue
            floor = self.times.start(h, di, d)
            if other is not None:
                floor = max(floor, other)
            if e_star > floor:
                out.append((floor, e_star, self.ops[h][d]["peer"], self.root(h, di, d)))
        return out


def waiting(results, programs):
    """Per worker its idle time (waiting on a dependency) per sampled iteration and whom it waited for, and the
    straggler per iteration (definitions: the module docstring)."""
    w = _Waits(results, programs)
    per_host, blamed = {}, {}
    for h in sorted(results):
        r = results[h]
        idle, direct, root = {}, {}, {}
        for i in r.get("sampled") or []:
            intervals = w.of(h, i)
            idle[i] = _union([(a, b) for a, b, _p, _q in intervals])
            for key, acc in ((2, direct), (3, root)):
                for who in sorted({x[key] for x in intervals}):
                    span = _union([(x[0], x[1]) for x in intervals if x[key] == who])
                    acc[who] = acc.get(who, 0.0) + span
                    if key == 3:
                        blamed.setdefault(i, {})
                        blamed[i][who] = blamed[i].get(who, 0.0) + span
        per_host[h] = {"idle_s": idle, "idle_total_s": sum(idle.values()), "waited_for": direct,
                       "root_cause": root}
    iterations, count = [], {}
    for i in sorted(blamed):
        who = max(sorted(blamed[i]), key=lambda q: blamed[i][q])
        if blamed[i][who] <= 0:
            continue
        count[who] = count.get(who, 0) + 1
        iterations.append({"iteration": i, "straggler": who, "blamed_s": dict(sorted(blamed[i].items()))})
    return {"per_host": per_host, "stragglers": iterations, "straggler_count": count}


# --- collectives, roofline, prediction --------------------------------------------------------------------------------


def collectives(results, programs, job, line_rate_bps):
    """Per collective of ``job`` (a ``spec.JobSpec``): its time per iteration, mean, algbw, busbw, efficiency."""
    times = _Times(results, programs)
    common = None
    for r in results.values():
        s = set(r.get("sampled") or [])
        common = s if common is None else common & s
    common = sorted(common or [])
    out = []
    n = len(job.ranks)
    for sched, spec in zip(job.schedules(), job.collectives):
        k = spec.index
        series = []
        ops_of = {h: [j for j, op in enumerate(programs[h]["ops"]) if op.get("coll") == k] for h in results}
        for i in common:
            starts, ends = [], []
            for h in results:
                mine = ops_of[h]
                s = [x for x in (times.start(h, i, j) for j in mine) if x is not None]
                e = [x for x in (times.end(h, i, j) for j in mine) if x is not None]
                if len(e) == len(mine) and mine:
                    starts.append(min(s))
                    ends.append(max(e))
            if len(ends) == len(results):
                series.append(max(ends) - max(starts))
        factor = bus_factor(spec.op, n)
        mean = sum(series) / len(series) if series else None
        algbw = spec.size / mean / 1e9 if mean else None
        busbw = algbw * factor if algbw is not None else None
        out.append({"index": k, "op": spec.op, "algorithm": spec.algorithm, "described": sched.describe(),
                    "size": spec.size, "ranks": n, "bus_factor": factor, "time_s": mean, "times_s": series,
                    "algbw_GBps": algbw, "busbw_GBps": busbw,
                    "efficiency": busbw * 8e9 / line_rate_bps if busbw is not None and line_rate_bps else None})
    return out


def roofline(job, line_rate_bps, measured_jct):
    """The draft's section 10.1 figures (see the module docstring) for ``job`` at line rate B (bit/s)."""
    n = len(job.ranks)
    per_iteration_comm = sum(8.0 * c.size * bus_factor(c.op, n) / line_rate_bps for c in job.collectives)
    c_total = job.iterations * job.compute_ms / 1000.0
    comm = job.iterations * per_iteration_comm
    seq = c_total + comm
    out = {"roofline_seq_s": seq, "c_total_s": c_total, "comm_time_s": comm, "line_rate_bps": line_rate_bps,
           "jct_s": measured_jct, "jct_ratio": None, "overlap_fraction": None, "effective_comm_overhead_s": None}
    if measured_jct is not None:
        out["jct_ratio"] = measured_jct / seq if seq > 0 else None
        out["overlap_fraction"] = 1.0 - (measured_jct - c_total) / comm if comm > 0 else None
        out["effective_comm_overhead_s"] = measured_jct - c_total
    return out


def prediction_error(measured, predicted):
    """(predicted - measured) / measured per iteration time and for the JCT; ``max_abs``: the largest per
    iteration."""
    m, p = iteration_times(measured), iteration_times(predicted)
    per = [(b - a) / a if a > 0 else None for a, b in zip(m, p)]
    jm, jp = jct(measured), jct(predicted)
    vals = [abs(x) for x in per if x is not None]
    return {"iterations": per, "max_abs": max(vals) if vals else None,
            "jct": (jp - jm) / jm if jm and jp is not None else None,
            "measured_jct_s": jm, "predicted_jct_s": jp}


def analyze(results, programs, job, line_rate_bps, predicted=None):
    """Every figure of the report for one job: ``{jct_s, iterations, waiting, collectives, roofline, prediction}``
    (``prediction`` only when ``predicted``, the simulator's results, is given)."""
    j = jct(results)
    out = {"jct_s": j, "complete": j is not None,
           "status": {h: r.get("status") for h, r in sorted(results.items())},
           "iterations": distribution(iteration_times(results)),
           "waiting": waiting(results, programs),
           "collectives": collectives(results, programs, job, line_rate_bps),
           "roofline": roofline(job, line_rate_bps, j)}
    if predicted is not None:
        out["prediction"] = prediction_error(results, predicted)
        out["predicted_iterations"] = distribution(iteration_times(predicted))
    return out
