# -*- coding: utf-8 -*-
"""The typed plan: its dict form (what travels between tasks and what plan.json holds) read back into the same model,
and the planner's dict from before the model (plan.json schema 1's experiments) read into it too."""
from __future__ import annotations

import json
import os

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import plan
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import PLAN_VERSION, Hop, Plan, PlanError
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.model import StepPlan, step_plans

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "history")
GROUPS = {"workers": ["w1", "w2", "w3"], "sinks": ["sink"]}
HOSTVARS = {h: {"lab_address": "198.18.0.%d" % i, "ansible_connection": "aifabric.lab.netns"}
            for i, h in enumerate(["sink", "w1", "w2", "w3"], 1)}


def test_the_dict_form_is_json_and_reads_back_into_the_same_plan():
    p = plan({"name": "ar", "pattern": "allreduce_ring", "steps": 2, "throttles": {"w2": "2gbit"},
              "expect": {"step_vs_predicted": 1.1}, "late_bound": "5ms"}, GROUPS, HOSTVARS)
    p.hosts["w2"].throttle.applied = "tc htb on eth0's egress"
    p.baseline = {"run": "r1", "steps": {"ar-1.1": 1.0}, "p50_step_s": 1.0}
    data = json.loads(json.dumps(p.to_dict()))
    assert data["version"] == PLAN_VERSION == 2
    back = Plan.from_dict(data)
    assert back == p  # every field, every round, every flow and hop
    assert back.to_dict() == data
    # the playbooks' lists are in the dict, derived; plan.json leaves them out
    assert data["participants"] == ["w1", "w2", "w3"] and data["throttled"] == ["w2"]
    assert "participants" not in p.to_dict(views=False) and "throttled" not in p.to_dict(views=False)
    # a flow in the dict form names both its ends
    (flow,) = data["rounds"][0]["hosts"]["w1"]["clients"]
    assert (flow["src"], flow["dst"], flow["address"]) == ("w1", "w2", "198.18.0.3")


def test_a_fabric_plans_ports_and_placed_streams_travel_too():
    fabric = {"leaves": [{"name": "leaf1", "namespace": "aff-leaf1", "gateway": "198.18.1.254/24"}],
              "spines": [],
              "hosts": [{"name": "w1", "namespace": "aff-w1", "leaf": "leaf1", "address": "198.18.1.11/24"},
                        {"name": "w2", "namespace": "aff-w2", "leaf": "leaf1", "address": "198.18.1.12/24"}],
              "mtu": 9000, "hash": "l4", "seed": 5, "host_rate": "1gbit", "uplink_rate": "1gbit"}
    p = plan({"name": "s", "pattern": "shift"}, {"workers": ["w1", "w2"]},
             {"w1": {"lab_address": "198.18.1.11"}, "w2": {"lab_address": "198.18.1.12"}}, fabric=fabric)
    assert (p.fabric.hash, p.fabric.seed, p.fabric.placement, p.fabric.port_seed) == ("l4", 5, "hash", 0)
    assert Plan.from_dict(json.loads(json.dumps(p.to_dict()))) == p


@pytest.mark.parametrize("data, message", [
    ("a plan", "not a plan .* got str"),
    ({"hosts": {}}, "not a plan: no rounds, steps, rendezvous"),
    ({"version": 3, "hosts": {}, "rounds": [], "steps": [], "rendezvous": {}},
     "a plan of version 3: this collection reads versions 1 to 2"),
])
def test_what_is_not_a_plan_is_named(data, message):
    with pytest.raises(PlanError, match=message):
        Plan.from_dict(data)


@pytest.mark.parametrize("run", ["20261130T180103-demo", "20261130T185009-demo"])
def test_the_planners_dict_before_the_model_reads_into_the_same_facts(run):
    """plan.json schema 1 (a real make demo): its experiments are the old planner's dicts, and beside them each step's
    plan as the old code made it. Read into the model, the experiments give back every fact the old dict held, and
    the steps' plans made from them are the ones the old code stored."""
    with open(os.path.join(FIXTURES, run, "plan.json")) as handle:
        record = json.load(handle)
    made = {}
    for old in record["experiments"]:
        p = Plan.from_dict(old)
        assert (p.name, p.kind, p.pattern, p.engine, p.line_rate, p.mtu) == (
            old["name"], old["kind"], old["pattern"], old["engine"], old["line_rate"], old["mtu"])
        assert p.steps == old["steps"] and p.repetitions == old["repetitions"] and p.step_round == old["step_round"]
        assert p.participants == old["participants"] and p.sources == old["sources"]
        assert p.destinations == old["destinations"] and p.throttled == old["throttled"]
        assert (p.rendezvous.host, p.rendezvous.port) == (old["rendezvous"]["host"], old["rendezvous"]["port"])
        assert p.host(old["rendezvous"]["host"]).address == old["rendezvous"]["address"]
        for name, host in old["hosts"].items():
            mine = p.hosts[name]
            assert (mine.address, mine.netns, mine.interface) == (host["address"], host["netns"], host["interface"])
            assert (mine.throttle.rate if mine.throttle else None) == host["throttle"]
            if mine.throttle:
                assert mine.throttle.applied == old["applied_throttles"][name]
        for k, old_round in enumerate(old["rounds"]):
            assert p.rounds[k].expected_flows == old_round["expected_flows"]
            assert p.rounds[k].sources == old_round["sources"]
            for host, part in old_round["hosts"].items():
                for flow, client in zip(p.rounds[k].parts[host].flows, part["clients"]):
                    assert [h.to_dict() for h in flow.path] == client["path"]
                    assert flow.src == host and p.hosts[flow.dst].address == client["address"]
        made.update(step_plans(p))
    assert {n: s.as_dict() for n, s in made.items()} == {n: StepPlan.from_dict(s).as_dict()
                                                         for n, s in record["steps"].items()}
    # the demo's barrier step, by hand: worker3 throttled to 2gbit by tc on its egress, the sink's 8gbit port shared
    barrier = made["barrier"]
    assert barrier.bottleneck == "8gbit" and barrier.expected_workers == ["worker1", "worker2", "worker3"]
    w3 = barrier.flow("worker3")
    assert (w3.throttle, w3.throttle_mechanism) == ("2gbit", "worker3: tc htb on eth0's egress")
    assert w3.path[-1] == Hop("worker3 egress", "2gbit", throttle=True)


def test_a_step_the_plan_does_not_have_is_named_with_the_fix():
    p = plan({"name": "b", "steps": 2}, GROUPS, HOSTVARS)
    with pytest.raises(PlanError, match=r"step 'b' is not one of this plan's steps \(b-1, b-2\)"):
        p.round_of("b")


def test_a_plan_read_back_reads_a_round_when_it_is_asked_for():
    """One host's arguments for one step need that step's round only: a 32-rank ring AllReduce has 62 rounds, and
    the role asks for every host's arguments of every step."""
    from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.args import host_args

    workers = ["w%d" % i for i in range(1, 9)]
    p = plan({"name": "ar", "pattern": "allreduce_ring"}, {"workers": workers},
             {h: {"lab_address": "198.18.0.%d" % i} for i, h in enumerate(workers, 11)})
    back = Plan.from_dict(json.loads(json.dumps(p.to_dict())))
    assert len(back.rounds) == 14 and back.repetitions == p.repetitions
    args = host_args(back, "w1", "ar.5", "tok")
    assert args == host_args(p, "w1", "ar.5", "tok") and sorted(back.rounds._made) == [4]
    assert list(back.rounds) == p.rounds and back.rounds[-1] == p.rounds[13] and back.rounds[1:3] == p.rounds[1:3]
