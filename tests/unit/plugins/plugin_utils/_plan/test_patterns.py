# -*- coding: utf-8 -*-
"""Every pattern's and collective's flows, and their fair-share prediction, against tables computed by hand.

The lab: 4 workers (w1..w4) and 2 sinks, every switch port at 8 Gb/s both ways, w4 throttled to 2 Gb/s (a quarter of
the line), 1 GB (8 Gbit) per flow (a collective's V/n: 2 Gbit). Goodput factor 1 here: the arithmetic is the model's.
"""
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._units import parse_rate
from ansible_collections.aifabric.lab.plugins.plugin_utils._model.fair_share import predict_completions
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import ExperimentError, plan
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.patterns import tournament

W = ["w1", "w2", "w3", "w4"]
GROUPS = {"workers": W, "sinks": ["s1", "s2"]}
HOSTVARS = {h: {"lab_address": "198.18.0.%d" % (i + 1)} for i, h in enumerate(["s1", "s2"] + W)}


def lab_plan(pattern, **kw):
    return plan(dict({"name": "x", "pattern": pattern, "volume": "1GB", "throttles": {"w4": "2gbit"}}, **kw),
                GROUPS, HOSTVARS, line_rate="8gbit", switch="sw")


def predicted(p, k=0):
    """{(host, flow_id): seconds} of round k, from the plan's paths (links with rates) and volumes."""
    flows, links, volumes = {}, {}, {}
    for f in p.rounds[k].flows():
        key = (f.src, f.flow_id)
        flows[key] = [hop.link for hop in f.path]
        links.update({hop.link: parse_rate(hop.rate) for hop in f.path})
        volumes[key] = f.volume
    return {k: round(v, 6) for k, v in predict_completions(flows, links, volumes).items()}


def pairs(p, k=0):
    return sorted((f.src, f.address) for f in p.rounds[k].flows())


ADDR = {h: v["lab_address"] for h, v in HOSTVARS.items()}


def test_incast_every_worker_to_the_first_sink():
    """The sink's port shared by 4 (2 Gb/s each) and w4's throttle at 2: all at 2 Gb/s, 4.0 s."""
    p = lab_plan("incast")
    assert pairs(p) == [(w, ADDR["s1"]) for w in W]
    assert predicted(p) == {(w, w): 4.0 for w in W}


def test_ring_one_flow_per_link():
    """w4 -> w1 at its 2 Gb/s throttle (4.0 s), every other link at 8 (1.0 s)."""
    p = lab_plan("ring")
    assert pairs(p) == [("w1", ADDR["w2"]), ("w2", ADDR["w3"]), ("w3", ADDR["w4"]), ("w4", ADDR["w1"])]
    assert predicted(p) == {("w1", "w1"): 1.0, ("w2", "w2"): 1.0, ("w3", "w3"): 1.0, ("w4", "w4"): 4.0}


def test_ring_bidirectional_two_flows_out_of_every_port():
    """Two flows out of every port: 4 Gb/s each (2.0 s); w4's two share its 2 Gb/s throttle, 1 each (8.0 s). The
    receivers of w4's flows (w1, w3) get 4 + 1 of their 8: not a bottleneck."""
    p = lab_plan("ring_bidirectional")
    out = predicted(p)
    assert out[("w4", "w4->w1")] == out[("w4", "w4->w3")] == 8.0
    assert {k: v for k, v in out.items() if k[0] != "w4"} == {
        ("w1", "w1->w2"): 2.0, ("w1", "w1->w4"): 2.0, ("w2", "w2->w3"): 2.0, ("w2", "w2->w1"): 2.0,
        ("w3", "w3->w4"): 2.0, ("w3", "w3->w2"): 2.0}


def test_pairwise_is_a_round_robin_tournament():
    """4 workers: 3 rounds of 2 disjoint pairs, each pair exchanging both ways; every two workers meet once. In each
    round w4's flow runs at its throttle (4.0 s), the others at the line (1.0 s)."""
    p = lab_plan("pairwise")
    assert p.steps == ["x.1", "x.2", "x.3"] and len(p.rounds) == 3
    met = sorted(tuple(sorted(pair)) for r in tournament(W) for pair in r)
    assert met == sorted((a, b) for i, a in enumerate(W) for b in W[i + 1:])
    for k in range(3):
        out = predicted(p, k)
        assert len(out) == 4 and out[("w4", "w4")] == 4.0
        assert all(v == 1.0 for key, v in out.items() if key[0] != "w4")


def test_pairwise_with_an_odd_number_sits_one_out_each_round():
    rounds = tournament(["a", "b", "c", "d", "e"])
    assert len(rounds) == 5 and all(len(r) == 2 for r in rounds)
    sitting_out = [sorted(set("abcde") - {h for pair in r for h in pair}) for r in rounds]
    assert sorted(x[0] for x in sitting_out) == list("abcde")  # everyone sits out once
    assert len({tuple(sorted(pair)) for r in rounds for pair in r}) == 10  # every pair meets once


def test_all_to_all_three_flows_out_of_and_into_every_port():
    """Each sender's port shared by its 3 flows: 8/3 Gb/s each, 3.0 s. w4's 3 flows share its 2 Gb/s: 2/3 each,
    12.0 s. The receivers' ports carry 2 x 8/3 + 2/3 = 6 of 8 (w1..w3) and 3 x 8/3 = 8 (w4)."""
    p = lab_plan("all_to_all")
    out = predicted(p)
    assert len(out) == 12
    assert all(v == 12.0 for k, v in out.items() if k[0] == "w4")
    assert all(v == 3.0 for k, v in out.items() if k[0] != "w4")


@pytest.mark.parametrize("root, seconds", [(None, 3.0), ("w4", 12.0)])
def test_one_to_many_the_roots_port_is_the_bottleneck(root, seconds):
    """Root w1: 3 flows share its 8 Gb/s port, 8/3 each: 3.0 s. Root w4: its 2 Gb/s throttle, 2/3 each: 12.0 s."""
    p = lab_plan("one_to_many", **({"root": root} if root else {}))
    sender = root or "w1"
    assert sorted(p.rounds[0].expected_flows) == [sender]
    assert set(predicted(p).values()) == {seconds}


def test_many_to_many_every_worker_to_every_sink():
    """Each sink's port takes 4 flows. w4's 2 flows share its throttle (1 Gb/s each); the others get what is left of
    a sink's port, (8 - 1) / 3 = 7/3 each: 8 / (7/3) = 3.428571 s; w4's: 8.0 s."""
    p = lab_plan("many_to_many")
    out = predicted(p)
    assert len(out) == 8
    assert all(v == 8.0 for k, v in out.items() if k[0] == "w4")
    assert all(v == pytest.approx(24 / 7, abs=1e-6) for k, v in out.items() if k[0] != "w4")


@pytest.mark.parametrize("collective, rounds, bus_factor", [
    ("allreduce_ring", 6, 1.5), ("allgather_ring", 3, 0.75), ("reduce_scatter_ring", 3, 0.75), ("alltoall", 1, 0.75)])
def test_collectives_are_rounds_of_v_over_n(collective, rounds, bus_factor):
    """V = 1 GB over 4 ranks: flows of 250 MB (2 Gbit). A ring round: w4 -> w1 at 2 Gb/s, 1.0 s; the others 0.25 s.
    AlltoAll: w4's 3 flows at 2/3 Gb/s, 3.0 s. nccl-tests' bus factors: 2(n-1)/n = 1.5, (n-1)/n = 0.75."""
    p = lab_plan(collective)
    assert len(p.rounds) == rounds
    assert p.steps == (["x.%d" % (k + 1) for k in range(rounds)] if rounds > 1 else ["x"])
    assert p.collective.to_dict() == {"name": collective, "ranks": 4, "size": 10**9, "bus_factor": bus_factor}
    for k in range(rounds):
        out = predicted(p, k)
        assert all(f.volume == 250 * 10**6 for f in p.rounds[k].flows())
        if collective == "alltoall":
            assert max(out.values()) == 3.0 and min(out.values()) == 0.75
        else:
            assert out == {("w1", "w1"): 0.25, ("w2", "w2"): 0.25, ("w3", "w3"): 0.25, ("w4", "w4"): 1.0}


def test_repeated_collectives_name_their_rounds_per_repetition():
    p = lab_plan("allgather_ring", steps=2)
    assert p.repetitions == [["x-1.1", "x-1.2", "x-1.3"], ["x-2.1", "x-2.2", "x-2.3"]]
    assert p.step_round["x-2.3"] == 2


def test_a_flow_speeds_up_when_a_co_bottlenecked_flow_ends():
    """Progressive filling over time: w1 (1 GB) and w2 (2 GB) share 8 Gb/s, 4 each; w1 ends at 2.0 s, then w2 has the
    whole link: its last 8 Gbit take 1.0 s more, 3.0 s (a snapshot of the start would say 4.0)."""
    out = predict_completions({"w1": ["port"], "w2": ["port"]}, {"port": 8e9}, {"w1": 10**9, "w2": 2 * 10**9})
    assert out == {"w1": pytest.approx(2.0), "w2": pytest.approx(3.0)}


@pytest.mark.parametrize("spec, groups, message", [
    ({"pattern": "one_to_many", "root": "s1"}, GROUPS, "experiment.root: 's1' is not one of the experiment's workers"),
    ({"pattern": "many_to_many"}, {"workers": W, "sinks": ["s1"]}, "many_to_many needs 2 sinks"),
    ({"pattern": "ring_bidirectional", "workers": 2}, GROUPS, "ring_bidirectional needs 3 workers"),
    ({"pattern": "allreduce_ring", "workers": 1}, GROUPS, "allreduce_ring needs 2 workers"),
    ({"pattern": "broadcast"}, GROUPS, "'broadcast' is not known; use one of incast, ring"),
])
def test_bad_combinations_are_refused_before_anything_starts(spec, groups, message):
    with pytest.raises(ExperimentError, match=message):
        plan(dict({"name": "x"}, **spec), groups, HOSTVARS)


def test_the_flow_lists_of_the_many_flow_patterns():
    everyone = [(a, ADDR[b]) for a in W for b in W if a != b]
    assert pairs(lab_plan("all_to_all")) == sorted(everyone)
    assert pairs(lab_plan("one_to_many")) == [("w1", ADDR["w2"]), ("w1", ADDR["w3"]), ("w1", ADDR["w4"])]
    assert pairs(lab_plan("many_to_many")) == sorted((w, ADDR[s]) for w in W for s in ("s1", "s2"))
    # a host that sends several flows names each after its peer; the server counts every incoming flow
    p = lab_plan("all_to_all")
    assert [f.flow_id for f in p.rounds[0].parts["w1"].flows] == ["w1->w2", "w1->w3", "w1->w4"]
    assert p.rounds[0].parts["w2"].servers[0].expected_clients == 3


def test_a_worker_sitting_out_a_round_still_joins_its_rendezvous_with_nothing_to_send():
    """Odd pairwise (3 workers): in each round one worker has no flow and no server; it takes part in the rendezvous
    (every host of the experiment is a party of every round) with an empty part."""
    from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.args import host_args

    p = plan({"name": "x", "pattern": "pairwise", "workers": 3}, GROUPS, HOSTVARS)
    assert len(p.rounds) == 3
    for k, step in enumerate(p.steps):
        out = [h for h in ("w1", "w2", "w3") if h not in p.rounds[k].parts]
        assert len(out) == 1
        args = host_args(p, out[0], step, "t")
        assert args["servers"] == [] and args["clients"] == []
        coordinator = host_args(p, p.rendezvous.host, step, "t")["rendezvous"]
        assert set(coordinator["parties"]) == {"w1", "w2", "w3"} and out[0] not in coordinator["expected_flows"]


def test_the_throttle_is_shared_between_the_peers_of_a_host_that_sends_to_several():
    assert lab_plan("all_to_all").hosts["w4"].throttle.peers == [ADDR["w1"], ADDR["w2"], ADDR["w3"]]
    assert lab_plan("incast").hosts["w4"].throttle.peers == []  # one destination: one queue


def test_shift_sends_every_worker_to_the_one_half_the_list_further_on():
    """A permutation: one flow out of and into every port, w4 at its throttle (4.0 s), the others at 8 (1.0 s)."""
    p = lab_plan("shift")
    assert pairs(p) == [("w1", ADDR["w3"]), ("w2", ADDR["w4"]), ("w3", ADDR["w1"]), ("w4", ADDR["w2"])]
    assert predicted(p) == {("w1", "w1"): 1.0, ("w2", "w2"): 1.0, ("w3", "w3"): 1.0, ("w4", "w4"): 4.0}
