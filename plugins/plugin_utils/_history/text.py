# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The history as text for a terminal: the runs with their headline figures, and two runs compared; the comparison's
files."""

from __future__ import annotations

import json
import os

from ansible_collections.aifabric.lab.plugins.module_utils._atomic import write_text
from ansible_collections.aifabric.lab.plugins.plugin_utils._text import number_or_dash, share_or_dash

__all__ = ["COMPARE_DIR", "render_compare", "render_history", "compare_files", "write_compare"]


COMPARE_DIR = "compare"


# -- text ----------------------------------------------------------------------------------------------------------
def _change(num, share=False):
    if num["delta"] is None:
        return ""
    if share:
        return "%+.1f points" % (num["delta"] * 100)
    if num["change"] is None:
        return "%+.3f" % num["delta"]
    return "%+.3f (%+.1f%%)" % (num["delta"], num["change"] * 100)


def _who(straggler):
    return "-" if not straggler else "%s: %s" % (straggler["host"], straggler["cause"] or "no cause recorded")


def _either(label, pair, show):
    """A line for a value of A and B: once when they agree, else A's then B's under it."""
    a, b = show(pair["a"]), show(pair["b"])
    if a == b:
        return ["  %-22s %s (both)" % (label, a)]
    return ["  %-22s A %s" % (label, a), "  %-22s B %s" % ("", b)]


_FIGURE_LABELS = (  # (the step's key, its label, a share)
    ("step_s", "step time s", False), ("predicted_step_s", "predicted s", False),
    ("fair_step_s", "unthrottled fair s", False), ("mean_completion_s", "mean completion s", False),
    ("unthrottled_idle_share", "unthrottled idle", True), ("throttled_idle_share", "throttled idle", True),
    ("idle_worker_seconds", "idle worker-seconds", False), ("sum_of_flow_gbps", "sum of flow Gb/s", False),
    ("aggregate_gbps", "step goodput Gb/s", False))


def render_compare(diff):
    """``compare``'s result as text for a terminal."""
    a, b = diff["a"], diff["b"]
    out = ["compare A %s -> B %s" % (a["id"], b["id"])]
    for tag, run in (("A", a), ("B", b)):
        out.append("  %s  %-32s %s  %-7s %s" % (tag, run["id"], run["started"], run["status"], run["path"]))
    cfg = diff["config"]
    out += ["", "configuration: %d line%s differ%s, %d only in A, %d only in B, %d the same"
            % (len(cfg["changed"]), "" if len(cfg["changed"]) == 1 else "s", "s" if len(cfg["changed"]) == 1 else "",
               len(cfg["only_a"]), len(cfg["only_b"]), cfg["same"])]
    width = max([len(c["key"]) for c in cfg["changed"] + cfg["only_a"] + cfg["only_b"]] + [20])
    out += ["  %-*s  %s -> %s" % (width, c["key"], c["a"], c["b"]) for c in cfg["changed"]]
    out += ["  %-*s  %s -> (not in B)" % (width, c["key"], c["value"]) for c in cfg["only_a"]]
    out += ["  %-*s  (not in A) -> %s" % (width, c["key"], c["value"]) for c in cfg["only_b"]]
    for s in diff["steps"]:
        kind = s["kind"]["a"] if s["kind"]["a"] == s["kind"]["b"] else "%s -> %s" % (s["kind"]["a"], s["kind"]["b"])
        out += ["", "=== step '%s' (%s): %s -> %s" % (s["step"], kind, s["status"]["a"], s["status"]["b"]),
                "  %-22s %12s %12s  %s" % ("", "A", "B", "change")]
        for key, label, share in _FIGURE_LABELS:
            num = s[key]
            if num["a"] is None and num["b"] is None:
                continue
            show = (lambda v: share_or_dash(v, "%.1f%%")) if share else number_or_dash
            out.append("  %-22s %12s %12s  %s" % (label, show(num["a"]), show(num["b"]), _change(num, share)))
        out += _either("straggler", s["straggler"], _who)
        out += _either("counters", s["counters_verdict"], lambda v: v or "-")
        if s["workers"]:
            out.append("  %-14s %9s %9s %9s  %8s %8s %9s  %s" % ("worker", "compl. A", "B", "change", "Gb/s A", "B",
                                                                 "change", "throttle"))
            for w in s["workers"]:
                c, g = w["completion_s"], w["gbps"]
                throttle = (w["throttle"]["a"] or "-") if w["throttle"]["a"] == w["throttle"]["b"] else \
                    "%s -> %s" % (w["throttle"]["a"] or "-", w["throttle"]["b"] or "-")
                status = "" if w["status"]["a"] == w["status"]["b"] == "ok" else \
                    "  (%s -> %s)" % (w["status"]["a"] or "absent", w["status"]["b"] or "absent")
                out.append("  %-14s %9s %9s %9s  %8s %8s %9s  %s%s" % (
                    w["host"], number_or_dash(c["a"]), number_or_dash(c["b"]),
                    "" if c["change"] is None else "%+.1f%%" % (c["change"] * 100),
                    number_or_dash(g["a"]), number_or_dash(g["b"]),
                    "" if g["change"] is None else "%+.1f%%" % (g["change"] * 100), throttle, status))
    if diff["steps_only_a"]:
        out += ["", "steps only in A: %s" % ", ".join(diff["steps_only_a"])]
    if diff["steps_only_b"]:
        out += ["", "steps only in B: %s" % ", ".join(diff["steps_only_b"])]
    return "\n".join(out) + "\n"


def compare_files(diff):
    """The comparison's files, name -> text: ``<A>__<B>.txt`` and ``<A>__<B>.json``."""
    base = "%s__%s" % (diff["a"]["id"], diff["b"]["id"])
    return {base + ".txt": render_compare(diff), base + ".json": json.dumps(diff, indent=1, sort_keys=True)}


def write_compare(diff, runs_dir):
    """Write ``compare_files(diff)`` under ``<runs_dir>/compare/`` atomically; returns their paths."""
    out = []
    for name, text in compare_files(diff).items():
        out.append(write_text(os.path.join(str(runs_dir), COMPARE_DIR, name), text))
    return out


def render_history(rows):
    """``list_runs``' rows as a table: ref, id, date, label, status, steps completed, the barrier step time (the
    median over several), the straggler (and the steps it held), the mean unthrottled idle share."""
    table = [("ref", "run", "date", "label", "status", "steps ok", "barrier step s", "straggler", "idle")]
    for r in rows:
        n = r.get("barrier_steps") or 0
        step = number_or_dash(r.get("headline_step_s"))
        if n > 1 and r.get("headline_step_s") is not None:
            step = "p50 %s" % step
        straggler = r.get("headline_straggler") or "-"
        if r.get("headline_straggler") and n > 1:
            straggler = "%s %d/%d" % (straggler, r.get("headline_straggler_steps") or 0, n)
        table.append((r.get("ref") or "", r["id"], r.get("started") or "-", r.get("label") or "-",
                      r.get("status") or "-", "%d/%d" % (r.get("steps_ok") or 0, r.get("steps") or 0), step,
                      straggler, share_or_dash(r.get("headline_idle_share"))))
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    right = {5, 6, 8}  # the figures
    out = ["  ".join(cell.rjust(w) if i in right else cell.ljust(w) for i, (cell, w) in enumerate(zip(line, widths)))
           .rstrip() for line in table]
    if not rows:
        out.append("(no runs recorded)")
    return "\n".join(out) + "\n"
