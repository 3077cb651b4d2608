# -*- coding: utf-8 -*-
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.args import batch_args, host_args
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import ExperimentError, plan

GROUPS = {"workers": ["worker1", "worker2", "worker3"], "sinks": ["sink"], "switches": ["switch"]}
HOSTVARS = {"sink": {"lab_address": "198.18.0.1"}, "worker1": {"lab_address": "198.18.0.11"},
            "worker2": {"lab_address": "198.18.0.12"}, "worker3": {"lab_address": "198.18.0.13/24"}}


def test_incast_plan_of_the_seed():
    p = plan({"name": "barrier", "volume": "2GB", "throttles": {"worker3": "2gbit"}}, GROUPS, HOSTVARS)
    assert p["participants"] == ["sink", "worker1", "worker2", "worker3"]
    assert p["sources"] == ["worker1", "worker2", "worker3"] and p["destinations"] == ["sink"]
    servers = p["rounds"][0]["hosts"]["sink"]["servers"]
    assert servers == [{"port": 18600, "expected_clients": 3, "address": "198.18.0.1", "volume": 2 * 10**9}]
    w3 = p["rounds"][0]["hosts"]["worker3"]["clients"][0]
    assert w3["address"] == "198.18.0.1" and w3["volume"] == 2 * 10**9
    # out of the sender's switch port and into the sink's, each at the line rate, and the sender's throttle
    assert w3["path"] == [{"link": "worker3->switch", "rate": "8gbit"}, {"link": "switch->sink", "rate": "8gbit"},
                          {"link": "worker3 egress", "rate": "2gbit", "throttle": True}]
    assert p["rounds"][0]["hosts"]["worker1"]["clients"][0]["path"] == [
        {"link": "worker1->switch", "rate": "8gbit"}, {"link": "switch->sink", "rate": "8gbit"}]
    assert p["hosts"]["worker3"]["throttle"] == "2gbit" and p["hosts"]["worker1"]["throttle"] is None
    assert p["throttled"] == ["worker3"]
    assert p["steps"] == ["barrier"]
    assert p["hosts"]["worker3"]["address"] == "198.18.0.13"
    # the sink coordinates the rendezvous of every host of the step, on the port below the flows'
    assert p["rendezvous"] == {"host": "sink", "address": "198.18.0.1", "port": 18599,
                               "parties": ["sink", "worker1", "worker2", "worker3"], "start_at": None}
    assert p["rounds"][0]["expected_flows"] == {"worker1": ["worker1"], "worker2": ["worker2"], "worker3": ["worker3"]}
    assert p["step_round"] == {"barrier": 0} and p["collective"] is None
    assert p["arm_timeout"] == 60 and p["late_bound"] == 0.01 and p["strict_start"] is False
    assert w3["streams"] == 1 and "annotations" not in w3  # the plan's facts reach the report through plan.json


def test_first_n_workers_and_repeated_steps():
    p = plan({"name": "b", "workers": 2, "steps": 3}, GROUPS, HOSTVARS)
    assert p["sources"] == ["worker1", "worker2"]
    assert p["steps"] == ["b-1", "b-2", "b-3"]
    assert p["rounds"][0]["hosts"]["sink"]["servers"][0]["expected_clients"] == 2


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
        ({"start_lead": 8}, GROUPS, "experiment.start_lead: no longer used.*every host has armed"),
        ({"arm_timeout": 0}, GROUPS, "experiment.arm_timeout"),
        ({"late_bound": 2}, GROUPS, "experiment.late_bound: 2; give a share"),
        ({"late_bound": "soon"}, GROUPS, "experiment.late_bound: 'soon'"),
        ({"streams": 0}, GROUPS, "experiment.streams"),
        ({"streams": 2, "engine": "perftest"}, GROUPS, "perftest.qps"),
        ({"strict_start": "yes"}, GROUPS, "experiment.strict_start"),
        ({"coordinator": "nobody"}, GROUPS, "experiment.coordinator: 'nobody' is not a host"),
        ({"control_port": 80}, GROUPS, "experiment.control_port"),
        ({"volum": "1GB"}, GROUPS, "unknown field.*volum"),
        ({"engine": "perftest", "perftest": {"msg_sise": 4096}}, GROUPS, "experiment.perftest: unknown.*msg_sise"),
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


def test_streams_count_connections_at_the_server():
    p = plan({"streams": 4}, GROUPS, HOSTVARS)
    assert p["rounds"][0]["hosts"]["sink"]["servers"][0]["expected_clients"] == 12
    hosts = p["rounds"][0]["hosts"]
    assert all(c["streams"] == 4 for h in ("worker1", "worker2", "worker3") for c in hosts[h]["clients"])


def test_ring_hosts_serve_and_send_and_the_first_host_coordinates_without_a_sink():
    p = plan({"pattern": "ring"}, {"workers": ["worker1", "worker2", "worker3"]}, HOSTVARS)
    assert p["rendezvous"]["host"] == "worker1"
    assert p["rounds"][0]["hosts"]["worker1"]["clients"][0]["address"] == "198.18.0.12"
    assert p["rounds"][0]["hosts"]["worker1"]["servers"][0]["expected_clients"] == 1


def test_host_args_fold_in_the_throttle_the_host_got():
    p = plan({"name": "b", "throttles": {"worker3": "2gbit"}}, GROUPS, HOSTVARS)
    throttle = {"mechanism": "tc", "description": "tc htb on eth0's egress", "flow_args": {}}
    args = host_args(p, "worker3", "b", "tok", throttle=throttle)
    assert args["party"] == "worker3" and args["token"] == "tok" and args["step"] == "b"
    (client,) = args["clients"]
    assert client == {"flow_id": "worker3", "address": "198.18.0.1", "port": 18600, "volume": 10**9, "streams": 1}
    assert args["counters"] == {"interface": "eth0", "netdevs": ["eth0"], "qdiscs": ["eth0"], "rdma_devices": []}
    # a worker is told where to meet; only the coordinating host gets every host and flow of the step
    assert args["rendezvous"] == {"host": "sink", "address": "198.18.0.1", "port": 18599, "start_at": None}
    sink = host_args(p, "sink", "b", "tok")
    assert sink["rendezvous"]["parties"] == ["sink", "worker1", "worker2", "worker3"]
    assert sink["rendezvous"]["expected_flows"] == {"worker1": ["worker1"], "worker2": ["worker2"],
                                                    "worker3": ["worker3"]}
    assert sink["servers"] == [{"port": 18600, "expected_clients": 3, "address": "198.18.0.1",
                                "max_bytes": 2 * 10**9}]
    assert sink["clients"] == [] and sink["counters"]["qdiscs"] == []


def test_host_args_for_perftest_carry_the_device_and_the_rate_limit():
    p = plan({"engine": "perftest", "perftest": {"tool": "ib_read_bw", "rdma_mtu": 1024}}, GROUPS, HOSTVARS,
             rdma_device="mlx5_0")
    throttle = {"mechanism": "perftest_sw", "flow_args": {"rate_limit": "2gbit"}}
    args = host_args(p, "worker2", "barrier", "t", throttle=throttle)
    assert args["perftest"] == {"tool": "ib_read_bw", "device": "mlx5_0"}
    assert args["clients"][0]["rate_limit"] == "2gbit" and args["clients"][0]["source"] == "198.18.0.12"
    assert args["clients"][0]["port"] == 18601  # one perftest server process per client
    assert host_args(p, "sink", "barrier", "t")["servers"][0]["volume"] == 10**9
    assert p["goodput_factor"] == pytest.approx(1024 / (1024 + 58), abs=0.01)


NETNS = {h: dict(v, ansible_connection="aifabric.lab.netns", ansible_netns_prefix="afl-") for h, v in HOSTVARS.items()}


def test_a_lab_of_namespaces_starts_every_part_from_one_task():
    p = plan({"name": "b", "throttles": {"worker3": "2gbit"}}, GROUPS, NETNS)
    assert p["batch_start"] is True
    assert {h: e["netns"] for h, e in p["hosts"].items()} == {
        "sink": "afl-sink", "worker1": "afl-worker1", "worker2": "afl-worker2", "worker3": "afl-worker3"}
    throttle = {"mechanism": "tc", "description": "tc htb on eth1's egress", "flow_args": {}}
    args = batch_args(p, "b", "tok", throttles={"worker3": throttle}, only=["sink", "worker1", "worker3"])
    # the common arguments are the coordinating host's (every host and flow of the step)
    assert args["rendezvous"]["parties"] == p["participants"] and args["token"] == "tok" and args["step"] == "b"
    # a part per host still in the play, each what that host's own task would get, with its namespace
    assert [(x["party"], x["netns"]) for x in args["parts"]] == [
        ("sink", "afl-sink"), ("worker1", "afl-worker1"), ("worker3", "afl-worker3")]
    sink, _w1, w3 = args["parts"]
    assert w3 == {"party": "worker3", "netns": "afl-worker3", "servers": [],
                  "clients": [{"flow_id": "worker3", "address": "198.18.0.1", "port": 18600, "volume": 10**9,
                               "streams": 1}],
                  "counters": {"interface": "eth0", "netdevs": ["eth0"], "qdiscs": ["eth0"], "rdma_devices": []}}
    assert sink["servers"] == [{"port": 18600, "expected_clients": 3, "address": "198.18.0.1", "max_bytes": 2 * 10**9}]
    # a part's own arguments carry no rendezvous: the one task's is the coordinator's, shared
    assert "rendezvous" not in w3


@pytest.mark.parametrize("hostvars, spec, why", [
    (HOSTVARS, {}, "not netns"),
    (dict(NETNS, worker2=HOSTVARS["worker2"]), {}, "one host over another connection"),
    (NETNS, {"batch_start": False}, "turned off"),
    (NETNS, {"engine": "perftest"}, "perftest: the RDMA device is per host"),
])
def test_each_host_starts_its_own_part_elsewhere(hostvars, spec, why):
    p = plan(dict({"name": "b"}, **spec), GROUPS, hostvars)
    assert p["batch_start"] is False, why
    with pytest.raises(ExperimentError, match="start each host's part on the host"):
        batch_args(p, "b", "tok")


def test_the_namespace_is_the_one_the_connection_enters():
    hv = dict(NETNS, worker1=dict(NETNS["worker1"], ansible_netns_name="w-one"),
              worker2=dict(NETNS["worker2"], ansible_host="w-two"))
    p = plan({"name": "b"}, GROUPS, hv)
    assert p["hosts"]["worker1"]["netns"] == "afl-w-one" and p["hosts"]["worker2"]["netns"] == "afl-w-two"
    with pytest.raises(ExperimentError, match="batch_start: 'yes'; give true or false"):
        plan({"batch_start": "yes"}, GROUPS, NETNS)


def test_the_plan_gives_each_throttle_its_module_arguments_and_each_host_its_interface():
    hv = dict(HOSTVARS, worker2=dict(HOSTVARS["worker2"], lab_interface="ens5"),
              worker3=dict(HOSTVARS["worker3"], experiment_interface="data0", lab_interface="ens5"))
    p = plan({"throttles": {"worker3": "2gbit", "worker2": "3gbit"}}, GROUPS, hv, interface="eth1")
    assert {h: e["interface"] for h, e in p["hosts"].items()} == {
        "sink": "eth1", "worker1": "eth1", "worker2": "ens5", "worker3": "data0"}
    assert p["hosts"]["worker3"]["throttle_args"] == {"rate": "2gbit", "engine": "tcp", "interface": "data0",
                                                      "rdma_device": None, "peers": []}
    assert "throttle_args" not in p["hosts"]["worker1"]
    # the counters are read where the throttle shapes
    assert host_args(p, "worker3", "barrier", "t")["counters"]["interface"] == "data0"
    rdma = plan({"engine": "perftest", "throttles": {"worker3": "2gbit"}}, GROUPS,
                dict(hv, worker3=dict(hv["worker3"], lab_rdma_device="rxe1")), rdma_device="rxe0")
    assert rdma["hosts"]["worker3"]["throttle_args"]["rdma_device"] == "rxe1"
    assert host_args(rdma, "worker1", "barrier", "t")["perftest"]["device"] == "rxe0"


def test_a_null_field_takes_its_default():
    """docs/experiments.md lists the defaults with nulls (control_port: null): the plan reads them as not given."""
    p = plan({"name": "b", "control_port": None, "coordinator": None, "start_at": None, "throttles": None}, GROUPS,
             HOSTVARS)
    assert p["rendezvous"]["port"] == 18599 and p["rendezvous"]["host"] == "sink" and p["throttled"] == []


def test_the_roles_argument_spec_describes_every_field_the_plan_knows():
    """roles/experiment/meta/argument_specs.yml and the plan's list of fields are one list (start_lead is described
    only so that the plan can refuse it with the fix)."""
    import os

    import yaml
    from ansible_collections.aifabric.lab.plugins.plugin_utils._plan import experiment as _experiment

    spec = yaml.safe_load(open(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "..", "roles",
                                            "experiment", "meta", "argument_specs.yml")))
    options = spec["argument_specs"]["main"]["options"]["experiment_spec"]["options"]
    assert set(options) - {"start_lead"} == _experiment._KNOWN
    assert set(options["perftest"]["options"]) == set(_experiment.PERFTEST_ARGS) | {"rdma_mtu"}
