# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The barrier report as one HTML page (``report.html``), a function of the report dict like the other formats.

The page stands alone: inline CSS, inline SVG pictures, no script, no font or file from anywhere else, so it opens
offline from the run directory or as an attachment. Per step: the verdict on top, a timeline (a bar per flow from the
common start instant to its completion, the worker's idle time hatched after it, the fair-share prediction as a tick,
the straggler in its own colour with its cause), the flows' interval throughput, the measurement beside the
prediction, the counters' books, the causes of a failed step. Per experiment of several steps: the step times'
distribution and who held the steps back; per collective: each repetition's rounds, time, algbw and busbw.

The geometry is computed here (plain numbers, as text); the template only lays it out, and every value it prints is
escaped (``autoescape``). The elements a test looks for carry stable attributes: ``rect.flow-bar`` (``data-host``,
``data-flow``, ``data-completion-s``), ``rect.idle`` (``data-idle-s``), ``.straggler``, ``line.predicted``,
``section.step`` and ``tr.step-row`` (``data-step``, ``data-detail``: ``full`` or ``brief``), ``circle.dist-point``,
``line.p50``/``line.p99``, ``rect.freq-bar``, ``rect.round``.
"""

from __future__ import annotations

import itertools
import math
import re

from jinja2 import Environment, StrictUndefined, Undefined
from markupsafe import Markup

__all__ = ["report_html", "FULL_STEPS"]

FULL_STEPS = 3  # an experiment's first steps drawn in full; after them only its slowest and its failed ones

_W = 960  # the pictures' width (SVG user units = CSS pixels at natural size)
_LEFT = 190  # room for the host names
_RIGHT = 30
_PLOT = _W - _LEFT - _RIGHT
_ROW = 24
_BAR = 14
_BLUE, _RED = "#4e79a7", "#d62728"
_PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7", "#17becf",
            "#bab0ac", "#8c564b", "#bcbd22")


def _f(value):
    """A coordinate as the SVG gets it."""
    return "%.3f" % value


def _num(value, fmt="%.3f"):
    return "-" if value is None or isinstance(value, Undefined) else fmt % value


def _pct(value, fmt="%.0f%%"):
    return "-" if value is None or isinstance(value, Undefined) else fmt % (value * 100)


def _ticks(top, count=6):
    """An axis end a little above ``top`` (5%, or the next tick when that is nearer) and its ticks, 1, 2, 2.5 or 5
    times a power of ten apart."""
    if not top or top <= 0:
        top = 1.0
    raw = top / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if raw <= m * mag * (1 + 1e-9))
    end = min(step * max(1, math.ceil(top / step - 1e-9)), top * 1.05)
    return end, [round(i * step, 12) for i in range(int(end / step + 1e-9) + 1)]


def _range_ticks(low, high, count=5):
    """An axis around ``low``..``high`` (not from zero: the spread is what matters) and its ticks."""
    span = high - low
    pad = max(span * 0.15, abs(high) * 0.002, 1e-6)
    low, high = max(0.0, low - pad), high + pad
    raw = (high - low) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if raw <= m * mag * (1 + 1e-9))
    start, end = math.floor(low / step + 1e-9) * step, math.ceil(high / step - 1e-9) * step
    return start, end, [round(start + i * step, 12) for i in range(int(round((end - start) / step)) + 1)]


def _tick_label(value):
    return "%g" % round(value, 6)


def _x_axis(xmax, ticks, top, bottom, left=_LEFT, width=_PLOT):
    return [{"x": _f(left + t / xmax * width), "top": _f(top), "bottom": _f(bottom), "label": _tick_label(t)}
            for t in ticks]


def _fit(label, room=27):
    """A name short enough for the room left of a picture (about 27 characters): its start and end around an
    ellipsis (the full name is in the element's tooltip and the tables)."""
    label = str(label)
    if len(label) <= room:
        return label
    keep = room - 1
    return label[:keep - keep // 2] + "\u2026" + label[len(label) - keep // 2:]


def _natural(name):
    """worker2 before worker10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(name))]


def _workers_in_order(step):
    return sorted(step.get("workers") or [], key=lambda w: _natural(w["host"]))


def _flows_of(worker):
    """A worker's flows as rows: its several flows, or the worker itself as its one flow."""
    return worker.get("flows") or [dict(worker, flow_id=worker["host"])]


def _step_xmax(step):
    """The time axis of a step's pictures: the step, every completion and prediction, every sample."""
    ends = [step.get("step_s") or 0.0, step.get("predicted_step_s") or 0.0]
    for w in step.get("workers") or []:
        for f in _flows_of(w):
            ends += [f.get("completion_s") or 0.0, f.get("predicted_s") or 0.0]
            samples = f.get("samples") or []
            if samples:
                ends.append((f.get("late_s") or 0.0) + (samples[-1].get("t") or 0.0))
    return _ticks(max(ends))


def _timeline(step, index):
    """A bar per flow from the common start instant (x = 0) to its completion; the worker's idle time (the step minus
    its completion) hatched after its last flow; the prediction as a tick; a failed worker as a row with its cause."""
    xmax, ticks = _step_xmax(step)
    scale = _PLOT / xmax
    straggler = step.get("straggler") or {}
    rows, top = [], 34
    for w in _workers_in_order(step):
        if w.get("status") != "ok" or w.get("completion_s") is None:
            rows.append({"failed": True, "host": w["host"], "label": _fit(w["host"]), "status": w.get("status"),
                         "cause": w.get("error") or "no result"})
            continue
        flows = _flows_of(w)
        last = max(range(len(flows)), key=lambda i: flows[i].get("completion_s") or 0.0)
        for i, f in enumerate(flows):
            completion = f.get("completion_s") or 0.0
            predicted = f.get("predicted_s")
            row = {"failed": False, "host": w["host"], "flow": f.get("flow_id") or w["host"],
                   "label": _fit(w["host"] if len(flows) == 1 else f.get("flow_id") if str(f.get("flow_id"))
                                 .startswith(w["host"]) else "%s / %s" % (w["host"], f.get("flow_id"))),
                   "completion_s": "%.6f" % completion, "width": _f(completion * scale),
                   "straggler": straggler.get("host") == w["host"] and i == last,
                   "predicted_s": None if predicted is None else "%.6f" % predicted,
                   "predicted_x": None if predicted is None else _f(_LEFT + predicted * scale),
                   "idle_s": None, "tip": "%s: completed at %.3f s%s, %s Gb/s" % (
                       w["host"] if len(flows) == 1 else "%s flow %s" % (w["host"], f.get("flow_id")), completion,
                       "" if predicted is None else ", predicted %.3f s (%+.1f%%)" % (
                           predicted, (completion / predicted - 1) * 100 if predicted else 0.0),
                       _num(f.get("gbps")))}
            if i == last and w.get("idle_s") is not None:
                row.update(idle_s="%.6f" % w["idle_s"], idle_x=_f(_LEFT + completion * scale),
                           idle_width=_f(w["idle_s"] * scale),
                           idle_tip="%s idle %.3f s (%.0f%% of the step), waiting for the slowest worker" % (
                               w["host"], w["idle_s"], (w.get("idle_share") or 0.0) * 100))
            rows.append(row)
    for k, row in enumerate(rows):
        y = top + k * _ROW
        row.update(y=_f(y + (_ROW - _BAR) / 2), text_y=_f(y + _ROW / 2 + 4), tick_top=_f(y + 1),
                   tick_bottom=_f(y + _ROW - 1))
    bottom = top + len(rows) * _ROW
    out = {"id": "timeline-%d" % index, "hatch": "hatch-%d" % index, "rows": rows, "top": _f(top - 4),
           "plot_bottom": _f(bottom), "axis": _x_axis(xmax, ticks, top - 4, bottom + 4),
           "axis_label_y": _f(bottom + 18), "title_y": _f(bottom + 38), "left": _LEFT, "right": _f(_LEFT + _PLOT),
           "label_x": _LEFT - 8, "step_x": None, "straggler_note": None}
    if step.get("step_s") is not None:
        out["step_x"] = _f(_LEFT + step["step_s"] * scale)
        out["step_label"] = "step %.3f s" % step["step_s"]
        out["step_label_anchor"] = "end" if step["step_s"] * scale > _PLOT * 0.5 else "start"
    y = bottom + 38
    if straggler:
        alone = len(step.get("workers") or []) < 2
        out["straggler_note"] = {"y": _f(y + 22), "cause_y": _f(y + 40), "host": straggler["host"], "x": 10,
                                 "text": "straggler %s%s, because:" % (straggler["host"], "" if alone else (
                                     ", %s s behind the next worker" % _num(straggler.get("behind_next_s")))),
                                 "cause": straggler.get("cause") or "-"}
        y += 40
    out["height"] = int(y + 12)
    return out


def _throughput(step, index):
    """Each flow's interval rate over time: its samples as steps (a sample's Gb/s holds over the interval it ends),
    on the step's time axis (a sample's t is from the flow's own first byte; its lateness puts it on the common
    axis)."""
    xmax, xticks = _step_xmax(step)
    straggler = (step.get("straggler") or {}).get("host")
    raw = []
    for w in _workers_in_order(step):
        flows = w.get("flows") or [w]
        for f in flows:
            samples = [x for x in f.get("samples") or [] if x.get("t") is not None and x.get("gbps") is not None]
            if samples:
                raw.append((w["host"], f.get("flow_id") or w["host"], f.get("late_s") or 0.0, samples,
                            w["host"] == straggler))
    if not raw:
        return None
    ymax, yticks = _ticks(max(x["gbps"] for entry in raw for x in entry[3]) or 1.0, 5)
    top, height = 14, 200
    bottom = top + height

    def px(t, g):
        return "%s,%s" % (_f(_LEFT + t / xmax * _PLOT), _f(bottom - g / ymax * height))

    series, colours = [], itertools.cycle(_PALETTE)
    for host, flow, late, samples, is_straggler in raw:
        points, prev = [], late
        for x in samples:
            t = late + x["t"]
            points += [px(prev, x["gbps"]), px(t, x["gbps"])]
            prev = t
        points.append(px(prev, 0.0))
        colour = _RED if is_straggler else next(colours)
        series.append({"host": host, "flow": flow, "label": host if host == flow else "%s / %s" % (host, flow),
                       "points": " ".join(points), "colour": colour, "straggler": is_straggler,
                       "mean": sum(x["gbps"] for x in samples) / len(samples)})
    return {"id": "throughput-%d" % index, "series": series, "left": _LEFT, "right": _f(_LEFT + _PLOT),
            "top": _f(top), "bottom": _f(bottom), "axis": _x_axis(xmax, xticks, top, bottom + 4),
            "yaxis": [{"y": _f(bottom - v / ymax * height), "label": _tick_label(v)} for v in yticks],
            "axis_label_y": _f(bottom + 18), "title_y": _f(bottom + 38), "ytitle_y": _f(top + height / 2),
            "height": int(bottom + 48)}


def _colours(hosts):
    return {h: _PALETTE[i % len(_PALETTE)] for i, h in enumerate(hosts)}


def _distribution(experiment, colours):
    """The step times of an experiment, a point per step in the order they ran (coloured by the step's straggler),
    its prediction as a tick, the p50 and p99 as lines; a failed or missing step as a cross on the axis. The time
    axis spans the steps' range, not from zero, so that their spread shows."""
    series = experiment.get("series") or []
    if not series:
        return None
    right = 110
    width = _W - _LEFT - right
    values = [v for x in series for v in (x.get("step_s"), x.get("predicted_step_s")) if v is not None]
    ymin, ymax, yticks = _range_ticks(min(values, default=0.0), max(values, default=1.0))
    top, height = 14, 200
    bottom = top + height

    def y_of(value):
        return bottom - (value - ymin) / (ymax - ymin) * height

    slot = width / len(series)
    points = []
    every = max(1, int(math.ceil(len(series) / 20.0)))
    for k, x in enumerate(series):
        cx = _LEFT + (k + 0.5) * slot
        label = k % every == 0 or (k == len(series) - 1 and k % every >= every / 2.0)
        point = {"step": x["step"], "status": x.get("status"), "cx": _f(cx), "r": _f(min(5.0, max(2.0, slot * 0.3))),
                 "label": (k + 1) if label else None, "label_y": _f(bottom + 16), "step_s": None,
                 "predicted_y": None, "straggler": x.get("straggler"),
                 "colour": colours.get(x.get("straggler"), _BLUE)}
        if x.get("step_s") is not None:
            point.update(step_s="%.6f" % x["step_s"], y=_f(y_of(x["step_s"])),
                         tip="step %s: %.3f s, straggler %s" % (x["step"], x["step_s"], x.get("straggler") or "-"))
        else:
            point.update(cross_y=_f(bottom - 6), tip="step %s: %s" % (x["step"], x.get("status")))
        if x.get("predicted_step_s"):
            half = min(slot * 0.45, 8.0)
            point.update(predicted_y=_f(y_of(x["predicted_step_s"])), px1=_f(cx - half), px2=_f(cx + half))
        points.append(point)
    lines = []
    p = experiment.get("step_s") or {}
    for name in ("p50", "p99"):
        if p.get(name) is not None:
            lines.append({"name": name, "value": "%.6f" % p[name], "y": _f(y_of(p[name])),
                          "label": "%s %.3f s" % (name, p[name])})
    if len(lines) == 2 and abs(float(lines[0]["y"]) - float(lines[1]["y"])) < 12:  # keep the two labels apart
        lines[1]["label_y"] = _f(float(lines[0]["y"]) - 12)
    for line in lines:
        line.setdefault("label_y", _f(float(line["y"]) + 4))
    return {"points": points, "lines": lines, "left": _LEFT, "right": _f(_LEFT + width), "top": _f(top),
            "bottom": _f(bottom), "label_x": _f(_LEFT + width + 6),
            "yaxis": [{"y": _f(y_of(v)), "label": _tick_label(v)} for v in yticks],
            "title_y": _f(bottom + 36), "ytitle_y": _f(top + height / 2), "height": int(bottom + 46)}


def _frequency(experiment, colours):
    """How many of the experiment's steps each host held back (a bar per host, of the steps that completed)."""
    freq = experiment.get("straggler_frequency") or {}
    total = experiment.get("steps_ok") or 0
    if not freq or not total:
        return None
    rows, plot = [], _PLOT - 170  # room for the count beside the longest bar
    for k, (host, n) in enumerate(freq.items()):
        y = 8 + k * _ROW
        rows.append({"host": host, "label": _fit(host), "count": n, "colour": colours.get(host, _BLUE),
                     "y": _f(y + (_ROW - _BAR) / 2),
                     "text_y": _f(y + _ROW / 2 + 4), "width": _f(n / total * plot),
                     "value_x": _f(_LEFT + n / total * plot + 6),
                     "text": "%d of %d steps (%.0f%%)" % (n, total, n / total * 100)})
    bottom = 8 + len(rows) * _ROW
    xticks = [0, 0.25, 0.5, 0.75, 1.0]
    return {"rows": rows, "left": _LEFT, "label_x": _LEFT - 8, "bottom": _f(bottom),
            "axis": [{"x": _f(_LEFT + t * plot), "top": "4", "bottom": _f(bottom + 4), "label": "%d%%" % (t * 100)}
                     for t in xticks], "middle": _f(_LEFT + plot / 2),
            "axis_label_y": _f(bottom + 18), "title_y": _f(bottom + 38), "height": int(bottom + 48)}


def _collective(experiment, by_name):
    """A collective's repetitions: one row each, its rounds (each a barrier step) laid end to end, each as long as
    its step time; with the repetition's time, algbw and busbw beside it."""
    c = experiment["collective"]
    reps = c.get("repetitions") or []
    totals = [sum((by_name.get(n) or {}).get("step_s") or 0.0 for n in r.get("rounds") or []) for r in reps]
    xmax, ticks = _ticks(max(totals + [r.get("predicted_s") or 0.0 for r in reps]) or 1.0)
    scale = _PLOT / xmax
    rows = []
    for k, r in enumerate(reps):
        y = 8 + k * _ROW
        at, segments = 0.0, []
        idle = r.get("idle_share_per_round") or []
        for j, name in enumerate(r.get("rounds") or []):
            s = by_name.get(name) or {}
            t = s.get("step_s")
            seg = {"step": name, "round": j + 1, "status": s.get("status") or "missing", "x": _f(_LEFT + at * scale),
                   "y": _f(y + (_ROW - _BAR) / 2), "step_s": None if t is None else "%.6f" % t,
                   "width": _f((t or 0.0) * scale), "colour": _PALETTE[j % 2 * 4],
                   "tip": "round %d (%s): %s" % (j + 1, name, "%.3f s, straggler %s" % (
                       t, (s.get("straggler") or {}).get("host")) if t is not None else s.get("status") or "missing")}
            seg.update(seconds=t, predicted=s.get("predicted_step_s"), straggler=(s.get("straggler") or {}).get("host"),
                       idle_share=idle[j] if j < len(idle) else None)
            at += t or 0.0
            segments.append(seg)
        bad = [g for g in segments if g["status"] != "ok"]
        row = {"repetition": r["repetition"], "status": r["status"], "segments": segments,
               "text_y": _f(y + _ROW / 2 + 4), "predicted_x": None, "failed_x": _f(_LEFT + at * scale + 6),
               "failed": "; ".join("round %d (%s) %s" % (g["round"], g["step"], g["status"]) for g in bad)}
        if r.get("predicted_s"):
            row.update(predicted_x=_f(_LEFT + r["predicted_s"] * scale), tick_top=_f(y + 1),
                       tick_bottom=_f(y + _ROW - 1))
        rows.append(row)
    bottom = 8 + len(rows) * _ROW
    return {"rows": rows, "label_x": _LEFT - 8, "left": _LEFT, "bottom": _f(bottom),
            "axis": _x_axis(xmax, ticks, 4, bottom + 4), "axis_label_y": _f(bottom + 18),
            "title_y": _f(bottom + 38), "height": int(bottom + 48)}


def _brief(report):
    """Steps shown as one line (in the steps' table) instead of in full: an experiment's repeated steps after its
    first ``FULL_STEPS``, except its slowest and its failed ones."""
    status = {s["step"]: s for s in report.get("steps") or []}
    brief = set()
    for e in report.get("experiments") or []:
        names = [x["step"] for x in e.get("series") or [] if x["step"] in status]
        if len(names) <= FULL_STEPS + 1:
            continue
        ok = [n for n in names if status[n]["status"] == "ok" and status[n].get("step_s") is not None]
        keep = set(names[:FULL_STEPS]) | {n for n in names if status[n]["status"] != "ok"}
        if ok:
            keep.add(max(ok, key=lambda n: status[n]["step_s"]))
        brief.update(n for n in names if n not in keep)
    return brief


def _lab(report):
    lab = report.get("lab") or {}
    if not lab:
        return None
    kernels = {}
    for host, facts in sorted((lab.get("hosts") or {}).items()):
        kernels.setdefault((facts or {}).get("kernel") or "unknown", []).append(host)
    return {"controller": lab.get("controller") or {}, "kernels": sorted(kernels.items())}


def _counters(step):
    c = step.get("counters")
    if not c:
        return None
    hosts = []
    for host, h in sorted((c.get("hosts") or {}).items()):
        hosts.append({"host": host, "seconds": h.get("seconds"),
                      "errors": ", ".join("%s %+d" % kv for kv in sorted((h.get("errors") or {}).items())) or "none",
                      "congestion": ", ".join("%s %+d" % kv for kv in sorted((h.get("congestion") or {}).items()))
                      or "none", "checks": h.get("checks") or []})
    return {"verdict": c.get("verdict"), "hosts": hosts, "disagreements": c.get("disagreements") or [],
            "checks": [dict(k, host=h["host"]) for h in hosts for k in h["checks"]]}


def _workers(step):
    """The prediction beside the measurement, a row per worker (and per flow of a worker that sent several)."""
    rows = []
    for w in _workers_in_order(step):
        rows.append(dict(w, sub=False, name=w["host"]))
        for f in w.get("flows") or []:
            err = f["completion_s"] / f["predicted_s"] - 1 if f.get("completion_s") and f.get("predicted_s") \
                else None
            rows.append(dict(f, sub=True, name="flow %s" % f.get("flow_id"), prediction_error=err, idle_s=None,
                             idle_share=None, throttle=None))
    return rows


def _view(report):
    steps = report.get("steps") or []
    by_name = {s["step"]: s for s in steps}
    brief = _brief(report)
    failed = [s for s in steps if s["status"] != "ok"]
    out = {"ok": report.get("status") == "ok", "run_dir": report.get("run_dir"), "lab": _lab(report),
           "gates": report.get("gates")}
    out["headline"] = "all %d steps ok" % len(steps) if not failed else "FAILED: %d of %d steps failed" % (
        len(failed), len(steps))
    views = []
    for k, s in enumerate(steps):
        v = {"s": s, "index": k + 1, "anchor": "step-%d" % (k + 1), "full": s["step"] not in brief,
             "straggler": s.get("straggler") or {}}
        if v["full"]:
            v.update(timeline=_timeline(s, k + 1), throughput=_throughput(s, k + 1), counters=_counters(s),
                     workers=_workers(s))
        views.append(v)
    out["steps"] = views
    out["brief_count"] = len(brief)
    anchors = {v["s"]["step"]: v["anchor"] for v in views if v["full"]}
    experiments = []
    for e in report.get("experiments") or []:
        if (e.get("steps") or 0) < 2 and not e.get("collective"):
            continue
        colours = _colours(list((e.get("straggler_frequency") or {}).keys()))
        experiments.append({"e": e, "distribution": _distribution(e, colours), "frequency": _frequency(e, colours),
                            "collective": _collective(e, by_name) if e.get("collective") else None,
                            "anchors": anchors})
    out["experiments"] = experiments
    return out


_CSS = """
body { margin: 0; background: #fafafa; color: #1b1b1b; font: 15px/1.45 system-ui, -apple-system, "Segoe UI",
  Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1100px; margin: 0 auto; padding: 16px 24px 40px; background: #fff; }
h1 { font-size: 26px; margin: 8px 0 4px; }
h2 { font-size: 21px; margin: 28px 0 6px; padding-top: 10px; border-top: 2px solid #ddd; }
h3 { font-size: 16px; margin: 18px 0 6px; }
code { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 13px; }
.badge { display: inline-block; padding: 2px 10px; border-radius: 12px; font-size: 15px; vertical-align: middle;
  color: #fff; }
.badge.ok, .status-ok { background: #2e7d32; }
.badge.failed, .status-failed, .status-missing { background: #c62828; }
.pill { display: inline-block; padding: 0 8px; border-radius: 9px; color: #fff; font-size: 13px; }
.verdict { font-size: 16px; padding: 8px 12px; border-left: 5px solid #2e7d32; background: #f1f8f1; }
.verdict.failed { border-left-color: #c62828; background: #fdf0f0; }
.howto { color: #444; background: #f6f6f6; padding: 8px 12px; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; margin: 8px 0; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; }
table { border-collapse: collapse; margin: 6px 0 10px; font-size: 13.5px; }
th, td { border-bottom: 1px solid #e3e3e3; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; white-space: nowrap; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.sub td { color: #555; font-size: 12.5px; }
tr.bad td, li.bad, .bad { color: #b71c1c; }
figure { margin: 10px 0 14px; }
figcaption { font-size: 13px; color: #444; margin-bottom: 4px; }
svg { max-width: 100%; height: auto; display: block; font-family: system-ui, -apple-system, "Segoe UI", Roboto,
  Arial, sans-serif; }
.legend { font-size: 13px; color: #333; margin: 2px 0 4px; }
.legend span.sw { display: inline-block; width: 22px; height: 11px; vertical-align: middle; margin: 0 4px 0 12px;
  border: 1px solid #888; }
.sw-bar { background: #4e79a7; }
.sw-straggler { background: #d62728; }
.sw-idle { background: repeating-linear-gradient(45deg, #999 0 2px, #f4f4f4 2px 6px); }
.sw-pred { width: 3px !important; background: #111; border: none !important; }
.sw-step { width: 0 !important; border: 1px dashed #555 !important; }
.failed-causes { background: #fdf0f0; padding: 6px 12px; border-left: 5px solid #c62828; }
footer { margin-top: 30px; color: #666; font-size: 12.5px; }
"""

_PAGE = """\
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<link rel="icon" href="data:,"/>
<title>Barrier report: {{ v.headline }}</title>
<style>{{ css }}</style>
</head>
<body>
<main>
<header>
<h1>Barrier report <span class="badge {{ 'ok' if v.ok else 'failed' }}" id="run-status">{{ v.headline }}</span></h1>
<dl class="facts">
{% if v.run_dir %}
<dt>Run directory</dt><dd><code>{{ v.run_dir }}</code></dd>
{% endif %}
{% if v.lab %}
<dt>Controller</dt><dd>kernel <code>{{ v.lab.controller.kernel | default('-') }}</code>, Python \
{{ v.lab.controller.python | default('-') }}, ansible-core {{ v.lab.controller.ansible_core | default('-') }}, \
aifabric.lab {{ v.lab.controller.collection | default('-') }}</dd>
<dt>Hosts</dt><dd>{% for kernel, hosts in v.lab.kernels %}kernel <code>{{ kernel }}</code>: {{ hosts | join(', ') }}\
{{ '' if loop.last else '; ' }}{% endfor %}</dd>
{% endif %}
{% if report.baseline_gbps %}
<dt>Single-flow baseline</dt><dd>{{ '%.3f' % report.baseline_gbps }} Gb/s</dd>
{% endif %}
{% if v.gates %}
<dt>Gates</dt><dd class="{{ '' if v.gates.status == 'ok' else 'bad' }}">{{ 'all held' if v.gates.status == 'ok' \
else '%d broken' % (v.gates.broken | length) }}{% for m in v.gates.broken %}; {{ m }}{% endfor %}</dd>
{% endif %}
</dl>
<p class="howto">How to read this: a collective step ends when its slowest worker ends. Each step below starts with \
one sentence (its verdict), then a timeline: a bar per flow from the common start instant to the moment its last byte \
was confirmed, the time the worker then sat idle hatched after it, the fair-share prediction as a black tick, and the \
straggler (the worker the others waited for) in red with its cause. The tables give the numbers behind the pictures; \
report.json holds them all.</p>
</header>

<section class="overview">
<h2>Steps</h2>
<table>
<tr><th>step</th><th>kind</th><th>status</th><th class="n">step s</th><th class="n">predicted s</th>\
<th>straggler</th><th>verdict</th></tr>
{% for x in v.steps %}
{% set s = x.s %}
<tr class="step-row" data-step="{{ s.step }}" data-detail="{{ 'full' if x.full else 'brief' }}" \
data-status="{{ s.status }}">\
<td>{% if x.full %}<a href="#{{ x.anchor }}">{{ s.step }}</a>{% else %}{{ s.step }}{% endif %}</td>\
<td>{{ s.kind | default('barrier') }}</td>\
<td><span class="pill status-{{ 'ok' if s.status == 'ok' else 'failed' }}">{{ s.status }}</span></td>\
<td class="n">{{ num(s.step_s | default(none)) }}</td><td class="n">{{ num(s.predicted_step_s | default(none)) }}</td>\
<td>{{ x.straggler.host | default('-') }}</td><td>{{ s.verdict | default('-') }}</td></tr>
{% endfor %}
</table>
{% if v.brief_count %}
<p>{{ v.brief_count }} repeated steps are shown on their line above only; their experiment's summary below draws \
them all. The first {{ full_steps }} steps of each experiment, its slowest and every failed one are drawn in full.</p>
{% endif %}
</section>

{% for x in v.experiments %}
{% set e = x.e %}
<section class="experiment" data-experiment="{{ e.name }}">
<h2>{{ 'Collective' if e.collective is defined else 'Experiment' }} '{{ e.name }}' ({{ e.pattern }}): \
{{ e.steps_ok }} of {{ e.steps }} steps ok</h2>
{% if e.step_s %}
<p class="verdict {{ '' if e.steps_ok == e.steps else 'failed' }}">Step time p50 {{ '%.3f' % e.step_s.p50 }} s, \
p90 {{ '%.3f' % e.step_s.p90 }} s, p99 {{ '%.3f' % e.step_s.p99 }} s, max {{ '%.3f' % e.step_s.max }} s over \
{{ e.steps_ok }} steps; {% for host, n in e.straggler_frequency.items() %}{{ host }} held {{ n }}\
{{ '' if loop.last else ', ' }}{% endfor %} of them back.</p>
{% endif %}
{% if e.failed_steps %}
<div class="failed-causes"><h3>Failed steps (counted, not in the figures)</h3><ul>
{% for f in e.failed_steps %}
<li class="bad">step <b>{% if f.step in x.anchors %}<a href="#{{ x.anchors[f.step] }}">{{ f.step }}</a>\
{% else %}{{ f.step }}{% endif %}</b>: {{ f.cause }}</li>
{% endfor %}
</ul></div>
{% endif %}
{% set d = x.distribution %}
{% if d and e.steps > 1 %}
<figure class="distribution">
<figcaption>Step times in the order the steps ran: a point per step, coloured by the step's straggler (the colours \
of the chart below); the black tick is the fair-share prediction, the dashed lines the p50 and p99; a red cross is a \
step that failed. The time axis spans the steps' range, not from zero.</figcaption>
<svg class="distribution" viewBox="0 0 {{ W }} {{ d.height }}" width="{{ W }}" height="{{ d.height }}" role="img" \
aria-label="step times of {{ e.name }}">
<title>Step times of {{ e.name }}</title>
{% for t in d.yaxis %}
<line x1="{{ d.left }}" x2="{{ d.right }}" y1="{{ t.y }}" y2="{{ t.y }}" stroke="#e6e6e6"/>
<text x="{{ d.left - 6 }}" y="{{ t.y }}" dy="4" text-anchor="end" font-size="11">{{ t.label }}</text>
{% endfor %}
{% for b in d.points %}
{% if b.step_s is not none %}
<circle class="dist-point" data-step="{{ b.step }}" data-step-s="{{ b.step_s }}" \
data-straggler="{{ b.straggler or '' }}" cx="{{ b.cx }}" cy="{{ b.y }}" r="{{ b.r }}" fill="{{ b.colour }}">\
<title>{{ b.tip }}</title></circle>
{% else %}
<text class="dist-failed" data-step="{{ b.step }}" x="{{ b.cx }}" y="{{ b.cross_y }}" text-anchor="middle" \
font-size="14" font-weight="bold" fill="#d62728">&#215;<title>{{ b.tip }}</title></text>
{% endif %}
{% if b.predicted_y is not none %}
<line class="dist-predicted" x1="{{ b.px1 }}" x2="{{ b.px2 }}" y1="{{ b.predicted_y }}" y2="{{ b.predicted_y }}" \
stroke="#111" stroke-width="1.5"/>
{% endif %}
{% if b.label is not none %}
<text x="{{ b.cx }}" y="{{ b.label_y }}" text-anchor="middle" font-size="11">{{ b.label }}</text>
{% endif %}
{% endfor %}
{% for l in d.lines %}
<line class="{{ l.name }}" data-value="{{ l.value }}" x1="{{ d.left }}" x2="{{ d.right }}" y1="{{ l.y }}" \
y2="{{ l.y }}" stroke="{{ '#333' if l.name == 'p50' else '#d62728' }}" stroke-dasharray="6 4" stroke-width="1.5"/>
<text x="{{ d.label_x }}" y="{{ l.label_y }}" font-size="12">{{ l.label }}</text>
{% endfor %}
<line x1="{{ d.left }}" x2="{{ d.right }}" y1="{{ d.bottom }}" y2="{{ d.bottom }}" stroke="#333"/>
<line x1="{{ d.left }}" x2="{{ d.left }}" y1="{{ d.top }}" y2="{{ d.bottom }}" stroke="#333"/>
<text x="{{ d.left - 62 }}" y="{{ d.ytitle_y }}" text-anchor="middle" font-size="12" \
transform="rotate(-90 {{ d.left - 62 }} {{ d.ytitle_y }})">step time (s)</text>
<text x="{{ (d.left + d.right | float) / 2 }}" y="{{ d.title_y }}" text-anchor="middle" font-size="12">step, in the \
order they ran</text>
</svg>
</figure>
{% endif %}
{% set q = x.frequency %}
{% if q %}
<figure class="frequency">
<figcaption>Who held the steps back: for each host, how many of the completed steps it was the straggler of.\
</figcaption>
<svg class="frequency" viewBox="0 0 {{ W }} {{ q.height }}" width="{{ W }}" height="{{ q.height }}" role="img" \
aria-label="straggler frequency of {{ e.name }}">
<title>Straggler frequency of {{ e.name }}</title>
{% for t in q.axis %}
<line x1="{{ t.x }}" x2="{{ t.x }}" y1="{{ t.top }}" y2="{{ t.bottom }}" stroke="#e6e6e6"/>
<text x="{{ t.x }}" y="{{ q.axis_label_y }}" text-anchor="middle" font-size="11">{{ t.label }}</text>
{% endfor %}
{% for r in q.rows %}
<text x="{{ q.label_x }}" y="{{ r.text_y }}" text-anchor="end" font-size="12">{{ r.label }}</text>
<rect class="freq-bar" data-host="{{ r.host }}" data-count="{{ r.count }}" x="{{ q.left }}" y="{{ r.y }}" \
width="{{ r.width }}" height="{{ bar }}" fill="{{ r.colour }}"><title>{{ r.host }}: {{ r.text }}</title></rect>
<text x="{{ r.value_x }}" y="{{ r.text_y }}" font-size="12">{{ r.text }}</text>
{% endfor %}
<text x="{{ q.middle }}" y="{{ q.title_y }}" text-anchor="middle" font-size="12">share of the completed \
steps this host was the straggler of</text>
</svg>
</figure>
{% endif %}
{% set c = x.collective %}
{% if c and e.collective.repetitions %}
{% set col = e.collective %}
{% set n = col.repetitions[0].rounds | length %}
<h3>{{ col.name }}: {{ col.ranks }} ranks, {{ '%.3f' % (col.size / 1e9) }} GB, each repetition {{ n }} \
round{{ '' if n == 1 else 's' }} (each round a barrier step)</h3>
<p>busbw = algbw &#215; {{ '%.3f' % col.bus_factor }}, as nccl-tests; algbw = size / time, the time being the \
rounds' step times added.</p>
<table>
<tr><th>repetition</th><th>status</th><th class="n">time s</th><th class="n">predicted s</th><th class="n">algbw GB/s\
</th><th class="n">busbw GB/s</th><th class="n">without the throttle s</th><th class="n">straggler cost</th></tr>
{% for r in col.repetitions %}
<tr class="{{ '' if r.status == 'ok' else 'bad' }}" data-repetition="{{ r.repetition }}"><td>{{ r.repetition }}</td>\
<td>{{ r.status }}</td><td class="n">{{ num(r.time_s) }}</td><td class="n">{{ num(r.predicted_s) }}</td>\
<td class="n">{{ num(r.algbw_GBps, '%.4f') }}</td><td class="n">{{ num(r.busbw_GBps, '%.4f') }}</td>\
<td class="n">{{ num(r.predicted_unthrottled_s) }}</td><td class="n">\
{{ ('%.3f s (%.0f%%)' % (r.straggler_cost_s, r.straggler_cost_share * 100)) if r.straggler_cost_s is defined \
else '-' }}</td></tr>
{% endfor %}
</table>
<figure class="rounds">
<figcaption>Each repetition's rounds end to end, each as long as its step time (alternating colours; hover for the \
round's straggler); the black tick is the predicted time.</figcaption>
<svg class="rounds" viewBox="0 0 {{ W }} {{ c.height }}" width="{{ W }}" height="{{ c.height }}" role="img" \
aria-label="rounds of {{ e.name }}">
<title>Rounds of {{ e.name }}</title>
{% for t in c.axis %}
<line x1="{{ t.x }}" x2="{{ t.x }}" y1="{{ t.top }}" y2="{{ t.bottom }}" stroke="#e6e6e6"/>
<text x="{{ t.x }}" y="{{ c.axis_label_y }}" text-anchor="middle" font-size="11">{{ t.label }}</text>
{% endfor %}
{% for r in c.rows %}
<text x="{{ c.label_x }}" y="{{ r.text_y }}" text-anchor="end" font-size="12">repetition {{ r.repetition }}\
{{ '' if r.status == 'ok' else ' (FAILED)' }}</text>
{% for g in r.segments %}
<rect class="round" data-step="{{ g.step }}" data-round="{{ g.round }}" data-step-s="{{ g.step_s or '' }}" \
x="{{ g.x }}" y="{{ g.y }}" width="{{ g.width }}" height="{{ bar }}" fill="{{ g.colour if g.status == 'ok' \
else '#d62728' }}" stroke="#fff" stroke-width="0.5"><title>{{ g.tip }}</title></rect>
{% endfor %}
{% if r.failed %}
<text class="round-failed" x="{{ r.failed_x }}" y="{{ r.text_y }}" font-size="12" fill="#b71c1c">\
{{ r.failed | truncate(110) }}</text>
{% endif %}
{% if r.predicted_x is not none %}
<line class="predicted" x1="{{ r.predicted_x }}" x2="{{ r.predicted_x }}" y1="{{ r.tick_top }}" \
y2="{{ r.tick_bottom }}" stroke="#111" stroke-width="2"/>
{% endif %}
{% endfor %}
<text x="{{ c.left + plot / 2 }}" y="{{ c.title_y }}" text-anchor="middle" font-size="12">seconds (the rounds' \
step times added)</text>
</svg>
</figure>
<details class="rounds"><summary>Every round's step time</summary>
<table>
<tr><th>repetition</th><th>round</th><th>step</th><th>status</th><th class="n">step s</th><th class="n">predicted s\
</th><th>straggler</th><th class="n">mean idle share</th></tr>
{% for r in c.rows %}
{% for g in r.segments %}
<tr class="{{ '' if g.status == 'ok' else 'bad' }}"><td>{{ r.repetition }}</td><td>{{ g.round }}</td>\
<td>{% if g.step in x.anchors %}<a href="#{{ x.anchors[g.step] }}">{{ g.step }}</a>{% else %}{{ g.step }}{% endif %}\
</td><td>{{ g.status }}</td><td class="n">{{ num(g.seconds) }}</td><td class="n">{{ num(g.predicted) }}</td>\
<td>{{ g.straggler or '-' }}</td><td class="n">{{ pct(g.idle_share) }}</td></tr>
{% endfor %}
{% endfor %}
</table>
</details>
{% endif %}
</section>
{% endfor %}

{% for x in v.steps if x.full %}
{% set s = x.s %}
<section class="step" id="{{ x.anchor }}" data-step="{{ s.step }}" data-status="{{ s.status }}" data-detail="full">
<h2>Step '{{ s.step }}' ({{ s.kind | default('barrier') }}): \
{% if s.status == 'ok' %}{{ '%.3f' % s.step_s }} s{{ (', predicted %.3f s' % s.predicted_step_s) \
if s.predicted_step_s is defined else '' }}{% else %}FAILED{% endif %}</h2>
<p class="verdict step-verdict {{ '' if s.status == 'ok' else 'failed' }}">{{ s.verdict | default('-') }}</p>
{% if s.status != 'ok' %}
<div class="failed-causes"><h3>Why the step failed</h3>
<p>No step time is computed over the survivors: a maximum over the workers that finished would report a fast step \
that never happened. The workers that finished are kept below.</p>
<ul>
{% for f in s.failed %}
<li class="bad failed-cause" data-host="{{ f.host }}"><b>{{ f.host }}</b> ({{ f.status }}): {{ f.cause }}</li>
{% endfor %}
</ul></div>
{% endif %}
<dl class="facts">
<dt>Workers</dt><dd>{{ s.workers_completed }} of {{ s.workers_expected }} completed\
{{ (', bottleneck %s' % s.bottleneck) if s.bottleneck else '' }}</dd>
{% if s.status == 'ok' %}
<dt>Mean completion</dt><dd>{{ '%.3f' % s.mean_completion_s }} s: understates the step by \
{{ '%.3f' % s.mean_understates_s }} s ({{ '%.0f' % (s.mean_understates_share * 100) }}%)</dd>
{% if s.fair_step_s is defined %}
<dt>Fair step</dt><dd>{{ '%.3f' % s.fair_step_s }} s with nobody throttled</dd>
{% endif %}
<dt>Rates</dt><dd>sum of the flows' rates {{ '%.3f' % s.sum_of_flow_gbps }} Gb/s\
{{ (' = %.1f%% of the bottleneck' % (s.sum_of_flow_share_of_bottleneck * 100)) \
if s.sum_of_flow_share_of_bottleneck is defined else '' }}; step goodput {{ num(s.aggregate_gbps) }} Gb/s (all bytes \
over the step time)</dd>
<dt>Idle</dt><dd>{{ '%.3f' % s.idle_worker_seconds }} worker-seconds{{ ('; unthrottled workers %.0f%% of the step' \
% (s.unthrottled_idle_share * 100)) if s.unthrottled_idle_share is not none else '' }}\
{{ ('; other throttled workers %.0f%%' % (s.throttled_idle_share * 100)) if s.throttled_idle_share is not none \
else '' }}</dd>
{% endif %}
{% if s.start_skew_s is defined %}
<dt>Start</dt><dd>skew {{ '%.3f' % (s.start_skew_s * 1000) }} ms (first bytes, max - min)\
{{ ('; late max %.3f ms, bound %.1f ms (%s)' % (s.late_max_s * 1000, s.late_bound_s * 1000, s.late_bound_basis)) \
if s.late_max_s is not none and s.late_bound_s is not none else '' }}</dd>
{% endif %}
{% if s.prediction_unavailable is defined %}
<dt>Prediction</dt><dd>unavailable: {{ s.prediction_unavailable }}</dd>
{% endif %}
</dl>
{% set t = x.timeline %}
<figure class="timeline">
<figcaption>Timeline of step '{{ s.step }}': one bar per flow, from the common start instant to its completion.\
</figcaption>
<div class="legend"><span class="sw sw-bar"></span>measured completion<span class="sw sw-straggler"></span>\
the straggler<span class="sw sw-idle"></span>idle, waiting for the slowest worker<span class="sw sw-pred"></span>\
fair-share prediction<span class="sw sw-step"></span>step end</div>
<svg class="timeline" id="{{ t.id }}" viewBox="0 0 {{ W }} {{ t.height }}" width="{{ W }}" height="{{ t.height }}" \
role="img" aria-label="timeline of step {{ s.step }}">
<title>Timeline of step {{ s.step }}</title>
<defs><pattern id="{{ t.hatch }}" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">\
<rect width="6" height="6" fill="#f4f4f4"/><line x1="0" y1="0" x2="0" y2="6" stroke="#999" stroke-width="2"/>\
</pattern></defs>
{% for a in t.axis %}
<line x1="{{ a.x }}" x2="{{ a.x }}" y1="{{ a.top }}" y2="{{ a.bottom }}" stroke="#e6e6e6"/>
<text x="{{ a.x }}" y="{{ t.axis_label_y }}" text-anchor="middle" font-size="11">{{ a.label }}</text>
{% endfor %}
{% for r in t.rows %}
{% if r.failed %}
<text class="flow-failed" data-host="{{ r.host }}" x="{{ t.label_x }}" y="{{ r.text_y }}" text-anchor="end" \
font-size="12" fill="#b71c1c">{{ r.label }}</text>
<text x="{{ t.left + 6 }}" y="{{ r.text_y }}" font-size="12" fill="#b71c1c">{{ r.status | upper }}: \
{{ r.cause | truncate(110) }}<title>{{ r.cause }}</title></text>
{% else %}
<text class="{{ 'flow-label straggler' if r.straggler else 'flow-label' }}" data-host="{{ r.host }}" \
x="{{ t.label_x }}" y="{{ r.text_y }}" text-anchor="end" font-size="12"\
{{ ' font-weight="bold" fill="#d62728"' | safe if r.straggler else '' }}>{{ r.label }}\
<title>{{ r.host if r.host == r.flow else r.host ~ ' / ' ~ r.flow }}</title></text>
<rect class="{{ 'flow-bar straggler' if r.straggler else 'flow-bar' }}" data-host="{{ r.host }}" \
data-flow="{{ r.flow }}" data-completion-s="{{ r.completion_s }}" x="{{ t.left }}" y="{{ r.y }}" \
width="{{ r.width }}" height="{{ bar }}" fill="{{ red if r.straggler else blue }}"><title>{{ r.tip }}</title></rect>
{% if r.idle_s is not none %}
<rect class="idle" data-host="{{ r.host }}" data-idle-s="{{ r.idle_s }}" x="{{ r.idle_x }}" y="{{ r.y }}" \
width="{{ r.idle_width }}" height="{{ bar }}" fill="url(#{{ t.hatch }})" stroke="#bbb" stroke-width="0.5">\
<title>{{ r.idle_tip }}</title></rect>
{% endif %}
{% if r.predicted_x is not none %}
<line class="predicted" data-host="{{ r.host }}" data-flow="{{ r.flow }}" data-predicted-s="{{ r.predicted_s }}" \
x1="{{ r.predicted_x }}" x2="{{ r.predicted_x }}" y1="{{ r.tick_top }}" y2="{{ r.tick_bottom }}" stroke="#111" \
stroke-width="2"><title>predicted {{ r.predicted_s }} s</title></line>
{% endif %}
{% endif %}
{% endfor %}
{% if t.step_x is not none %}
<line class="step-end" x1="{{ t.step_x }}" x2="{{ t.step_x }}" y1="{{ t.top }}" y2="{{ t.plot_bottom }}" \
stroke="#555" stroke-dasharray="4 3"/>
<text x="{{ t.step_x }}" y="{{ t.top }}" dy="-4" text-anchor="{{ t.step_label_anchor }}" font-size="12">\
{{ t.step_label }}</text>
{% endif %}
<line x1="{{ t.left }}" x2="{{ t.left }}" y1="{{ t.top }}" y2="{{ t.plot_bottom }}" stroke="#333"/>
<text x="{{ t.left + plot / 2 }}" y="{{ t.title_y }}" text-anchor="middle" font-size="12">seconds since the common \
start instant</text>
{% if t.straggler_note %}
<text class="straggler straggler-note" data-host="{{ t.straggler_note.host }}" x="{{ t.straggler_note.x }}" \
y="{{ t.straggler_note.y }}" font-size="13" font-weight="bold" fill="#d62728">{{ t.straggler_note.text }}</text>
<text class="straggler straggler-cause" data-host="{{ t.straggler_note.host }}" x="{{ t.straggler_note.x + 16 }}" \
y="{{ t.straggler_note.cause_y }}" font-size="13" fill="#d62728">{{ t.straggler_note.cause | truncate(135) }}\
<title>{{ t.straggler_note.cause }}</title></text>
{% endif %}
</svg>
</figure>
{% set p = x.throughput %}
{% if p %}
<figure class="throughput">
<figcaption>Each flow's throughput over the step, from its samples (one a second; each holds over the interval it \
ends).</figcaption>
<div class="legend">{% for l in p.series %}<span class="sw" style="background: {{ l.colour }}"></span>{{ l.label }}\
{{ ' (straggler)' if l.straggler else '' }}{% endfor %}</div>
<svg class="throughput" id="{{ p.id }}" viewBox="0 0 {{ W }} {{ p.height }}" width="{{ W }}" height="{{ p.height }}" \
role="img" aria-label="throughput of step {{ s.step }}">
<title>Throughput of the flows of step {{ s.step }}</title>
{% for a in p.yaxis %}
<line x1="{{ p.left }}" x2="{{ p.right }}" y1="{{ a.y }}" y2="{{ a.y }}" stroke="#e6e6e6"/>
<text x="{{ p.left - 6 }}" y="{{ a.y }}" dy="4" text-anchor="end" font-size="11">{{ a.label }}</text>
{% endfor %}
{% for a in p.axis %}
<line x1="{{ a.x }}" x2="{{ a.x }}" y1="{{ p.bottom }}" y2="{{ a.bottom }}" stroke="#333"/>
<text x="{{ a.x }}" y="{{ p.axis_label_y }}" text-anchor="middle" font-size="11">{{ a.label }}</text>
{% endfor %}
{% for l in p.series %}
<polyline class="{{ 'series straggler' if l.straggler else 'series' }}" data-host="{{ l.host }}" \
data-flow="{{ l.flow }}" points="{{ l.points }}" fill="none" stroke="{{ l.colour }}" \
stroke-width="{{ '2.5' if l.straggler else '1.8' }}"><title>{{ l.label }}: {{ '%.3f' % l.mean }} Gb/s on average \
over its samples</title></polyline>
{% endfor %}
<line x1="{{ p.left }}" x2="{{ p.right }}" y1="{{ p.bottom }}" y2="{{ p.bottom }}" stroke="#333"/>
<line x1="{{ p.left }}" x2="{{ p.left }}" y1="{{ p.top }}" y2="{{ p.bottom }}" stroke="#333"/>
<text x="{{ p.left - 44 }}" y="{{ p.ytitle_y }}" text-anchor="middle" font-size="12" \
transform="rotate(-90 {{ p.left - 44 }} {{ p.ytitle_y }})">Gb/s</text>
<text x="{{ p.left + plot / 2 }}" y="{{ p.title_y }}" text-anchor="middle" font-size="12">seconds since the common \
start instant</text>
</svg>
</figure>
{% else %}
<p class="note">No interval samples for this step's flows (their engine took none).</p>
{% endif %}
<h3>Measured beside predicted</h3>
<table class="workers">
<tr><th>host</th><th>status</th><th class="n">bytes</th><th class="n">completion s</th><th class="n">predicted s</th>\
<th class="n">error</th><th class="n">Gb/s</th><th class="n">idle s</th><th class="n">idle share</th>\
<th class="n">late ms</th><th>throttle</th></tr>
{% for w in x.workers %}
<tr class="{{ 'sub' if w.sub else '' }}{{ ' bad' if w.status != 'ok' else '' }}" data-host="{{ w.name }}">\
<td>{{ w.name }}{{ ' (straggler)' if not w.sub and w.name == x.straggler.host | default(none) else '' }}</td>\
<td>{{ w.status }}</td><td class="n">{{ w.bytes if w.bytes is not none else '-' }}</td>\
<td class="n">{{ num(w.completion_s) }}</td><td class="n">{{ num(w.predicted_s) }}</td>\
<td class="n">{{ pct(w.prediction_error | default(none), '%+.1f%%') }}</td><td class="n">{{ num(w.gbps) }}</td>\
<td class="n">{{ num(w.idle_s | default(none)) }}</td><td class="n">{{ pct(w.idle_share | default(none)) }}</td>\
<td class="n">{{ num(w.late_s * 1000 if w.late_s is not none else none) }}</td><td>{{ w.throttle or '-' }}</td></tr>
{% endfor %}
</table>
<p class="note">error: measured over predicted minus one (+0.4% is 0.4% slower than the fair share predicts); idle: \
the step minus the worker's own completion.</p>
{% set c = x.counters %}
{% if c %}
<h3>The wire's books</h3>
<p class="verdict counters {{ 'failed' if c.disagreements else '' }}">{{ c.verdict }}</p>
{% if c.disagreements %}
<ul>{% for d in c.disagreements %}<li class="bad">{{ d }}</li>{% endfor %}</ul>
{% endif %}
<table class="counters">
<tr><th>host</th><th class="n">seconds between snapshots</th><th>error counters</th><th>congestion counters</th></tr>
{% for h in c.hosts %}
<tr data-host="{{ h.host }}"><td>{{ h.host }}</td><td class="n">{{ num(h.seconds) }}</td>\
<td class="{{ '' if h.errors == 'none' else 'bad' }}">{{ h.errors }}</td><td>{{ h.congestion }}</td></tr>
{% endfor %}
</table>
{% if c.checks %}
<table class="books">
<tr><th>host</th><th>book</th><th class="n">bytes counted</th><th class="n">expected (payload + headers)</th>\
<th class="n">packets</th><th class="n">difference</th><th>agrees</th></tr>
{% for k in c.checks %}
<tr class="{{ '' if k.agrees else 'bad' }}"><td>{{ k.host }}</td><td>{{ k.counter }}</td>\
<td class="n">{{ k.bytes }}</td>\
<td class="n">{{ k.expected_bytes }}</td><td class="n">{{ k.packets }}</td>\
<td class="n">{{ '%+.3f%%' % (k.difference * 100) }}</td><td>{{ 'yes' if k.agrees else 'NO' }}</td></tr>
{% endfor %}
</table>
{% endif %}
{% endif %}
{% if s.fabric is defined %}
{% set fab = s.fabric %}
<h3>On the fabric: hash {{ fab.hash }}, seed {{ fab.seed }}, placement {{ fab.placement }}</h3>
<p class="verdict">{{ fab.sentence }}</p>
<table class="fabric">
<tr><th>flow</th><th class="n">source port</th><th>uplink, downlink</th><th class="n">predicted s</th>\
<th class="n">measured s</th><th>shares a link with</th></tr>
{% for f in fab.flows %}
<tr class="{{ 'bad' if f.shares_with else '' }}" data-flow="{{ f.flow }}"><td>{{ f.flow }}</td>\
<td class="n">{{ f.sport }}</td><td>{{ f.links[1:-1] | join(', ') }}</td>\
<td class="n">{{ num(f.predicted_s) }}</td><td class="n">{{ num(f.completion_s) }}</td>\
<td>{{ f.shares_with | join(', ') or '-' }}</td></tr>
{% endfor %}
</table>
<p class="note">paths {{ fab.proof.status }}{{ (': every one of %d links carried what the route lookups put on it \
(largest difference %.1f%%)' % (fab.proof.links_checked, fab.proof.largest_difference * 100)) \
if fab.proof.status == 'agrees' else '' }}; ideal: the same step with every flow spread evenly over all its \
equal-cost paths.</p>
{% if fab.proof.disagreements %}
<ul>{% for d in fab.proof.disagreements %}<li class="bad">{{ d }}</li>{% endfor %}</ul>
{% endif %}
{% endif %}
{% if s.gates is defined and s.gates %}
<h3>Gates</h3>
<ul>{% for g in s.gates %}<li class="{{ 'bad' if g.ok is sameas false else '' }}">\
{{ 'held' if g.ok else 'BROKEN' if g.ok is sameas false else 'not checked' }}: {{ g.message }}</li>{% endfor %}</ul>
{% endif %}
</section>
{% endfor %}
<footer>Written by aifabric.lab from the run directory's files (the same analysis as report.json and report.txt; \
<code>make render RUN=...</code> writes it again).</footer>
</main>
</body>
</html>
"""

_ENV = Environment(autoescape=True, undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                   keep_trailing_newline=True)
_TEMPLATE = _ENV.from_string(_PAGE)


def report_html(report: dict) -> str:
    """report.html's text: the whole report as one page that needs nothing else to open."""
    return _TEMPLATE.render(report=report, v=_view(report), css=Markup(_CSS), W=_W, plot=_PLOT, bar=_BAR, red=_RED,
                            blue=_BLUE, num=_num, pct=_pct, full_steps=FULL_STEPS)
