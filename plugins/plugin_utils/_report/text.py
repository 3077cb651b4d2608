# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The barrier report as text (``report.txt``, and what the callback prints at the end of a play)."""

from __future__ import annotations

from jinja2 import Environment, StrictUndefined

__all__ = ["render_text"]


_TEXT = """\
{% for s in report.steps %}
{% if s.step in brief %}
--- step '{{ s.step }}': {{ '%.3f' % s.step_s }} s (predicted {{ ('%.3f' % s.predicted_step_s) if s.predicted_step_s \
is defined else '-' }}), straggler {{ s.straggler.host }}\
{{ (', unthrottled idle %.0f%%' % (s.unthrottled_idle_share * 100)) if s.unthrottled_idle_share is not none else '' }}\
{{ ('; counters: %s' % s.counters.verdict) if s.counters is defined else '' }}
{% else %}
=== {{ s.kind }} step '{{ s.step }}': {{ s.workers_completed }}/{{ s.workers_expected }} flows complete\
{{ (', bottleneck %s' % s.bottleneck) if s.bottleneck else '' }}
{% if s.kind == 'baseline' and s.status == 'ok' %}
{% set w = s.workers[0] %}
  single flow {{ w.host }}: {{ '%.3f' % w.gbps }} Gb/s, {{ '%.2f' % w.completion_s }} s\
{{ (' (fair share predicts %.2f s)' % w.predicted_s) if w.predicted_s else '' }}
{% if s.samples %}
  interval Gb/s: {{ s.samples | map(attribute='gbps') | map('round', 2) | join(' ') }}
{% endif %}
{% else %}
  {{ '%-14s %12s %8s %9s %6s %11s %8s  %s' % ('worker', 'completion s', 'Gb/s', 'idle s', 'idle', 'predicted s', 'pred err', 'throttle') }}
{% for w in s.workers %}
{% if s.status == 'ok' %}
  {{ '%-14s %12.2f %8.3f %9.2f %5.0f%% %11s %8s  %s' % (w.host, w.completion_s, w.gbps, w.idle_s, w.idle_share * 100,
     ('%.2f' % w.predicted_s) if w.predicted_s else '-',
     ('%+.1f%%' % (w.prediction_error * 100)) if w.prediction_error is defined else '-', w.throttle or '-') }}
{% for f in w.flows | default([]) %}
    {{ '%-12s %12.2f %8.3f %31s' % (f.flow_id, f.completion_s, f.gbps, ('%.2f' % f.predicted_s) if f.predicted_s else '-') }}
{% endfor %}
{% elif w.status == 'ok' %}
  {{ '%-14s %12s %8s' % (w.host, 'done', '') }}  {{ w.bytes }} bytes confirmed (kept, not used for a step time)
{% else %}
  {{ '%-14s %12s %8s' % (w.host, w.status | upper, '') }}  {{ w.error }}
{% endif %}
{% endfor %}
{% if s.status == 'ok' %}
  step time (max)        {{ '%.2f' % s.step_s }} s\
{{ ('   (fair share predicts %.2f s)' % s.predicted_step_s) if s.predicted_step_s is defined and s.predicted_step_s else '' }}
  mean completion        {{ '%.2f' % s.mean_completion_s }} s: understates the step by \
{{ '%.2f' % s.mean_understates_s }} s ({{ '%.0f' % (s.mean_understates_share * 100) }}%)
  straggler              {{ s.straggler.host }}: {{ s.straggler.cause }}, {{ '%.2f' % s.straggler.behind_next_s }} s behind the next worker
{% if s.unthrottled_idle_share is not none %}
  unthrottled idle       {{ '%.0f' % (s.unthrottled_idle_share * 100) }}% of the step (the workers without a throttle of their own)
{% endif %}
{% if s.throttled_idle_share is not none %}
  throttled idle         {{ '%.0f' % (s.throttled_idle_share * 100) }}% of the step (the other throttled workers)
{% endif %}
  idle, all workers      {{ '%.2f' % s.idle_worker_seconds }} worker-seconds
{% set resent = s.workers | selectattr('retransmits', 'defined') | selectattr('retransmits') | list %}
{% if resent %}
  retransmitted          {% for w in resent %}{{ w.host }} {{ w.retransmits }} segments, {{ w.retrans_bytes }} bytes \
({{ '%.2f' % ((w.retrans_share | default(0)) * 100) }}% of its wire){{ '' if loop.last else '; ' }}{% endfor %}

{% endif %}
  sum of flow rates      {{ '%.3f' % s.sum_of_flow_gbps }} Gb/s\
{{ (' = %.1f%% of the %s bottleneck' % (s.sum_of_flow_share_of_bottleneck * 100, s.bottleneck)) if s.bottleneck_gbps is defined else '' }}\
{{ ('; single-flow baseline %.3f Gb/s (%.1f%%)' % (s.baseline_gbps, s.sum_of_flow_vs_baseline * 100)) if s.baseline_gbps else '' }}
  step goodput           {{ '%.3f' % s.aggregate_gbps }} Gb/s (all bytes / step time)
  start skew             {{ '%.3f' % (s.start_skew_s * 1000) }} ms (first byte, max - min)\
{{ ('; late p50 %.3f ms, max %.3f ms, bound %.1f ms (%s)' % (s.late_p50_s * 1000, s.late_max_s * 1000,
   s.late_bound_s * 1000, s.late_bound_basis)) if s.late_max_s is defined and s.late_max_s is not none and s.late_bound_s is not none else '' }}
{% if s.start is defined and s.start.mode == 'rendezvous' and s.start.margin_s is not none %}
  start                  every host armed {{ '%.2f' % s.start.armed_after_s }} s after the rendezvous opened; fired \
{{ "%.1f" % (s.start.margin_s * 1000) }} ms later (3 x the slowest of {{ s.start.probe_fanout_s | length }} probe rounds + 1 ms, \
{{ '%.2f' % ((s.start.probe_fanout_s | max) * 1000) }} ms)
{% endif %}
  verdict                {{ s.verdict }}
{% if s.counters is defined %}
  counters               {{ s.counters.verdict }}
{% for host, c in s.counters.hosts.items() %}
{% for k in c.checks | default([]) %}
    {{ '%-12s %-22s %14d bytes %+7.2f%% vs payload + %d B/packet x %d packets' % (host, k.counter, k.bytes,
       k.difference * 100, k.headers_per_packet, k.packets) }}{{ (' + %d bytes retransmitted' % k.retrans_bytes)
       if k.retrans_bytes | default(0) else '' }}{{ '' if k.agrees else '   DISAGREES' }}
{% endfor %}
{% endfor %}
{% for d in s.counters.disagreements %}
  ! {{ d }}
{% endfor %}
{% endif %}
{% for g in s.gates | default([]) %}
  gate                   {{ 'held  ' if g.ok else 'BROKEN' if g.ok is sameas false else 'n/a   ' }} {{ g.message }}
{% endfor %}
{% if s.fabric is defined %}
{% set fab = s.fabric %}
  fabric                 hash {{ fab.hash }}{{ (', seed %s' % fab.seed) if fab.seed is not none else '' }}, placement \
{{ fab.placement }}; {{ fab.elephants }} elephants; ideal (perfect spreading) \
{{ ('%.2f s' % fab.ideal_step_s) if fab.ideal_step_s is defined else 'n/a' }}, step \
{{ ('%.2fx' % fab.slowdown_vs_ideal) if fab.slowdown_vs_ideal is defined else 'n/a' }} of it
    {{ '%-12s %6s  %-32s %8s %8s  %s' % ('flow', 'sport', 'uplink, downlink', 'pred s', 'meas s', 'shares a link with') }}
{% for f in fab.flows %}
    {{ '%-12s %6s  %-32s %8s %8s  %s' % (f.flow, f.sport, f.links[1:-1] | join(', '),
       ('%.2f' % f.predicted_s) if f.predicted_s else '-', ('%.2f' % f.completion_s) if f.completion_s else '-',
       f.shares_with | join(', ') or '-') }}
{% endfor %}
{% for l in fab.links if l.flows | length > 1 and l.tier != 'host' %}
    {{ '%-16s %d flows, predicted %s Gb/s, measured %s Gb/s' % (l.link, l.flows | length,
       ('%.3f' % l.predicted_gbps) if l.predicted_gbps is not none else '-',
       ('%.3f' % l.measured_gbps) if l.measured_gbps is not none else '-') }}
{% endfor %}
  paths                  {{ 'proved by the counters: every one of %d links carried what the lookups put on it (largest \
difference %.1f%%)' % (fab.proof.links_checked, fab.proof.largest_difference * 100) if fab.proof.status == 'agrees'
   else 'not checked (no counters)' if fab.proof.status == 'unchecked' else 'DISAGREE with the lookups' }}
{% for d in fab.proof.disagreements %}
  ! {{ d }}
{% endfor %}
{% endif %}
{% else %}
  STEP FAILED: no step time is computed over the survivors.
{% for f in s.failed %}
  - {{ f.host }} ({{ f.status }}): {{ f.cause }}
{% endfor %}
{% for g in s.gates | default([]) %}
  gate                   n/a    {{ g.message }}
{% endfor %}
{% endif %}
{% endif %}
{% endif %}
{% endfor %}
{% for e in report.experiments | default([]) if e.steps > 1 or e.collective is defined %}
=== {{ 'collective' if e.collective is defined else 'experiment' }} '{{ e.name }}' ({{ e.pattern }}): \
{{ e.steps_ok }}/{{ e.steps }} steps ok
{% if e.step_s %}
  step time              p50 {{ '%.3f' % e.step_s.p50 }} s, p90 {{ '%.3f' % e.step_s.p90 }} s, p99 \
{{ '%.3f' % e.step_s.p99 }} s, max {{ '%.3f' % e.step_s.max }} s (over {{ e.steps_ok }} steps)
  stragglers             {% for host, n in e.straggler_frequency.items() %}{{ host }} held {{ n }} of {{ e.steps_ok }}\
{{ '' if loop.last else ', ' }}{% endfor %}

  idle worker-seconds    {% for host, t in e.idle_worker_seconds.items() %}{{ host }} {{ '%.2f' % t }}\
{{ '' if loop.last else ', ' }}{% endfor %}

{% endif %}
{% for f in e.failed_steps %}
  ! step {{ f.step }} failed (counted, not in the figures): {{ f.cause }}
{% endfor %}
{% if e.collective is defined %}
{% set c = e.collective %}
  collective             {{ c.name }}, {{ c.ranks }} ranks, {{ '%.3f' % (c.size / 1e9) }} GB, {{ c.repetitions[0].rounds \
| length }} rounds (each a barrier; busbw = algbw x {{ '%.3f' % c.bus_factor }}, as nccl-tests)
{% for r in c.repetitions %}
{% if r.status == 'ok' %}
  repetition {{ '%-11d' % r.repetition }} {{ '%.3f' % r.time_s }} s\
{{ (' (predicted %.3f s)' % r.predicted_s) if r.predicted_s is defined else '' }}\
{{ ('; without the throttle %.3f s: the straggler cost %.3f s = %.0f%%' % (r.predicted_unthrottled_s,
   r.straggler_cost_s, r.straggler_cost_share * 100)) if r.straggler_cost_s is defined else '' }}\
; algbw {{ '%.3f' % r.algbw_GBps }} GB/s, busbw {{ '%.3f' % r.busbw_GBps }} GB/s
{% else %}
  repetition {{ '%-11d' % r.repetition }} FAILED (a round failed)
{% endif %}
{% endfor %}
{% if c.repetitions | length > 1 and c.time_s %}
  collective time        p50 {{ '%.3f' % c.time_s.p50 }} s, p99 {{ '%.3f' % c.time_s.p99 }} s, max \
{{ '%.3f' % c.time_s.max }} s; busbw p50 {{ '%.3f' % c.busbw_GBps.p50 }} GB/s
{% endif %}
{% endif %}
{% endfor %}
{% if report.fabric_variants is defined and report.fabric_variants | length > 1 %}
=== fabric: the variants side by side
  {{ '%-14s %-4s %-9s %7s %8s %8s %7s %7s %6s %7s %6s  %s' % ('step', 'hash', 'placement', 'streams', 'step s',
     'ideal s', 'x ideal', 'x pred', 'idle', 'busiest', 'shared', 'paths') }}
{% for r in report.fabric_variants %}
  {{ '%-14s %-4s %-9s %7s %8s %8s %7s %7s %6s %7s %6d  %s' % (r.step, r.hash, r.placement, r.streams,
     ('%.2f' % r.step_s) if r.step_s else 'FAILED', ('%.2f' % r.ideal_step_s) if r.ideal_step_s else '-',
     ('%.2f' % r.slowdown_vs_ideal) if r.slowdown_vs_ideal else '-', ('%.3f' % r.vs_prediction) if r.vs_prediction else '-',
     ('%.0f%%' % (r.mean_idle_share * 100)) if r.mean_idle_share is not none else '-', r.worst_uplink_load, r.collisions,
     r.proof) }}
{% endfor %}
  (busiest: elephants on the busiest uplink; shared: fabric links carrying two or more; idle: the workers' mean idle share)
{% endif %}
{% if report.fabric_seeds is defined %}
{% set fs = report.fabric_seeds %}
=== fabric: over {{ fs.seeds }} hash seeds (l4, the hash decides)
  measured step / ideal  mean {{ '%.3f' % fs.measured_mean }}x (min {{ '%.2f' % fs.measured_min }}, max {{ '%.2f' % fs.measured_max }})
  predicted (the lab's   mean {{ ('%.3f' % fs.predicted_mean) if fs.predicted_mean else '-' }}x
    own lookups)
  simulator, random hash mean {{ '%.3f' % fs.simulated_mean }}x ({{ fs.simulated_trials }} placements of the same flows)
  formula                {{ ('%.3fx: %s' % (fs.formula, fs.formula_text)) if fs.formula is defined else fs.formula_unavailable }}
{% endif %}
{% if report.gates is defined %}
=== gates: {{ 'all held' if report.gates.status == 'ok' else '%d BROKEN' % (report.gates.broken | length) }}\
{{ (', %d not checked' % (report.gates.not_checked | length)) if report.gates.not_checked else '' }}
{% for m in report.gates.broken %}
  ! {{ m }}
{% endfor %}
{% for m in report.gates.not_checked %}
  - {{ m }}
{% endfor %}
{% endif %}
"""


_ENV = Environment(undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False, trim_blocks=True,
                   lstrip_blocks=True)


_TEMPLATE = _ENV.from_string(_TEXT)


def render_text(report):
    return _TEMPLATE.render(report=report, brief=_brief_steps(report))


def _brief_steps(report):
    """Steps printed on one line: an experiment's repeated steps after its first (the summary follows), unless
    they failed."""
    brief = set()
    ok = {s["step"] for s in report["steps"] if s["status"] == "ok"}
    for e in report.get("experiments") or []:
        names = [x["step"] for x in e.get("series") or []]
        if len(names) > 1:
            brief.update(n for n in names[1:] if n in ok)
    return brief
