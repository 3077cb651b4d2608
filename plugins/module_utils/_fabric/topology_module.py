# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric_topology module's glue: its arguments, and ``run_module`` (the fabric checked by ``spec.validate``, read,
compared and built or removed by ``netlink.Fabric``)."""

from __future__ import annotations

import os

from .. import _pyroute2
from .._netns_topology import Topology, _alive, pids_in_namespace, stop_processes
from .netlink import Fabric, in_netns_fork
from .spec import FABRIC_ARGS, FabricError, fabric_params, link_table, validate


def module_args():
    """AnsibleModule's keyword arguments for fabric_topology."""
    return dict(
        argument_spec=dict(FABRIC_ARGS, state=dict(type="str", default="present", choices=["present", "absent"]),
                           state_dir=dict(type="path", default="/run/aifabric-lab")),
        supports_check_mode=True,
    )


def run_module(module, netns=None, iproute=None, in_netns=in_netns_fork):
    _pyroute2.require_pyroute2(module)
    try:
        topo = validate(fabric_params(module.params))
    except FabricError as exc:
        module.fail_json(msg=str(exc))
    fabric = Fabric(netns or _pyroute2.netns, iproute or _pyroute2.IPRoute, in_netns)
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
