# -*- coding: utf-8 -*-
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._experiment import ExperimentError, plan

GROUPS = {"workers": ["worker1", "worker2", "worker3"], "sinks": ["sink"], "switches": ["switch"]}
HOSTVARS = {"sink": {"lab_address": "198.18.0.1"}, "worker1": {"lab_address": "198.18.0.11"},
            "worker2": {"lab_address": "198.18.0.12"}, "worker3": {"lab_address": "198.18.0.13/24"}}


def test_incast_plan_of_the_seed():
    p = plan({"name": "barrier", "volume": "2GB", "throttles": {"worker3": "2gbit"}}, GROUPS, HOSTVARS)
    assert p["participants"] == ["sink", "worker1", "worker2", "worker3"]
    assert p["sources"] == ["worker1", "worker2", "worker3"] and p["destinations"] == ["sink"]
    assert p["hosts"]["sink"]["servers"] == [{"port": 18600, "expected_clients": 3, "address": "198.18.0.1"}]
    w3 = p["hosts"]["worker3"]["clients"][0]
    assert w3["address"] == "198.18.0.1" and w3["volume"] == 2 * 10**9
    assert w3["annotations"]["path"] == [{"link": "switch->sink", "rate": "8gbit"},
                                         {"link": "worker3 egress", "rate": "2gbit"}]
    assert w3["annotations"]["throttle"] == "2gbit"
    assert p["hosts"]["worker1"]["clients"][0]["annotations"]["throttle"] is None
    assert p["throttled"] == ["worker3"]
    assert p["steps"] == ["barrier"]
    assert p["start_lead"] == pytest.approx(2.45)
    assert p["hosts"]["worker3"]["address"] == "198.18.0.13"


def test_first_n_workers_and_repeated_steps():
    p = plan({"name": "b", "workers": 2, "steps": 3}, GROUPS, HOSTVARS)
    assert p["sources"] == ["worker1", "worker2"]
    assert p["steps"] == ["b-1", "b-2", "b-3"]
    assert p["hosts"]["sink"]["servers"][0]["expected_clients"] == 2


@pytest.mark.parametrize(
    "experiment, groups, message",
    [
        ({"throttles": {"worker9": "2gbit"}}, GROUPS, "worker9.*is not a lab host"),
        ({"throttles": {"worker3": "2gbps"}}, GROUPS, "experiment.throttles.worker3.*ambiguous"),
        ({"volume": "lots"}, GROUPS, "experiment.volume"),
        ({"workers": 4}, GROUPS, "experiment.workers: 4; give a number from 1 to 3"),
        ({"workers": 0}, GROUPS, "experiment.workers"),
        ({"pattern": "mesh"}, GROUPS, "pattern: 'mesh' is not known"),
        ({"kind": "party"}, GROUPS, "experiment.kind"),
        ({"steps": 0}, GROUPS, "experiment.steps"),
        ({"port": 80}, GROUPS, "experiment.port"),
        ({"timeout": -1}, GROUPS, "experiment.timeout"),
        ({"start_lead": 0}, GROUPS, "experiment.start_lead"),
        ({"volum": "1GB"}, GROUPS, "unknown field.*volum"),
        ({}, {"workers": ["worker1"]}, "no host in group 'sinks'"),
        ({}, {"sinks": ["sink"]}, "no host in group 'workers'"),
        ("barrier", GROUPS, "expected a dict"),
    ],
)
def test_bad_experiments_name_the_field(experiment, groups, message):
    with pytest.raises(ExperimentError, match=message):
        plan(experiment, groups, HOSTVARS)


def test_missing_address_names_the_host():
    with pytest.raises(ExperimentError, match="host worker2 has no lab_address"):
        plan({}, GROUPS, {k: v for k, v in HOSTVARS.items() if k != "worker2"})


def test_bad_line_rate():
    with pytest.raises(ExperimentError, match="lab_line_rate"):
        plan({}, GROUPS, HOSTVARS, line_rate="8 gigs")
