# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The switch ports' congestion books of one variant of an experiment (docs/congestion.md): what each port's ECN
marker counted during it (the ``ecn_marker`` module's counters after, minus before: they count from the marker's
attachment on), the ports summed, and the variants side by side as text."""

from __future__ import annotations

__all__ = ["CongestionError", "port_deltas", "side_by_side"]

COUNTS = ("packets", "segs", "ect_segs", "marked_segs", "dropped_segs", "marked", "dropped", "early_dropped")


class CongestionError(ValueError):
    pass


def _by_device(results, what):
    out = {}
    for r in results or []:
        if not isinstance(r, dict) or "device" not in r:
            raise CongestionError("%s: %r is not an ecn_marker result (a dict with device and counters); give the "
                                  "registered loop's results" % (what, r))
        out[r["device"]] = r.get("counters") or {}
    return out


def port_deltas(before, after):
    """``{ports: {device: {count: n}}, total: {count: n}, marking_ratio, max_backlog_bytes}`` of one variant, from the
    ecn_marker loop's results before and after it (``register``'s ``results``). A port whose marker was attached
    anew in between (its counters went down) counts from zero."""
    start, end = _by_device(before, "before"), _by_device(after, "after")
    ports = {}
    for device in sorted(end):
        b, a = start.get(device) or {}, end[device]
        fresh = any((a.get(k) or 0) < (b.get(k) or 0) for k in COUNTS)
        ports[device] = {k: (a.get(k) or 0) - (0 if fresh else (b.get(k) or 0)) for k in COUNTS}
        ports[device]["max_backlog_bytes"] = a.get("max_backlog_bytes") or 0
    total = {k: sum(p[k] for p in ports.values()) for k in COUNTS}
    ect = total["ect_segs"]
    return {"ports": ports, "total": total,
            "marking_ratio": round(total["marked_segs"] / ect, 6) if ect else None,
            "max_backlog_bytes": max((p["max_backlog_bytes"] for p in ports.values()), default=0)}


def side_by_side(variants):
    """The variants' books as a table: ``variants`` is ``[{name, books}]`` (``books``: ``port_deltas``' result)."""
    rows = [("", "segments", "ECT", "marked", "dropped", "marking ratio", "peak queue")]
    for v in variants:
        t = v["books"]["total"]
        ratio = v["books"]["marking_ratio"]
        rows.append((v["name"], str(t["segs"]), str(t["ect_segs"]), str(t["marked_segs"]), str(t["dropped_segs"]),
                     "-" if ratio is None else "%.4f" % ratio, "%d B" % v["books"]["max_backlog_bytes"]))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
                     for r in rows)
