# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric_paths_info module's glue: its arguments, and ``run_module`` (each flow's path by the kernel's own lookups,
and the fabric's counters, from ``netlink.Fabric``)."""

from __future__ import annotations

from .. import _pyroute2
from .netlink import Fabric, in_netns_fork
from .spec import FABRIC_ARGS, FabricError, fabric_params, validate


def module_args():
    """AnsibleModule's keyword arguments for fabric_paths_info."""
    return dict(
        argument_spec=dict(FABRIC_ARGS, flows=dict(type="list", elements="dict", default=[], options=dict(
            id=dict(type="str"),
            src=dict(type="str", required=True),
            dst=dict(type="str", required=True),
            sport=dict(type="int", required=True),
            dport=dict(type="int", required=True),
            proto=dict(type="str", default="tcp", choices=["tcp", "udp"]),
        )), counters=dict(type="bool", default=False), step=dict(type="str"),
            label=dict(type="str", default="before", choices=["before", "after"])),
        supports_check_mode=True,
    )


def run_module(module, netns=None, iproute=None, in_netns=in_netns_fork):
    _pyroute2.require_pyroute2(module)
    netns = netns or _pyroute2.netns
    try:
        topo = validate(fabric_params(module.params))
        fabric = Fabric(netns, iproute or _pyroute2.IPRoute, in_netns)
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
