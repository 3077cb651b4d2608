# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The embedded lab's topology, derived from the inventory (used by the netns_lab role)."""

from __future__ import annotations

import ipaddress

from ansible_collections.aifabric.lab.plugins.module_utils._tc import ifb_name_for
from ansible_collections.aifabric.lab.plugins.plugin_utils._inventory import InventoryError, lab_address

__all__ = ["LabError", "lab_hosts", "port_name"]


class LabError(ValueError):
    pass


def port_name(host):
    """The host's bridge port in the switch namespace (interface names hold at most 15 characters)."""
    return ("p-" + host)[:15]


def lab_hosts(groups, hostvars, prefix="afl-", subnet="198.18.0.0/24", sinks_group="sinks", workers_group="workers"):
    """``[{namespace, port, address}]`` for the sinks then the workers; every error names the host and the fix."""
    try:
        network = ipaddress.ip_network(subnet, strict=False)
    except ValueError:
        raise LabError("lab_subnet: %r is not a subnet (e.g. 198.18.0.0/24)" % (subnet,)) from None
    sinks = list(groups.get(sinks_group) or [])
    workers = list(groups.get(workers_group) or [])
    if not sinks:
        raise LabError("the inventory has no host in group %r; the lab needs a sink" % sinks_group)
    if not workers:
        raise LabError("the inventory has no host in group %r; the lab needs workers" % workers_group)
    out, ports, ifbs = [], {}, {}
    for host in sinks + workers:
        try:
            ip = lab_address(hostvars, host, network)
        except InventoryError as exc:
            raise LabError(str(exc)) from None
        port = port_name(host)
        if port in ports:
            raise LabError("hosts %s and %s share the port name %s (first 13 characters); rename one" % (
                ports[port], host, port))
        ports[port] = host
        ifb = ifb_name_for(port)  # what the port's ingress shaper redirects to (tc_shape's default name)
        if ifb in ifbs:
            raise LabError("hosts %s and %s share the ifb device name %s (first 9 characters); rename one" % (
                ifbs[ifb], host, ifb))
        ifbs[ifb] = host
        out.append({"namespace": prefix + host, "port": port, "address": "%s/%d" % (ip, network.prefixlen)})
    return out
