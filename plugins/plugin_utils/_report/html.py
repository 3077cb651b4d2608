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

The geometry is computed here (plain numbers, as text); the template (``templates/report.html.j2``, its style
``templates/report.css``) only lays it out, and every value it prints is escaped (``autoescape``). The elements a
test looks for carry stable attributes: ``rect.flow-bar`` (``data-host``, ``data-flow``, ``data-completion-s``),
``rect.idle`` (``data-idle-s``), ``.straggler``, ``line.predicted``, ``section.step`` and ``tr.step-row``
(``data-step``, ``data-detail``: ``full`` or ``brief``), ``circle.dist-point``, ``line.p50``/``line.p99``,
``rect.freq-bar``, ``rect.round``.
"""

from __future__ import annotations

import itertools
import math

from ansible_collections.aifabric.lab.plugins.plugin_utils._report.bmwg import rows as test_report_rows
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.templates import template_text
from ansible_collections.aifabric.lab.plugins.plugin_utils._text import natural_key, number_or_dash, share_or_dash
from jinja2 import Environment, StrictUndefined
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


def _at(value):
    """A coordinate as the SVG gets it."""
    return "%.3f" % value


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
    return [{"x": _at(left + t / xmax * width), "top": _at(top), "bottom": _at(bottom), "label": _tick_label(t)}
            for t in ticks]


def _fit(label, room=27):
    """A name short enough for the room left of a picture (about 27 characters): its start and end around an
    ellipsis (the full name is in the element's tooltip and the tables)."""
    label = str(label)
    if len(label) <= room:
        return label
    keep = room - 1
    return label[:keep - keep // 2] + "\u2026" + label[len(label) - keep // 2:]


def _workers_in_order(step):
    return sorted(step.get("workers") or [], key=lambda w: natural_key(w["host"]))


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
                   "completion_s": "%.6f" % completion, "width": _at(completion * scale),
                   "straggler": straggler.get("host") == w["host"] and i == last,
                   "predicted_s": None if predicted is None else "%.6f" % predicted,
                   "predicted_x": None if predicted is None else _at(_LEFT + predicted * scale),
                   "idle_s": None, "tip": "%s: completed at %.3f s%s, %s Gb/s" % (
                       w["host"] if len(flows) == 1 else "%s flow %s" % (w["host"], f.get("flow_id")), completion,
                       "" if predicted is None else ", predicted %.3f s (%+.1f%%)" % (
                           predicted, (completion / predicted - 1) * 100 if predicted else 0.0),
                       number_or_dash(f.get("gbps")))}
            if i == last and w.get("idle_s") is not None:
                row.update(idle_s="%.6f" % w["idle_s"], idle_x=_at(_LEFT + completion * scale),
                           idle_width=_at(w["idle_s"] * scale),
                           idle_tip="%s idle %.3f s (%.0f%% of the step), waiting for the slowest worker" % (
                               w["host"], w["idle_s"], (w.get("idle_share") or 0.0) * 100))
            rows.append(row)
    for k, row in enumerate(rows):
        y = top + k * _ROW
        row.update(y=_at(y + (_ROW - _BAR) / 2), text_y=_at(y + _ROW / 2 + 4), tick_top=_at(y + 1),
                   tick_bottom=_at(y + _ROW - 1))
    bottom = top + len(rows) * _ROW
    out = {"id": "timeline-%d" % index, "hatch": "hatch-%d" % index, "rows": rows, "top": _at(top - 4),
           "plot_bottom": _at(bottom), "axis": _x_axis(xmax, ticks, top - 4, bottom + 4),
           "axis_label_y": _at(bottom + 18), "title_y": _at(bottom + 38), "left": _LEFT, "right": _at(_LEFT + _PLOT),
           "label_x": _LEFT - 8, "step_x": None, "straggler_note": None}
    if step.get("step_s") is not None:
        out["step_x"] = _at(_LEFT + step["step_s"] * scale)
        out["step_label"] = "step %.3f s" % step["step_s"]
        out["step_label_anchor"] = "end" if step["step_s"] * scale > _PLOT * 0.5 else "start"
    y = bottom + 38
    if straggler:
        alone = len(step.get("workers") or []) < 2
        out["straggler_note"] = {"y": _at(y + 22), "cause_y": _at(y + 40), "host": straggler["host"], "x": 10,
                                 "text": "straggler %s%s, because:" % (straggler["host"], "" if alone else (
                                     ", %s s behind the next worker" % number_or_dash(straggler.get("behind_next_s")))),
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
        return "%s,%s" % (_at(_LEFT + t / xmax * _PLOT), _at(bottom - g / ymax * height))

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
    return {"id": "throughput-%d" % index, "series": series, "left": _LEFT, "right": _at(_LEFT + _PLOT),
            "top": _at(top), "bottom": _at(bottom), "axis": _x_axis(xmax, xticks, top, bottom + 4),
            "yaxis": [{"y": _at(bottom - v / ymax * height), "label": _tick_label(v)} for v in yticks],
            "axis_label_y": _at(bottom + 18), "title_y": _at(bottom + 38), "ytitle_y": _at(top + height / 2),
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
        point = {"step": x["step"], "status": x.get("status"), "cx": _at(cx), "r": _at(min(5.0, max(2.0, slot * 0.3))),
                 "label": (k + 1) if label else None, "label_y": _at(bottom + 16), "step_s": None,
                 "predicted_y": None, "straggler": x.get("straggler"),
                 "colour": colours.get(x.get("straggler"), _BLUE)}
        if x.get("step_s") is not None:
            point.update(step_s="%.6f" % x["step_s"], y=_at(y_of(x["step_s"])),
                         tip="step %s: %.3f s, straggler %s" % (x["step"], x["step_s"], x.get("straggler") or "-"))
        else:
            point.update(cross_y=_at(bottom - 6), tip="step %s: %s" % (x["step"], x.get("status")))
        if x.get("predicted_step_s"):
            half = min(slot * 0.45, 8.0)
            point.update(predicted_y=_at(y_of(x["predicted_step_s"])), px1=_at(cx - half), px2=_at(cx + half))
        points.append(point)
    lines = []
    p = experiment.get("step_s") or {}
    for name in ("p50", "p99"):
        if p.get(name) is not None:
            lines.append({"name": name, "value": "%.6f" % p[name], "y": _at(y_of(p[name])),
                          "label": "%s %.3f s" % (name, p[name])})
    if len(lines) == 2 and abs(float(lines[0]["y"]) - float(lines[1]["y"])) < 12:  # keep the two labels apart
        lines[1]["label_y"] = _at(float(lines[0]["y"]) - 12)
    for line in lines:
        line.setdefault("label_y", _at(float(line["y"]) + 4))
    return {"points": points, "lines": lines, "left": _LEFT, "right": _at(_LEFT + width), "top": _at(top),
            "bottom": _at(bottom), "label_x": _at(_LEFT + width + 6),
            "yaxis": [{"y": _at(y_of(v)), "label": _tick_label(v)} for v in yticks],
            "title_y": _at(bottom + 36), "ytitle_y": _at(top + height / 2), "height": int(bottom + 46)}


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
                     "y": _at(y + (_ROW - _BAR) / 2),
                     "text_y": _at(y + _ROW / 2 + 4), "width": _at(n / total * plot),
                     "value_x": _at(_LEFT + n / total * plot + 6),
                     "text": "%d of %d steps (%.0f%%)" % (n, total, n / total * 100)})
    bottom = 8 + len(rows) * _ROW
    xticks = [0, 0.25, 0.5, 0.75, 1.0]
    return {"rows": rows, "left": _LEFT, "label_x": _LEFT - 8, "bottom": _at(bottom),
            "axis": [{"x": _at(_LEFT + t * plot), "top": "4", "bottom": _at(bottom + 4), "label": "%d%%" % (t * 100)}
                     for t in xticks], "middle": _at(_LEFT + plot / 2),
            "axis_label_y": _at(bottom + 18), "title_y": _at(bottom + 38), "height": int(bottom + 48)}


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
            seg = {"step": name, "round": j + 1, "status": s.get("status") or "missing", "x": _at(_LEFT + at * scale),
                   "y": _at(y + (_ROW - _BAR) / 2), "step_s": None if t is None else "%.6f" % t,
                   "width": _at((t or 0.0) * scale), "colour": _PALETTE[j % 2 * 4],
                   "tip": "round %d (%s): %s" % (j + 1, name, "%.3f s, straggler %s" % (
                       t, (s.get("straggler") or {}).get("host")) if t is not None else s.get("status") or "missing")}
            seg.update(seconds=t, predicted=s.get("predicted_step_s"), straggler=(s.get("straggler") or {}).get("host"),
                       idle_share=idle[j] if j < len(idle) else None)
            at += t or 0.0
            segments.append(seg)
        bad = [g for g in segments if g["status"] != "ok"]
        row = {"repetition": r["repetition"], "status": r["status"], "segments": segments,
               "text_y": _at(y + _ROW / 2 + 4), "predicted_x": None, "failed_x": _at(_LEFT + at * scale + 6),
               "failed": "; ".join("round %d (%s) %s" % (g["round"], g["step"], g["status"]) for g in bad)}
        if r.get("predicted_s"):
            row.update(predicted_x=_at(_LEFT + r["predicted_s"] * scale), tick_top=_at(y + 1),
                       tick_bottom=_at(y + _ROW - 1))
        rows.append(row)
    bottom = 8 + len(rows) * _ROW
    return {"rows": rows, "label_x": _LEFT - 8, "left": _LEFT, "bottom": _at(bottom),
            "axis": _x_axis(xmax, ticks, 4, bottom + 4), "axis_label_y": _at(bottom + 18),
            "title_y": _at(bottom + 38), "height": int(bottom + 48)}


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
            "nic": c.get("nic") or [],
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
        job = s.get("kind") == "job"  # a job's step has its own section (its iterations, not flows)
        v = {"s": s, "index": k + 1, "anchor": "step-%d" % (k + 1), "full": s["step"] not in brief and not job,
             "job": job, "straggler": s.get("straggler") or {}}
        if v["full"]:
            v.update(timeline=_timeline(s, k + 1), throughput=_throughput(s, k + 1), counters=_counters(s),
                     workers=_workers(s))
        views.append(v)
    out["steps"] = views
    out["brief_count"] = len(brief)
    anchors = {v["s"]["step"]: v["anchor"] for v in views if v["full"] or v["job"]}
    experiments = []
    for e in report.get("experiments") or []:
        if (e.get("steps") or 0) < 2 and not e.get("collective"):
            continue
        colours = _colours(list((e.get("straggler_frequency") or {}).keys()))
        experiments.append({"e": e, "distribution": _distribution(e, colours), "frequency": _frequency(e, colours),
                            "collective": _collective(e, by_name) if e.get("collective") else None,
                            "anchors": anchors})
    out["experiments"] = experiments
    out["test_report"] = test_report_rows(report["test_report"]) if report.get("test_report") else []
    return out


_ENV = Environment(autoescape=True, undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                   keep_trailing_newline=True)
_TEMPLATE = _ENV.from_string(template_text("report.html.j2"))
_CSS = template_text("report.css")


def report_html(report: dict) -> str:
    """report.html's text: the whole report as one page that needs nothing else to open."""
    return _TEMPLATE.render(report=report, v=_view(report), css=Markup(_CSS), W=_W, plot=_PLOT, bar=_BAR, red=_RED,
                            blue=_BLUE, num=number_or_dash, pct=share_or_dash, full_steps=FULL_STEPS)
