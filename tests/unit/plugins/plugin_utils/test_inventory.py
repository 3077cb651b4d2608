# -*- coding: utf-8 -*-
"""One reader of a host's lab_address for the netns lab's builder and the experiment's plan."""
from __future__ import annotations

import ipaddress

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._inventory import InventoryError, lab_address
from ansible_collections.aifabric.lab.plugins.plugin_utils._netns_lab import LabError, lab_hosts
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import ExperimentError, plan

NET = ipaddress.ip_network("198.18.0.0/24")


@pytest.mark.parametrize("value", ["198.18.0.11", "198.18.0.11/24"])
def test_an_address_with_or_without_the_subnets_prefix(value):
    assert str(lab_address({"w1": {"lab_address": value}}, "w1", NET)) == "198.18.0.11"


@pytest.mark.parametrize("value, message", [
    (None, "host w1 has no lab_address; set it in the inventory (e.g. 198.18.0.11)"),
    ("eleven", "host w1: lab_address 'eleven' is not an IP address"),
    ("10.0.0.11", "host w1: lab_address 10.0.0.11 is outside lab_subnet 198.18.0.0/24"),
    ("198.18.0.11/16", "has prefix length /16 but lab_subnet 198.18.0.0/24 is /24; give the address alone"),
])
def test_a_bad_address_is_named_with_the_fix(value, message):
    with pytest.raises(InventoryError, match=message.replace("(", r"\(").replace(")", r"\)")):
        lab_address({"w1": {"lab_address": value}}, "w1", NET)


def test_the_lab_and_the_plan_read_the_same_address_the_same_way():
    groups = {"sinks": ["s"], "workers": ["w1"]}
    hostvars = {"s": {"lab_address": "198.18.0.1/24"}, "w1": {"lab_address": "198.18.0.11"}}
    assert [h["address"] for h in lab_hosts(groups, hostvars)] == ["198.18.0.1/24", "198.18.0.11/24"]
    assert plan({}, groups, hostvars).hosts["s"].address == "198.18.0.1"
    bad = {"s": {"lab_address": "198.18.0.1/16"}, "w1": {"lab_address": "198.18.0.11"}}
    with pytest.raises(LabError, match="prefix length /16"):
        lab_hosts(groups, bad)
    with pytest.raises(ExperimentError, match="host s: lab_address 'x' is not an IP address"):
        plan({}, groups, {"s": {"lab_address": "x"}, "w1": {"lab_address": "198.18.0.11"}})
