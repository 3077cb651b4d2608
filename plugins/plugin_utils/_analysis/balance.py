# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How evenly a step's load sat on each set of parallel links: the max-mean ratio and Jain's fairness index.

draft-calabria-bmwg-ai-fabric-training-bench section 8.1 and 8.4 measure ECMP's spread across the parallel uplinks of
a switch with two figures: the max-mean ratio, ``MMR = max(x) / mean(x)`` (1 when every link carries the same, N
when one of N links carries everything), and Jain's fairness index, ``JFI = (sum x)^2 / (N * sum x^2)`` (1 when even,
1/N when one link carries everything). Both are computed here over each set of parallel links of a fabric step, once
by flows (how many of the step's elephants the route lookups put on each link; the counters prove the placement) and
once by bytes (each link's measured port counter over the step).

A set of parallel links is every link of one tier out of one switch toward the tier above (``leaf1->*``: leaf1's
uplinks; ``spine1.1->*`` a pod spine's links to the superspines), or into one switch from the tier above
(``*->leaf2``: the spines' links down to leaf2); a set of one link has no spread to measure and is left out, and so
is a set no flow was put on.
"""

from __future__ import annotations

from ansible_collections.aifabric.lab.plugins.module_utils._link import Link, link_name

__all__ = ["mmr", "jfi", "parallel_sets", "load_balance", "UP_TIERS", "DOWN_TIERS"]

# a tier's links fan out of one switch (up) or into one switch (down)
UP_TIERS = ("uplink", "superuplink")
DOWN_TIERS = ("downlink", "superdownlink")


def mmr(values):
    """``max / mean`` of the loads (None when empty or all zero)."""
    values = [float(v) for v in values]
    if not values or not sum(values):
        return None
    return max(values) / (sum(values) / len(values))


def jfi(values):
    """Jain's fairness index ``(sum x)^2 / (N * sum x^2)``: 1 when even, 1/N when one link carries it all (None
    when empty or all zero)."""
    values = [float(v) for v in values]
    squares = sum(v * v for v in values)
    if not values or not squares:
        return None
    return sum(values) ** 2 / (len(values) * squares)


def _round(value):
    return None if value is None else round(value, 6)


def parallel_sets(links):
    """``[(set name, tier, [link entries])]``: the fabric step's links (``{link, tier, ...}`` entries) grouped into
    sets of parallel links, in name order; sets of one link left out."""
    groups = {}
    for entry in links:
        tier = entry.get("tier")
        if tier in UP_TIERS:
            key = (link_name(Link.parse(entry["link"]).src, "*"), tier)
        elif tier in DOWN_TIERS:
            key = (link_name("*", Link.parse(entry["link"]).dst), tier)
        else:
            continue
        groups.setdefault(key, []).append(entry)
    return [(name, tier, sorted(group, key=lambda e: e["link"])) for (name, tier), group in sorted(groups.items())
            if len(group) > 1]


def load_balance(links):
    """The ``load_balance`` block of a fabric step: per set of parallel links its links, flows and counted bytes per
    link, MMR and JFI of each; and over the sets the worst MMR and the lowest JFI (by flows, by bytes). Bytes
    figures are None when a link of the set has no counter reading."""
    sets = []
    for name, tier, group in parallel_sets(links):
        flows = [len(e.get("flows") or []) for e in group]
        if not sum(flows):
            continue
        counted = [e.get("counted_bytes") for e in group]
        have_bytes = all(c is not None for c in counted)
        sets.append({"set": name, "tier": tier, "links": [e["link"] for e in group], "flows": flows,
                     "bytes": counted if have_bytes else None,
                     "flows_mmr": _round(mmr(flows)), "flows_jfi": _round(jfi(flows)),
                     "bytes_mmr": _round(mmr(counted)) if have_bytes else None,
                     "bytes_jfi": _round(jfi(counted)) if have_bytes else None})

    def worst(key, pick):
        values = [s[key] for s in sets if s[key] is not None]
        return pick(values) if values else None

    return {"sets": sets, "worst_flows_mmr": worst("flows_mmr", max), "lowest_flows_jfi": worst("flows_jfi", min),
            "worst_bytes_mmr": worst("bytes_mmr", max), "lowest_bytes_jfi": worst("bytes_jfi", min)}
