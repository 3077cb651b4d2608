# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric lab's description, checked: the modules' argument spec (``FABRIC_ARGS``, documented in
doc_fragments/fabric.py), ``validate`` (leaves with their subnet and gateway, spines, hosts with their leaf and port,
the leaf-spine links with their /31 addresses, every switch's sysctls), the links by name (``link_table``) and the
shapers every port gets. Pure data: no netlink, no namespace; the controller reads it too (``plugin_utils/_fabric``).
"""

from __future__ import annotations

import ipaddress
import re

from .._link import link_name
from .._netns_enter import valid_name
from .._units import UnitError, format_rate, parse_rate

__all__ = ["FABRIC_ARGS", "FabricError", "HASHES", "BRIDGE", "PORT_BUCKETS", "fabric_params", "link_names",
           "link_table", "shapers", "validate"]

FABRIC_ARGS = dict(
    leaves=dict(type="list", elements="dict", required=True, options=dict(
        name=dict(type="str", required=True),
        namespace=dict(type="str", required=True),
        gateway=dict(type="str", required=True),
    )),
    spines=dict(type="list", elements="dict", default=[], options=dict(
        name=dict(type="str", required=True),
        namespace=dict(type="str", required=True),
    )),
    hosts=dict(type="list", elements="dict", default=[], options=dict(
        name=dict(type="str", required=True),
        namespace=dict(type="str", required=True),
        leaf=dict(type="str", required=True),
        address=dict(type="str", required=True),
        port=dict(type="str"),
        interface=dict(type="str", default="eth0"),
    )),
    mtu=dict(type="int", default=9000),
    hash=dict(type="str", default="l4", choices=["l3", "l4"]),
    seed=dict(type="int"),
    link_subnet=dict(type="str", default="198.19.0.0/16"),
    host_rate=dict(type="str"),
    uplink_rate=dict(type="str"),
)


def fabric_params(params):
    """The fabric's description among a module's parameters (the ``FABRIC_ARGS`` options), for ``validate``."""
    return {key: params.get(key) for key in FABRIC_ARGS}


_IFNAME = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")


BRIDGE = "br0"


# what each hash choice writes: fib_multipath_hash_policy, fib_multipath_hash_fields
HASHES = {"l3": (0, None), "l4": (3, 0x37)}


class FabricError(ValueError):
    pass


def _name(value, where):
    if not value or not valid_name(str(value)):
        raise FabricError("%s: %r is not a namespace name (letters, digits, . _ -; at most 64)" % (where, value))
    return str(value)


def link_names(leaf_index, spine_index):
    """The interface names of the link between leaf i and spine k (1-based): the leaf's ``s<k>``, the spine's
    ``l<i>``."""
    return "s%d" % spine_index, "l%d" % leaf_index


def validate(params):
    """The normalised fabric: leaves (with subnet and gateway), spines, hosts (with leaf and port), links with their
    /31 addresses, the sysctls of every switch. Every error names the parameter and the fix."""
    mtu = params.get("mtu") or 9000
    if not 68 <= mtu <= 65535:
        raise FabricError("mtu: %d is outside 68-65535" % mtu)
    hash_name = params.get("hash") or "l4"
    if hash_name not in HASHES:
        raise FabricError("hash: %r; use l3 (addresses) or l4 (the five-tuple)" % (hash_name,))
    seed = params.get("seed")
    if seed is not None and not 0 <= int(seed) <= 0xFFFFFFFF:
        raise FabricError("seed: %r is outside 0-4294967295" % (seed,))
    try:
        link_net = ipaddress.ip_network(params.get("link_subnet") or "198.19.0.0/16")
    except ValueError:
        raise FabricError("link_subnet: %r is not an IPv4 network (e.g. 198.19.0.0/16)"
                          % (params.get("link_subnet"),)) from None
    leaves, spines, seen = [], [], set()
    for i, leaf in enumerate(params.get("leaves") or []):
        where = "leaves[%d]" % i
        ns = _name(leaf.get("namespace"), where + ".namespace")
        try:
            gateway = ipaddress.ip_interface(leaf.get("gateway"))
        except ValueError:
            raise FabricError("%s.gateway: %r is not an address with a prefix (e.g. 198.18.1.254/24)"
                              % (where, leaf.get("gateway"))) from None
        if gateway.version != 4:
            raise FabricError("%s.gateway: the fabric lab is IPv4 (got %s)" % (where, gateway))
        leaves.append({"name": str(leaf.get("name") or ns), "namespace": ns, "gateway": str(gateway),
                       "subnet": str(gateway.network), "index": i + 1})
    for k, spine in enumerate(params.get("spines") or []):
        ns = _name(spine.get("namespace"), "spines[%d].namespace" % k)
        spines.append({"name": str(spine.get("name") or ns), "namespace": ns, "index": k + 1})
    if not leaves:
        raise FabricError("leaves: the fabric needs at least one leaf")
    if len(leaves) > 1 and not spines:
        raise FabricError("spines: leaves reach each other through spines; give at least one")
    for item in leaves + spines:
        if item["namespace"] in seen:
            raise FabricError("namespace %s is used twice; every switch and host needs its own" % item["namespace"])
        seen.add(item["namespace"])
    for a in range(len(leaves)):
        for b in range(a + 1, len(leaves)):
            if ipaddress.ip_network(leaves[a]["subnet"]).overlaps(ipaddress.ip_network(leaves[b]["subnet"])):
                raise FabricError("leaves %s and %s: subnets %s and %s overlap; give each leaf its own" % (
                    leaves[a]["name"], leaves[b]["name"], leaves[a]["subnet"], leaves[b]["subnet"]))
    by_leaf = {leaf["name"]: leaf for leaf in leaves}
    hosts, ports, addresses = [], set(), set()
    for j, host in enumerate(params.get("hosts") or []):
        where = "hosts[%d]" % j
        ns = _name(host.get("namespace"), where + ".namespace")
        if ns in seen:
            raise FabricError("%s.namespace: %s is used twice" % (where, ns))
        seen.add(ns)
        leaf = by_leaf.get(host.get("leaf"))
        if leaf is None:
            raise FabricError("%s.leaf: %r is not one of the leaves (%s)" % (where, host.get("leaf"),
                                                                             ", ".join(by_leaf)))
        try:
            addr = ipaddress.ip_interface(host.get("address"))
        except ValueError:
            raise FabricError("%s.address: %r is not an address with a prefix" % (where, host.get("address"))) \
                from None
        if addr.network != ipaddress.ip_network(leaf["subnet"]) or str(addr.ip) == leaf["gateway"].split("/")[0]:
            raise FabricError("%s.address: %s is not a host address of its leaf %s's subnet %s (gateway %s)" % (
                where, addr, leaf["name"], leaf["subnet"], leaf["gateway"]))
        if addr.ip in addresses:
            raise FabricError("%s.address: %s is used twice" % (where, addr.ip))
        addresses.add(addr.ip)
        port = str(host.get("port") or ("h-" + str(host.get("name") or ns))[:15])
        iface = str(host.get("interface") or "eth0")
        for key, value in (("port", port), ("interface", iface)):
            if not _IFNAME.match(value):
                raise FabricError("%s.%s: %r is not an interface name (at most 15 characters)" % (where, key, value))
        if (leaf["name"], port) in ports:
            raise FabricError("%s.port: %s is used twice on leaf %s (names are cut at 15 characters); rename one"
                              % (where, port, leaf["name"]))
        ports.add((leaf["name"], port))
        hosts.append({"name": str(host.get("name") or ns), "namespace": ns, "leaf": leaf["name"],
                      "address": str(addr), "port": port, "interface": iface})
    links = []
    pairs = len(leaves) * len(spines)
    if pairs * 2 > link_net.num_addresses:
        raise FabricError("link_subnet: %s holds %d addresses; %d leaf-spine links need %d" % (
            link_net, link_net.num_addresses, pairs, pairs * 2))
    for leaf in leaves:
        for spine in spines:
            n = (leaf["index"] - 1) * len(spines) + (spine["index"] - 1)
            leaf_if, spine_if = link_names(leaf["index"], spine["index"])
            links.append({"leaf": leaf["name"], "spine": spine["name"], "leaf_interface": leaf_if,
                          "spine_interface": spine_if, "leaf_address": str(link_net.network_address + 2 * n),
                          "spine_address": str(link_net.network_address + 2 * n + 1)})
    rates = {}
    for key in ("host_rate", "uplink_rate"):
        if params.get(key):
            try:
                rates[key] = format_rate(parse_rate(params[key], key, minimum=1000))
            except UnitError as exc:
                raise FabricError(str(exc)) from None
        else:
            rates[key] = None
    policy, fields = HASHES[hash_name]
    sysctls = {"net.ipv4.ip_forward": 1, "net.ipv4.conf.all.rp_filter": 0, "net.ipv4.conf.default.rp_filter": 0,
               "net.ipv4.fib_multipath_hash_policy": policy}
    if fields is not None:
        sysctls["net.ipv4.fib_multipath_hash_fields"] = fields
    if seed is not None:
        sysctls["net.ipv4.fib_multipath_hash_seed"] = int(seed)
    return {"leaves": leaves, "spines": spines, "hosts": hosts, "links": links, "mtu": mtu, "hash": hash_name,
            "seed": None if seed is None else int(seed), "sysctls": sysctls, "host_rate": rates["host_rate"],
            "uplink_rate": rates["uplink_rate"]}


def shapers(topo):
    """``[(namespace, device, direction, rate)]``: every port shaped to its link's rate in the direction it sends
    (a leaf's uplinks and a spine's links at uplink_rate; a leaf's host port toward its host, and what the host sends
    into it through an ifb, at host_rate)."""
    out = []
    ns_of = {x["name"]: x["namespace"] for x in topo["leaves"] + topo["spines"]}
    if topo.get("uplink_rate"):
        for lk in topo["links"]:
            out.append((ns_of[lk["leaf"]], lk["leaf_interface"], "egress", topo["uplink_rate"]))
            out.append((ns_of[lk["spine"]], lk["spine_interface"], "egress", topo["uplink_rate"]))
    if topo.get("host_rate"):
        for host in topo["hosts"]:
            out.append((ns_of[host["leaf"]], host["port"], "egress", topo["host_rate"]))
            out.append((ns_of[host["leaf"]], host["port"], "ingress", topo["host_rate"]))
    return out


# Every port shares its rate max-min fairly between the streams of a step, one class per bucket of the TCP source
# port: the plan puts every stream of a step in a bucket of its own (plugin_utils/_fabric/lab.assign_ports). Between
# flows that share a plain FIFO, TCP on this 2-core machine drifts 5-7% apart over a 16 s step.
PORT_BUCKETS = 64


def link_table(topo):
    """Every link of the fabric by name (``leaf1->spine2``, ``spine2->leaf1``, ``worker1->leaf1``,
    ``leaf1->worker1``): the switch whose port sends into it, the port, and its rate."""
    out = {}
    for lk in topo["links"]:
        rate = topo.get("uplink_rate")
        out[link_name(lk["leaf"], lk["spine"])] = {"switch": lk["leaf"], "interface": lk["leaf_interface"],
                                                   "rate": rate, "tier": "uplink"}
        out[link_name(lk["spine"], lk["leaf"])] = {"switch": lk["spine"], "interface": lk["spine_interface"],
                                                   "rate": rate, "tier": "downlink"}
    for host in topo["hosts"]:
        # what a host sends is counted where it enters its leaf (the port's receive counters)
        out[link_name(host["name"], host["leaf"])] = {"switch": host["leaf"], "interface": host["port"],
                                                      "counter": "rx_bytes", "rate": topo.get("host_rate"),
                                                      "tier": "host"}
        out[link_name(host["leaf"], host["name"])] = {"switch": host["leaf"], "interface": host["port"],
                                                      "rate": topo.get("host_rate"), "tier": "host"}
    return out
