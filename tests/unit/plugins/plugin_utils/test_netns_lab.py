# -*- coding: utf-8 -*-
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._netns_lab import LabError, lab_hosts, port_name

GROUPS = {"workers": ["worker1", "worker2"], "sinks": ["sink"]}
HV = {"sink": {"lab_address": "198.18.0.1"}, "worker1": {"lab_address": "198.18.0.11"},
      "worker2": {"lab_address": "198.18.0.12"}}


def test_hosts_sinks_first():
    assert lab_hosts(GROUPS, HV, prefix="t-") == [
        {"namespace": "t-sink", "port": "p-sink", "address": "198.18.0.1/24"},
        {"namespace": "t-worker1", "port": "p-worker1", "address": "198.18.0.11/24"},
        {"namespace": "t-worker2", "port": "p-worker2", "address": "198.18.0.12/24"},
    ]


def test_port_names_fit_ifnamsiz():
    assert port_name("a-very-long-host-name") == "p-a-very-long-h"
    assert len(port_name("x" * 40)) == 15


@pytest.mark.parametrize(
    "groups, hostvars, subnet, message",
    [
        (GROUPS, dict(HV, worker2={}), "198.18.0.0/24", "worker2 has no lab_address"),
        (GROUPS, dict(HV, worker2={"lab_address": "10.0.0.1"}), "198.18.0.0/24", "outside lab_subnet"),
        (GROUPS, dict(HV, worker2={"lab_address": "nope"}), "198.18.0.0/24", "not an IP address"),
        (GROUPS, HV, "198.18.0.0/33", "lab_subnet"),
        ({"workers": ["w"]}, HV, "198.18.0.0/24", "no host in group 'sinks'"),
        ({"workers": ["long-host-name-a", "long-host-name-b"], "sinks": ["sink"]},
         dict(HV, **{"long-host-name-a": {"lab_address": "198.18.0.5"},
                     "long-host-name-b": {"lab_address": "198.18.0.6"}}),
         "198.18.0.0/24", "share the port name"),
    ],
)
def test_errors_name_the_host(groups, hostvars, subnet, message):
    with pytest.raises(LabError, match=message):
        lab_hosts(groups, hostvars, subnet=subnet)
