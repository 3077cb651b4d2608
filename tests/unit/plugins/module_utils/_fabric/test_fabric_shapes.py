# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric lab's other shapes: a 3-tier Clos (pods under superspines) and a rail-optimized fabric (a machine's
NICs on their rails, optionally joined by in-host relay links): what the spec makes of them, what each namespace is
given, the lookups through them (against a kernel's answers), and on a real kernel (as root) each flow where its
lookup said, proved by the counters."""
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._fabric.netlink import Fabric, in_netns_fork
from ansible_collections.aifabric.lab.plugins.module_utils._fabric.spec import (
    FabricError,
    link_table,
    shapers,
    validate,
)
from fabric_fixture import PREFIX, clos3_params, rail_params
from test_fabric_netlink import _FakeIPR, _send


def test_a_3_tier_clos_links_each_leaf_to_its_pod_and_each_spine_to_its_plane():
    topo = validate(clos3_params(uplink_rate="1gbit", superspine_rate="500mbit"))
    assert [(lk["leaf"], lk["spine"], lk["leaf_interface"], lk["spine_interface"]) for lk in topo["links"]] == [
        ("leaf1", "spine1.1", "s1", "l1"), ("leaf1", "spine1.2", "s2", "l1"),
        ("leaf2", "spine2.1", "s3", "l2"), ("leaf2", "spine2.2", "s4", "l2")]
    # spine k of every pod under the superspine of plane k; the /31s after the 2 x 4 leaf-spine pairs' 16 addresses
    assert [(u["spine"], u["superspine"], u["spine_interface"], u["super_interface"], u["spine_address"])
            for u in topo["uplinks"]] == [
        ("spine1.1", "super1", "u1", "p1", "198.19.0.16"), ("spine1.2", "super2", "u2", "p2", "198.19.0.22"),
        ("spine2.1", "super1", "u1", "p3", "198.19.0.24"), ("spine2.2", "super2", "u2", "p4", "198.19.0.30")]
    table = link_table(topo)
    assert table["spine1.1->super1"] == {"switch": "spine1.1", "interface": "u1", "rate": "500mbit",
                                         "tier": "superuplink"}
    assert table["super1->spine2.1"] == {"switch": "super1", "interface": "p3", "rate": "500mbit",
                                         "tier": "superdownlink"}
    assert (PREFIX + "super2", "p4", "egress", "500mbit") in shapers(topo)


def test_a_3_tier_clos_routes_up_to_the_superspines_and_down_by_the_pods():
    want = Fabric._wanted(validate(clos3_params()))
    # a leaf: the other pod's subnet through its own pod's spines
    assert want[PREFIX + "leaf1"]["routes"] == {"198.18.2.0/24": [("198.19.0.1", "s1"), ("198.19.0.3", "s2")]}
    # a spine: its pod's leaf directly, the other pod through its superspine
    assert want[PREFIX + "sp11"]["routes"] == {"198.18.1.0/24": [("198.19.0.0", "l1")],
                                               "198.18.2.0/24": [("198.19.0.17", "u1")]}
    # a superspine: each pod's subnet through its plane's spine in that pod
    assert want[PREFIX + "super1"]["routes"] == {"198.18.1.0/24": [("198.19.0.16", "p1")],
                                                 "198.18.2.0/24": [("198.19.0.24", "p3")]}
    assert want[PREFIX + "super1"]["switch"] is True


@pytest.mark.parametrize("change, message", [
    (lambda p: p["leaves"][0].pop("pod"), "give every leaf and spine its pod"),
    (lambda p: [x.pop("pod") for x in p["leaves"] + p["spines"]], "superspines: a 3-tier fabric is pods"),
    (lambda p: p.update(superspines=[]), "pods reach each other through superspines"),
    (lambda p: p["superspines"][1].update(plane=3), "super2 \\(plane 3\\) stands above no spine"),
])
def test_bad_3_tier_fabrics_name_the_fix(change, message):
    p = clos3_params()
    change(p)
    with pytest.raises(FabricError, match=message):
        validate(p)


def test_rails_with_the_relay_join_each_machines_nics_and_route_other_rails_through_them():
    topo = validate(rail_params(relay_rate="10gbit"))
    assert topo["relays"] == [
        {"machine": "m1", "a": "m1r1", "b": "m1r2", "a_interface": "x2", "b_interface": "x1",
         "a_address": "198.19.0.4", "b_address": "198.19.0.5"},
        {"machine": "m2", "a": "m2r1", "b": "m2r2", "a_interface": "x2", "b_interface": "x1",
         "a_address": "198.19.0.6", "b_address": "198.19.0.7"}]
    want = Fabric._wanted(topo)
    assert want[PREFIX + "m1r1"]["routes"] == {"0.0.0.0/0": [("198.18.1.254", "eth0")],
                                               "198.18.2.0/24": [("198.19.0.5", "x2")]}
    assert want[PREFIX + "m1r2"]["links"]["x1"] == {"kind": "veth", "address": "198.19.0.5/31",
                                                    "peer_ns": PREFIX + "m1r1", "peer_if": "x2"}
    # what it sends over the relay carries its own address (a socket that binds none would take the relay's /31,
    # which no switch routes back): the relay route's preferred source
    assert want[PREFIX + "m1r1"]["prefsrc"] == {"198.18.2.0/24": "198.18.1.11"}
    assert want[PREFIX + "m1r1"]["switch"] is True  # it forwards: the switches' sysctls
    assert link_table(topo)["m1r1->m1r2"] == {
        "switch": "m1r1.relay", "interface": "x2", "rate": "10gbit", "tier": "relay"}
    # without the relay: plain hosts, every rail crossing through the spine
    plain = validate(rail_params(relay=False))
    assert plain["relays"] == [] and Fabric._wanted(plain)[PREFIX + "m1r1"]["switch"] is False


def test_the_relay_needs_machines_with_one_nic_per_rail():
    p = rail_params()
    p["hosts"][1]["leaf"] = "rail1"
    p["hosts"][1]["address"] = "198.18.1.21/24"
    with pytest.raises(FabricError, match="m1r1 and m1r2 of machine m1 are on one leaf rail1"):
        validate(p)
    p = rail_params()
    for h in p["hosts"]:
        h.pop("machine")
    with pytest.raises(FabricError, match="relay: the in-host relay joins the NICs of one machine"):
        validate(p)


def test_a_relayed_flow_is_looked_up_from_its_nic_then_the_sibling_then_the_rail():
    topo = validate(rail_params())
    sw = {
        # m1r1 sends rail2's subnet over its relay, its own rail's out of eth0
        PREFIX + "m1r1": _FakeIPR(["lo", "eth0", "x2"], lambda a: "x2" if a["RTA_DST"].startswith("198.18.2.")
                                  else "eth0"),
        PREFIX + "m1r2": _FakeIPR(["lo", "eth0", "x1"], lambda a: "eth0"),
    }
    fabric = Fabric(None, lambda netns: sw[netns], None)
    flows = [{"id": "cross", "src": "198.18.1.11", "dst": "198.18.2.12", "sport": 20001, "dport": 18600},
             {"id": "rail", "src": "198.18.1.11", "dst": "198.18.1.12", "sport": 20002, "dport": 18600},
             {"id": "inside", "src": "198.18.1.11", "dst": "198.18.2.11", "sport": 20003, "dport": 18600}]
    cross, rail, inside = fabric.lookup(topo, flows)
    assert cross["links"] == ["m1r1->m1r2", "m1r2->rail2", "rail2->m2r2"] and cross["error"] is None
    assert rail["links"] == ["m1r1->rail1", "rail1->m2r1"]
    assert inside["links"] == ["m1r1->m1r2"] and inside["error"] is None
    # the NIC was asked as its own socket sends (no input interface), its sibling with the relay port as input
    first = sw[PREFIX + "m1r1"].asked[0][1]
    assert "RTA_IIF" not in first and first["RTA_SRC"] == "198.18.1.11" and first["RTA_SPORT"] == 20001
    assert sw[PREFIX + "m1r2"].asked[0][1]["RTA_IIF"] == 3


# ------------------------------------------------------------------------------------------- the real kernel
def _proved(fabric, topo, flow, size):
    """Send ``flow`` for real and return {link: bytes its port counted} for every fabric link, and its lookup."""
    (entry,) = fabric.lookup(topo, [flow])
    assert entry["error"] is None, entry
    table = link_table(topo)
    by_ip = {h["address"].split("/")[0]: h for h in topo["hosts"]}
    before = fabric.counters(topo)
    assert _send(by_ip[flow["src"]]["namespace"], flow["src"], flow["sport"], flow["dst"], flow["dport"], size,
                 by_ip[flow["dst"]]["namespace"]) == size
    after = fabric.counters(topo)
    counted = {}
    for name, link in table.items():
        key = link.get("counter") or "tx_bytes"
        snap_a, snap_b = after.get(link["switch"]), before.get(link["switch"])
        if snap_a and link["interface"] in snap_a["netdev"]:
            counted[name] = snap_a["netdev"][link["interface"]][key] - snap_b["netdev"][link["interface"]][key]
    return entry["links"], counted


def _check(links, counted, size):
    for name, value in counted.items():
        if name in links:
            assert value > size, (name, value, links)
        else:
            assert value < size // 20, (name, value, links)


@pytest.mark.needs_root
def test_a_real_3_tier_clos_carries_each_flow_where_its_lookup_said():
    from pyroute2 import IPRoute, netns

    topo = validate(clos3_params())
    fabric = Fabric(netns, IPRoute, in_netns_fork)
    try:
        fabric.apply(topo)
        assert fabric.missing(topo) == []
        seen = set()
        for port in (20000, 20001, 20002, 20003):
            flow = {"id": str(port), "src": "198.18.1.11", "dst": "198.18.2.11", "sport": port, "dport": 18600}
            links, counted = _proved(fabric, topo, flow, 2_000_000)
            assert len(links) == 6 and links[2].split("->")[1].startswith("super"), links
            _check(links, counted, 2_000_000)
            seen.add(links[2])
        assert seen <= {"spine1.1->super1", "spine1.2->super2"}
    finally:
        fabric.remove(topo)
    assert fabric.present_namespaces(topo) == []


@pytest.mark.needs_root
def test_a_real_rail_fabric_relays_across_rails_in_the_host_and_counts_it():
    from pyroute2 import IPRoute, netns

    topo = validate(rail_params())
    fabric = Fabric(netns, IPRoute, in_netns_fork)
    try:
        fabric.apply(topo)
        assert fabric.missing(topo) == []
        # m1's NIC on rail1 to m2's NIC on rail2: over m1's in-host link, then rail2 alone (no spine)
        flow = {"id": "x", "src": "198.18.1.11", "dst": "198.18.2.12", "sport": 20010, "dport": 18600}
        links, counted = _proved(fabric, topo, flow, 2_000_000)
        assert links == ["m1r1->m1r2", "m1r2->rail2", "rail2->m2r2"]
        _check(links, counted, 2_000_000)
        # a socket that binds no address (a control connection) still reaches across the rails: the relay route's
        # preferred source is the NIC's own address, which the far side routes back
        assert _send(PREFIX + "m2r2", "", 20013, "198.18.1.11", 18601, 1_000_000, PREFIX + "m1r1") == 1_000_000
        # the same rail: the rail leaf alone
        flow = {"id": "y", "src": "198.18.1.11", "dst": "198.18.1.12", "sport": 20011, "dport": 18600}
        links, counted = _proved(fabric, topo, flow, 2_000_000)
        assert links == ["m1r1->rail1", "rail1->m2r1"]
        _check(links, counted, 2_000_000)
    finally:
        fabric.remove(topo)
    plain = validate(rail_params(relay=False))
    try:
        fabric.apply(plain)
        flow = {"id": "z", "src": "198.18.1.11", "dst": "198.18.2.12", "sport": 20012, "dport": 18600}
        links, counted = _proved(fabric, plain, flow, 2_000_000)
        assert links == ["m1r1->rail1", "rail1->spine1", "spine1->rail2", "rail2->m2r2"]
        _check(links, counted, 2_000_000)
    finally:
        fabric.remove(plain)
    assert fabric.present_namespaces(plain) == []
