# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An experiment, described once, expanded into the flows of a step.

An experiment is a dict (from the inventory's ``experiment`` or ``-e``)::

    name: barrier            # report label; steps are named <name> or <name>-<n> when repeated
    kind: barrier            # or baseline (a single flow, the elephant)
    pattern: incast          # who sends to whom; see PATTERNS
    workers: 3               # the first N hosts of the workers group (all when omitted)
    volume: 1GB              # per flow
    steps: 1                 # repeated steps, each with its own start instant
    throttles: {worker3: 2gbit}
    engine: tcp
    port: 18600              # first port; tcp: a destination's flows share its server; perftest: one port per flow
    timeout: 120
    start_lead: null         # seconds from planning to the start instant; null = 2 + 0.15 * flows

``plan()`` returns per-host roles (servers to run, client flows to send, throttles to apply) and each flow's path of
links with rates, which the barrier report's fair-share prediction reads. New patterns add a function to PATTERNS;
the playbooks consume only the plan.
"""

from __future__ import annotations

import ipaddress

from ansible_collections.aifabric.lab.plugins.module_utils._units import UnitError, format_rate, parse_rate, parse_size
from ansible_collections.aifabric.lab.plugins.plugin_utils._fair_share import roce_goodput

__all__ = ["ExperimentError", "plan", "PATTERNS"]


class ExperimentError(ValueError):
    """An experiment that cannot run; the message names the field, the value and the fix."""


def _incast(workers, sinks):
    """Every worker sends to the first sink: the collective step of the seed."""
    return [(w, sinks[0]) for w in workers]


def _ring(workers, sinks):
    """Every worker sends to the next, the last to the first: one step of a ring all-reduce (no sink). Each link
    carries one flow, so the step is as slow as the slowest link."""
    if len(workers) < 2:
        raise ExperimentError("experiment.pattern: ring needs 2 workers or more (got %d)" % len(workers))
    return [(w, workers[(i + 1) % len(workers)]) for i, w in enumerate(workers)]


PATTERNS = {"incast": _incast, "ring": _ring}
NEEDS_SINK = {"incast"}
_KNOWN = {"name", "kind", "pattern", "workers", "volume", "steps", "throttles", "engine", "port", "timeout",
          "start_lead", "interval", "description", "perftest", "counters",
          "start_tolerance"}


def _address(hostvars, host):
    addr = (hostvars.get(host) or {}).get("lab_address")
    if not addr:
        raise ExperimentError("host %s has no lab_address; set it in the inventory (e.g. 198.18.0.11)" % host)
    try:
        return str(ipaddress.ip_interface(addr).ip)
    except ValueError:
        raise ExperimentError("host %s: lab_address %r is not an IP address" % (host, addr)) from None


def plan(experiment, groups, hostvars, line_rate="8gbit", mtu=9000, switch="switch"):
    """Expand ``experiment`` over the inventory. ``groups``/``hostvars`` are Ansible's magic variables."""
    if not isinstance(experiment, dict):
        raise ExperimentError("experiment: expected a dict (name, pattern, volume, ...), got %r" % (experiment,))
    unknown = sorted(set(experiment) - _KNOWN)
    if unknown:
        raise ExperimentError("experiment: unknown field(s) %s; known: %s"
                              % (", ".join(unknown), ", ".join(sorted(_KNOWN))))
    pattern = experiment.get("pattern", "incast")
    if pattern not in PATTERNS:
        raise ExperimentError("experiment.pattern: %r is not known; use one of %s" % (pattern, ", ".join(PATTERNS)))
    kind = experiment.get("kind", "barrier")
    if kind not in ("barrier", "baseline"):
        raise ExperimentError("experiment.kind: %r; use barrier or baseline" % kind)
    pool = list(groups.get("workers") or [])
    sinks = list(groups.get("sinks") or [])
    if not sinks and pattern in NEEDS_SINK:
        raise ExperimentError("the inventory has no host in group 'sinks'; a step needs a sink to send to")
    if not pool:
        raise ExperimentError("the inventory has no host in group 'workers'")
    count = experiment.get("workers", len(pool))
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= len(pool):
        raise ExperimentError("experiment.workers: %r; give a number from 1 to %d (the workers in the inventory)"
                              % (count, len(pool)))
    workers = pool[:count]
    try:
        volume = parse_size(experiment.get("volume", "1GB"), "experiment.volume")
        line = parse_rate(line_rate, "lab_line_rate")
        throttles = {}
        for host, rate in (experiment.get("throttles") or {}).items():
            if host not in pool and host not in sinks:
                raise ExperimentError("experiment.throttles: %r is not a lab host (workers: %s)"
                                      % (host, ", ".join(pool)))
            throttles[host] = parse_rate(rate, "experiment.throttles.%s" % host)
    except UnitError as exc:
        raise ExperimentError(str(exc)) from None
    steps = experiment.get("steps", 1)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ExperimentError("experiment.steps: %r; give a whole number of steps, 1 or more" % (steps,))
    port = experiment.get("port", 18600)
    if isinstance(port, bool) or not isinstance(port, int) or not 1024 <= port <= 65535:
        raise ExperimentError("experiment.port: %r; give a port from 1024 to 65535" % (port,))
    timeout = experiment.get("timeout", 120)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ExperimentError("experiment.timeout: %r; give seconds, more than 0" % (timeout,))
    engine = experiment.get("engine", "tcp")
    if engine not in ("tcp", "perftest"):
        raise ExperimentError("experiment.engine: %r; use tcp or perftest" % (engine,))
    rdma_mtu = (experiment.get("perftest") or {}).get("rdma_mtu", 1024)
    if rdma_mtu not in (256, 512, 1024, 2048, 4096):
        raise ExperimentError("experiment.perftest.rdma_mtu: %r; the RDMA path MTU is 256, 512, 1024, 2048 or 4096 "
                              "(soft-RoCE on a 1500-byte link: 1024)" % (rdma_mtu,))
    pairs = PATTERNS[pattern](workers, sinks)
    lead = experiment.get("start_lead")
    if lead is None:
        lead = round(2.0 + 0.15 * len(pairs), 2)
    elif isinstance(lead, bool) or not isinstance(lead, (int, float)) or lead <= 0:
        raise ExperimentError("experiment.start_lead: %r; give seconds, more than 0" % (lead,))
    tolerance = experiment.get("start_tolerance")
    if tolerance is not None and (isinstance(tolerance, bool) or not isinstance(tolerance, (int, float))
                                  or not 0 <= tolerance <= 1):
        raise ExperimentError("experiment.start_tolerance: %r; give seconds from 0 to 1 (the flow module's default is "
                              "0.001; slow VMs need more)" % (tolerance,))
    name = str(experiment.get("name") or kind)
    hosts = {}

    def host_entry(host):
        return hosts.setdefault(
            host, {"servers": [], "clients": [], "throttle": None, "address": _address(hostvars, host)})

    bottlenecks = {}
    for src, dst in pairs:
        link = "%s->%s" % (switch if pattern in NEEDS_SINK else src, dst)
        bottlenecks[dst] = link
        path = [{"link": link, "rate": format_rate(line)}]
        if src in throttles:
            path.append({"link": "%s egress" % src, "rate": format_rate(throttles[src])})
        server = next((s for s in host_entry(dst)["servers"]), None)
        if server is None:
            server = {"port": port, "expected_clients": 0, "address": host_entry(dst)["address"]}
            host_entry(dst)["servers"].append(server)
        server["expected_clients"] += 1
        host_entry(src)["clients"].append({
            "flow_id": src,
            "address": host_entry(dst)["address"],
            # a perftest server serves one client: the destination runs one per client on port, port + 1, ...
            "port": server["port"] + (server["expected_clients"] - 1 if engine == "perftest" else 0),
            "volume": volume,
            "annotations": {
                "kind": kind,
                "pattern": pattern,
                "path": path,
                "mtu": mtu,
                "bottleneck": format_rate(line),
                "throttle": format_rate(throttles[src]) if src in throttles else None,
                "throttle_mechanism": "tc htb on %s's egress" % src if src in throttles else None,
                "engine": engine,
                "goodput_factor": roce_goodput(rdma_mtu) if engine == "perftest" else None,
                "expected_workers": sorted({source for source, _dest in pairs}),
            },
        })
    for host, rate in throttles.items():
        if host in hosts:
            host_entry(host)["throttle"] = format_rate(rate)
    return {
        "name": name,
        "kind": kind,
        "pattern": pattern,
        "steps": [name if steps == 1 else "%s-%d" % (name, i + 1) for i in range(steps)],
        "volume": volume,
        "line_rate": format_rate(line),
        "mtu": mtu,
        "timeout": timeout,
        "start_lead": lead,
        "engine": engine,
        "perftest": dict(experiment.get("perftest") or {}),
        "counters": bool(experiment.get("counters", True)),
        "start_tolerance": tolerance,
        "interval": experiment.get("interval", 1.0),
        "hosts": hosts,
        "participants": sorted(hosts),
        "sources": sorted(h for h, e in hosts.items() if e["clients"]),
        "destinations": sorted(h for h, e in hosts.items() if e["servers"]),
        "throttled": sorted(h for h, e in hosts.items() if e["throttle"]),
    }
