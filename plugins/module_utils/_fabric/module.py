# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric modules' glue: ``run_topology`` (fabric_topology: read, diff, act) and ``run_paths`` (fabric_paths: each
flow's path by the kernel's own lookups, and the fabric's counters)."""

from __future__ import annotations

import os

from .netlink import Fabric, in_netns_fork
from .spec import FabricError, link_table, validate

__all__ = ["run_topology", "run_paths"]


# ------------------------------------------------------------------------------------------------------- modules
def _topology_params(params):
    return {key: params.get(key) for key in ("leaves", "spines", "hosts", "mtu", "hash", "seed", "link_subnet",
                                             "host_rate", "uplink_rate")}


def run_topology(module, netns, iproute, in_netns=in_netns_fork):
    """The fabric_topology module."""
    from .._netns_topology import Topology, _alive, pids_in_namespace, stop_processes

    try:
        topo = validate(_topology_params(module.params))
    except FabricError as exc:
        module.fail_json(msg=str(exc))
    fabric = Fabric(netns, iproute, in_netns)
    stopped = {}
    try:
        if module.params["state"] == "present":
            todo = fabric.missing(topo)
            changed = bool(todo)
            if changed and not module.check_mode:
                fabric.apply(topo)
            diff = {"before": {"missing": todo}, "after": {"missing": []}}
        else:
            todo = fabric.present_namespaces(topo)
            changed = bool(todo)
            running = {ns: pids_in_namespace(ns) for ns in todo}
            running = {ns: pids for ns, pids in running.items() if pids}
            if changed and not module.check_mode:
                for ns, pids in running.items():
                    stopped[ns] = stop_processes([p for p in pids if p != os.getpid()])
                fabric.remove(topo)
                star = {"hosts": [{"address": h["address"]} for h in topo["hosts"]]}
                Topology.remove_server_files(star, module.params["state_dir"])
                Topology.remove_step_files(module.params["state_dir"], _alive)
            diff = {"before": {"namespaces": todo, "processes": running}, "after": {"namespaces": [], "processes": {}}}
    except FabricError as exc:
        module.fail_json(msg=str(exc), changes=[])
    if stopped:
        module.warn("stopped processes still running inside the fabric: %s" % stopped)
    module.exit_json(changed=changed, changes=todo, diff=diff, stopped_processes=stopped,
                     namespaces=fabric.namespaces(topo), links=link_table(topo), hash=topo["hash"], seed=topo["seed"],
                     sysctls=topo["sysctls"])


def run_paths(module, netns, iproute):
    """The fabric_paths module: each flow's path by the kernel's own lookups, and the fabric's counters."""
    try:
        topo = validate(_topology_params(module.params))
        fabric = Fabric(netns, iproute, in_netns_fork)
        missing = [ns for ns in fabric.namespaces(topo) if ns not in set(netns.listnetns())]
        if missing:
            raise FabricError("the fabric is not up (no namespace %s); bring it up first (fabric_topology)"
                              % ", ".join(missing[:3]))
        flows = []
        for i, flow in enumerate(module.params["flows"] or []):
            for key in ("src", "dst", "sport", "dport"):
                if flow.get(key) in (None, ""):
                    raise FabricError("flows[%d].%s: required (the flow's five-tuple: src, dst, sport, dport, proto)"
                                      % (i, key))
            flows.append(dict(flow, id=flow.get("id") or str(i)))
        paths = fabric.lookup(topo, flows)
        counters = fabric.counters(topo) if module.params["counters"] else None
    except FabricError as exc:
        module.fail_json(msg=str(exc))
    result = {"changed": False, "paths": paths}
    if counters is not None:
        result["counters"] = counters
        if module.params.get("step"):
            # for the barrier_report callback: the fabric's snapshots before and after a step, into its run record
            result["fabric_counters"] = {"step": module.params["step"], "label": module.params["label"],
                                         "switches": counters}
    module.exit_json(**result)
