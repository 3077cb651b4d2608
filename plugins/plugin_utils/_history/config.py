# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A run's lab configuration as flat, human-readable lines (``worker3 throttle`` = ``2gbit (tc htb on eth0's egress)``),
derived from its plans, the counters' snapshots, the flows' own records and ``lab``: what the history keeps of a run's
set-up, and what ``compare`` names when two runs differ."""

from __future__ import annotations

import os

from ansible_collections.aifabric.lab.plugins.module_utils._units import scale_size
from ansible_collections.aifabric.lab.plugins.plugin_utils._text import natural_key

__all__ = ["config_lines"]


# -- the configuration lines ---------------------------------------------------------------------------------------
def _text(value):
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(_text(v) for v in value)
    if isinstance(value, dict):
        return ", ".join("%s=%s" % (k, _text(v)) for k, v in sorted(value.items()))
    return str(value)


def _merged(values):
    """One line's value from several experiments (or steps): the value when they agree, else each one by name."""
    present = [(name, _text(v)) for name, v in values if v is not None and v != ""]
    distinct = {v for _n, v in present}
    if not present:
        return None
    if len(distinct) == 1:
        return present[0][1]
    return "; ".join("%s: %s" % (n, v) for n, v in present)


def _bytes(n):
    if not isinstance(n, (int, float)) or isinstance(n, bool):
        return None
    number, unit = scale_size(n, largest="GB", kilo="kB")
    return "%d bytes" % n if unit == "B" else "%d bytes (%g %s)" % (n, number, unit)


def _throttle_of(experiment, host):
    """``2gbit (tc htb on eth0's egress)``, ``none``: a host's throttle in one experiment (a ``Plan``), with what
    applied it."""
    throttle = experiment.hosts[host].throttle if host in experiment.hosts else None
    if throttle is None or not throttle.rate:
        return "none"
    what = "%s towards %s" % (throttle.rate, ", ".join(throttle.peers)) if throttle.peers else str(throttle.rate)
    how = throttle.applied
    return "%s (%s)" % (what, how) if how else "%s (not recorded as applied)" % what


def _planned_throttle(planned, host):
    """The same from a step's plan (runs without experiments: their flows' annotations)."""
    if not planned.throttle:
        return "none"
    how = planned.throttle_mechanism or ""
    if how.startswith(host + ": "):
        how = how[len(host) + 2:]
    return "%s (%s)" % (planned.throttle, how) if how else "%s (not recorded as applied)" % planned.throttle


def _hash_policy(run):
    """The fabric's hash policy when the record has one (``lab.hash_policy``, ``lab.fabric.hash_policy`` or an
    experiment's fabric); None otherwise (the line is left out)."""
    lab = run.lab or {}
    fabric = lab.get("fabric") if isinstance(lab.get("fabric"), dict) else {}
    values = [("lab", lab.get("hash_policy")), ("lab", fabric.get("hash_policy"))]
    values += [(e.name or "experiment", _fabric_hash(e.fabric)) for e in run.experiments if e.fabric]
    return _merged(values)


def _fabric_hash(fabric):
    """The fabric lab's hash as a line: ``l4 (five-tuple), seed 1, placement hash, port seed 0``."""
    what = {"l4": "l4 (five-tuple)", "l3": "l3 (addresses)"}.get(fabric.hash, fabric.hash)
    return "%s, seed %s, placement %s, port seed %s" % (what, fabric.seed, fabric.placement, fabric.port_seed)


_PERFTEST_REPORTED = (("test", "test"), ("connection_type", "connection"), ("transport_type", "transport"),
                      ("link_type", "link"), ("device", "device"), ("mtu", "mtu"), ("number_of_qps", "qps"),
                      ("tx_depth", "tx depth"))


def _host_facts(run):
    """Per host, what its flows' records say of the tools that ran them: the tool (its command's name), what perftest
    reported of its settings, and any version a record carries."""
    facts = {}
    for step in run.steps:
        for flow in step.flows:
            extra = flow.extra or {}
            mine = facts.setdefault(flow.host, {})
            argv = extra.get("argv")
            if isinstance(argv, list) and argv:
                mine.setdefault("tool", set()).add(os.path.basename(str(argv[0])))
            reported = extra.get("perftest")
            if isinstance(reported, dict):
                text = ", ".join("%s %s" % (label, reported[key]) for key, label in _PERFTEST_REPORTED
                                 if reported.get(key) is not None)
                if text:
                    mine.setdefault("perftest", set()).add(text)
                for key, value in reported.items():
                    if "version" in key.lower() and isinstance(value, (str, int, float)):
                        mine.setdefault("perftest " + key.replace("_", " "), set()).add(str(value))
            for key, value in extra.items():
                if "version" in key.lower() and isinstance(value, (str, int, float)):
                    mine.setdefault(key.replace("_", " "), set()).add(str(value))
    return facts


def _qdiscs(run):
    """Per (host, interface), the qdisc the counters' snapshots saw: its kind when recorded, and its classes."""
    seen = {}
    for step in run.steps:
        for host, entry in (step.counters or {}).items():
            for when in ("before", "after"):
                snap = entry.get(when) if isinstance(entry, dict) else None
                qdiscs = snap.get("qdisc") if isinstance(snap, dict) else None
                for iface, q in (qdiscs or {}).items():
                    if not isinstance(q, dict):
                        continue
                    kinds, classes = seen.setdefault((host, iface), (set(), set()))
                    kind = q.get("kind") or (q.get("qdisc") or {}).get("kind")
                    if kind:
                        kinds.add(str(kind))
                    classes.update(str(c) for c in (q.get("classes") or {}))
    out = {}
    for (host, iface), (kinds, classes) in seen.items():
        parts = [", ".join(sorted(kinds))] if kinds else []
        names = sorted(classes)
        if len(names) > 8:  # a fabric port's fair classes: one per source-port bucket
            parts.append("%d classes (%s ... %s)" % (len(names), ", ".join(names[:3]), names[-1]))
        else:
            parts.append("classes %s" % ", ".join(names) if names else "root qdisc, no classes")
        out[(host, iface)] = " ".join(parts) if kinds else parts[-1]
    return out


_CONTROLLER_KEYS = {"kernel": "controller kernel", "python": "controller python", "ansible_core": "ansible-core",
                    "collection": "aifabric.lab"}


def config_lines(run):
    """A run's lab configuration as ``[(key, value)]`` in a stable order: the run-wide lines (line rate, MTU, engine,
    hash policy, perftest options), each experiment's (pattern, kind, workers, volume, streams, steps, collective),
    each host's (its throttle with the mechanism applied, its qdiscs, its kernel, its tools), then the controller's
    versions. ``run`` is ``_run.store.load_run``'s ``Run``. A line whose value differs between experiments names
    each."""
    lines = []
    experiments = list(run.experiments)
    names = [e.name or "experiment-%d" % i for i, e in enumerate(experiments, 1)]
    hosts = {}  # host -> [(key, value)]

    def host_line(host, key, value):
        if value is not None:
            hosts.setdefault(host, []).append(("%s %s" % (host, key), value))

    if experiments:
        pairs = list(zip(names, experiments))
        lines.append(("line rate", _merged((n, e.line_rate) for n, e in pairs)))
        lines.append(("mtu", _merged((n, e.mtu) for n, e in pairs)))
        lines.append(("engine", _merged((n, e.engine) for n, e in pairs)))
        lines.append(("hash policy", _hash_policy(run)))
        lines.append(("perftest options", _merged(
            (n, _text(e.perftest) or "defaults") for n, e in pairs if e.engine == "perftest")))
        for name, e in pairs:
            collective = e.collective
            lines += [
                ("%s pattern" % name, e.pattern),
                ("%s kind" % name, e.kind),
                ("%s workers" % name, e.sources),
                ("%s volume" % name, _bytes(e.volume)),
                ("%s streams" % name, e.streams if e.engine != "perftest" else None),
                ("%s steps" % name, len(e.steps) or None),
                ("%s collective" % name, "%s, %s ranks" % (collective.name, collective.ranks) if collective else None),
                ("%s expect" % name, e.expect or None),  # the gates the experiment states (_plan.expect)
            ]
        for host in sorted({h for e in experiments for h in e.hosts}, key=natural_key):
            host_line(host, "throttle", _merged((n, _throttle_of(e, host)) for n, e in pairs
                                                if host in e.hosts))
    else:  # a run without a plan: what its steps' plans (the flows' annotations) say
        steps = [(s.name, s.plan) for s in run.steps]
        lines.append(("bottleneck", _merged((n, p.bottleneck) for n, p in steps)))
        lines.append(("mtu", _merged((n, ", ".join(sorted({str(f.mtu) for f in p.flows.values() if f.mtu})))
                                     for n, p in steps)))
        lines.append(("engine", _merged((s.name, s.plan.engine or ", ".join(sorted(
            {str(f.extra["engine"]) for f in s.flows if (f.extra or {}).get("engine")}))) for s in run.steps)))
        lines.append(("hash policy", _hash_policy(run)))
        lines += [("%s pattern" % n, p.pattern) for n, p in steps]
        throttles = {}
        for step in run.steps:
            if not step.plan.flows:  # nothing planned for this step's flows: their throttles are not known
                continue
            for host in list(step.plan.expected_workers) + [f.host for f in step.flows]:
                flows = [pf for (h, _i), pf in step.plan.flows.items() if h == host]
                value = _planned_throttle(flows[0], host) if flows else "none"
                throttles.setdefault(host, []).append((step.name, value))
        for host in sorted(throttles, key=natural_key):
            host_line(host, "throttle", _merged(throttles[host]))
    for (host, iface), value in sorted(_qdiscs(run).items()):
        host_line(host, "qdisc %s" % iface, value)
    lab = run.lab or {}
    for host, facts in sorted(((lab.get("hosts") or {}).items())):
        for key, value in sorted((facts or {}).items()):
            host_line(host, key.replace("_", " "), _text(value) if value is not None else None)
    for host, facts in sorted(_host_facts(run).items()):
        for key, values in sorted(facts.items()):
            host_line(host, key, " | ".join(sorted(values)))
    for host in sorted(hosts, key=natural_key):
        lines += hosts[host]
    controller = lab.get("controller") or {}
    known = list(_CONTROLLER_KEYS)
    for key in sorted(controller, key=lambda k: (known.index(k) if k in known else len(known), k)):
        lines.append((_CONTROLLER_KEYS.get(key) or "controller %s" % key.replace("_", " "), controller[key]))
    out, seen = [], set()
    for key, value in lines:
        if value is None or value == "" or key in seen:
            continue
        seen.add(key)
        out.append((key, _text(value)))
    return out
