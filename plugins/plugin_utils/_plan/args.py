# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The modules' arguments, made from the plan: one host's ``flow_step`` arguments for a step (``host_args``), those
every host of a step shares (``common_args``), and the one task that starts every host's part in its namespace
(``batch_args``). The role passes them on as they are."""

from __future__ import annotations

from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import (
    PERFTEST_ARGS,
    ExperimentError,
    round_of,
)

__all__ = ["host_args", "common_args", "batch_args"]


def host_args(the_plan, host, step, token, throttle=None):
    """The ``aifabric.lab.flow_step`` arguments of ``host`` for ``step``: its servers, its client flows, the rendezvous,
    its counters. ``throttle``: the throttle module's result for the host (a perftest rate limit becomes the flows'
    ``rate_limit``; a tc throttle adds the interface's qdisc to the counters)."""
    entry = the_plan["hosts"][host]
    this_round = round_of(the_plan, step)
    part = this_round["hosts"].get(host) or {"servers": [], "clients": []}
    interface = entry["interface"]
    rdma_device = entry.get("rdma_device")
    perftest = the_plan["engine"] == "perftest"
    throttle = throttle or {}
    rate_limit = (throttle.get("flow_args") or {}).get("rate_limit")
    clients = []
    placed = ((the_plan.get("fabric") or {}).get("flows") or {}).get(step, {}).get(host, {})
    for client in part["clients"]:
        out = {key: client[key] for key in ("flow_id", "address", "port", "volume", "streams")}
        if client["flow_id"] in placed:
            # the fabric lab: each stream from the port whose path the kernel's lookup gave
            out["source_ports"] = [sub["sport"] for sub in placed[client["flow_id"]]]
        if perftest:
            out["source"] = entry["address"]  # perftest finds its GID from it
            if rate_limit:
                out["rate_limit"] = rate_limit
        clients.append(out)
    servers = []
    for server in part["servers"]:
        out = {key: server[key] for key in ("port", "expected_clients", "address")}
        # perftest: each server process receives one flow's volume; tcp: a ceiling on what a connection may send
        out["volume" if perftest else "max_bytes"] = server["volume"] if perftest else server["volume"] * 2
        servers.append(out)
    rendezvous = dict(the_plan["rendezvous"], expected_flows=this_round["expected_flows"])
    if host != rendezvous["host"]:
        # only the coordinating host needs every host and every flow (32 hosts would otherwise get 32x32 entries)
        for key in ("parties", "expected_flows"):
            rendezvous.pop(key)
    counters = None
    if the_plan["counters"]:
        counters = {"interface": interface, "netdevs": [interface],
                    "qdiscs": [interface] if throttle.get("mechanism") == "tc" else [],
                    "rdma_devices": [rdma_device] if perftest and rdma_device else []}
    return {
        "party": host,
        "token": token,
        "step": step,
        "engine": the_plan["engine"],
        "perftest": dict({k: v for k, v in the_plan["perftest"].items() if k in PERFTEST_ARGS},
                         device=rdma_device) if perftest else {},
        "servers": servers,
        "clients": clients,
        "rendezvous": rendezvous,
        "counters": counters,
        "arm_timeout": the_plan["arm_timeout"],
        "timeout": the_plan["timeout"],
        "interval": the_plan["interval"],
        "strict_start": the_plan["strict_start"],
        "start_tolerance": the_plan["start_tolerance"],
    }


_COMMON = ("token", "step", "engine", "perftest", "rendezvous", "arm_timeout", "timeout", "interval", "strict_start",
           "start_tolerance")


def common_args(the_plan, step, token):
    """The ``flow_step`` arguments that every host of ``step`` shares (the coordinating host's rendezvous, with
    every host and flow): what the collect and stop tasks give."""
    args = host_args(the_plan, the_plan["rendezvous"]["host"], step, token)
    return {key: args[key] for key in _COMMON}


def batch_args(the_plan, step, token, throttles=None, only=None):
    """The arguments of one ``flow_step`` task that starts every host's part of ``step`` in its network namespace:
    the common arguments plus ``parts``. ``throttles``: host -> the throttle module's result; ``only``: the hosts
    still in the play (the others are left to the collect task's ``missing``)."""
    if not the_plan.get("batch_start"):
        raise ExperimentError("batch_args: this plan's hosts are not all network namespaces of one machine (or the "
                              "engine is perftest, or batch_start is false); start each host's part on the host")
    throttles = throttles or {}
    out = common_args(the_plan, step, token)
    out["parts"] = []
    for host in the_plan["participants"]:
        if only is not None and host not in only:
            continue
        args = host_args(the_plan, host, step, token, throttle=throttles.get(host))
        out["parts"].append({"party": host, "netns": the_plan["hosts"][host]["netns"], "servers": args["servers"],
                             "clients": args["clients"], "counters": args["counters"]})
    return out
