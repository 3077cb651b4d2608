# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 28: the counters' books of a NIC on a rail-optimized fabric with the in-host relay. A NIC that forwards its
machine's other NICs' streams into its rail (m1r1 -> m1r2 -> rail2 -> m2r2) counts them on the interface its host's
counters read; a NIC whose own streams leave by its relay link does not. The books read the plan's paths
(``_analysis.fabric.relay_books``), by hand against a synthetic step."""

from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.barrier import analyze_step
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.counters import TOLERANCE, step_counters
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.fabric import relay_books
from ansible_collections.aifabric.lab.plugins.plugin_utils._fabric.lab import equal_cost_paths, fabric_topology, place
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.args import lookup_flows
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import plan
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.text import render_text
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.model import Step, StepPlan, build_run, step_plans

# the rails of two machines of two NICs (m1r1 m1r2, m2r1 m2r2; the rails_inventory fixture, conftest.py one folder
# up), NIC r on rail r, one spine, a 4gbit relay; m2r2 the sink of an incast of the other three
INCAST = {"workers": ["m1r1", "m1r2", "m2r1"], "sinks": ["m2r2"]}

V = 1_000_000_000  # each flow's payload
R = 10 * 8948  # m1r1's retransmitted payload: 10 segments at MTU 9000
HEADER = 66  # bytes per packet (_model.fair_share.HEADERS_PER_PACKET["tcp"])
PACKETS = 223_526  # m1r2's eth0: its own flow's packets and m1r1's it forwarded


def _plans(rails_inventory, relay=True, pattern="incast", hosts=None):
    groups, hostvars = rails_inventory(**(INCAST if hosts is None else hosts), spines=1, relay_rate="4gbit",
                                       relay=relay)
    fab = fabric_topology(groups, hostvars, prefix="aflt-x-", host_rate="1gbit", uplink_rate="1gbit")
    the_plan = plan({"name": "x", "pattern": pattern, "volume": "1GB", "fabric": {}}, groups, hostvars,
                    line_rate="1gbit", fabric=fab)
    host_of = {entry.address: host for host, entry in the_plan.hosts.items()}
    # what fabric_paths_info would answer: the fabric's own path (one with the relay; spine1's without)
    answer = [{"id": f["id"], "links": equal_cost_paths(fab, f["id"].split("|")[1], host_of[f["dst"]])[0],
               "error": None} for f in lookup_flows(the_plan)]
    return step_plans(place(the_plan, answer))


def _snap(taken, tx_bytes, tx_packets):
    return {"taken_at": taken, "rdma": {}, "qdisc": {},
            "netdev": {"eth0": {"tx_bytes": tx_bytes, "tx_packets": tx_packets, "tx_dropped": 0}}}


def _counters(counted):
    """``{host: (bytes, packets)}`` the hosts' eth0 sent during the step, as flow_step's snapshots."""
    return {host: {"interface": "eth0", "engine": "tcp", "before": _snap(0, 5000, 40),
                   "after": _snap(9, 5000 + b, 40 + p)} for host, (b, p) in counted.items()}


def _step(rails_inventory, counted, relay=True):
    records = {"x": [{"host": h, "flow_id": h, "status": "ok", "bytes": V, "volume_bytes": V, "completion_s": 8.2,
                      "gbps": 0.97, "late_s": 0.0001} for h in ("m1r1", "m1r2", "m2r1")]}
    records["x"][0].update(retransmits=10, bytes_retrans=R)
    run = build_run(records, _plans(rails_inventory, relay), {"x": _counters(counted)})
    return run.steps[0]


# m1r2's eth0 by hand: its own 1,000,000,000 + m1r1's 1,000,000,000 and 89,480 retransmitted, which it forwarded,
# + 223,526 packets x 66 = 14,752,716 bytes of headers: 2,014,842,196. m1r1's and m2r1's own flows left by their
# relay links (m1r1->m1r2, m2r1->m2r2): their eth0 sent 6 ARP-sized packets, 396 bytes.
RELAYING = 2 * V + R + PACKETS * HEADER
QUIET = (6 * HEADER, 6)


def test_the_relay_books_by_hand(rails_inventory):
    books = relay_books(_step(rails_inventory, {"m1r2": (RELAYING, PACKETS)}))
    assert books["m1r2"] == {"link": "m1r2->rail2", "payload": V, "retrans": 0, "by_relay": {},
                             "relayed_for": {"m1r1": V + R}}
    assert books["m1r1"] == {"link": "m1r1->rail1", "payload": 0, "retrans": 0, "by_relay": {"m1r1->m1r2": V},
                             "relayed_for": {}}
    assert books["m2r1"]["by_relay"] == {"m2r1->m2r2": V} and books["m2r1"]["payload"] == 0
    # the sink forwards nothing: its machine's m2r1 relays to it, the destination
    assert books["m2r2"] == {"link": "m2r2->rail2", "payload": 0, "retrans": 0, "by_relay": {}, "relayed_for": {}}
    # another fabric (the same rails without the relay), or the netns lab: no relay books, the books as they were
    assert relay_books(_step(rails_inventory, {}, relay=False)) is None
    assert relay_books(Step(name="x", plan=StepPlan(), flows=[])) is None


def test_what_the_check_misread_before(rails_inventory):
    """The issue: without the plan's paths, m1r2's eth0 carries m1r1's forwarded gigabyte beside its own, and m1r1's
    (and m2r1's) eth0 nothing of theirs: the one DISAGREES by +98.5%, the others by -100%."""
    step = _step(rails_inventory, {"m1r2": (RELAYING, PACKETS), "m1r1": QUIET, "m2r1": QUIET})
    report = analyze_step(step)
    old = step_counters(report, step.counters)  # the books without the relay's (what _with_counters gave)
    checks = {h: c["checks"][0] for h, c in old["hosts"].items() if c["checks"]}
    # m1r2: expected 1,000,000,000 + 14,752,716 = 1,014,752,716; counted 2,014,842,196: +98.55%
    assert checks["m1r2"]["expected_bytes"] == 1_014_752_716 and not checks["m1r2"]["agrees"]
    assert checks["m1r2"]["difference"] == pytest.approx(2_014_842_196 / 1_014_752_716 - 1, abs=1e-6)
    assert 0.985 < checks["m1r2"]["difference"] < 0.986
    # m1r1: expected 1,000,000,000 + 6 x 66 + 89,480 retransmitted; counted 396: -99.99%
    assert checks["m1r1"]["expected_bytes"] == V + 396 + R and checks["m1r1"]["difference"] < -0.9999
    assert len(old["disagreements"]) == 3


def test_a_relaying_nic_counts_what_it_forwarded_and_agrees(rails_inventory):
    step = _step(rails_inventory, {"m1r2": (RELAYING, PACKETS), "m1r1": QUIET, "m2r1": QUIET})
    report = analyze_step(step)
    counters = report["counters"]
    assert counters["disagreements"] == []
    assert counters["verdict"].startswith("all error counters zero")
    (check,) = counters["hosts"]["m1r2"]["checks"]
    assert check["expected_bytes"] == RELAYING == 2_014_842_196
    assert check["difference"] == 0.0 and check["agrees"]
    assert (check["payload_bytes"], check["relayed_bytes"], check["relayed_for"]) == (V, V + R, {"m1r1": V + R})
    assert check["relay"] == "+ 1000089480 bytes relayed for m1r1"
    # a NIC whose own bytes all left by its relay: nothing of them to check on eth0; said, not a disagreement
    assert counters["hosts"]["m1r1"]["checks"] == []
    assert counters["hosts"]["m1r1"]["relay"] == (
        "all its 1000000000 bytes left by m1r1->m1r2 (proved on the relay port by the path proof), none through eth0")
    text = render_text({"schema_version": 2, "run_dir": None, "status": "ok", "baseline_gbps": None,
                        "steps": [report]})
    assert "vs payload + 66 B/packet x 223526 packets + 1000089480 bytes relayed for m1r1" in text
    assert "m1r1         all its 1000000000 bytes left by m1r1->m1r2" in text


def test_a_relaying_nic_off_by_more_than_the_tolerance_still_disagrees(rails_inventory):
    # 20 MB of someone else's traffic on m1r2's eth0: 20,000,000 / 2,014,842,196 = +0.99% > 0.5%
    step = _step(rails_inventory, {"m1r2": (RELAYING + 20_000_000, PACKETS), "m1r1": QUIET, "m2r1": QUIET})
    counters = analyze_step(step)["counters"]
    (check,) = counters["hosts"]["m1r2"]["checks"]
    assert not check["agrees"] and check["difference"] == pytest.approx(20_000_000 / 2_014_842_196, abs=1e-6)
    assert check["difference"] > TOLERANCE
    assert counters["disagreements"] == [
        "m1r2: the application moved 1000000000 bytes but netdev eth0 tx counted 2034842196 (+0.99% from the "
        "2014842196 expected with 66 bytes of headers per packet + 1000089480 bytes relayed for m1r1)"]
    assert counters["verdict"].endswith("the books disagree by more than 0.5% (see below)")
    # m1r1's stream never reached m1r2's eth0 (it went by the spine, against the plan): -49.6%, a disagreement too
    alone = V + (PACKETS // 2) * HEADER
    counters = analyze_step(_step(rails_inventory, {"m1r2": (alone, PACKETS // 2)}))["counters"]
    (check,) = counters["hosts"]["m1r2"]["checks"]
    assert not check["agrees"] and check["difference"] == pytest.approx(
        alone / (2 * V + R + (PACKETS // 2) * HEADER) - 1, abs=1e-6) and check["difference"] < -0.49


def test_a_nic_that_relays_and_sends_part_of_its_own_elsewhere_books_both(rails_inventory):
    """The ring m1r1 -> m2r2 -> m1r2 -> m2r1 -> m1r1: m1r1's own flow leaves by its relay (m1r2 forwards it), and
    m1r1 forwards m1r2's flow to m2r1. Its eth0 carried m1r2's gigabyte, not its own: the old check agreed by
    accident (the bytes blamed on m1r1); the books now say whose they are."""
    ring = ["m1r1", "m2r2", "m1r2", "m2r1"]
    plans = _plans(rails_inventory, pattern="ring", hosts={"workers": ring})
    records = {"x": [{"host": h, "flow_id": h, "status": "ok", "bytes": V, "volume_bytes": V, "completion_s": 8.2,
                      "gbps": 0.97, "late_s": 0.0001} for h in ring]}
    packets = 111_763
    counted = {"m1r1": (V + packets * HEADER, packets), "m1r2": (V + packets * HEADER, packets)}
    step = build_run(records, plans, {"x": _counters(counted)}).steps[0]
    books = relay_books(step)
    assert books["m1r1"]["relayed_for"] == {"m1r2": V} and books["m1r1"]["by_relay"] == {"m1r1->m1r2": V}
    counters = analyze_step(step)["counters"]
    (check,) = counters["hosts"]["m1r1"]["checks"]
    assert check["agrees"] and check["payload_bytes"] == 0 and check["expected_bytes"] == V + packets * HEADER
    assert check["relay"] == "+ 1000000000 bytes relayed for m1r2; 1000000000 bytes of its own left by m1r1->m1r2, " \
                             "not through eth0"
    assert counters["disagreements"] == []


def test_without_the_relay_the_books_are_the_hosts_own(rails_inventory):
    """The same rails without the relay: every flow out of its NIC's own eth0 (m1r1's by the spine); the checks have
    none of the relay's fields, and 20 MB more is a disagreement as before."""
    counted = {"m1r2": (V + 111_763 * HEADER, 111_763), "m1r1": (V + R + 111_763 * HEADER, 111_763)}
    counters = analyze_step(_step(rails_inventory, counted, relay=False))["counters"]
    assert counters["disagreements"] == []
    check = counters["hosts"]["m1r1"]["checks"][0]
    assert set(check) == {"counter", "bytes", "packets", "expected_bytes", "headers_per_packet", "retrans_bytes",
                          "difference", "agrees"}
    assert check["expected_bytes"] == V + R + 111_763 * HEADER and check["retrans_bytes"] == R
    # by hand: 1,000,000,000 + 111,763 x 66 = 1,007,376,358 expected; 20,000,000 more is +1.99%
    counted["m1r2"] = (V + 20_000_000 + 111_763 * HEADER, 111_763)
    assert analyze_step(_step(rails_inventory, counted, relay=False))["counters"]["disagreements"] == [
        "m1r2: the application moved 1000000000 bytes but netdev eth0 tx counted 1027376358 (+1.99% from the "
        "1007376358 expected with 66 bytes of headers per packet)"]
