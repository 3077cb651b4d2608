# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The flow-level simulator's solver: max-min fair share by progressive filling over any topology, event by event, in
numpy.

The model is ``_model.fair_share.predict_completions``'s (and agrees with it to float precision on every case that one
handles): a flow crosses a list of links (directed, each with a capacity in bit/s on the wire); every active flow gets
its max-min fair wire rate; a flow's payload advances at its rate times its goodput factor; when a flow finishes or
starts, the rates are computed again. What this module adds is scale:

- **Progressive filling, vectorized.** Flows and links form a sparse incidence (CSR index arrays: each flow's links,
  and each link's flows). All unfrozen flows rise together; per iteration the bottleneck links are those with the least
  fill level (level + remaining capacity / unfrozen flows), and their flows freeze at it. A link's fill level changes
  only when one of its flows freezes, so an iteration updates the links of the flows it froze and looks for the least
  among a window of the lowest: O(nnz) for the whole filling, plus O(window) per iteration.
- **Only what changed is filled again.** Water-filling raises levels in order. When flows finish, every level below
  the lowest rate among them is unchanged (a link that lost a flow fills later, never earlier), so every flow slower
  than that keeps its rate and only the others are filled again, from that level. When flows start, the same holds
  below the level at which the first of their links would fill (computed from the rates on those links). Active flows
  are kept sorted by rate: the flows to fill again are a tail of that order, and the next completion is a minimum
  over blocks of it. When the fastest flows finish first, before any slower flow (a barrier step's equal flows do),
  nothing is filled again: whole runs of such completions are retired at once.
- **Perfect spreading.** ``ideal_completions`` spreads every flow evenly over all its equal-cost paths (the fabrics of
  ``fabrics.py`` give them; ``placement.py`` picks one per flow as ECMP does).

numpy is imported here and in ``_model.ecmp`` only (controller side; the hosts never need it).
"""

from __future__ import annotations

import math
import traceback

try:
    import numpy as np
except ImportError:  # requirements.txt pins it for the controller; every entry point says so if it is missing
    np = None
    NUMPY_IMPORT_ERROR = traceback.format_exc()
else:
    NUMPY_IMPORT_ERROR = None

__all__ = ["SimulationError", "Simulation", "simulate", "simulate_arrays", "max_min", "ideal_completions",
           "need_numpy", "csr_ptr"]

_EPS = 1e-9  # as fair_share.py: a link is full, a flow done, within 1e-9 of its capacity (bit/s) or volume (bits)
_BLOCK = 512  # positions per block of the next-completion search
_WINDOW = 1024  # links among which the next one to fill is looked for (the lowest fill levels)
_REFRESH = 1024  # refills between exact recomputations of each link's used capacity (bounds float drift)


class SimulationError(ValueError):
    """Input the simulator cannot use; the message names the parameter, the value and the fix."""


def need_numpy():
    if np is None:
        raise SimulationError(
            "the flow simulator needs numpy on the controller: install the collection's requirements "
            "(pip install -r requirements.txt, or make setup). Import error:\n%s" % NUMPY_IMPORT_ERROR)


# --- index helpers -------------------------------------------------------------------------------------------------


def _ranges(ptr, sel):
    """The concatenated index ranges ``ptr[i]:ptr[i + 1]`` for every ``i`` in ``sel`` (CSR rows, vectorized)."""
    if sel.size == 1:
        return np.arange(ptr[sel[0]], ptr[sel[0] + 1], dtype=np.int64)
    starts = ptr[sel]
    lengths = ptr[sel + 1] - starts
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(lengths)
    return np.repeat(starts - (ends - lengths), lengths) + np.arange(total, dtype=np.int64)


def _group(keys, n_keys):
    """An order that sorts ``keys`` (integers in ``[0, n_keys)``), stable: numpy's radix sort on 16-bit digits."""
    if n_keys <= 1 << 16:
        return np.argsort(keys.astype(np.uint16), kind="stable")
    low = np.argsort((keys & 0xFFFF).astype(np.uint16), kind="stable")
    high = keys[low] >> 16
    if n_keys <= 1 << 32:
        high = high.astype(np.uint16)
    return low[np.argsort(high, kind="stable")]


def csr_ptr(counts):
    ptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr


# --- progressive filling -------------------------------------------------------------------------------------------


def _fill(level, residual, count, weight, eps_cap, entry_link, entry_flow, entry_weight, flow_ptr, n_flows):
    """Progressive filling of ``n_flows`` unfrozen flows from ``level`` (bit/s each) upward.

    Links are local indices: ``residual`` (capacity left at ``level``), ``count`` (unfrozen flows on it) and
    ``weight`` (their summed weights: the share of each flow's rate the link carries, 1 for a flow's own path);
    all three are modified. ``eps_cap``: the fullness tolerance. Entries list every (flow, link) pair, grouped by
    flow (``flow_ptr``); ``entry_weight`` is None when every weight is 1. Returns (rates, iterations).

    Mirrors ``_model.fair_share.max_min_rates``: all unfrozen flows rise together; the next level is the least
    ``level + residual / weight`` over the links with unfrozen flows; every flow on a link then full (within
    ``eps_cap``) freezes at that level. A link's fill level only changes when one of its flows freezes, so each is
    kept with the level it was computed at and only the links of the flows just frozen are updated; the least is
    looked for among a window of the lowest (all of them when there are few), renewed when it runs out.
    """
    n_links = len(residual)
    link_order = _group(entry_link, n_links)  # each link's flows (CSR by link)
    link_flows = entry_flow[link_order]
    link_ptr = csr_ptr(np.bincount(entry_link, minlength=n_links))
    rates = np.empty(n_flows)
    unfrozen = np.ones(n_flows, dtype=bool)
    slot = np.zeros(n_flows, dtype=np.int64)
    left = n_flows
    since = np.full(n_links, level)  # the level each link's residual is at
    fill = np.full(n_links, np.inf)  # the level at which each link is full (inf: no unfrozen flow)
    near = np.full(n_links, np.inf)  # the level from which it counts as full (fill - eps_cap / weight)
    live = count > 0
    fill[live] = level + np.maximum(residual[live], 0.0) / weight[live]
    near[live] = fill[live] - eps_cap[live] / weight[live]
    window, bound = np.zeros(0, dtype=np.int64), -np.inf
    iterations = 0
    while left:
        if window.size:
            at = fill[window]
            pick = int(np.argmin(at))
            now = at[pick]
        else:
            now = np.inf
        if now > bound:  # the window ran out: the links with the lowest fill levels
            live = np.flatnonzero(fill < np.inf)
            if live.size <= 8 * _WINDOW:
                window, bound = live, np.inf
            else:
                bound = np.partition(fill[live], _WINDOW)[_WINDOW]
                window = live[fill[live] <= bound]
            continue
        level = now
        iterations += 1
        saturated = window[near[window] <= level]
        frozen = link_flows[_ranges(link_ptr, saturated)]
        frozen = frozen[unfrozen[frozen]]
        if saturated.size > 1:  # a flow on two of them once (a path names a link once)
            slot[frozen] = np.arange(frozen.size)
            frozen = frozen[slot[frozen] == np.arange(frozen.size)]
        rates[frozen] = level
        unfrozen[frozen] = False
        left -= frozen.size
        entries = _ranges(flow_ptr, frozen)
        touched = entry_link[entries]  # repeated links get the same values below, and their losses summed
        residual[touched] = residual[touched] - (level - since[touched]) * weight[touched]
        since[touched] = level
        np.subtract.at(weight, touched, 1.0 if entry_weight is None else entry_weight[entries])
        np.subtract.at(count, touched, 1)
        w = weight[touched]
        alive = count[touched] > 0
        at = np.where(alive, np.maximum(level + residual[touched] / np.where(alive, w, 1.0), level), np.inf)
        fill[touched] = at
        near[touched] = np.where(alive, at - eps_cap[touched] / np.where(alive, w, 1.0), np.inf)
        fill[saturated] = np.inf
        near[saturated] = np.inf
    return rates, iterations


# --- the event loop ------------------------------------------------------------------------------------------------


def _scatter(target, index, values, sign=1.0):
    """``target[index] += sign * values`` with repeated indices summed (bincount when the update is large)."""
    if index.size * 8 > target.size:
        target += sign * np.bincount(index, weights=values, minlength=target.size)
    elif sign > 0:
        np.add.at(target, index, values)
    else:
        np.subtract.at(target, index, values)


class _Events:
    """The event-driven simulation on validated arrays (``_run``).

    Active flows are kept by rate, ascending ("positions": ``order``), with per position the rate, the projected
    completion and the instant from which the flow counts as done (its remaining payload within eps of zero), and
    per block of positions the least of each: the next completion is a minimum over blocks.
    """

    def __init__(self, capacity, indptr, indices, volume_bits, start, factor, weight=None, full_recompute=False):
        n_flows, n_links = len(volume_bits), len(capacity)
        self.capacity, self.indptr, self.indices = capacity, indptr, indices
        self.factor, self.weight, self.full_recompute = factor, weight, full_recompute
        self.lengths = np.diff(indptr)
        self.owner = np.repeat(np.arange(n_flows, dtype=np.int64), self.lengths)
        self.entry_weight = np.ones(indices.size) if weight is None else weight
        self.eps_cap = _EPS * np.maximum(1.0, capacity)
        self.eps_vol = _EPS * np.maximum(1.0, volume_bits)
        self.finish = np.full(n_flows, np.inf)
        self.first_rate = np.zeros(n_flows)
        self.rate = np.zeros(n_flows)  # wire rate of each active flow (0 otherwise)
        self.remaining = volume_bits.astype(np.float64, copy=True)  # payload bits left at `updated`
        self.updated = start.astype(np.float64, copy=True)
        self.active = np.zeros(n_flows, dtype=bool)
        self.used = np.zeros(n_links)  # the active flows' rates (times their weights) summed per link
        empty = volume_bits <= 0
        self.finish[empty] = start[empty]
        waiting = np.flatnonzero(~empty)
        self.waiting = waiting[np.argsort(start[waiting], kind="stable")]
        self.arrive_at = start[self.waiting]
        self.next_arrival = 0
        self.order = np.zeros(n_flows, dtype=np.int64)
        self.pos_rate = np.zeros(n_flows)
        n_blocks = max(1, -(-n_flows // _BLOCK))
        self.pos_done = np.full(n_blocks * _BLOCK, np.inf)
        self.pos_key = np.full(n_blocks * _BLOCK, np.inf)
        self.block_done = np.full(n_blocks, np.inf)
        self.block_key = np.full(n_blocks, np.inf)
        self.n_active = 0
        self.scratch = np.full(n_links, -1, dtype=np.int64)
        self.link_ptr = self.link_entries = None
        self.events = self.iterations = self.refilled = self.refills = 0

    def _blocks(self, lo, hi):
        b0, b1 = lo // _BLOCK, -(-hi // _BLOCK)
        if b1 > b0:
            self.block_done[b0:b1] = self.pos_done[b0 * _BLOCK:b1 * _BLOCK].reshape(-1, _BLOCK).min(axis=1)
            self.block_key[b0:b1] = self.pos_key[b0 * _BLOCK:b1 * _BLOCK].reshape(-1, _BLOCK).min(axis=1)

    def _leave(self, flows):
        """Take finished flows off their links' books."""
        entries = _ranges(self.indptr, flows)
        links = self.indices[entries]
        w = self.entry_weight[entries]
        _scatter(self.used, links, self.rate[self.owner[entries]] * w, -1.0)
        self.rate[flows] = 0.0
        self.remaining[flows] = 0.0
        self.active[flows] = False

    def run(self):
        while True:
            t_arrive = self.arrive_at[self.next_arrival] if self.next_arrival < self.waiting.size else np.inf
            if self.n_active and not self.full_recompute:
                self._retire_top(t_arrive)
            t_done = self.block_done.min() if self.n_active else np.inf
            if t_done == np.inf and t_arrive == np.inf:
                break
            self._event(t_done if t_done <= t_arrive else t_arrive)
            self.refills += 1
            if self.refills % _REFRESH == 0 and self.n_active:  # bound the float drift of the incremental books
                entries = _ranges(self.indptr, self.order[:self.n_active])
                self.used = np.bincount(self.indices[entries], minlength=self.capacity.size,
                                        weights=self.rate[self.owner[entries]] * self.entry_weight[entries])
        return {"finish": self.finish, "first_rate": self.first_rate, "events": self.events,
                "iterations": self.iterations, "refilled": self.refilled}

    def _retire_top(self, t_arrive):
        """Complete, without filling anything again, the fastest flows while they finish first.

        A group of flows at the top rate that all finish at the next completion, before any slower flow and any
        start, leaves every slower flow's rate as it was (the filling below their rates is unchanged): they are done
        and nothing else changes. Repeated down the rate order, group by group, on a window of the top positions
        that grows while every group in it qualifies (a barrier step's equal flows finish this way, fastest first).
        """
        size = 64
        while self.n_active:
            n = self.n_active
            lo = max(0, n - size)
            t, key, r = self.pos_done[lo:n], self.pos_key[lo:n], self.pos_rate[lo:n]
            starts = np.flatnonzero(r[:-1] < r[1:] * (1.0 - 1e-12)) + 1
            whole = lo == 0 or self.pos_rate[lo - 1] < r[0] * (1.0 - 1e-12)
            starts = np.concatenate(([0], starts)) if whole else starts
            if not starts.size:
                size *= 4
                if lo == 0:
                    return
                continue
            done_at = np.minimum.reduceat(t, starts)
            last_key = np.maximum.reduceat(key, starts)
            below = np.minimum.accumulate(key)
            b = lo // _BLOCK
            floor = min(self.block_key[:b].min() if b else np.inf,
                        self.pos_key[b * _BLOCK:lo].min() if lo > b * _BLOCK else np.inf)
            under = np.full(starts.size, floor)
            inside = starts > 0
            under[inside] = np.minimum(floor, below[starts[inside] - 1])
            valid = (last_key <= done_at) & (under > done_at) & (done_at < t_arrive)
            bad = np.flatnonzero(~valid)
            first = bad[-1] + 1 if bad.size else 0
            if first == starts.size:
                return
            cut = lo + starts[first]
            flows = self.order[cut:n]
            sizes = np.diff(np.append(starts[first:], n - lo))
            self.finish[flows] = np.repeat(done_at[first:], sizes)
            self._leave(flows)
            self.pos_done[cut:n] = np.inf
            self.pos_key[cut:n] = np.inf
            self.n_active = cut
            self._blocks(cut, n)
            self.events += starts.size - first
            if first > 0 or lo == 0:  # a group that does not qualify, or nothing left
                return
            size *= 4

    def _distinct(self, links):
        """(the distinct links, each entry's index among them), in O(entries) (no pass over every link)."""
        seq = np.arange(links.size)
        self.scratch[links] = seq
        distinct = links[self.scratch[links] == seq]
        self.scratch[distinct] = np.arange(distinct.size)
        return distinct, self.scratch[links]

    def _first_full(self, links, added):
        """The lowest level at which one of ``links`` fills once flows of weights ``added`` join it (from zero).

        Until some link changes, the flows now active freeze at their rates; a link then carries
        ``f(x) = sum_flows w min(rate, x) + added x`` at level ``x``, convex and increasing, so it fills at
        ``max_j (C - sum_{i<=j} w_i r_i) / (sum_{i>j} w_i + added)`` over its flows sorted by rate (every tangent
        of a convex function lies below it). Every link the new flows cross, each flow on it read once.
        """
        if not self.n_active:
            return float((self.capacity[links] / added).min())
        if self.link_ptr is None:  # each link's entries (CSR by link), built the first time flows start late
            self.link_entries = _group(self.indices, self.capacity.size)
            self.link_ptr = csr_ptr(np.bincount(self.indices, minlength=self.capacity.size))
        entries = self.link_entries[_ranges(self.link_ptr, links)]
        which = np.repeat(np.arange(links.size), self.link_ptr[links + 1] - self.link_ptr[links])
        flows = self.owner[entries]
        on = self.active[flows]
        entries, which, flows = entries[on], which[on], flows[on]
        ranked = np.lexsort((self.rate[flows], which))
        which = which[ranked]
        w = self.entry_weight[entries[ranked]]
        r = self.rate[flows[ranked]]
        cap = self.capacity[links]
        total = np.bincount(which, weights=w, minlength=links.size)
        best = cap / (total + added)  # j = 0: every flow still rising
        if which.size:
            starts = np.flatnonzero(np.r_[True, which[1:] != which[:-1]])
            seg = which[starts]
            base_rw = np.repeat(np.r_[0.0, np.cumsum(w * r)][starts], np.diff(np.r_[starts, which.size]))
            base_w = np.repeat(np.r_[0.0, np.cumsum(w)][starts], np.diff(np.r_[starts, which.size]))
            frozen_rw = np.cumsum(w * r) - base_rw
            frozen_w = np.cumsum(w) - base_w
            level = (cap[which] - frozen_rw) / np.maximum(total[which] - frozen_w + added[which], 1e-300)
            best[seg] = np.maximum(best[seg], np.maximum.reduceat(level, starts))
        return float(best.min())

    def _event(self, now):
        """One event: the flows done at ``now`` leave, the flows starting at ``now`` join, and the flows at or above
        the lowest rate that can change are filled again from that rate upward."""
        self.events += 1
        blocks = np.flatnonzero(self.block_key <= now)
        if blocks.size:
            cand = (blocks[:, None] * _BLOCK + np.arange(_BLOCK)).ravel()
            cand = cand[cand < self.n_active]
            done_pos = cand[self.pos_key[cand] <= now]
        else:
            done_pos = np.zeros(0, dtype=np.int64)
        done = self.order[done_pos]
        # Below the lowest rate among the flows done, the filling is unchanged (their links fill later, not earlier).
        cut = self.pos_rate[done_pos].min() if done.size else np.inf
        stop = int(np.searchsorted(self.arrive_at, now, side="right"))
        new = self.waiting[self.next_arrival:stop]
        self.next_arrival = stop
        if new.size:
            # Below the level at which the first of their links fills, the filling is unchanged.
            new_entries = _ranges(self.indptr, new)
            new_links = self.indices[new_entries]
            new_weight = self.entry_weight[new_entries]
            touched, local = self._distinct(new_links)
            cut = min(cut, self._first_full(touched, np.bincount(local, weights=new_weight, minlength=touched.size)))
            self.active[new] = True
        if self.full_recompute:
            cut = 0.0

        # The tail of the rate order from the cut (and the flows whose rate is the cut up to rounding).
        n = self.n_active
        first = int(np.searchsorted(self.pos_rate[:n], cut * (1.0 - 1e-12), side="left"))
        old_tail = self.order[first:n]
        self.finish[done] = now
        if done.size:
            self._leave(done)
        keep = old_tail[self.active[old_tail]]
        g = self.rate[keep] * self.factor[keep]
        self.remaining[keep] -= g * (now - self.updated[keep])
        self.updated[keep] = now
        if keep.size:
            entries = _ranges(self.indptr, keep)
            _scatter(self.used, self.indices[entries], self.rate[self.owner[entries]] * self.entry_weight[entries],
                     -1.0)
            self.rate[keep] = 0.0
        tail = np.concatenate([keep, new]) if new.size else keep

        if tail.size:
            entries = _ranges(self.indptr, tail)
            links = self.indices[entries]
            touched, local = self._distinct(links)
            count = np.bincount(local, minlength=touched.size)
            if self.weight is None:
                local_weight = None
                wsum = count.astype(np.float64)
            else:
                local_weight = self.weight[entries]
                wsum = np.bincount(local, weights=local_weight, minlength=touched.size)
            residual = self.capacity[touched] - self.used[touched] - cut * wsum
            tail_ptr = csr_ptr(self.lengths[tail])
            entry_flow = np.repeat(np.arange(tail.size, dtype=np.int64), self.lengths[tail])
            new_rates, its = _fill(cut, residual, count, wsum, self.eps_cap[touched], local, entry_flow,
                                   local_weight, tail_ptr, tail.size)
            self.iterations += its
            self.refilled += tail.size
            self.rate[tail] = new_rates
            _scatter(self.used, links, new_rates[entry_flow] * self.entry_weight[entries])
            if new.size:
                self.first_rate[new] = self.rate[new]
            ranked = tail[np.argsort(new_rates, kind="stable")]
        else:
            ranked = tail
        end = first + ranked.size
        self.order[first:end] = ranked
        self.pos_rate[first:end] = self.rate[ranked]
        g = self.rate[ranked] * self.factor[ranked]
        self.pos_done[first:end] = now + self.remaining[ranked] / g
        self.pos_key[first:end] = self.pos_done[first:end] - self.eps_vol[ranked] / g
        top = max(end, n)
        self.pos_done[end:top] = np.inf
        self.pos_key[end:top] = np.inf
        self.n_active = end
        self._blocks(first, top)


def _run(capacity, indptr, indices, volume_bits, start, factor, weight=None, full_recompute=False):
    """The event-driven simulation on validated arrays: a dict of result arrays and work counters.

    ``weight``: per entry, the share of the flow's rate its link carries (None: 1 everywhere, a flow on one path).
    ``full_recompute``: fill every active flow again at every event, one event at a time (for checks).
    """
    return _Events(capacity, indptr, indices, volume_bits, start, factor, weight, full_recompute).run()


# --- input ---------------------------------------------------------------------------------------------------------


def _per_flow(values, n_flows, name, default, positive=False):
    if values is None:
        return np.full(n_flows, float(default))
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(n_flows, float(arr))
    if arr.shape != (n_flows,):
        raise SimulationError("%s: %d values for %d flows; give one per flow" % (name, arr.size, n_flows))
    bad = ~np.isfinite(arr) | ((arr <= 0) if positive else (arr < 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise SimulationError("%s[%d] is %r: every value must be a finite number %s" % (
            name, i, float(arr[i]), "> 0" if positive else ">= 0"))
    return arr


def _check_arrays(capacity, indptr, indices, link_names=None, flow_ids=None):
    capacity = np.asarray(capacity, dtype=np.float64)
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    n_links = capacity.size

    def link(i):
        return " (link %r)" % link_names[i] if link_names is not None else ""

    def flow(i):
        return " (flow %r)" % (flow_ids[i],) if flow_ids is not None else ""

    bad = ~np.isfinite(capacity) | (capacity <= 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise SimulationError("capacity[%d]%s is %r bit/s: every link needs a finite capacity > 0; give the link its "
                              "rate, or leave it out of the topology" % (i, link(i), float(capacity[i])))
    if indptr.ndim != 1 or indptr.size < 1 or indptr[0] != 0 or indptr[-1] != indices.size:
        raise SimulationError("indptr: expected a CSR row pointer (starts at 0, ends at len(indices) = %d); got %d "
                              "values from %s to %s" % (indices.size, indptr.size, indptr[:1], indptr[-1:]))
    lengths = np.diff(indptr)
    if (lengths < 0).any():
        raise SimulationError("indptr must not decrease (it is each flow's first entry in indices)")
    if (lengths == 0).any():
        i = int(np.flatnonzero(lengths == 0)[0])
        raise SimulationError("flow %d%s has an empty path: give every flow the links it crosses (a flow that "
                              "crosses no link is limited by nothing)" % (i, flow(i)))
    if indices.size and (indices.min() < 0 or indices.max() >= n_links):
        j = int(np.flatnonzero((indices < 0) | (indices >= n_links))[0])
        i = int(np.searchsorted(indptr, j, side="right") - 1)
        raise SimulationError("flow %d%s crosses link index %d, which is not a link (there are %d): correct its "
                              "path or add the link with its capacity" % (i, flow(i), int(indices[j]), n_links))
    _check_no_repeat(indptr, indices, lengths, link, flow)
    return capacity, indptr, indices


def _check_no_repeat(indptr, indices, lengths, link, flow):
    """A path names each link once (a flow that crossed a link twice would take its share twice)."""
    if not indices.size:
        return
    width = int(lengths.max())
    if width == 1:
        return
    if width <= 16:
        grid = np.full((lengths.size, width), -1, dtype=np.int64)
        rows = np.repeat(np.arange(lengths.size), lengths)
        cols = np.arange(indices.size) - indptr[rows]
        grid[rows, cols] = indices
        for a in range(width):
            for b in range(a + 1, width):
                same = (grid[:, a] == grid[:, b]) & (grid[:, a] >= 0)
                if same.any():
                    i = int(np.flatnonzero(same)[0])
                    _repeat_error(i, int(grid[i, a]), link, flow)
        return
    rows = np.repeat(np.arange(lengths.size), lengths)
    key = np.sort(rows * (int(indices.max()) + 1) + indices)
    dup = np.flatnonzero(key[1:] == key[:-1])
    if dup.size:
        i = int(key[dup[0]] // (int(indices.max()) + 1))
        _repeat_error(i, int(key[dup[0]] % (int(indices.max()) + 1)), link, flow)


def _repeat_error(i, j, link, flow):
    raise SimulationError("flow %d%s names link %d%s twice: a path lists each link it crosses once"
                          % (i, flow(i), j, link(j)))


# --- the result ----------------------------------------------------------------------------------------------------


class Simulation:
    """What a simulation found.

    Per flow (arrays, in input order): ``finish`` (s from t=0, start offset included; ``inf`` never), ``first_rate``
    (the wire rate, bit/s, it got when it started), ``start``, ``volume_bytes``. ``step_time``: the last completion.
    ``events``, ``iterations`` (progressive-filling increments, over all events) and ``refilled`` (flows filled again,
    over all events) say how much work it took. With names (``simulate``): ``completions()``, ``rates()`` and
    ``per_link()`` speak flow ids and link names.
    """

    def __init__(self, result, capacity, indptr, indices, volume_bytes, start, factor, link_names=None,
                 flow_ids=None):
        self.finish = result["finish"]
        self.first_rate = result["first_rate"]
        self.events = result["events"]
        self.iterations = result["iterations"]
        self.refilled = result["refilled"]
        self.capacity = capacity
        self.indptr = indptr
        self.indices = indices
        self.volume_bytes = volume_bytes
        self.start = start
        self.factor = factor
        self.link_names = link_names
        self.flow_ids = flow_ids

    @property
    def step_time(self):
        """The last flow's completion (s from t=0): a barrier step's duration."""
        return float(self.finish.max()) if self.finish.size else 0.0

    @property
    def mean_goodput(self):
        """Each flow's payload bits over its duration (bit/s); ``inf`` for an empty flow."""
        with np.errstate(divide="ignore", invalid="ignore"):
            duration = self.finish - self.start
            return np.where(duration > 0, self.volume_bytes * 8.0 / duration, np.inf)

    def _ids(self):
        return self.flow_ids if self.flow_ids is not None else list(range(self.finish.size))

    def completions(self):
        """``{flow_id: completion (s from t=0)}``, as ``_model.fair_share.predict_completions`` returns them."""
        return dict(zip(self._ids(), self.finish.tolist()))

    def rates(self):
        """``{flow_id: wire rate (bit/s) at its start}``."""
        return dict(zip(self._ids(), self.first_rate.tolist()))

    def link_counts(self):
        """Flows per link (array, in link order)."""
        return np.bincount(self.indices, minlength=self.capacity.size)

    def per_link(self):
        """Every link that carries a flow: ``{link: {capacity_bps, flows, rates_bps, mean_goodput_bps, load}}``.

        ``rates_bps``: each flow's wire rate when it started (in ``flows`` order); ``load``: their sum over the
        capacity (1.0: the link was the full bottleneck at the start). Meant for lab-sized cases (it speaks names).
        """
        ids = self._ids()
        names = self.link_names if self.link_names is not None else list(range(self.capacity.size))
        owner = np.repeat(np.arange(self.finish.size), np.diff(self.indptr))
        by_link = np.argsort(self.indices, kind="stable")
        ptr = csr_ptr(self.link_counts())
        goodput = self.mean_goodput
        out = {}
        for j in np.flatnonzero(np.diff(ptr)):
            flows = owner[by_link[ptr[j]:ptr[j + 1]]]
            rates = self.first_rate[flows]
            out[names[j]] = {
                "capacity_bps": float(self.capacity[j]),
                "flows": [ids[i] for i in flows],
                "rates_bps": rates.tolist(),
                "mean_goodput_bps": goodput[flows].tolist(),
                "load": float(rates.sum() / self.capacity[j]),
            }
        return out


# --- entry points --------------------------------------------------------------------------------------------------


def simulate_arrays(capacity, indptr, indices, volume_bytes, start=None, factor=None, link_names=None,
                    flow_ids=None, full_recompute=False):
    """Simulate flows given as arrays (the fast path: no names, a million flows).

    ``capacity``: bit/s per link (> 0). ``indptr``/``indices``: CSR of each flow's links (flow ``i`` crosses
    ``indices[indptr[i]:indptr[i + 1]]``, link indices, each link once, at least one). ``volume_bytes``: payload per
    flow (>= 0; 0 is done at its start). ``start``: offset per flow (s, >= 0; default 0). ``factor``: goodput factor
    per flow (> 0; default 1). ``full_recompute``: fill every active flow again at every event (slower; for checks).
    Returns a ``Simulation``.
    """
    need_numpy()
    capacity, indptr, indices = _check_arrays(capacity, indptr, indices, link_names, flow_ids)
    n_flows = indptr.size - 1
    volume = _per_flow(volume_bytes, n_flows, "volume_bytes", 0)
    start = _per_flow(start, n_flows, "start", 0.0)
    factor = _per_flow(factor, n_flows, "factor", 1.0, positive=True)
    result = _run(capacity, indptr, indices, volume * 8.0, start, factor, full_recompute=full_recompute)
    return Simulation(result, capacity, indptr, indices, volume, start, factor, link_names, flow_ids)


def _compile(links, flows):
    """Names to arrays: (capacity, indptr, indices, link_names, flow_ids), every input error named."""
    if not isinstance(links, dict) or not links:
        raise SimulationError("links: expected {link: capacity in bit/s} with at least one link, got %r" % (links,))
    if not isinstance(flows, dict):
        raise SimulationError("flows: expected {flow_id: [link, ...]} (each flow's path), got %r" % (flows,))
    link_names = list(links)
    index = {name: i for i, name in enumerate(link_names)}
    capacity = []
    for name in link_names:
        cap = links[name]
        if isinstance(cap, bool) or not isinstance(cap, (int, float)) or not cap > 0 or cap == float("inf"):
            raise SimulationError("links: link %r has capacity %r: every link needs a capacity in bit/s > 0 "
                                  "(a number, e.g. 8e9 for 8 Gb/s); give its rate or leave the link out"
                                  % (name, cap))
        capacity.append(float(cap))
    flow_ids = list(flows)
    indptr = [0]
    indices = []
    for flow_id in flow_ids:
        path = flows[flow_id]
        if isinstance(path, (str, bytes)) or not hasattr(path, "__iter__"):
            raise SimulationError("flows: the path of flow %r is %r: give a list of link names" % (flow_id, path))
        path = list(path)
        if not path:
            raise SimulationError("flows: flow %r has an empty path: give the links it crosses (a flow that crosses "
                                  "no link is limited by nothing)" % (flow_id,))
        for link in path:
            if link not in index:
                raise SimulationError("flows: flow %r crosses link %r, which is not in links: add it to links with "
                                      "its capacity in bit/s, or correct the path" % (flow_id, link))
        if len(set(path)) != len(path):
            twice = next(link for link in path if path.count(link) > 1)
            raise SimulationError("flows: flow %r names link %r twice: a path lists each link it crosses once"
                                  % (flow_id, twice))
        indices.extend(index[link] for link in path)
        indptr.append(len(indices))
    return (np.asarray(capacity), np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int64),
            link_names, flow_ids)


def _by_flow(values, flow_ids, name, default, required=False, positive=False):
    values = values or {}
    if not isinstance(values, dict):
        raise SimulationError("%s: expected {flow_id: value}, got %r" % (name, values))
    known = set(flow_ids)
    unknown = [f for f in values if f not in known]
    if unknown:
        raise SimulationError("%s: flow %r is not in flows; give values only for the flows simulated"
                              % (name, unknown[0]))
    out = []
    for f in flow_ids:
        if f not in values:
            if required:
                raise SimulationError("%s: no value for flow %r; give every flow its %s" % (name, f, name))
            out.append(float(default))
            continue
        v = values[f]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise SimulationError("%s: flow %r has %r: expected a finite number" % (name, f, v))
        if v < 0 or (positive and v == 0):
            expected = "> 0" if positive else ">= 0"
            raise SimulationError("%s: flow %r has %r: expected a number %s" % (name, f, v, expected))
        out.append(float(v))
    return np.asarray(out, dtype=np.float64)


def simulate(links, flows, volumes, starts=None, factors=None, full_recompute=False):
    """Simulate named flows over named links.

    ``links``: ``{link: capacity in bit/s}``; ``flows``: ``{flow_id: [link, ...]}`` (its path); ``volumes``:
    ``{flow_id: payload bytes}`` (every flow); ``starts``: ``{flow_id: offset in s}`` (default 0); ``factors``:
    ``{flow_id: goodput factor}`` (default 1.0).
    ``_model.fair_share.predict_completions(flows, links, volumes, factors)`` and
    ``simulate(links, flows, volumes, factors=factors).completions()`` agree to float precision.
    Returns a ``Simulation`` (``completions()``, ``rates()``, ``per_link()``, ``step_time``).
    """
    need_numpy()
    capacity, indptr, indices, link_names, flow_ids = _compile(links, flows)
    volume = _by_flow(volumes, flow_ids, "volumes", 0, required=True)
    start = _by_flow(starts, flow_ids, "starts", 0.0)
    factor = _by_flow(factors, flow_ids, "factors", 1.0, positive=True)
    result = _run(capacity, indptr, indices, volume * 8.0, start, factor, full_recompute=full_recompute)
    return Simulation(result, capacity, indptr, indices, volume, start, factor, link_names, flow_ids)


def max_min(links, flows):
    """Max-min fair wire rates (bit/s) of flows that all run at once: ``{flow_id: rate}``.

    The same answer as ``_model.fair_share.max_min_rates(flows, links)`` (which also accepts a flow with no links).
    """
    need_numpy()
    capacity, indptr, indices, _names, flow_ids = _compile(links, flows)
    n_flows = len(flow_ids)
    count = np.bincount(indices, minlength=capacity.size)
    lengths = np.diff(indptr)
    entry_flow = np.repeat(np.arange(n_flows, dtype=np.int64), lengths)
    rates, _its = _fill(0.0, capacity.copy(), count, count.astype(np.float64), _EPS * np.maximum(1.0, capacity),
                        indices, entry_flow, None, indptr, n_flows)
    return dict(zip(flow_ids, rates.tolist()))


def ideal_completions(links, paths, volumes, starts=None, factors=None):
    """Completions under perfect spreading: every flow split evenly over all of its equal-cost paths.

    ``paths``: ``{flow_id: [path, ...]}`` (each path a list of link names: the candidates ECMP chooses among). A flow
    keeps one rate, max-min fair among the flows as in ``simulate``, and puts ``k/P`` of it on a link that ``k`` of
    its ``P`` paths cross (its host links: all of it; one of four spines: a quarter): what packet spraying would
    reach, and the reference a hashed placement is compared with. Returns ``{flow_id: completion (s)}``; the step's
    ideal time is the largest. (On a non-blocking fabric the same as ``Fabric.hose``, which scales to a million.)
    """
    need_numpy()
    if not isinstance(paths, dict):
        raise SimulationError("paths: expected {flow_id: [path, ...]}, got %r" % (paths,))
    unique, shares = {}, {}
    for flow_id, candidates in paths.items():
        candidates = [list(p) for p in candidates] if hasattr(candidates, "__iter__") else []
        if not candidates:
            raise SimulationError("paths: flow %r has no path: give it its equal-cost paths" % (flow_id,))
        crossings = {}
        for path in candidates:
            if not path:
                raise SimulationError("paths: flow %r has an empty path: give the links it crosses" % (flow_id,))
            for link in path:
                crossings[link] = crossings.get(link, 0) + 1
        unique[flow_id] = list(crossings)
        shares[flow_id] = [crossings[link] / float(len(candidates)) for link in crossings]
    capacity, indptr, indices, link_names, flow_ids = _compile(links, unique)
    weight = np.asarray([w for f in flow_ids for w in shares[f]], dtype=np.float64)
    volume = _by_flow(volumes, flow_ids, "volumes", 0, required=True)
    start = _by_flow(starts, flow_ids, "starts", 0.0)
    factor = _by_flow(factors, flow_ids, "factors", 1.0, positive=True)
    result = _run(capacity, indptr, indices, volume * 8.0, start, factor, weight=weight)
    return dict(zip(flow_ids, result["finish"].tolist()))
