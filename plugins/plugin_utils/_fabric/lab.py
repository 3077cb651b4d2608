# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric lab on the controller's side: the fabric from the inventory, each flow's source ports, where the
kernel's lookups put each flow, and the placements that spread them.

The inventory (``inventories/fabric``) names the switches in groups ``leaves`` and ``spines``; each leaf its
``lab_subnet`` (its hosts' gateway is the subnet's last address); each host its ``lab_leaf`` and ``lab_address``.
A 3-tier Clos (``inventories/fabric-3tier``) adds group ``superspines`` (each its ``lab_plane``: the spine position
it stands above in every pod) and gives every leaf and spine its ``lab_pod``; a rail-optimized fabric
(``inventories/fabric-rails``) makes the leaves rails and each NIC a host with its ``lab_machine``, and
``lab_rail_relay: true`` joins a machine's NICs by in-host links (``lab_relay_rate``). ``lab_superspine_rate`` is the
spine-superspine links' rate (default ``lab_uplink_rate``): rates per tier are how a fabric is oversubscribed.

A flow's five-tuple is ours to choose: the plan gives every stream of every flow a source port, drawn per step
without replacement from ``FIRST_PORT``-``LAST_PORT`` (below Linux's ephemeral range, so that no connection the kernel
opens takes one), with a seeded generator, so that a run can be repeated port for port. ``placement: hash`` uses the
first draw (what any application's ephemeral port would do: the hash decides); ``placement: spread`` draws
``SPREAD_CANDIDATES`` and keeps, flow by flow, the port whose path (asked of the kernel, not guessed) adds the least
to the busiest link it crosses, which is what an application that picks its ports (or a QP's UDP source port in
RoCE) can do.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import random

from ansible_collections.aifabric.lab.plugins.module_utils._fabric.spec import (
    PORT_BUCKETS,
    FabricError,
    link_table,
    validate,
)
from ansible_collections.aifabric.lab.plugins.module_utils._link import Link, link_name
from ansible_collections.aifabric.lab.plugins.module_utils._units import UnitError, format_rate, parse_rate
from ansible_collections.aifabric.lab.plugins.plugin_utils._inventory import InventoryError, lab_address
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import Stream

__all__ = ["FabricLabError", "fabric_topology", "host_leaves", "assign_ports", "lookup_id", "place",
           "equal_cost_paths", "fabric_links", "FIRST_PORT", "LAST_PORT", "PLACEMENTS"]

FIRST_PORT = 20000
LAST_PORT = 29999
SPREAD_CANDIDATES = 24
PLACEMENTS = ("hash", "spread")


class FabricLabError(ValueError):
    """The inventory or an experiment's fabric settings cannot make a fabric; the message names the fix."""


def _rate(value, name):
    try:
        return format_rate(parse_rate(value, name, minimum=1000))
    except UnitError as exc:
        raise FabricLabError(str(exc)) from None


def fabric_topology(groups, hostvars, prefix="aff-", hash_name="l4", seed=None, host_rate=None, uplink_rate=None,
                    mtu=9000, hosts_groups=("sinks", "workers")):
    """The fabric_topology / fabric_paths_info modules' description of the fabric, from the inventory."""
    leaves = list(groups.get("leaves") or [])
    spines = list(groups.get("spines") or [])
    if not leaves:
        raise FabricLabError("the inventory has no host in group 'leaves'; the fabric needs leaf switches")
    if len(leaves) > 1 and not spines:
        raise FabricLabError("the inventory has no host in group 'spines'; leaves reach each other through spines")
    out_leaves, subnets = [], {}
    for leaf in leaves:
        raw = (hostvars.get(leaf) or {}).get("lab_subnet")
        try:
            net = ipaddress.ip_network(str(raw), strict=False)
        except ValueError:
            raise FabricLabError("leaf %s: lab_subnet %r is not a subnet; give each leaf its hosts' subnet "
                                 "(e.g. 198.18.1.0/24)" % (leaf, raw)) from None
        if net.num_addresses < 4:
            raise FabricLabError("leaf %s: lab_subnet %s is too small for hosts and a gateway" % (leaf, net))
        subnets[leaf] = net
        out_leaves.append({"name": leaf, "namespace": prefix + leaf,
                           "gateway": "%s/%d" % (net.broadcast_address - 1, net.prefixlen)})
    pods = {}
    for name in leaves + spines:
        pod = (hostvars.get(name) or {}).get("lab_pod")
        if pod not in (None, ""):
            pods[name] = str(pod)
    if pods:
        for item in out_leaves:
            item["pod"] = pods.get(item["name"])
    hosts, seen = [], set()
    for group in hosts_groups:
        for host in groups.get(group) or []:
            if host in seen:
                continue
            seen.add(host)
            leaf = (hostvars.get(host) or {}).get("lab_leaf")
            if leaf not in subnets:
                raise FabricLabError("host %s: lab_leaf %r is not one of the leaves (%s); set it in the inventory"
                                     % (host, leaf, ", ".join(leaves)))
            try:
                ip = lab_address(hostvars, host, subnets[leaf])
            except InventoryError as exc:
                raise FabricLabError("%s (leaf %s's lab_subnet)" % (exc, leaf)) from None
            entry = {"name": host, "namespace": prefix + host, "leaf": leaf,
                     "address": "%s/%d" % (ip, subnets[leaf].prefixlen)}
            machine = (hostvars.get(host) or {}).get("lab_machine")
            if machine not in (None, ""):
                entry["machine"] = str(machine)
            hosts.append(entry)
    if hash_name not in ("l3", "l4"):
        raise FabricLabError("fabric hash: %r; use l3 (addresses) or l4 (the five-tuple)" % (hash_name,))
    out = {"leaves": out_leaves, "spines": [dict({"name": s, "namespace": prefix + s},
                                                 **({"pod": pods.get(s)} if pods else {})) for s in spines],
           "hosts": hosts, "mtu": int(mtu), "hash": hash_name, "seed": None if seed in (None, "") else int(seed),
           "host_rate": _rate(host_rate, "lab_line_rate") if host_rate else None,
           "uplink_rate": _rate(uplink_rate, "lab_uplink_rate") if uplink_rate else None}
    # the other shapes' keys only when the inventory has them: a 2-tier fabric's description stays as it was
    fabric_vars = hostvars.get(leaves[0]) or {}
    supers = list(groups.get("superspines") or [])
    if supers:
        out["superspines"] = []
        for name in supers:
            plane = (hostvars.get(name) or {}).get("lab_plane")
            try:
                plane = None if plane in (None, "") else int(plane)
            except (TypeError, ValueError):
                raise FabricLabError("superspine %s: lab_plane %r is not a spine position (1, 2, ...)"
                                     % (name, plane)) from None
            out["superspines"].append({"name": name, "namespace": prefix + name, "plane": plane})
        rate = fabric_vars.get("lab_superspine_rate")
        out["superspine_rate"] = _rate(rate, "lab_superspine_rate") if rate else out["uplink_rate"]
    if fabric_vars.get("lab_rail_relay") in (True, "true", "True", "yes", 1):
        out["relay"] = True
        rate = fabric_vars.get("lab_relay_rate")
        out["relay_rate"] = _rate(rate, "lab_relay_rate") if rate else None
    try:
        validate(dict(out, seed=None))
    except FabricError as exc:
        raise FabricLabError("the inventory's fabric: %s" % exc) from None
    return out


def host_leaves(fabric):
    return {h["name"]: h["leaf"] for h in fabric["hosts"]}


def equal_cost_paths(fabric, src, dst):
    """Every path of least hops from host ``src`` to host ``dst`` (lists of link names, as fabric_paths_info names
    them)."""
    if fabric.get("superspines") or fabric.get("relay"):
        return _shortest_paths(fabric, src, dst)
    leaf = host_leaves(fabric)
    a, b = leaf[src], leaf[dst]
    if a == b:
        return [[link_name(src, a), link_name(a, dst)]]
    return [[link_name(src, a), link_name(a, s["name"]), link_name(s["name"], b), link_name(b, dst)]
            for s in fabric["spines"]]


def _shortest_paths(fabric, src, dst):
    """Every path of least hops from ``src`` to ``dst`` over the fabric's links (a 3-tier Clos, or rails with the
    in-host relay), hosts forwarding only over relay links, in the links' order: what the fabric's routes give (each
    switch routes a subnet through all its next hops on a shortest path, and only those)."""
    links = fabric_links(fabric)
    hosts = {h["name"] for h in fabric["hosts"]}
    out_of = {}
    for name, info in links.items():
        a, b = Link.parse(name)
        out_of.setdefault(a, []).append((b, name, info.get("tier")))

    # distances to dst, backwards; a host is passed through only when it was entered by a relay link (it forwards
    # what its machine's other NICs hand it, nothing else)
    def usable(b, tier):
        return b not in hosts or b == dst or tier == "relay"

    into = {}
    for a, nexts in out_of.items():
        for b, _name, tier in nexts:
            into.setdefault(b, []).append((a, tier))
    dist, frontier = {dst: 0}, [dst]
    while frontier:
        nxt = []
        for b in frontier:
            for a, tier in into.get(b, []):
                if a not in dist and usable(b, tier):
                    dist[a] = dist[b] + 1
                    nxt.append(a)
        frontier = nxt
    if src not in dist:
        raise FabricLabError("no path from %s to %s in the fabric" % (src, dst))
    paths = []

    def walk(node, path):
        if node == dst:
            paths.append(path)
            return
        for b, name, tier in out_of.get(node, []):
            if dist.get(b) == dist[node] - 1 and usable(b, tier):
                walk(b, path + [name])

    walk(src, [])
    return paths


def assign_ports(steps, flows_of_step, placement="hash", seed=0, buckets=PORT_BUCKETS):
    """``{step: {host: {flow_id: [[candidate source ports] per stream]}}}``: per step, each stream's candidates
    (one with ``hash``, SPREAD_CANDIDATES with ``spread``), distinct per source host across the whole experiment (a
    port reused while its last connection lingers in TIME_WAIT could be refused). Every stream of a step has a bucket
    of its own (``port mod buckets``): the fabric's ports share their rate fairly between buckets."""
    if placement not in PLACEMENTS:
        raise FabricLabError("experiment.fabric.placement: %r; use hash (the five-tuple's hash decides, as with any "
                             "ephemeral port) or spread (ports chosen so that the flows spread)" % (placement,))
    count = 1 if placement == "hash" else SPREAD_CANDIDATES
    rng = random.Random(seed)
    span = (LAST_PORT - FIRST_PORT + 1) // buckets
    used = {}
    out = {}
    for step in steps:
        per_host = out.setdefault(step, {})
        flows = flows_of_step(step)
        total = sum(streams for _h, _f, streams in flows)
        if total > buckets:
            raise FabricLabError("a step of %d streams: the fabric's ports share their rate fairly between %d "
                                 "streams at most; use fewer streams or workers" % (total, buckets))
        bucket = 0
        for host, flow_id, streams in flows:
            taken = used.setdefault(host, set())
            streams_ports = []
            for _stream in range(streams):
                free = [r for r in range(span) if FIRST_PORT + r * buckets + bucket not in taken]
                if len(free) < count:
                    raise FabricLabError("host %s: more source ports needed than %d-%d hold; use fewer steps or "
                                         "streams" % (host, FIRST_PORT, LAST_PORT))
                ports = [FIRST_PORT + r * buckets + bucket for r in rng.sample(free, count)]
                taken.update(ports)
                streams_ports.append(ports)
                bucket += 1
            per_host.setdefault(host, {})[flow_id] = streams_ports
    return out


def lookup_id(step, host, flow_id, stream, port):
    """The id of one route lookup (a stream's candidate port): what ``place`` finds fabric_paths_info' answer by."""
    return "%s|%s|%s|%d|%d" % (step, host, flow_id, stream, port)


def place(the_plan, paths):
    """The plan (a ``_plan.model.Plan``) with each stream's source port and path chosen (``fabric.placed``): ``paths``
    is fabric_paths_info' answer for ``_plan.args.lookup_flows(the_plan)``. ``hash``: the one candidate; ``spread``:
    greedily, flow by flow in a fixed order, the candidate whose path keeps the busiest link it crosses least loaded
    (ties: the lowest total load)."""
    found = {}
    for entry in paths or []:
        if entry.get("error"):
            raise FabricLabError("fabric lookup of %s: %s" % (entry.get("id"), entry["error"]))
        found[entry["id"]] = list(entry["links"])
    chosen = {}
    for step, hosts in sorted(the_plan.fabric.ports.items()):
        load = {}
        per_step = chosen.setdefault(step, {})
        for host, flows in sorted(hosts.items()):
            for flow_id, streams in sorted(flows.items()):
                placed = []
                for i, ports in enumerate(streams):
                    best = None
                    for port in ports:
                        key = lookup_id(step, host, flow_id, i, port)
                        if key not in found:
                            raise FabricLabError("fabric lookup: no answer for %s; run fabric_paths_info with the "
                                                 "plan's lookup_flows" % key)
                        links = found[key]
                        score = (max(load.get(lk, 0) + 1 for lk in links), sum(load.get(lk, 0) for lk in links))
                        if best is None or score < best[0]:
                            best = (score, port, links)
                    _score, port, links = best
                    for lk in links:
                        load[lk] = load.get(lk, 0) + 1
                    placed.append(Stream(sport=port, links=links))
                per_step.setdefault(host, {})[flow_id] = placed
    return dataclasses.replace(the_plan, fabric=dataclasses.replace(the_plan.fabric, placed=chosen))


def fabric_links(topology):
    """``{link name: {switch, interface, rate, tier[, counter]}}`` of every fabric link (as fabric_topology returns
    them), from the plan's copy of the fabric's description."""
    return link_table(validate(dict(topology, hash="l4", seed=None)))
