# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A step's congestion books (docs/congestion.md): what the switch ports' ECN markers counted during it (their
snapshots before and after, taken by the experiment role with ``experiment_switch_ecn``), what the hosts' TCP saw
(each flow's TCP_INFO: retransmissions, RTO expiries, ECE-acknowledged packets), what the receiving namespaces
counted (``IpExt`` InCEPkts), the checks that tie them together, and the verdict: "lossless" only when no packet
was dropped anywhere the books look.

The checks and their tolerances:

- marks: every CE mark a marker set arrives at a host of the lab (the marker is the last hop), so the markers'
  ``marked_segs`` summed equals the hosts' ``InCEPkts`` summed (per segment both: the marker counts a GSO packet's
  segments, the receiver's IP layer its ``gso_segs``). The snapshots' windows are not the same instants (the
  switch's before the hosts arm, after their flows), so the control connections' few packets may fall in one and
  not the other: they agree within ``MARK_TOLERANCE`` (0.1%) or ``MARK_SLACK`` (10 packets), whichever is larger.
- drops: a packet the marker drops is dropped by the port's htb (a filter's TC_ACT_SHOT is the qdisc's drop), so
  the port qdisc's drops are at least the marker's ``dropped + early_dropped``; more when the htb's own leaf queue
  overflowed too. Equal is "agrees"; fewer is a disagreement.
"""

from __future__ import annotations

from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.stats import summary

__all__ = ["MARK_SLACK", "MARK_TOLERANCE", "step_ecn"]

MARK_TOLERANCE = 0.001
MARK_SLACK = 10
_PORT = ("packets", "segs", "ect_segs", "marked_segs", "dropped_segs", "marked", "dropped", "early_dropped",
         "ce_in", "not_ect")
_IPEXT = ("InNoECTPkts", "InECT0Pkts", "InECT1Pkts", "InCEPkts")


def _delta(before, after, keys):
    return {k: (after.get(k) or 0) - (before.get(k) or 0) for k in keys}


def _ports(counters):
    """``{switch: {port: {counts, marking_ratio, peak_queue_bytes, buffer_bytes, marking_by_queue, qdisc_drops}}}``
    from the snapshots that hold marker books."""
    out = {}
    for host, snap in sorted((counters or {}).items()):
        before, after = snap.get("before") or {}, snap.get("after") or {}
        if not isinstance(after.get("ecn"), dict):
            continue
        ports = {}
        for port, end in sorted(after["ecn"].items()):
            start = (before.get("ecn") or {}).get(port)
            if start is None:
                continue  # the marker was put on during the step: no before, nothing to count from
            entry = _delta(start, end, _PORT)
            if any(v < 0 for v in entry.values()):  # a marker put on anew between the two: it counts from zero
                entry = {k: end.get(k) or 0 for k in _PORT}
            entry["marking_ratio"] = round(entry["marked_segs"] / entry["ect_segs"], 6) if entry["ect_segs"] else None
            queue_end = (after.get("ecn_queue") or {}).get(port) or {}
            queue_start = (before.get("ecn_queue") or {}).get(port) or {}
            entry["buffer_bytes"] = queue_end.get("limit_bytes")
            # the marker keeps its peak since it was put on: the step's own peak when it rose during the step
            peak_end, peak_start = queue_end.get("max_backlog_bytes"), queue_start.get("max_backlog_bytes")
            entry["peak_queue_bytes"] = peak_end
            entry["peak_queue_in_step"] = bool(peak_end is not None and peak_start is not None
                                               and peak_end > peak_start)
            entry["marking_by_queue"] = _by_queue(queue_start, queue_end)
            qdisc_b = ((before.get("qdisc") or {}).get(port) or {}).get("qdisc") or {}
            qdisc_a = ((after.get("qdisc") or {}).get(port) or {}).get("qdisc") or {}
            if "drops" in qdisc_a and "drops" in qdisc_b:
                entry["qdisc_drops"] = qdisc_a["drops"] - qdisc_b["drops"]
            ports[port] = entry
        out[host] = ports
    return out


def _by_queue(start, end):
    """The marking probability by the queue depth the step's ECT packets found: the histograms' deltas, per bucket of
    1/16 of the buffer that saw packets."""
    ect_a, marked_a = end.get("hist_ect") or [], end.get("hist_marked") or []
    ect_b, marked_b = start.get("hist_ect") or [0] * len(ect_a), start.get("hist_marked") or [0] * len(marked_a)
    limit = end.get("limit_bytes") or 0
    buckets = len(ect_a)
    out = []
    for b in range(min(len(ect_a), len(marked_a), len(ect_b), len(marked_b))):
        ect, marked = ect_a[b] - ect_b[b], marked_a[b] - marked_b[b]
        if ect <= 0:
            continue
        out.append({"from_bytes": b * (limit + 1) // buckets, "to_bytes": (b + 1) * (limit + 1) // buckets - 1,
                    "ect": ect, "marked": marked, "ratio": round(marked / ect, 6)})
    return out


def _flows(step):
    """Per worker what its flows' TCP saw (TCP_INFO at each flow's end, summed over the worker's flows)."""
    out = {}
    for flow in step.flows:
        tcp = (flow.extra or {}).get("tcp")
        if not isinstance(tcp, dict):
            continue
        entry = out.setdefault(flow.host, {"retransmits": 0, "rto_timeouts": 0, "delivered_ce": 0,
                                           "ecn_negotiated": True, "flows": 0})
        entry["flows"] += 1
        entry["retransmits"] += tcp.get("total_retrans") or 0
        entry["rto_timeouts"] += tcp.get("rto_timeouts") or 0
        entry["delivered_ce"] += tcp.get("delivered_ce") or 0
        entry["ecn_negotiated"] = entry["ecn_negotiated"] and bool(tcp.get("ecn_negotiated"))
    return out


def _receivers(counters):
    """Per host, what its namespace's IP layer counted by ECN codepoint during the step (``ipext`` snapshots)."""
    out = {}
    for host, snap in sorted((counters or {}).items()):
        before, after = (snap.get("before") or {}).get("ipext"), (snap.get("after") or {}).get("ipext")
        if isinstance(before, dict) and isinstance(after, dict):
            out[host] = _delta(before, after, _IPEXT)
    return out


def step_ecn(report, step):
    """The step's congestion books, or None when no snapshot of a marked port came with it."""
    switches = _ports(step.counters)
    if not any(switches.values()):
        return None
    ports = [p for s in switches.values() for p in s.values()]
    total = {k: sum(p[k] for p in ports) for k in _PORT}
    total["marking_ratio"] = round(total["marked_segs"] / total["ect_segs"], 6) if total["ect_segs"] else None
    hosts = _flows(step)
    receivers = _receivers(step.counters)
    fct = [w["completion_s"] for w in report.get("workers") or [] if w.get("completion_s") is not None]
    out = {
        "switches": switches,
        "total": total,
        "peak_queue_bytes": max((p["peak_queue_bytes"] or 0 for p in ports), default=0),
        "hosts": hosts,
        "retransmits": sum(h["retransmits"] for h in hosts.values()),
        "rto_timeouts": sum(h["rto_timeouts"] for h in hosts.values()),
        "fct_s": summary(fct),
        "checks": [],
    }
    if receivers:
        out["receivers"] = receivers
        received = sum(r["InCEPkts"] for r in receivers.values())
        marked = total["marked_segs"]
        allowed = max(MARK_SLACK, MARK_TOLERANCE * marked)
        out["checks"].append({
            "check": "marks", "marker": marked, "receivers": received, "difference": received - marked,
            "tolerance": round(allowed, 3), "agrees": abs(received - marked) <= allowed,
            "text": "the markers marked %d segments, the receivers counted %d CE (InCEPkts): %s" % (
                marked, received, "agree within %d" % allowed if abs(received - marked) <= allowed
                else "DISAGREE by %+d (tolerance %d)" % (received - marked, allowed))})
    with_qdisc = [p for p in ports if "qdisc_drops" in p]
    if with_qdisc:
        marker = sum(p["dropped"] + p["early_dropped"] for p in with_qdisc)
        qdisc = sum(p["qdisc_drops"] for p in with_qdisc)
        out["checks"].append({
            "check": "drops", "marker": marker, "qdisc": qdisc, "difference": qdisc - marker,
            "agrees": qdisc >= marker,
            "text": "the markers dropped %d packets, the ports' qdiscs counted %d drops: %s" % (
                marker, qdisc, "the same" if qdisc == marker else
                "%d more at the qdisc (its own queue overflowed)" % (qdisc - marker) if qdisc > marker
                else "DISAGREE: the qdiscs counted fewer")})
    # the markers' drops (per segment), and what a port's qdisc dropped beyond them (its own queue, per packet)
    beyond = sum(max(0, p["qdisc_drops"] - p["dropped"] - p["early_dropped"]) for p in with_qdisc)
    dropped = total["dropped_segs"] + beyond
    out["lossless"] = dropped == 0 and not any("drop" in k for k in _error_counters(report))
    where = ", ".join("%s %s %d" % (s, port, p["dropped_segs"]) for s, ps in sorted(switches.items())
                      for port, p in sorted(ps.items()) if p["dropped_segs"])
    if out["lossless"]:
        text = "lossless: no packet dropped at a marked port"
    else:
        text = "lossy: %d segments dropped (%s)" % (dropped, where or "elsewhere: see the counters")
    if total["marked_segs"]:
        text += "; %d segments marked CE (%.1f%% of ECT)" % (total["marked_segs"], (total["marking_ratio"] or 0) * 100)
    text += "; the flows retransmitted %d segments, %d RTO expiries" % (out["retransmits"], out["rto_timeouts"])
    out["verdict"] = text
    return out


def _error_counters(report):
    """The step's error counters that moved, outside the markers (a host's drop, say): their names."""
    errors = ((report.get("counters") or {}).get("hosts") or {})
    return [k for h in errors.values() for k in (h.get("errors") or {}) if not k.startswith("ecn/")]
