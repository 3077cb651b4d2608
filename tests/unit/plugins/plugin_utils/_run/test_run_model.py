# -*- coding: utf-8 -*-
"""The run model's paths: a flow's path is the plan's ``Hop`` s, a fabric stream a ``Subflow``; ``read_path`` is the one
reader of a path's dict form (a flow's annotations, a schema-1 plan.json's steps)."""
from __future__ import annotations

import json
import os

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import plan
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import Hop, Stream
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.model import (
    PlannedFlow,
    StepPlan,
    Subflow,
    read_path,
    step_plans,
)

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures")


@pytest.mark.parametrize("path, hops, error", [
    ([], [], None),
    (None, [], None),
    ([{"link": "w1->switch", "rate": "8gbit"}, {"link": "w1 egress", "rate": "2gbit", "throttle": True}],
     [Hop("w1->switch", "8gbit"), Hop("w1 egress", "2gbit", throttle=True)], None),
    # a rate as bit/s (a plain flow's annotations may say so): kept as given, the prediction parses it
    ([{"link": "a->b", "rate": 8000000000}], [Hop("a->b", 8000000000)], None),
    # the hops before a broken one are kept; the error names the broken one as it was given
    ([{"link": "a->b", "rate": "1gbit"}, {"link": "b->c"}, {"link": "c->d", "rate": "1gbit"}],
     [Hop("a->b", "1gbit")], "host w1: every path hop needs 'link' and 'rate' (got {'link': 'b->c'})"),
    ([{"rate": "1gbit"}], [], "host w1: every path hop needs 'link' and 'rate' (got {'rate': '1gbit'})"),
    ([{"link": "", "rate": "1gbit"}], [],
     "host w1: every path hop needs 'link' and 'rate' (got {'link': '', 'rate': '1gbit'})"),
    (["a->b"], [], "host w1: every path hop needs 'link' and 'rate' (got 'a->b')"),
])
def test_a_paths_dict_form_is_read_into_hops(path, hops, error):
    assert read_path(path, "w1") == (hops, error)


def test_a_hop_is_a_value():
    hop = Hop("w1->switch", "8gbit")
    with pytest.raises(AttributeError):
        hop.rate = "1gbit"  # frozen: a path read once is the path every reader sees
    assert hop == Hop.from_dict({"link": "w1->switch", "rate": "8gbit"})
    assert hash(hop) == hash(Hop("w1->switch", "8gbit"))
    throttle = {"link": "w1 egress", "rate": "2gbit", "throttle": True}
    assert Hop("w1 egress", "2gbit", throttle=True).to_dict() == throttle


def test_a_schema_1_steps_flows_read_into_hops_and_back():
    """plan.json schema 1 (a real make demo) stored each step's plan with its paths as dicts: read, they are Hops;
    written back (as_dict), they are the dicts that were stored."""
    with open(os.path.join(FIXTURES, "history", "20261130T180103-demo", "plan.json")) as handle:
        stored = json.load(handle)["steps"]
    for name, data in stored.items():
        step = StepPlan.from_dict(data)
        for flow in step.flows.values():
            assert flow.path and all(isinstance(h, Hop) for h in flow.path) and flow.path_error is None
        assert step.as_dict()["flows"] == data["flows"], name
    w3 = StepPlan.from_dict(stored["barrier"]).flow("worker3")
    assert w3.path == [Hop("worker3->switch", "8gbit"), Hop("switch->sink", "8gbit"),
                       Hop("worker3 egress", "2gbit", throttle=True)]


def test_a_subflow_reads_its_share_and_path():
    sub = Subflow.from_dict({"sport": 40001, "share": 0.5, "path": [{"link": "w1->leaf1", "rate": "1gbit"}]}, "w1")
    assert sub == Subflow(sport=40001, share=0.5, path=(Hop("w1->leaf1", "1gbit"),))
    assert Subflow.from_dict({"sport": None, "share": None, "path": []}, "w1").share == 1.0  # no share: the whole flow
    broken = PlannedFlow.from_dict({"path": [], "subflows": [{"sport": 1, "share": 1.0, "path": [{"link": "x"}]}]},
                                   "w1")
    assert broken.subflows[0].path == () and "got {'link': 'x'}" in broken.subflows[0].path_error


def test_the_fabric_labs_streams_become_subflows_of_hops():
    """Two hosts on one leaf, each flow placed on one stream: its subflow's path is the links its lookup gave, each
    with the fabric's rate (1gbit, the fabric's host_rate)."""
    fabric = {"leaves": [{"name": "leaf1", "namespace": "aff-leaf1", "gateway": "198.18.1.254/24"}],
              "spines": [],
              "hosts": [{"name": "w1", "namespace": "aff-w1", "leaf": "leaf1", "address": "198.18.1.11/24"},
                        {"name": "w2", "namespace": "aff-w2", "leaf": "leaf1", "address": "198.18.1.12/24"}],
              "mtu": 9000, "hash": "l4", "seed": 5, "host_rate": "1gbit", "uplink_rate": "1gbit"}
    p = plan({"name": "s", "pattern": "shift"}, {"workers": ["w1", "w2"]},
             {"w1": {"lab_address": "198.18.1.11"}, "w2": {"lab_address": "198.18.1.12"}}, fabric=fabric)
    p.fabric.placed = {"s": {"w1": {"w1": [Stream(sport=40001, links=["w1->leaf1", "leaf1->w2"])]},
                             "w2": {"w2": [Stream(sport=40002, links=["w2->leaf1", "leaf1->w1"])]}}}
    step = step_plans(p)["s"]
    assert step.flow("w1").subflows == [
        Subflow(sport=40001, share=1.0, path=(Hop("w1->leaf1", "1gbit"), Hop("leaf1->w2", "1gbit")))]
    assert step.flow("w2").subflows[0].path[-1] == Hop("leaf1->w1", "1gbit")
    assert step.as_dict()["flows"][0]["subflows"] == [
        {"sport": 40001, "share": 1.0,
         "path": [{"link": "w1->leaf1", "rate": "1gbit"}, {"link": "leaf1->w2", "rate": "1gbit"}]}]
