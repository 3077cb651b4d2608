# -*- coding: utf-8 -*-
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._netns_topology import TopologyError, validate


def params(**kw):
    base = {"switch_namespace": "t-sw", "bridge": "br0", "mtu": 9000, "state": "present",
            "hosts": [{"namespace": "t-a", "interface": "eth0", "port": "p-a", "address": "198.18.0.1/24"},
                      {"namespace": "t-b", "interface": None, "port": "p-b", "address": "198.18.0.2/24"}]}
    base.update(kw)
    return base


def test_valid_topology_defaults_the_interface():
    topo = validate(params())
    assert [h["interface"] for h in topo["hosts"]] == ["eth0", "eth0"]


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"switch_namespace": "bad/name"}, "switch_namespace"),
        ({"bridge": "a-bridge-name-too-long"}, "bridge"),
        ({"mtu": 40}, "mtu: 40 is outside 68-65535"),
        ({"hosts": [{"namespace": "t-sw", "port": "p", "address": "198.18.0.1/24"}]}, "used twice"),
        ({"hosts": [{"namespace": "t-a", "port": "p-a", "address": "198.18.0.1/24"},
                    {"namespace": "t-b", "port": "p-a", "address": "198.18.0.2/24"}]}, "port: p-a is used twice"),
        ({"hosts": [{"namespace": "t-a", "port": "p-a", "address": "198.18.0.1/24"},
                    {"namespace": "t-b", "port": "p-b", "address": "198.18.0.1/24"}]}, "198.18.0.1 is used twice"),
        ({"hosts": [{"namespace": "t-a", "port": "p-a", "address": "sink"}]}, r"hosts\[0\].address: 'sink'"),
        ({"hosts": [{"namespace": "t-a", "port": "port-name-too-long", "address": "198.18.0.1/24"}]}, "port"),
    ],
)
def test_bad_topology(kw, message):
    with pytest.raises(TopologyError, match=message):
        validate(params(**kw))
