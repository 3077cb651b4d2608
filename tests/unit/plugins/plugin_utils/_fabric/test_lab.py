# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric lab on the controller: the fabric from the inventory, ports, placement, and a step's analysis (the
collisions, the ideal, the paths proved or disproved by the switches' counters)."""

from __future__ import annotations

import copy

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.fabric import seeds, simulated_slowdown
from ansible_collections.aifabric.lab.plugins.plugin_utils._fabric.lab import (
    FIRST_PORT,
    PORT_BUCKETS,
    SPREAD_CANDIDATES,
    FabricLabError,
    assign_ports,
    fabric_topology,
    place,
)
from ansible_collections.aifabric.lab.plugins.plugin_utils._model.ecmp import expected_slowdown
from ansible_collections.aifabric.lab.plugins.plugin_utils._model.fair_share import goodput_factor
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.args import host_args, lookup_flows
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import ExperimentError, plan
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.build import build_report
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.text import render_text
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.model import build_run, step_plans

GROUPS = {"leaves": ["leaf1", "leaf2"], "spines": ["spine1", "spine2"], "workers": ["w1", "w2", "w3", "w4"]}
HOSTVARS = {"leaf1": {"lab_subnet": "198.18.1.0/24"}, "leaf2": {"lab_subnet": "198.18.2.0/24"},
            "w1": {"lab_leaf": "leaf1", "lab_address": "198.18.1.11"},
            "w2": {"lab_leaf": "leaf1", "lab_address": "198.18.1.12"},
            "w3": {"lab_leaf": "leaf2", "lab_address": "198.18.2.11"},
            "w4": {"lab_leaf": "leaf2", "lab_address": "198.18.2.12"}}
FABRIC = fabric_topology(GROUPS, HOSTVARS, prefix="aflt-x-", seed=3, host_rate="1gbit", uplink_rate="1gbit")


def test_the_fabric_from_the_inventory():
    assert FABRIC["leaves"] == [{"name": "leaf1", "namespace": "aflt-x-leaf1", "gateway": "198.18.1.254/24"},
                                {"name": "leaf2", "namespace": "aflt-x-leaf2", "gateway": "198.18.2.254/24"}]
    assert FABRIC["hosts"][2] == {"name": "w3", "namespace": "aflt-x-w3", "leaf": "leaf2", "address": "198.18.2.11/24"}
    assert FABRIC["seed"] == 3 and FABRIC["hash"] == "l4" and FABRIC["uplink_rate"] == "1gbit"


@pytest.mark.parametrize("change, message", [
    ({"w2": {"lab_leaf": "leaf7", "lab_address": "198.18.1.12"}}, "host w2: lab_leaf 'leaf7' is not one of the leaves"),
    ({"w2": {"lab_leaf": "leaf2", "lab_address": "198.18.1.12"}}, "outside lab_subnet 198.18.2.0/24"),
    ({"leaf1": {}}, "leaf leaf1: lab_subnet None is not a subnet"),
])
def test_bad_inventories_name_the_host_and_the_fix(change, message):
    hostvars = dict(HOSTVARS, **change)
    with pytest.raises(FabricLabError, match=message):
        fabric_topology(GROUPS, hostvars)


def _flows(step):
    return [("w1", "w1", 1), ("w2", "w2", 2)]


def test_ports_give_every_stream_of_a_step_its_own_bucket_and_never_repeat_per_host():
    ports = assign_ports(["a", "b", "c"], _flows, "hash", seed=5)
    for step in ("a", "b", "c"):
        streams = [p for host in ports[step].values() for f in host.values() for s in f for p in s]
        assert len(streams) == 3 and len({(p - FIRST_PORT) % PORT_BUCKETS for p in streams}) == 3
    per_host = [p for step in ports.values() for s in step["w2"]["w2"] for p in s]
    assert len(per_host) == len(set(per_host)) == 6
    assert assign_ports(["a"], _flows, "hash", seed=5)["a"] == ports["a"]  # seeded: the same ports again
    spread = assign_ports(["a"], _flows, "spread", seed=5)["a"]["w1"]["w1"][0]
    assert len(spread) == SPREAD_CANDIDATES and len({(p - FIRST_PORT) % PORT_BUCKETS for p in spread}) == 1
    with pytest.raises(FabricLabError, match="a step of 65 streams"):
        assign_ports(["a"], lambda step: [("w1", "w1", 65)])
    with pytest.raises(FabricLabError, match="placement: 'ecmp'"):
        assign_ports(["a"], _flows, "ecmp")


def _plan(**fabric):
    return plan({"name": "x", "pattern": "shift", "volume": "1GB", "fabric": fabric}, GROUPS, HOSTVARS,
                line_rate="1gbit", fabric=FABRIC)


def _answer(the_plan, spine_of):
    """What fabric_paths_info would answer: each flow's spine chosen by ``spine_of(host, sport)``."""
    leaf = {"w1": "leaf1", "w2": "leaf1", "w3": "leaf2", "w4": "leaf2"}
    by_address = {e.address: h for h, e in the_plan.hosts.items()}
    out = []
    for flow in lookup_flows(the_plan):
        src = flow["id"].split("|")[1]
        dst = by_address[flow["dst"]]
        spine = spine_of(src, flow["sport"])
        out.append({"id": flow["id"], "links": ["%s->%s" % (src, leaf[src]), "%s->%s" % (leaf[src], spine),
                                                "%s->%s" % (spine, leaf[dst]), "%s->%s" % (leaf[dst], dst)],
                    "error": None})
    return out


def test_a_plan_on_the_fabric_looks_up_its_ports_and_places_its_streams():
    p = _plan(placement="hash", port_seed=1)
    assert p.fabric.hash == "l4" and p.fabric.seed == 3  # the inventory's, unless the experiment says
    assert [f.path for h in ("w1", "w3") for f in p.rounds[0].parts[h].flows] == [[], []]
    asked = lookup_flows(p)
    assert len(asked) == 4 and {a["dport"] for a in asked} == {18600}
    assert {(a["src"], a["dst"]) for a in asked} == {("198.18.1.11", "198.18.2.11"), ("198.18.1.12", "198.18.2.12"),
                                                     ("198.18.2.11", "198.18.1.11"), ("198.18.2.12", "198.18.1.12")}
    placed = place(p, _answer(p, lambda host, sport: "spine1"))
    (w1,) = placed.fabric.streams("x", "w1", "w1")
    assert w1.links[1] == "leaf1->spine1" and p.fabric.placed == {}  # placed: a new plan
    args = host_args(placed, "w1", "x", "t" * 32)
    assert args["clients"][0]["source_ports"] == [w1.sport]
    with pytest.raises(FabricLabError, match="no answer for"):
        place(p, [])
    with pytest.raises(FabricLabError, match="fabric lookup of .*: no route"):
        place(p, [dict(a, error="no route") for a in _answer(p, lambda h, s: "spine1")])


def test_spread_takes_the_candidate_whose_path_is_least_loaded():
    p = _plan(placement="spread")
    # the kernel's answer: an even port goes by spine1, an odd one by spine2
    placed = place(p, _answer(p, lambda host, sport: "spine1" if sport % 2 == 0 else "spine2"))
    uplinks = [placed.fabric.streams("x", h, h)[0].links[1] for h in ("w1", "w2", "w3", "w4")]
    assert sorted(uplinks) == ["leaf1->spine1", "leaf1->spine2", "leaf2->spine1", "leaf2->spine2"]


def test_a_fabric_experiment_outside_the_fabric_and_bad_fields_are_refused():
    with pytest.raises(ExperimentError, match="this inventory has no fabric"):
        plan({"pattern": "shift", "fabric": {}}, {"workers": ["w1", "w2"]}, HOSTVARS)
    with pytest.raises(ExperimentError, match="unknown field"):
        _plan(spray=True)
    with pytest.raises(ExperimentError, match="hash: 'l7'"):
        _plan(hash="l7")
    with pytest.raises(ExperimentError, match="the fabric lab runs the tcp engine"):
        plan({"pattern": "shift", "engine": "perftest"}, GROUPS, HOSTVARS, fabric=FABRIC)


# --------------------------------------------------------------------------------------- a step, analysed
FACTOR = goodput_factor(9000)
ALONE = 8e9 / (1e9 * FACTOR)  # one flow alone on a 1gbit link: 1 GB in 8.06 s


def _step_run(spines, completions, counted=None, used_ports=None):
    """A run of one step of the shift pattern: ``spines[host]`` the spine each flow's lookup gave; ``completions``
    what each host measured; ``counted``: bytes each fabric port counted (default: what the lookups say, +0.7%)."""
    p = _plan(placement="hash")
    placed = place(p, _answer(p, lambda host, sport: spines[host]))
    plans = step_plans(placed)
    records = {"x": []}
    for host in ("w1", "w2", "w3", "w4"):
        sport = placed.fabric.streams("x", host, host)[0].sport
        records["x"].append({"host": host, "flow_id": host, "status": "ok", "bytes": 10**9, "volume_bytes": 10**9,
                             "completion_s": completions[host], "gbps": 8.0 / completions[host], "late_s": 0.0001,
                             "source_ports": [used_ports.get(host, sport) if used_ports else sport]})
    links = plans["x"].fabric["links"]
    carried = {}
    for host in spines:
        for name in placed.fabric.streams("x", host, host)[0].links:
            carried[name] = carried.get(name, 0) + 10**9
    counted = counted or {name: int(b * 1.007) for name, b in carried.items()}
    counters = {}
    for name, link in links.items():
        key = link.get("counter") or "tx_bytes"
        snap = counters.setdefault(link["switch"], {"before": {"taken_at": 0, "netdev": {}, "qdisc": {}, "rdma": {}},
                                                    "after": {"taken_at": 9, "netdev": {}, "qdisc": {}, "rdma": {}}})
        for side, value in (("before", 0), ("after", counted.get(name, 2000))):
            snap[side]["netdev"].setdefault(link["interface"], {"rx_errors": 0, "tx_errors": 0})[key] = value
    return build_report(build_run(records, plans, {"x": counters})), placed


def test_a_collision_is_named_predicted_and_proved():
    # w1 and w2 hash onto spine1: they share leaf1->spine1 and spine1->leaf2, each at half the rate
    spines = {"w1": "spine1", "w2": "spine1", "w3": "spine1", "w4": "spine2"}
    report, _placed = _step_run(spines, {"w1": 2 * ALONE, "w2": 2 * ALONE * 0.999, "w3": ALONE, "w4": ALONE})
    step = report["steps"][0]
    fab = step["fabric"]
    assert step["predicted_step_s"] == pytest.approx(2 * ALONE, rel=1e-6)
    assert fab["ideal_step_s"] == pytest.approx(ALONE, rel=1e-6)
    assert fab["slowdown_vs_ideal"] == pytest.approx(2.0, rel=1e-6)
    assert {c["link"]: c["flows"] for c in fab["collisions"]} == {"leaf1->spine1": ["w1", "w2"],
                                                                  "spine1->leaf2": ["w1", "w2"]}
    assert fab["worst_uplink_load"] == 2 and fab["elephants"] == 4
    assert fab["proof"]["status"] == "agrees" and fab["proof"]["largest_difference"] == pytest.approx(0.007, abs=1e-6)
    assert step["straggler"]["host"] == "w1"
    assert step["straggler"]["cause"] == "its path's leaf1->spine1 carried 2 of the 4 elephants (w1, w2)"
    assert step["verdict"].startswith("step 2.00× the ideal (perfect spreading: 8.06 s); 1.000× the prediction; "
                                      "leaf1->spine1 carried 2 of the 4 elephants (w1, w2); 2 link(s) shared in all; "
                                      "every path proved by the counters")
    w1 = next(f for f in fab["flows"] if f["flow"] == "w1")
    assert w1["shares_with"] == ["w2"] and w1["uplink"] == "leaf1->spine1"
    text = render_text(report)
    assert "leaf1->spine1    2 flows, predicted 0.993 Gb/s" in text
    assert "proved by the counters: every one of" in text
    # load balance: leaf1's uplinks carry 2 and 0 elephants: mean 1, MMR 2; JFI (2 + 0)^2 / (2 * (4 + 0)) = 0.5.
    # leaf2's carry 1 and 1 (w3 by spine1, w4 by spine2): MMR 1, JFI 1. By bytes: leaf1->spine1 counted
    # int(2e9 * 1.007) = 2,013,999,999 (a float), leaf1->spine2 2,000 (no flow): MMR 2,014,000,000 / 1,007,001,000
    # = 1.999998, JFI 2,014,002,000^2 / (2 * (2,014,000,000^2 + 2,000^2)) = 0.500001
    lb = {g["set"]: g for g in fab["load_balance"]["sets"]}
    assert sorted(lb) == ["*->leaf1", "*->leaf2", "leaf1->*", "leaf2->*"]
    assert lb["leaf1->*"]["links"] == ["leaf1->spine1", "leaf1->spine2"] and lb["leaf1->*"]["flows"] == [2, 0]
    assert (lb["leaf1->*"]["flows_mmr"], lb["leaf1->*"]["flows_jfi"]) == (2.0, 0.5)
    assert lb["leaf1->*"]["bytes"] == [2013999999, 2000]
    assert lb["leaf1->*"]["bytes_mmr"] == pytest.approx(1.999998, abs=1e-6)
    assert lb["leaf1->*"]["bytes_jfi"] == pytest.approx(0.500001, abs=1e-6)
    assert (lb["leaf2->*"]["flows_mmr"], lb["leaf2->*"]["flows_jfi"]) == (1.0, 1.0)
    assert fab["load_balance"]["worst_flows_mmr"] == 2.0 and fab["load_balance"]["lowest_flows_jfi"] == 0.5
    assert "load balance           worst MMR 2.00 by flows, 2.00 by bytes; lowest JFI 0.50 by flows, 0.50 by bytes" \
        in text
    assert "    leaf1->*         2 0                      2.00     0.50      2.00      0.50" in text


def test_bytes_on_a_link_the_lookup_did_not_give_are_a_disagreement():
    spines = {"w1": "spine1", "w2": "spine2", "w3": "spine1", "w4": "spine2"}
    report, placed = _step_run(spines, {h: ALONE for h in spines})
    assert report["steps"][0]["fabric"]["proof"]["status"] == "agrees"
    assert report["steps"][0]["fabric"]["collisions"] == []
    assert "no two elephants shared a fabric link" in report["steps"][0]["verdict"]
    # w1's bytes went by spine2 although its lookup said spine1 (a hash the lookup did not reproduce)
    counted = {}
    for host, spine in dict(spines, w1="spine2").items():
        for name in ["%s->%s" % (host, "leaf1" if host in ("w1", "w2") else "leaf2")] + (
                ["leaf1->%s" % spine, "%s->leaf2" % spine] if host in ("w1", "w2")
                else ["leaf2->%s" % spine, "%s->leaf1" % spine]):
            counted[name] = counted.get(name, 0) + 10**9
    peer = {"w1": "w3", "w2": "w4", "w3": "w1", "w4": "w2"}
    for host in spines:
        counted["%s->%s" % ("leaf2" if host in ("w1", "w2") else "leaf1", peer[host])] = 10**9
    report, _placed = _step_run(spines, {h: ALONE for h in spines}, counted=counted)
    proof = report["steps"][0]["fabric"]["proof"]
    assert proof["status"] == "disagrees"
    assert any(d.startswith("leaf1->spine1 counted 2000 bytes where the lookups put w1 (1000000000 bytes)")
               for d in proof["disagreements"])
    assert any(d.startswith("leaf1->spine2 counted 2000000000 bytes where the lookups put w2") for d in
               proof["disagreements"])
    assert "PATHS DISAGREE" in report["steps"][0]["verdict"]


def test_a_flow_sent_from_another_port_than_the_one_looked_up_is_flagged():
    spines = {"w1": "spine1", "w2": "spine2", "w3": "spine1", "w4": "spine2"}
    report, _placed = _step_run(spines, {h: ALONE for h in spines}, used_ports={"w3": 12345})
    assert any("w3 sent from port 12345, not" in d for d in report["steps"][0]["fabric"]["proof"]["disagreements"])


def test_over_seeds_the_measurement_stands_beside_the_simulator_and_the_formula():
    steps = []
    for seed, spines in enumerate([{"w1": "spine1", "w2": "spine1", "w3": "spine1", "w4": "spine2"},
                                   {"w1": "spine1", "w2": "spine2", "w3": "spine1", "w4": "spine2"}], start=1):
        load = 2 if spines["w1"] == spines["w2"] else 1
        report, _placed = _step_run(spines, {"w1": load * ALONE, "w2": load * ALONE, "w3": ALONE, "w4": ALONE})
        step = copy.deepcopy(report["steps"][0])
        step["step"] = "seed-%d" % seed
        step["fabric"]["seed"] = seed
        steps.append(step)
    summary = seeds(steps, steps[0]["fabric"]["what_if"], trials=400)
    assert summary["seeds"] == 2 and summary["measured_mean"] == pytest.approx(1.5, rel=1e-6)
    assert summary["predicted_mean"] == pytest.approx(1.5, rel=1e-6)
    # 2 flows out of each of 2 leaves onto 2 spines: E[max of two leaves' busiest uplink] / 1
    assert summary["formula"] == pytest.approx(float(expected_slowdown(2, 2, groups=2)), rel=1e-6) == 1.75
    # each random placement's step is exactly 1x or 2x the ideal (a leaf's busiest spine carries 1 or 2 flows), so
    # the mean over 400 placements is 1 + k/400 for the k that collided somewhere. By hand: a leaf's two flows share
    # a spine with probability 1/2, so P(2x) = 1 - (1/2)^2 = 3/4 and the mean is 1.75 (the formula's); k is
    # binomial(400, 3/4): 300 +- 8.66. The placements are seeded (seeds() draws them with simulated_slowdown's
    # numpy default_rng(0); numpy is pinned in constraints.txt), so k is one number: 292, 0.9 standard deviations
    # below 300 (simulated mean 1.73).
    assert summary["simulated_trials"] == 400 and summary["simulated_seed"] == 0
    k = (summary["simulated_mean"] - 1.0) * 400
    assert abs(k - round(k)) < 1e-3, "a placement that is neither 1x nor 2x the ideal: %r" % summary["simulated_mean"]
    assert round(k) == 292 and summary["simulated_mean"] == 1.73
    assert seeds(steps[:1], steps[0]["fabric"]["what_if"]) is None  # one seed is no comparison


def test_the_simulated_expectation_is_seeded():
    spines = {"w1": "spine1", "w2": "spine2", "w3": "spine1", "w4": "spine2"}
    report, _placed = _step_run(spines, {h: ALONE for h in spines})
    what_if = report["steps"][0]["fabric"]["what_if"]
    assert simulated_slowdown(what_if, trials=50, seed=4) == simulated_slowdown(what_if, trials=50, seed=4)
