# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Max-min fair sharing over links, and the completion times it predicts for a step.

A flow crosses a set of links (each with a capacity in bit/s on the wire). Progressive filling raises every unfrozen
flow's rate together; a flow freezes when one of its links is full. When a flow finishes, the others share again
(event-driven). Rates are wire rates; a flow's goodput is its rate times its goodput factor (payload per frame).
"""

from __future__ import annotations

__all__ = ["max_min_rates", "predict_completions", "goodput_factor"]

_EPS = 1e-9


# Bytes of headers per packet, as the kernel's netdev and qdisc books count them (Ethernet header, no FCS).
L2_HEADER = 14
TCP_L3_L4_HEADER = 52  # IPv4 20 + TCP with timestamps 32
ROCE_V2_HEADER = 58  # Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4
HEADERS_PER_PACKET = {"tcp": L2_HEADER + TCP_L3_L4_HEADER, "perftest": ROCE_V2_HEADER}


def roce_goodput(rdma_mtu: int) -> float:
    """Payload share of a RoCE v2 frame carrying ``rdma_mtu`` bytes of payload."""
    return rdma_mtu / float(rdma_mtu + ROCE_V2_HEADER)


def goodput_factor(mtu: int, l3_l4_header: int = TCP_L3_L4_HEADER, l2_header: int = L2_HEADER) -> float:
    """Payload share of an Ethernet frame carrying TCP/IPv4 with timestamps (20 + 20 + 12 bytes of headers).

    The kernel's qdiscs count the Ethernet header (14 bytes) of every segment, so an 8gbit shaper at MTU 9000
    delivers 8 * 8948 / 9014 = 7.941 Gb/s of payload.
    """
    if mtu <= l3_l4_header:
        raise ValueError("mtu %d is too small for the headers" % mtu)
    return (mtu - l3_l4_header) / float(mtu + l2_header)


def max_min_rates(flows: dict, links: dict) -> dict:
    """Max-min fair wire rates (bit/s).

    ``flows``: ``{flow_id: [link_id, ...]}``; ``links``: ``{link_id: capacity_bps}``. Every link a flow names must
    be in ``links``. A flow with no links gets ``float('inf')``.
    """
    for flow_id, path in flows.items():
        for link in path:
            if link not in links:
                raise KeyError("flow %r crosses link %r, which has no capacity" % (flow_id, link))
    rates = {f: 0.0 for f in flows}
    frozen = {f for f, path in flows.items() if not path}
    for f in frozen:
        rates[f] = float("inf")
    residual = dict(links)
    while len(frozen) < len(flows):
        # The increment that fills the first link among the unfrozen flows' links.
        step = None
        for link, cap in residual.items():
            users = [f for f in flows if f not in frozen and link in flows[f]]
            if users:
                share = cap / len(users)
                step = share if step is None else min(step, share)
        if step is None:
            break
        for f in flows:
            if f not in frozen:
                rates[f] += step
        for link in residual:
            users = [f for f in flows if f not in frozen and link in flows[f]]
            residual[link] -= step * len(users)
        for link, cap in residual.items():
            if cap <= _EPS * max(1.0, links[link]):
                for f in flows:
                    if link in flows[f]:
                        frozen.add(f)
    return rates


def predict_completions(flows: dict, links: dict, volumes: dict, factors: dict | None = None,
                        starts: dict | None = None) -> dict:
    """Completion time (s from the common start) of each flow under max-min sharing, re-shared as flows finish
    and as late flows start.

    ``volumes``: payload bytes per flow; ``factors``: goodput factor per flow (default 1.0); ``starts``: seconds
    after the common start that a flow starts (default 0: with the others).
    Returns ``{flow_id: seconds}``; flows that can never finish (zero rate) get ``float('inf')``.
    """
    factors = factors or {}
    starts = {f: float((starts or {}).get(f) or 0.0) for f in flows}
    remaining = {f: float(volumes[f]) * 8 for f in flows}  # payload bits
    done = {}
    for f in flows:
        if remaining[f] <= 0:
            done[f] = starts[f]
    pending = sorted((starts[f], f) for f in flows if f not in done)
    now = 0.0
    active = {}
    while active or pending:
        while pending and pending[0][0] <= now + _EPS:
            f = pending.pop(0)[1]
            active[f] = flows[f]
        arrival = pending[0][0] - now if pending else None
        if not active:
            now += arrival
            continue
        rates = max_min_rates(active, links)
        goodput = {f: rates[f] * factors.get(f, 1.0) for f in active}
        horizon = min((remaining[f] / goodput[f]) for f in active if goodput[f] > 0) if any(
            goodput[f] > 0 for f in active) else None
        if horizon is None and arrival is None:
            for f in active:
                done[f] = float("inf")
            break
        if horizon is None or (arrival is not None and arrival < horizon):
            horizon = arrival  # a late flow starts first: the rates change then
        now += horizon
        for f in list(active):
            remaining[f] -= goodput[f] * horizon
            if remaining[f] <= _EPS * max(1.0, volumes[f] * 8):
                done[f] = now
                del active[f]
    return done
