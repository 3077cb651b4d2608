# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The port_counters_info module's glue: its arguments, and ``run_module`` (one snapshot of the wire's counters,
``_counters.snapshot``)."""

from __future__ import annotations

from . import _pyroute2
from ._counters import EthtoolError, marked_ports, snapshot
from ._tc import ShapeError


def module_args():
    """AnsibleModule's keyword arguments for port_counters_info."""
    return dict(
        argument_spec=dict(
            rdma_devices=dict(type="list", elements="str"),
            netdevs=dict(type="list", elements="str", default=[]),
            qdiscs=dict(type="list", elements="str", default=[]),
            ethtool=dict(type="list", elements="str", default=[]),
            ecn=dict(type="list", elements="str", default=[]),
            ecn_discover=dict(type="bool", default=False),
            step=dict(type="str"),
            label=dict(type="str"),
            interface=dict(type="str"),
            engine=dict(type="str"),
        ),
        supports_check_mode=True,
    )


def run_module(module, **readers):
    params = module.params
    wants_netlink = params["qdiscs"] or params["ethtool"] or params["ecn"] or params["ecn_discover"]
    if wants_netlink:
        _pyroute2.require_pyroute2(module)
    try:
        if params["qdiscs"] or params["ecn"] or params["ecn_discover"]:
            with _pyroute2.IPRoute() as ipr:
                ecn, qdiscs = list(params["ecn"]), list(params["qdiscs"])
                if params["ecn_discover"]:
                    # each marked port's qdisc too: its drops are the marker's, and its own queue's beside them
                    found = marked_ports(ipr)
                    ecn += [name for name in found if name not in ecn]
                    qdiscs += [name for name in found if name not in qdiscs]
                counters = snapshot(rdma=params["rdma_devices"], netdevs=params["netdevs"], qdiscs=qdiscs,
                                    ipr=ipr, ethtool=params["ethtool"], ecn=ecn, **readers)
                if params["ecn_discover"] and "ecn" not in counters:
                    counters["ecn"], counters["ecn_queue"] = {}, {}
        else:
            counters = snapshot(rdma=params["rdma_devices"], netdevs=params["netdevs"], ethtool=params["ethtool"],
                                **readers)
    except (KeyError, ShapeError, EthtoolError) as exc:
        module.fail_json(msg=str(exc).strip('"'))
    module.exit_json(changed=False, counters=counters,
                     **{k: params[k] for k in ("label", "interface", "engine", "step") if params[k]})
