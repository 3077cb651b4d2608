# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric's description checked (``_fabric/spec``): the links' /31s and names, the sysctls, the link table, the
shapers, and every error naming the parameter."""
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._fabric.spec import (
    FabricError,
    link_table,
    shapers,
    validate,
)
from fabric_fixture import PREFIX, params


def test_links_get_their_31s_and_names_from_the_indices():
    topo = validate(params(n_spines=3))
    assert [(lk["leaf"], lk["spine"], lk["leaf_interface"], lk["spine_interface"], lk["leaf_address"],
             lk["spine_address"]) for lk in topo["links"][:4]] == [
        ("leaf1", "spine1", "s1", "l1", "198.19.0.0", "198.19.0.1"),
        ("leaf1", "spine2", "s2", "l1", "198.19.0.2", "198.19.0.3"),
        ("leaf1", "spine3", "s3", "l1", "198.19.0.4", "198.19.0.5"),
        ("leaf2", "spine1", "s1", "l2", "198.19.0.6", "198.19.0.7")]
    assert topo["sysctls"] == {"net.ipv4.ip_forward": 1, "net.ipv4.conf.all.rp_filter": 0,
                               "net.ipv4.conf.default.rp_filter": 0, "net.ipv4.fib_multipath_hash_policy": 3,
                               "net.ipv4.fib_multipath_hash_fields": 0x37, "net.ipv4.fib_multipath_hash_seed": 7}
    assert validate(params(hash="l3", seed=None))["sysctls"]["net.ipv4.fib_multipath_hash_policy"] == 0
    assert "net.ipv4.fib_multipath_hash_fields" not in validate(params(hash="l3"))["sysctls"]


def test_link_table_names_the_port_that_sends_into_each_link():
    table = link_table(validate(params(host_rate="1gbit", uplink_rate="2gbit")))
    assert table["leaf1->spine2"] == {"switch": "leaf1", "interface": "s2", "rate": "2gbit", "tier": "uplink"}
    assert table["spine2->leaf1"] == {"switch": "spine2", "interface": "l1", "rate": "2gbit", "tier": "downlink"}
    # what a host sends is counted where it enters its leaf
    assert table["w11->leaf1"] == {"switch": "leaf1", "interface": "h-w11", "counter": "rx_bytes", "rate": "1gbit",
                                   "tier": "host"}
    assert table["leaf1->w11"]["interface"] == "h-w11" and "counter" not in table["leaf1->w11"]


def test_every_link_is_shaped_in_the_direction_it_sends():
    topo = validate(params(host_rate="1gbit", uplink_rate="1gbit"))
    got = shapers(topo)
    assert (PREFIX + "leaf1", "s2", "egress", "1gbit") in got
    assert (PREFIX + "spine1", "l2", "egress", "1gbit") in got
    assert (PREFIX + "leaf2", "h-w21", "ingress", "1gbit") in got and (PREFIX + "leaf2", "h-w21", "egress",
                                                                       "1gbit") in got
    assert len(got) == 2 * 2 * 2 + 2 * 2  # each leaf-spine link at both ends, each host link both ways
    assert shapers(validate(params())) == []  # no rates: nothing shaped


@pytest.mark.parametrize("change, message", [
    ({"hash": "l5"}, "hash: 'l5'; use l3"),
    ({"seed": 2 ** 32}, "seed: 4294967296 is outside"),
    ({"mtu": 40}, "mtu: 40 is outside"),
    ({"leaves": []}, "leaves: the fabric needs at least one leaf"),
    ({"spines": []}, "spines: leaves reach each other through spines"),
    ({"link_subnet": "198.19.0.0/31"}, "link_subnet: 198.19.0.0/31 holds 2 addresses; 4 leaf-spine links need 8"),
    ({"host_rate": "1gbps"}, "host_rate"),
])
def test_bad_fabric(change, message):
    with pytest.raises(FabricError, match=message.replace("(", r"\(").replace(")", r"\)")):
        validate(params(**change))


def test_bad_hosts_name_the_host_and_the_fix():
    p = params()
    p["hosts"][0]["address"] = "198.18.2.50/24"
    with pytest.raises(FabricError, match=r"hosts\[0\].address: 198.18.2.50/24 is not a host address of its leaf"):
        validate(p)
    p = params()
    p["hosts"][0]["leaf"] = "leaf9"
    with pytest.raises(FabricError, match=r"hosts\[0\].leaf: 'leaf9' is not one of the leaves"):
        validate(p)
    p = params()
    p["leaves"][1]["gateway"] = "198.18.1.253/24"
    with pytest.raises(FabricError, match="subnets 198.18.1.0/24 and 198.18.1.0/24 overlap"):
        validate(p)
