# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The switch ports' congestion books of one variant of an experiment (docs/congestion.md): what each port's ECN
marker counted during it (the ``ecn_marker`` module's counters after, minus before: they count from the marker's
attachment on), the ports summed, and the variants side by side as text."""

from __future__ import annotations

from ansible_collections.aifabric.lab.plugins.module_utils._units import UnitError, format_size, parse_size

__all__ = ["CongestionError", "incast_cells", "port_deltas", "side_by_side"]

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


MODES = ("taildrop", "ecn")
K_SHARE = 0.3  # a buffer smaller than K / 0.3 gets K = 30% of it


def incast_cells(grid, threshold="60KB", workers=None):
    """The incast sweep's cells (playbooks/incast.yml's ``incast_grid``: ``{workers: [N...], buffers: [size...],
    modes: [taildrop, ecn]}``), each a variant of the playbook: ``{name, workers, ecn, marker, labels}``, N fastest
    then buffer, tail drop before marking. A marked cell's K is ``threshold``, or 30% of its buffer when that is
    smaller (K must sit below the buffer). ``workers``: how many the lab has (N may not exceed it)."""
    if not isinstance(grid, dict) or set(grid) - {"workers", "buffers", "modes"} or not grid.get("workers") \
            or not grid.get("buffers"):
        raise CongestionError("incast_grid: %r; give {workers: [2, 4, 8], buffers: [50KB, 200KB]} (modes: taildrop "
                              "and ecn unless given)" % (grid,))
    modes = grid.get("modes") or list(MODES)
    bad = [m for m in modes if m not in MODES]
    if bad or not isinstance(modes, list):
        raise CongestionError("incast_grid.modes: %r; use taildrop and/or ecn" % (modes,))
    ns = grid["workers"]
    if not isinstance(ns, list) or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in ns):
        raise CongestionError("incast_grid.workers: %r; give a list of sender counts, like [2, 4, 8]" % (ns,))
    if workers is not None and max(ns) > int(workers):
        raise CongestionError("incast_grid.workers: N=%d, but the lab has %d workers; use a larger lab (-i "
                              "inventories/netns32) or smaller N" % (max(ns), int(workers)))
    try:
        k = parse_size(threshold, "incast_threshold")
        buffers = [(b, parse_size(b, "incast_grid.buffers")) for b in grid["buffers"]]
    except UnitError as exc:
        raise CongestionError(str(exc)) from None
    cells = []
    for n in sorted(set(ns)):
        for text, size in sorted(buffers, key=lambda b: b[1]):
            for mode in MODES:
                if mode not in modes:
                    continue
                marker = {"mode": "taildrop" if mode == "taildrop" else "step", "buffer": text}
                if mode == "ecn":
                    cut = min(k, int(size * K_SHARE))
                    marker["threshold"] = format_size(cut) if parse_size(format_size(cut)) == cut else str(cut)
                cells.append({"name": "n%d-%s-%s" % (n, text, mode), "workers": n,
                              "ecn": "on" if mode == "ecn" else "off", "marker": marker,
                              "labels": {"n": n, "buffer": text, "mode": mode}})
    return cells
