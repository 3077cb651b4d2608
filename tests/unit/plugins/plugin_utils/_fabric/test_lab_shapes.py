# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric lab's 3-tier and rail-optimized shapes on the controller: from the inventory, their equal-cost paths
(what the prediction and the ideal read), and the load balance of a step on them."""

from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._fabric.lab import (
    FabricLabError,
    equal_cost_paths,
    fabric_links,
    fabric_topology,
)

CLOS_GROUPS = {"leaves": ["leaf1", "leaf2"], "spines": ["spine1", "spine2", "spine3", "spine4"],
               "superspines": ["super1", "super2"], "workers": ["w1", "w2"]}
CLOS_VARS = {"leaf1": {"lab_subnet": "198.18.1.0/24", "lab_pod": 1, "lab_superspine_rate": "500mbit"},
             "leaf2": {"lab_subnet": "198.18.2.0/24", "lab_pod": 2},
             "spine1": {"lab_pod": 1}, "spine2": {"lab_pod": 1}, "spine3": {"lab_pod": 2}, "spine4": {"lab_pod": 2},
             "super1": {"lab_plane": 1}, "super2": {"lab_plane": 2},
             "w1": {"lab_leaf": "leaf1", "lab_address": "198.18.1.11"},
             "w2": {"lab_leaf": "leaf2", "lab_address": "198.18.2.11"}}


def test_a_3_tier_clos_from_the_inventory():
    fab = fabric_topology(CLOS_GROUPS, CLOS_VARS, prefix="aflt-x-", uplink_rate="1gbit", host_rate="1gbit")
    assert fab["leaves"][0] == {"name": "leaf1", "namespace": "aflt-x-leaf1", "gateway": "198.18.1.254/24",
                                "pod": "1"}
    assert fab["spines"][2] == {"name": "spine3", "namespace": "aflt-x-spine3", "pod": "2"}
    assert fab["superspines"] == [{"name": "super1", "namespace": "aflt-x-super1", "plane": 1},
                                  {"name": "super2", "namespace": "aflt-x-super2", "plane": 2}]
    assert fab["superspine_rate"] == "500mbit" and "relay" not in fab
    # across pods: up through either of the pod's spines, its plane's superspine, down the other pod's spine
    assert equal_cost_paths(fab, "w1", "w2") == [
        ["w1->leaf1", "leaf1->spine1", "spine1->super1", "super1->spine3", "spine3->leaf2", "leaf2->w2"],
        ["w1->leaf1", "leaf1->spine2", "spine2->super2", "super2->spine4", "spine4->leaf2", "leaf2->w2"]]
    assert fabric_links(fab)["spine2->super2"]["tier"] == "superuplink"


def test_rails_from_the_inventory_with_the_relay(rails_inventory):
    # two machines of two NICs, every NIC a worker, two spines (the rails_inventory fixture, conftest.py one folder up)
    fab = fabric_topology(*rails_inventory(spines=2, relay_rate="10gbit"), prefix="aflt-x-")
    assert fab["hosts"][1] == {"name": "m1r2", "namespace": "aflt-x-m1r2", "leaf": "rail2",
                               "address": "198.18.2.11/24", "machine": "m1"}
    assert fab["relay"] is True and fab["relay_rate"] == "10gbit"
    # across rails: one path, over the machine's in-host link and the destination's rail (no spine)
    assert equal_cost_paths(fab, "m1r1", "m2r2") == [["m1r1->m1r2", "m1r2->rail2", "rail2->m2r2"]]
    assert equal_cost_paths(fab, "m1r1", "m2r1") == [["m1r1->rail1", "rail1->m2r1"]]
    assert equal_cost_paths(fab, "m1r1", "m1r2") == [["m1r1->m1r2"]]
    # without the relay: across rails through every spine
    plain = fabric_topology(*rails_inventory(spines=2, relay=False), prefix="aflt-x-")
    assert "relay" not in plain
    assert equal_cost_paths(plain, "m1r1", "m2r2") == [
        ["m1r1->rail1", "rail1->spine%d" % k, "spine%d->rail2" % k, "rail2->m2r2"] for k in (1, 2)]


def test_a_2_tier_description_has_none_of_the_other_shapes_keys():
    groups = {"leaves": ["leaf1", "leaf2"], "spines": ["spine1"], "workers": ["w1"]}
    hostvars = {"leaf1": {"lab_subnet": "198.18.1.0/24"}, "leaf2": {"lab_subnet": "198.18.2.0/24"},
                "w1": {"lab_leaf": "leaf1", "lab_address": "198.18.1.11"}}
    fab = fabric_topology(groups, hostvars)
    assert sorted(fab) == ["hash", "host_rate", "hosts", "leaves", "mtu", "seed", "spines", "uplink_rate"]
    assert sorted(fab["leaves"][0]) == ["gateway", "name", "namespace"] and sorted(fab["hosts"][0]) == [
        "address", "leaf", "name", "namespace"]


def test_a_bad_3_tier_inventory_names_the_fix():
    bad = dict(CLOS_VARS, spine3={})
    with pytest.raises(FabricLabError, match="the inventory's fabric: pod: .* give every leaf and spine its pod"):
        fabric_topology(CLOS_GROUPS, bad)
    with pytest.raises(FabricLabError, match="lab_plane 'x' is not a spine position"):
        fabric_topology(CLOS_GROUPS, dict(CLOS_VARS, super1={"lab_plane": "x"}))


def test_a_plan_on_a_3_tier_fabric_keeps_its_superspines_and_its_steps_their_paths():
    # (a plan whose copy of the fabric lost its superspines could not be read back: the report had no fabric)
    from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import plan
    from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import Plan
    from ansible_collections.aifabric.lab.plugins.plugin_utils._run.model import step_plans

    fab = fabric_topology(CLOS_GROUPS, CLOS_VARS, host_rate="1gbit", uplink_rate="1gbit")
    p = Plan.from_dict(plan({"pattern": "shift", "engine": "tcp", "volume": "40MB", "fabric": {"placement": "hash"}},
                            CLOS_GROUPS, CLOS_VARS, fabric=fab).to_dict())
    assert p.fabric.topology["superspines"] == fab["superspines"]
    assert p.fabric.topology["superspine_rate"] == "500mbit"
    # what a step's plan reads (_run.model.step_plans, once the streams are placed): the links and the paths
    assert step_plans(p)["barrier"].fabric is None  # not placed yet
    assert equal_cost_paths(p.fabric.topology, "w1", "w2") == equal_cost_paths(fab, "w1", "w2")
    assert len(equal_cost_paths(p.fabric.topology, "w1", "w2")) == 2
    assert fabric_links(p.fabric.topology)["super2->spine4"] == {"switch": "super2", "interface": "p4",
                                                                 "rate": "500mbit", "tier": "superdownlink"}


def test_a_2_tier_plan_s_fabric_is_as_before():
    from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import plan

    groups = {"leaves": ["leaf1", "leaf2"], "spines": ["spine1"], "workers": ["w1", "w2"]}
    hostvars = {"leaf1": {"lab_subnet": "198.18.1.0/24"}, "leaf2": {"lab_subnet": "198.18.2.0/24"},
                "w1": {"lab_leaf": "leaf1", "lab_address": "198.18.1.11"},
                "w2": {"lab_leaf": "leaf2", "lab_address": "198.18.2.11"}}
    fab = fabric_topology(groups, hostvars)
    p = plan({"pattern": "shift", "engine": "tcp", "volume": "40MB", "fabric": {}}, groups, hostvars, fabric=fab)
    assert sorted(p.fabric.topology) == ["host_rate", "hosts", "leaves", "mtu", "spines", "uplink_rate"]
