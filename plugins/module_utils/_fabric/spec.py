# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric lab's description, checked: the modules' argument spec (``FABRIC_ARGS``, documented in
doc_fragments/fabric.py), ``validate`` (leaves with their subnet and gateway, spines, hosts with their leaf and port,
the leaf-spine links with their /31 addresses, every switch's sysctls), the links by name (``link_table``) and the
shapers every port gets. Pure data: no netlink, no namespace; the controller reads it too (``plugin_utils/_fabric``).

Three shapes, all from the same description: a 2-tier leaf-spine (every leaf linked to every spine); a 3-tier Clos
(leaves and spines in ``pod``s, a leaf linked to its pod's spines, each spine to the ``superspines`` of its plane: a
superspine of ``plane`` k above the k-th spine of every pod, one without a plane above every spine); a rail-optimized
fabric (the leaves are rails; a host's NICs are hosts of one ``machine``, each on its rail, and with ``relay`` each
NIC joined to its machine's other NICs by an in-host link it forwards over: a flow to another rail crosses to its
machine's NIC on that rail and takes the rail alone, as NCCL's PXN does over NVLink).
"""

from __future__ import annotations

import ipaddress
import re

from .._link import link_name
from .._netns_enter import valid_name
from .._units import UnitError, format_rate, parse_rate

__all__ = ["FABRIC_ARGS", "FabricError", "HASHES", "BRIDGE", "PORT_BUCKETS", "fabric_params", "link_names",
           "link_table", "relay_hosts", "relay_switch", "shapers", "switches", "validate"]

FABRIC_ARGS = dict(
    leaves=dict(type="list", elements="dict", required=True, options=dict(
        name=dict(type="str", required=True),
        namespace=dict(type="str", required=True),
        gateway=dict(type="str", required=True),
        pod=dict(type="str"),
    )),
    spines=dict(type="list", elements="dict", default=[], options=dict(
        name=dict(type="str", required=True),
        namespace=dict(type="str", required=True),
        pod=dict(type="str"),
    )),
    superspines=dict(type="list", elements="dict", default=[], options=dict(
        name=dict(type="str", required=True),
        namespace=dict(type="str", required=True),
        plane=dict(type="int"),
    )),
    hosts=dict(type="list", elements="dict", default=[], options=dict(
        name=dict(type="str", required=True),
        namespace=dict(type="str", required=True),
        leaf=dict(type="str", required=True),
        address=dict(type="str", required=True),
        port=dict(type="str"),
        interface=dict(type="str", default="eth0"),
        machine=dict(type="str"),
    )),
    relay=dict(type="bool", default=False),
    mtu=dict(type="int", default=9000),
    hash=dict(type="str", default="l4", choices=["l3", "l4"]),
    seed=dict(type="int"),
    link_subnet=dict(type="str", default="198.19.0.0/16"),
    host_rate=dict(type="str"),
    uplink_rate=dict(type="str"),
    superspine_rate=dict(type="str"),
    relay_rate=dict(type="str"),
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


def _pod(value):
    return None if value in (None, "") else str(value)


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
                       "subnet": str(gateway.network), "index": i + 1, "pod": _pod(leaf.get("pod"))})
    for k, spine in enumerate(params.get("spines") or []):
        ns = _name(spine.get("namespace"), "spines[%d].namespace" % k)
        spines.append({"name": str(spine.get("name") or ns), "namespace": ns, "index": k + 1,
                       "pod": _pod(spine.get("pod"))})
    supers = []
    for c, sup in enumerate(params.get("superspines") or []):
        ns = _name(sup.get("namespace"), "superspines[%d].namespace" % c)
        plane = sup.get("plane")
        if plane is not None and (isinstance(plane, bool) or int(plane) < 1):
            raise FabricError("superspines[%d].plane: %r; give the spine position (1, 2, ...) it stands above in "
                              "every pod, or none to stand above every spine" % (c, plane))
        supers.append({"name": str(sup.get("name") or ns), "namespace": ns, "index": c + 1,
                       "plane": None if plane is None else int(plane)})
    podded = [x["name"] for x in leaves + spines if x["pod"] is not None]
    if podded and len(podded) != len(leaves) + len(spines):
        raise FabricError("pod: %s have a pod and %s not; give every leaf and spine its pod (or none)" % (
            ", ".join(podded), ", ".join(x["name"] for x in leaves + spines if x["pod"] is None)))
    if supers and not podded:
        raise FabricError("superspines: a 3-tier fabric is pods of leaves and spines under superspines; give every "
                          "leaf and spine its pod")
    if podded and len({x["pod"] for x in leaves}) > 1 and not supers:
        raise FabricError("superspines: pods reach each other through superspines; give at least one")
    for leaf in leaves:
        if leaf["pod"] is not None and not any(sp["pod"] == leaf["pod"] for sp in spines) and len(leaves) > 1:
            raise FabricError("leaf %s: its pod %s has no spine" % (leaf["name"], leaf["pod"]))
    if not leaves:
        raise FabricError("leaves: the fabric needs at least one leaf")
    if len(leaves) > 1 and not spines:
        raise FabricError("spines: leaves reach each other through spines; give at least one")
    for item in leaves + spines + supers:
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
        entry = {"name": str(host.get("name") or ns), "namespace": ns, "leaf": leaf["name"],
                 "address": str(addr), "port": port, "interface": iface}
        if host.get("machine") not in (None, ""):
            entry["machine"] = str(host["machine"])
        hosts.append(entry)
    relay = bool(params.get("relay"))
    links = []
    pairs = len(leaves) * len(spines)
    machines = {}
    for host in hosts:
        if host.get("machine"):
            machines.setdefault(host["machine"], []).append(host)
    if relay and not machines:
        raise FabricError("relay: the in-host relay joins the NICs of one machine; give the hosts their machine")
    relay_pairs = [(m, a, b) for m, nics in sorted(machines.items()) for a in range(len(nics))
                   for b in range(a + 1, len(nics))] if relay else []
    need = 2 * pairs + 2 * len(spines) * len(supers) + 2 * len(relay_pairs)
    if need > link_net.num_addresses:
        raise FabricError("link_subnet: %s holds %d addresses; %d %s links need %d" % (
            link_net, link_net.num_addresses, need // 2, "leaf-spine" if need == 2 * pairs else "routed", need))
    for leaf in leaves:
        for spine in spines:
            if leaf["pod"] != spine["pod"]:
                continue
            n = (leaf["index"] - 1) * len(spines) + (spine["index"] - 1)
            leaf_if, spine_if = link_names(leaf["index"], spine["index"])
            links.append({"leaf": leaf["name"], "spine": spine["name"], "leaf_interface": leaf_if,
                          "spine_interface": spine_if, "leaf_address": str(link_net.network_address + 2 * n),
                          "spine_address": str(link_net.network_address + 2 * n + 1)})
    # a spine's position in its pod: the plane it belongs to
    position = {}
    for spine in spines:
        position[spine["name"]] = 1 + sum(1 for x in spines if x["pod"] == spine["pod"] and x["index"] < spine["index"])
    uplinks = []
    for spine in spines:
        for sup in supers:
            if sup["plane"] is not None and sup["plane"] != position[spine["name"]]:
                continue
            n = 2 * pairs + 2 * ((spine["index"] - 1) * len(supers) + (sup["index"] - 1))
            uplinks.append({"spine": spine["name"], "superspine": sup["name"], "spine_interface": "u%d" % sup["index"],
                            "super_interface": "p%d" % spine["index"],
                            "spine_address": str(link_net.network_address + n),
                            "super_address": str(link_net.network_address + n + 1)})
    for sup in supers:
        if not any(u["superspine"] == sup["name"] for u in uplinks):
            raise FabricError("superspines: %s (plane %s) stands above no spine; no pod has %s spines" % (
                sup["name"], sup["plane"], sup["plane"]))
    relays = []
    base = 2 * pairs + 2 * len(spines) * len(supers)
    for k, (machine, a, b) in enumerate(relay_pairs):
        one, two = machines[machine][a], machines[machine][b]
        if one["leaf"] == two["leaf"]:
            raise FabricError("relay: %s and %s of machine %s are on one leaf %s; a rail-optimized machine has one NIC "
                              "per rail" % (one["name"], two["name"], machine, one["leaf"]))
        relays.append({"machine": machine, "a": one["name"], "b": two["name"], "a_interface": "x%d" % (b + 1),
                       "b_interface": "x%d" % (a + 1), "a_address": str(link_net.network_address + base + 2 * k),
                       "b_address": str(link_net.network_address + base + 2 * k + 1)})
    rates = {}
    for key in ("host_rate", "uplink_rate", "superspine_rate", "relay_rate"):
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
    if not rates["superspine_rate"]:
        rates["superspine_rate"] = rates["uplink_rate"]
    return {"leaves": leaves, "spines": spines, "superspines": supers, "hosts": hosts, "links": links,
            "uplinks": uplinks, "relays": relays, "mtu": mtu, "hash": hash_name,
            "seed": None if seed is None else int(seed), "sysctls": sysctls, "host_rate": rates["host_rate"],
            "uplink_rate": rates["uplink_rate"], "superspine_rate": rates["superspine_rate"],
            "relay_rate": rates["relay_rate"]}


def switches(topo):
    """Every switch of the fabric: leaves, spines, superspines."""
    return topo["leaves"] + topo["spines"] + topo.get("superspines", [])


def relay_switch(host):
    """The name a relaying NIC's relay ports are snapshotted under (``m1r1.relay``): its host's own counters keep the
    host's name."""
    return "%s.relay" % host


def relay_hosts(topo):
    """The hosts that forward over an in-host relay link (their names), in the fabric's order."""
    names = {r["a"] for r in topo.get("relays") or []} | {r["b"] for r in topo.get("relays") or []}
    return [h for h in topo["hosts"] if h["name"] in names]


def shapers(topo):
    """``[(namespace, device, direction, rate)]``: every port shaped to its link's rate in the direction it sends
    (a leaf's uplinks and a spine's links at uplink_rate; a leaf's host port toward its host, and what the host sends
    into it through an ifb, at host_rate)."""
    out = []
    ns_of = {x["name"]: x["namespace"] for x in switches(topo) + topo["hosts"]}
    if topo.get("uplink_rate"):
        for lk in topo["links"]:
            out.append((ns_of[lk["leaf"]], lk["leaf_interface"], "egress", topo["uplink_rate"]))
            out.append((ns_of[lk["spine"]], lk["spine_interface"], "egress", topo["uplink_rate"]))
    if topo.get("host_rate"):
        for host in topo["hosts"]:
            out.append((ns_of[host["leaf"]], host["port"], "egress", topo["host_rate"]))
            out.append((ns_of[host["leaf"]], host["port"], "ingress", topo["host_rate"]))
    if topo.get("superspine_rate"):
        for up in topo.get("uplinks") or []:
            out.append((ns_of[up["spine"]], up["spine_interface"], "egress", topo["superspine_rate"]))
            out.append((ns_of[up["superspine"]], up["super_interface"], "egress", topo["superspine_rate"]))
    if topo.get("relay_rate"):
        for r in topo.get("relays") or []:
            out.append((ns_of[r["a"]], r["a_interface"], "egress", topo["relay_rate"]))
            out.append((ns_of[r["b"]], r["b_interface"], "egress", topo["relay_rate"]))
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
    for up in topo.get("uplinks") or []:
        rate = topo.get("superspine_rate")
        out[link_name(up["spine"], up["superspine"])] = {"switch": up["spine"], "interface": up["spine_interface"],
                                                         "rate": rate, "tier": "superuplink"}
        out[link_name(up["superspine"], up["spine"])] = {"switch": up["superspine"],
                                                         "interface": up["super_interface"], "rate": rate,
                                                         "tier": "superdownlink"}
    for r in topo.get("relays") or []:
        # an in-host link is counted where it is sent: the NIC's namespace, its relay port (its snapshot named
        # relay_switch(host), apart from the host's own counters)
        out[link_name(r["a"], r["b"])] = {"switch": relay_switch(r["a"]), "interface": r["a_interface"],
                                          "rate": topo.get("relay_rate"), "tier": "relay"}
        out[link_name(r["b"], r["a"])] = {"switch": relay_switch(r["b"]), "interface": r["b_interface"],
                                          "rate": topo.get("relay_rate"), "tier": "relay"}
    return out
