# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The modules' arguments, made from the plan (a ``model.Plan``): one host's ``flow_step`` arguments for a step
(``host_args``), those every host of a step shares (``common_args``), the one task that starts every host's part in
its namespace (``batch_args``), a host's ``throttle`` arguments (``throttle_args``), the route lookups
``fabric_paths_info`` makes before the steps (``lookup_flows``), and the preflight of the experiment's hosts: each
host's ``preflight_info`` arguments (``preflight_args``) and what the controller checks their results against
(``preflight_checks``: the plan's paths, ``host_pairs``). The role passes them on as they are: plain dicts."""

from __future__ import annotations

from ansible_collections.aifabric.lab.plugins.module_utils._flow.perftest_cli import PerftestOptions
from ansible_collections.aifabric.lab.plugins.module_utils._units import parse_rate
from ansible_collections.aifabric.lab.plugins.plugin_utils._fabric.lab import lookup_id
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import PERFTEST_ARGS, VERBS_ARGS
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import PlanError

__all__ = ["host_args", "common_args", "batch_args", "throttle_args", "lookup_flows", "host_pairs", "preflight_args",
           "preflight_checks"]


def host_args(the_plan, host, step, token, throttle=None):
    """The ``aifabric.lab.flow_step`` arguments of ``host`` for ``step``: its servers, its client flows, its job
    program (a job's worker; docs/job-contract.md section 1), the rendezvous, its counters. ``throttle``: the
    throttle module's result for the host (a perftest rate limit becomes the flows' ``rate_limit``; a tc throttle
    adds the interface's qdisc to the counters)."""
    entry = the_plan.host(host)
    this_round = the_plan.round_of(step)
    part = this_round.part(host)
    perftest = the_plan.engine == "perftest"
    rdma = the_plan.engine in ("perftest", "verbs")  # its adapter's counters beside the netdev's
    throttle = throttle or {}
    rate_limit = (throttle.get("flow_args") or {}).get("rate_limit")
    clients = []
    for flow in part.flows:
        out = {"flow_id": flow.flow_id, "address": flow.address, "port": flow.port, "volume": flow.volume,
               "streams": flow.streams}
        if flow.start_offset:
            out["start_offset"] = flow.start_offset  # it joins the running flows that long after the common instant
        streams = the_plan.fabric.streams(step, host, flow.flow_id) if the_plan.fabric else []
        if streams:
            # the fabric lab: each stream from the port whose path the kernel's lookup gave
            out["source_ports"] = [stream.sport for stream in streams]
        if perftest:
            out["source"] = entry.address  # perftest finds its GID from it
            if rate_limit:
                out["rate_limit"] = rate_limit
        clients.append(out)
    servers = []
    for server in part.servers:
        out = {"port": server.port, "expected_clients": server.expected_clients, "address": server.address}
        # perftest: each server process receives one flow's volume; tcp: a ceiling on what a connection may send
        out["volume" if perftest else "max_bytes"] = server.volume if perftest else server.volume * 2
        servers.append(out)
    coordinator = the_plan.rendezvous.host
    rendezvous = {"host": coordinator, "address": the_plan.host(coordinator).address, "port": the_plan.rendezvous.port,
                  "start_at": the_plan.rendezvous.start_at}
    if the_plan.rendezvous.result_grace is not None:
        rendezvous["result_grace"] = the_plan.rendezvous.result_grace
    if host == coordinator:
        # only the coordinating host needs every host and every flow (32 hosts would otherwise get 32x32 entries)
        rendezvous.update(parties=the_plan.participants, expected_flows=this_round.expected_flows)
    counters = None
    if the_plan.counters:
        counters = {"interface": entry.interface, "netdevs": [entry.interface],
                    "qdiscs": [entry.interface] if throttle.get("mechanism") == "tc" else [],
                    "rdma_devices": [entry.rdma_device] if rdma and entry.rdma_device else []}
        if perftest:  # a real NIC's PFC pauses per priority and their duration (none read as {}: docs/nic-qos.md)
            counters["ethtool"] = [entry.interface]
        else:  # the receiving namespace's CE-marked packets, the other end of the switch's marks (docs/congestion.md)
            counters["ipext"] = True
    program = None
    if the_plan.job is not None and host in the_plan.job.ranks:
        program = the_plan.job.programs(the_plan.hosts)[host]
    return {
        "party": host,
        "token": token,
        "step": step,
        "engine": the_plan.engine,
        "perftest": dict({k: v for k, v in the_plan.perftest.items() if k in PERFTEST_ARGS},
                         device=entry.rdma_device) if perftest else {},
        "verbs": dict({k: v for k, v in the_plan.verbs.items() if k in VERBS_ARGS},
                      device=entry.rdma_device) if the_plan.engine == "verbs" else {},
        "tcp": dict(the_plan.tcp),
        "servers": servers,
        "clients": clients,
        "rendezvous": rendezvous,
        "counters": counters,
        "program": program,
        "arm_timeout": the_plan.arm_timeout,
        "timeout": the_plan.timeout,
        "interval": the_plan.interval,
        "strict_start": the_plan.strict_start,
        "start_tolerance": the_plan.start_tolerance,
    }


_COMMON = ("token", "step", "engine", "perftest", "verbs", "tcp", "rendezvous", "arm_timeout", "timeout", "interval",
           "strict_start", "start_tolerance")


def common_args(the_plan, step, token):
    """The ``flow_step`` arguments that every host of ``step`` shares (the coordinating host's rendezvous, with
    every host and flow): what the collect and stop tasks give."""
    args = host_args(the_plan, the_plan.rendezvous.host, step, token)
    return {key: args[key] for key in _COMMON}


def batch_args(the_plan, step, token, throttles=None, only=None):
    """The arguments of one ``flow_step`` task that starts every host's part of ``step`` in its network namespace:
    the common arguments plus ``parts``. ``throttles``: host -> the throttle module's result; ``only``: the hosts
    still in the play (the others are left to the collect task's ``missing``)."""
    if not the_plan.batch_start:
        raise PlanError("batch_args: this plan's hosts are not all network namespaces of one machine (or the engine "
                        "is perftest, or batch_start is false); start each host's part on the host")
    throttles = throttles or {}
    out = common_args(the_plan, step, token)
    out["parts"] = []
    for host in the_plan.participants:
        if only is not None and host not in only:
            continue
        args = host_args(the_plan, host, step, token, throttle=throttles.get(host))
        part = {"party": host, "netns": the_plan.host(host).netns, "servers": args["servers"],
                "clients": args["clients"], "counters": args["counters"]}
        if args["program"] is not None:
            part["program"] = args["program"]
        out["parts"].append(part)
    return out


def throttle_args(the_plan, host):
    """The ``aifabric.lab.throttle`` module's arguments for a throttled host: its rate, the engine whose traffic it
    slows, its interface and RDMA device, and (tc) the peers the rate is shared fairly between."""
    entry = the_plan.host(host)
    if entry.throttle is None:
        raise PlanError("%s is not throttled in this plan (throttled: %s)"
                        % (host, ", ".join(the_plan.throttled) or "none"))
    return {"rate": entry.throttle.rate, "engine": the_plan.engine, "interface": entry.interface,
            "rdma_device": entry.rdma_device, "peers": list(entry.throttle.peers)}


def lookup_flows(the_plan):
    """The flows to ask the fabric about: every candidate source port of every stream (fabric_paths_info' ``flows``)."""
    fabric = the_plan.fabric
    out = []
    for step, hosts in sorted(fabric.ports.items()) if fabric else []:
        flows = {(f.src, f.flow_id): f for f in the_plan.round_of(step).flows()}
        for host, by_flow in sorted(hosts.items()):
            for flow_id, streams in sorted(by_flow.items()):
                flow = flows[(host, flow_id)]
                for i, ports in enumerate(streams):
                    for port in ports:
                        out.append({"id": lookup_id(step, host, flow_id, i, port),
                                    "src": the_plan.host(host).address, "dst": flow.address,
                                    "sport": port, "dport": flow.port, "proto": "tcp"})
    return out


def host_pairs(the_plan):
    """The (source, destination) host pairs of the plan's flows, sorted: the paths its traffic takes."""
    return sorted({(flow.src, flow.dst) for this_round in the_plan.rounds for flow in this_round.flows()
                   if flow.dst != flow.src})


def preflight_args(the_plan, host):
    """The ``aifabric.lab.preflight_info`` arguments of ``host``: its interface and address, the addresses of the
    hosts it shares a path with (as sender, then as receiver), and with the perftest engine its RDMA device and the
    plan's perftest tool (the tcp engine reads neither: no RDMA port or perftest is needed)."""
    entry = the_plan.host(host)
    pairs = host_pairs(the_plan)
    peers = []
    for peer in [b for a, b in pairs if a == host] + [a for a, b in pairs if b == host]:
        if peer not in peers:
            peers.append(peer)
    perftest = the_plan.engine == "perftest"
    return {"interface": entry.interface, "address": entry.address,
            "rdma_device": entry.rdma_device if perftest else None,
            "peers": [the_plan.host(peer).address for peer in peers],
            "perftest_tools": [the_plan.perftest.get("tool") or PerftestOptions().tool] if perftest else []}


def preflight_checks(the_plan):
    """What the controller checks the hosts' ``preflight_info`` results against (the ``preflight_report`` filter's
    arguments): the plan's ``paths`` ([source, destination] pairs), ``expect`` (every data interface at the plan's
    MTU, links at least its line rate; with the perftest engine an active RDMA port with a RoCE v2 GID and the same
    perftest on every host) and each participant's lab ``addresses``."""
    perftest = the_plan.engine == "perftest"
    return {"paths": [list(pair) for pair in host_pairs(the_plan)],
            "expect": {"mtu": the_plan.mtu, "min_gbps": parse_rate(the_plan.line_rate, "line_rate") / 1e9,
                       "rdma": perftest, "perftest": perftest},
            "addresses": {host: the_plan.host(host).address for host in the_plan.participants}}
