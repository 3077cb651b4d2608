# -*- coding: utf-8 -*-
"""The modules' arguments made from a plan: plain dicts, exactly what each module takes."""
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.args import (
    batch_args,
    host_args,
    lookup_flows,
    throttle_args,
)
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import plan
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import PlanError, Stream

GROUPS = {"workers": ["worker1", "worker2", "worker3"], "sinks": ["sink"], "switches": ["switch"]}
HOSTVARS = {"sink": {"lab_address": "198.18.0.1"}, "worker1": {"lab_address": "198.18.0.11"},
            "worker2": {"lab_address": "198.18.0.12"}, "worker3": {"lab_address": "198.18.0.13/24"}}
NETNS = {h: dict(v, ansible_connection="aifabric.lab.netns", ansible_netns_prefix="afl-") for h, v in HOSTVARS.items()}


def test_host_args_fold_in_the_throttle_the_host_got():
    p = plan({"name": "b", "throttles": {"worker3": "2gbit"}}, GROUPS, HOSTVARS)
    throttle = {"mechanism": "tc", "description": "tc htb on eth0's egress", "flow_args": {}}
    args = host_args(p, "worker3", "b", "tok", throttle=throttle)
    assert args["party"] == "worker3" and args["token"] == "tok" and args["step"] == "b"
    (client,) = args["clients"]
    assert client == {"flow_id": "worker3", "address": "198.18.0.1", "port": 18600, "volume": 10**9, "streams": 1}
    # a tcp step's hosts read their namespace's IP packets by ECN codepoint too (a receiver's CE counts)
    assert args["counters"] == {"interface": "eth0", "netdevs": ["eth0"], "qdiscs": ["eth0"], "rdma_devices": [],
                                "ipext": True}
    # a worker is told where to meet; only the coordinating host gets every host and flow of the step
    assert args["rendezvous"] == {"host": "sink", "address": "198.18.0.1", "port": 18599, "start_at": None}
    sink = host_args(p, "sink", "b", "tok")
    assert sink["rendezvous"]["parties"] == ["sink", "worker1", "worker2", "worker3"]
    assert sink["rendezvous"]["expected_flows"] == {"worker1": ["worker1"], "worker2": ["worker2"],
                                                    "worker3": ["worker3"]}
    assert sink["servers"] == [{"port": 18600, "expected_clients": 3, "address": "198.18.0.1",
                                "max_bytes": 2 * 10**9}]
    assert sink["clients"] == [] and sink["counters"]["qdiscs"] == []


def test_host_args_of_a_step_the_plan_does_not_have_name_its_steps():
    p = plan({"name": "b"}, GROUPS, HOSTVARS)
    with pytest.raises(PlanError, match=r"step 'c' is not one of this plan's steps \(b\)"):
        host_args(p, "worker1", "c", "tok")
    with pytest.raises(PlanError, match="worker9 is not a host of this plan"):
        host_args(p, "worker9", "b", "tok")


def test_host_args_for_perftest_carry_the_device_and_the_rate_limit():
    p = plan({"engine": "perftest", "perftest": {"tool": "ib_read_bw", "rdma_mtu": 1024}}, GROUPS, HOSTVARS,
             rdma_device="mlx5_0")
    throttle = {"mechanism": "perftest_sw", "flow_args": {"rate_limit": "2gbit"}}
    args = host_args(p, "worker2", "barrier", "t", throttle=throttle)
    assert args["perftest"] == {"tool": "ib_read_bw", "device": "mlx5_0"}
    assert args["clients"][0]["rate_limit"] == "2gbit" and args["clients"][0]["source"] == "198.18.0.12"
    # a perftest step's hosts read their NIC's PFC pause counters (none on a NIC without them)
    assert args["counters"]["ethtool"] == ["eth0"] and "ipext" not in args["counters"]
    assert args["clients"][0]["port"] == 18601  # one perftest server process per client
    assert host_args(p, "sink", "barrier", "t")["servers"][0]["volume"] == 10**9


def test_a_lab_of_namespaces_starts_every_part_from_one_task():
    p = plan({"name": "b", "throttles": {"worker3": "2gbit"}}, GROUPS, NETNS)
    throttle = {"mechanism": "tc", "description": "tc htb on eth1's egress", "flow_args": {}}
    args = batch_args(p, "b", "tok", throttles={"worker3": throttle}, only=["sink", "worker1", "worker3"])
    # the common arguments are the coordinating host's (every host and flow of the step)
    assert args["rendezvous"]["parties"] == p.participants and args["token"] == "tok" and args["step"] == "b"
    # a part per host still in the play, each what that host's own task would get, with its namespace
    assert [(x["party"], x["netns"]) for x in args["parts"]] == [
        ("sink", "afl-sink"), ("worker1", "afl-worker1"), ("worker3", "afl-worker3")]
    sink, _w1, w3 = args["parts"]
    assert w3 == {"party": "worker3", "netns": "afl-worker3", "servers": [],
                  "clients": [{"flow_id": "worker3", "address": "198.18.0.1", "port": 18600, "volume": 10**9,
                               "streams": 1}],
                  "counters": {"interface": "eth0", "netdevs": ["eth0"], "qdiscs": ["eth0"], "rdma_devices": [],
                               "ipext": True}}
    assert sink["servers"] == [{"port": 18600, "expected_clients": 3, "address": "198.18.0.1", "max_bytes": 2 * 10**9}]
    # a part's own arguments carry no rendezvous: the one task's is the coordinator's, shared
    assert "rendezvous" not in w3


def test_batch_args_refuse_a_plan_whose_hosts_start_elsewhere():
    p = plan({"name": "b"}, GROUPS, HOSTVARS)
    with pytest.raises(PlanError, match="start each host's part on the host"):
        batch_args(p, "b", "tok")


def test_throttle_args_are_the_throttle_modules():
    hv = dict(HOSTVARS, worker3=dict(HOSTVARS["worker3"], experiment_interface="data0", lab_interface="ens5"))
    p = plan({"throttles": {"worker3": "2gbit"}}, GROUPS, hv, interface="eth1")
    assert throttle_args(p, "worker3") == {"rate": "2gbit", "engine": "tcp", "interface": "data0",
                                           "rdma_device": None, "peers": []}
    # the counters are read where the throttle shapes
    assert host_args(p, "worker3", "barrier", "t")["counters"]["interface"] == "data0"
    rdma = plan({"engine": "perftest", "throttles": {"worker3": "2gbit"}}, GROUPS,
                dict(hv, worker3=dict(hv["worker3"], lab_rdma_device="rxe1")), rdma_device="rxe0")
    assert throttle_args(rdma, "worker3") == {"rate": "2gbit", "engine": "perftest", "interface": "data0",
                                              "rdma_device": "rxe1", "peers": []}
    with pytest.raises(PlanError, match=r"worker1 is not throttled in this plan \(throttled: worker3\)"):
        throttle_args(p, "worker1")


FABRIC = {"leaves": [{"name": "leaf1", "namespace": "aff-leaf1", "gateway": "198.18.1.254/24"},
                     {"name": "leaf2", "namespace": "aff-leaf2", "gateway": "198.18.2.254/24"}],
          "spines": [{"name": "spine1", "namespace": "aff-spine1"}, {"name": "spine2", "namespace": "aff-spine2"}],
          "hosts": [{"name": "w1", "namespace": "aff-w1", "leaf": "leaf1", "address": "198.18.1.11/24"},
                    {"name": "w2", "namespace": "aff-w2", "leaf": "leaf2", "address": "198.18.2.11/24"}],
          "mtu": 9000, "hash": "l4", "seed": 1, "host_rate": "1gbit", "uplink_rate": "1gbit"}
FABRIC_HOSTVARS = {"w1": {"lab_address": "198.18.1.11"}, "w2": {"lab_address": "198.18.2.11"}}


def test_the_lookups_ask_for_every_candidate_port_and_the_placed_ports_reach_the_flows():
    p = plan({"name": "s", "pattern": "shift", "fabric": {"placement": "spread"}}, {"workers": ["w1", "w2"]},
             FABRIC_HOSTVARS, line_rate="1gbit", fabric=FABRIC)
    lookups = lookup_flows(p)
    # 2 flows x 1 stream x 24 candidates (spread), each a five-tuple from the flow's host to its destination
    assert len(lookups) == 48 and {x["src"] for x in lookups} == {"198.18.1.11", "198.18.2.11"}
    first = lookups[0]
    port = p.fabric.ports["s"]["w1"]["w1"][0][0]
    assert first == {"id": "s|w1|w1|0|%d" % port, "src": "198.18.1.11", "dst": "198.18.2.11", "sport": port,
                     "dport": 18600, "proto": "tcp"}
    assert host_args(p, "w1", "s", "t")["clients"][0].get("source_ports") is None  # not placed yet
    p.fabric.placed = {"s": {"w1": {"w1": [Stream(sport=port, links=["w1->leaf1"])]}}}
    assert host_args(p, "w1", "s", "t")["clients"][0]["source_ports"] == [port]


def test_a_jobs_workers_get_their_programs_one_task_for_the_netns_lab():
    from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.args import batch_args, host_args
    from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import plan

    groups = {"workers": ["w1", "w2", "w3", "w4"]}
    hostvars = {"w%d" % i: {"lab_address": "198.18.0.%d" % i, "ansible_connection": "aifabric.lab.netns"}
                for i in range(1, 5)}
    p = plan({"name": "j", "job": {"iterations": 3, "collectives": [
        {"op": "allreduce", "algorithm": "tree", "size": "4MB", "chunks": 2}]}}, groups, hostvars)
    one = host_args(p, "w2", "j", "tok")
    assert one["servers"] == [] and one["clients"] == []
    assert one["program"]["iterations"] == 3 and one["program"]["listen"] == {"address": "198.18.0.2", "port": 18600}
    batch = batch_args(p, "j", "tok")
    assert [part["party"] for part in batch["parts"]] == ["w1", "w2", "w3", "w4"]
    assert [part["program"] for part in batch["parts"]] == [p.job.programs(p.hosts)[h] for h in groups["workers"]]
    assert batch["rendezvous"]["parties"] == ["w1", "w2", "w3", "w4"] and batch["rendezvous"]["expected_flows"] == {}
    # a plan without a job: no program
    assert host_args(plan({"name": "b", "pattern": "ring"}, groups, hostvars), "w1", "b", "tok")["program"] is None
