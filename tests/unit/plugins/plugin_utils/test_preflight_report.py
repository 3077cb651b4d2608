# -*- coding: utf-8 -*-
"""The preflight's checks and its one table, from preflight_info results shaped as the module returns them (the VM
lab's guests: data0 at 1500, rxe0 with its RoCE v2 GID at index 1, perftest 6.06); each expectation worked out by
hand from the inputs."""
from __future__ import annotations

import copy

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.aifabric.lab.plugins.action.preflight_info import clock_offset
from ansible_collections.aifabric.lab.plugins.filter.preflight import preflight_paths, preflight_report
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.args import host_pairs
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import plan
from ansible_collections.aifabric.lab.plugins.plugin_utils._preflight import Expect, check, report


def guest(n, mtu=1500, peer_mtu=None, offset=0.0, uncertainty=0.002, leftovers=(), version="6.06", gid=1):
    """vm<n>'s result: data0 at ``mtu`` (its path to the other guest at ``peer_mtu``, the same by default)."""
    other = 3 - n
    return {
        "changed": False,
        "interface": {"name": "data0", "present": True, "mtu": mtu, "operstate": "UP", "speed_mbps": None,
                      "numa_node": None, "driver": "virtio_net", "device": "virtio1"},
        "address": "198.18.100.%d" % n,
        "rdma": [{"device": "rxe0", "present": True,
                  "ports": {"1": {"state": "ACTIVE", "phys_state": "LinkUp", "link_layer": "Ethernet",
                                  "rate": "10 Gb/sec (1X QDR)", "roce_v2_gid_index": gid,
                                  "roce_v2_gid": "::ffff:c612:640%d" % n if gid is not None else None,
                                  "netdevs": ["data0"]}}}],
        "paths": [{"peer": "198.18.100.%d" % other, "interface": "data0", "interface_mtu": mtu, "route_mtu": None,
                   "mtu": peer_mtu or mtu, "gateway": None}],
        "dcb": {"reported": False, "reason": "data0 has no DCB (EOPNOTSUPP)"},
        "perftest": {"ib_write_bw": version},
        "leftovers": list(leftovers),
        "kernel": "6.1.0-50-amd64",
        "clock": {"offset_s": offset, "uncertainty_s": uncertainty, "rtt_s": 2 * uncertainty, "samples": 5},
    }


THROTTLE = {"kind": "shaper", "name": "data0", "owner": None, "live": None, "action": "would remove",
            "reason": "no owner recorded: a shaper may be another experiment's; unowned=remove takes it"}


def _cells(result, host):
    """A host's row as {column: cell}, read back from the table's text by the header's column starts."""
    header, rows = result["table"][0], result["table"][1:]
    starts = [header.index(c) for c in header.split()]
    row = next(r for r in rows if r.startswith(host + " "))
    bounds = list(zip(starts, starts[1:] + [None]))
    return {c: row[a:b].strip() for c, (a, b) in zip(header.split(), bounds)}


def test_two_good_guests_one_table_all_ok():
    expect = {"mtu": 1500, "rdma": True, "perftest": True}
    out = report({"vm1": guest(1), "vm2": guest(2, offset=0.0031)}, expect=expect)
    assert out["ok"] and out["failures"] == [] and out["reference"] == "vm1"
    assert out["table"][0].split() == ["host", "link", "mtu", "paths", "speed", "numa", "rdma", "gid", "pfc",
                                       "clock", "perftest", "leftovers", "verdict"]
    vm1, vm2 = _cells(out, "vm1"), _cells(out, "vm2")
    assert vm1 == {"host": "vm1", "link": "data0 UP", "mtu": "1500 (RoCE 1024)", "paths": "vm2 1500",
                   "speed": "10 Gb/s (rdma)", "numa": "-", "rdma": "rxe0/1 ACTIVE", "gid": "v2 #1", "pfc": "n/r",
                   "clock": "ref (+-2.0 ms)", "perftest": "6.06", "leftovers": "0", "verdict": "ok"}
    # 3.1 ms after vm1, give or take both halves of the round trips (2 + 2 ms): within 10 ms + 4 ms
    assert vm2["clock"] == "+3.1 ms +-4.0" and vm2["verdict"] == "ok"


def test_the_broken_guest_is_named_with_its_checks_and_fixes():
    # vm2: data0 at 1400 (so its end of the path too), and a throttle an earlier run left on data0
    results = {"vm1": guest(1, peer_mtu=1500), "vm2": guest(2, mtu=1400, leftovers=[THROTTLE])}
    out = report(results, expect={"mtu": 1500, "rdma": True})
    assert not out["ok"]
    failed = [(f["host"], f["check"]) for f in out["failed"]]
    assert failed == [("vm2", "mtu"), ("vm2", "leftovers"), ("vm2", "paths")]
    by_check = {f["check"]: f for f in out["failed"]}
    assert by_check["mtu"]["message"] == "data0 has MTU 1400, the experiment expects 1500"
    assert by_check["mtu"]["fix"].startswith("ip link set data0 mtu 1500 on vm2")
    assert by_check["paths"]["message"] == "the path vm1 <-> vm2 carries 1500 at vm1 and 1400 at vm2"
    assert "lab_check.yml -l vm2 -e remove=true" in by_check["leftovers"]["fix"]
    assert "shaper data0 (owner none" in by_check["leftovers"]["message"]
    vm1, vm2 = _cells(out, "vm1"), _cells(out, "vm2")
    assert vm1["verdict"] == "ok"
    assert vm2["mtu"] == "1400 (RoCE 1024)!" and vm2["paths"] == "vm1 1400!" and vm2["leftovers"] == "1!"
    assert vm2["verdict"] == "FAIL mtu,leftovers,paths"
    assert out["failures"][0].startswith("FAIL vm2 mtu: data0 has MTU 1400, the experiment expects 1500. Fix: ")


def test_without_an_expected_mtu_both_ends_of_a_mismatched_path_are_named():
    out = report({"vm1": guest(1), "vm2": guest(2, mtu=9000)})
    assert [(f["host"], f["check"]) for f in out["failed"]] == [("vm1", "paths"), ("vm2", "paths")]


def test_a_route_mtu_below_the_interface_counts_for_the_path():
    vm1 = guest(1)
    vm1["paths"][0].update(route_mtu=1280, mtu=1280)
    out = report({"vm1": vm1, "vm2": guest(2)}, expect={"mtu": 1500})
    assert [(f["host"], f["check"]) for f in out["failed"]] == [("vm1", "paths")]


@pytest.mark.parametrize("offset, uncertainty, fails", [
    (0.050, 0.002, True),    # 50 ms off, +-4 ms: 46 ms beyond doubt, over 10 ms
    (0.013, 0.001, True),    # 13 - 2 = 11 ms > 10 ms
    (0.011, 0.001, False),   # 11 - 2 = 9 ms: could be within 10 ms
    (0.050, 0.045, False),   # the round trips are too slow to tell: not failed on a guess
    (-0.030, 0.002, True),   # behind counts as much as ahead
])
def test_clock_offsets_fail_only_beyond_doubt(offset, uncertainty, fails):
    out = report({"vm1": guest(1, uncertainty=0.001), "vm2": guest(2, offset=offset, uncertainty=uncertainty)})
    assert [f["check"] for f in out["failed"]] == (["clock"] if fails else [])


def _dcb(priorities, trust):
    return {"reported": True, "pfc_cap": 8, "pfc_priorities": priorities, "trust": trust, "dscp_entries": 64}


def test_pfc_and_trust_the_same_where_the_nics_report_them():
    a, b, c, d = guest(1), guest(1), guest(1), guest(1)
    a["dcb"], b["dcb"], c["dcb"] = _dcb([3], "dscp"), _dcb([3], "pcp"), _dcb([3], "dscp")
    # d's NIC reports no DCB (n/r): not compared
    out = report({"a": a, "b": b, "c": c, "d": d}, paths=[])
    assert [(f["host"], f["check"]) for f in out["failed"]] == [("b", "pfc")]
    assert out["failed"][0]["message"] == "PFC priorities/trust 3/pcp, where the other hosts have 3/dscp"
    assert [_cells(out, h)["pfc"] for h in "abd"] == ["3/dscp", "3/pcp!", "n/r"]
    a["dcb"], b["dcb"] = _dcb([3], "dscp"), _dcb([], "dscp")
    out = report({"a": a, "b": b}, paths=[])
    assert [(f["host"], f["check"]) for f in out["failed"]] == [("a", "pfc"), ("b", "pfc")]
    assert _cells(out, "b")["pfc"] == "off/dscp!"


def test_the_odd_perftest_out_of_three_is_named():
    results = {"a": guest(1), "b": guest(1, version="6.10"), "c": guest(1)}
    _rows, failures, _ref = check(results, paths=[])
    assert [(f.host, f.check) for f in failures] == [("b", "perftest")]
    assert failures[0].message == "its perftest (ib_write_bw 6.10) differs from the other hosts'"


def test_perftest_missing_fails_only_when_the_experiment_needs_it():
    results = {"vm1": guest(1, version=None), "vm2": guest(2)}
    assert report(results)["ok"]
    out = report(results, expect={"perftest": True})
    assert [(f["host"], f["check"]) for f in out["failed"]] == [("vm1", "perftest")]
    assert _cells(out, "vm1")["perftest"] == "missing!"


def test_rdma_missing_down_and_no_gid():
    down = guest(1)
    down["rdma"][0]["ports"]["1"].update(state="DOWN", phys_state="Disabled")
    nogid = guest(2, gid=None)
    out = report({"vm1": down, "vm2": nogid}, expect={"rdma": True})
    assert [(f["host"], f["check"]) for f in out["failed"]] == [("vm1", "rdma"), ("vm2", "gid")]
    assert out["failed"][1]["message"] == "no RoCE v2 GID of rxe0 port 1 carries 198.18.100.2 on data0"
    none = guest(1)
    none["rdma"] = []
    assert report({"vm1": none}, expect={"rdma": True})["failed"][0]["check"] == "rdma"
    assert report({"vm1": none})["ok"]
    absent = guest(1)
    absent["rdma"] = [{"device": "rxe0", "present": False, "devices": []}]
    failed = report({"vm1": absent})["failed"][0]
    assert failed["message"] == "no RDMA device rxe0 (present: none)" and "modprobe rdma_rxe" in failed["fix"]


def test_a_slow_link_against_the_line_rate():
    fast, slow = guest(1), guest(2)
    fast["interface"]["speed_mbps"] = 100000
    slow["interface"]["speed_mbps"] = 25000
    out = report({"vm1": fast, "vm2": slow}, expect={"min_gbps": 50})
    assert [(f["host"], f["check"]) for f in out["failed"]] == [("vm2", "speed")]
    assert _cells(out, "vm1")["speed"] == "100 Gb/s" and _cells(out, "vm2")["speed"] == "25 Gb/s!"


def test_a_host_whose_preflight_failed_gets_a_row_and_a_failure():
    out = report({"vm1": guest(1), "vm2": {"failed": True, "msg": "Failed to import the required Python library "
                                                                  "(pyroute2)"}})
    assert [(f["host"], f["check"]) for f in out["failed"]] == [("vm2", "host")]
    assert "playbooks/lab_host.yml" in out["failed"][0]["fix"]
    assert _cells(out, "vm2")["verdict"] == "FAIL host"


def test_a_missing_or_down_interface():
    gone, down = guest(1), guest(2)
    gone["interface"] = {"name": "data0", "present": False}
    down["interface"]["operstate"] = "DOWN"
    out = report({"vm1": gone, "vm2": down}, paths=[])
    assert [(f["host"], f["check"], f["message"]) for f in out["failed"]] == [
        ("vm1", "link", "no interface data0"), ("vm2", "link", "data0 is DOWN")]


def test_paths_of_a_plan():
    """A ring of three workers: each sends to the next; every pair once, sorted (the filter gives them as lists)."""
    groups = {"workers": ["w1", "w2", "w3"], "sinks": ["sink"]}
    hostvars = {"sink": {"lab_address": "198.18.0.1"}, "w1": {"lab_address": "198.18.0.11"},
                "w2": {"lab_address": "198.18.0.12"}, "w3": {"lab_address": "198.18.0.13"}}
    the_plan = plan({"pattern": "ring", "volume": "1MB"}, groups, hostvars)
    assert host_pairs(the_plan) == [("w1", "w2"), ("w2", "w3"), ("w3", "w1")]
    assert preflight_paths(the_plan.to_dict()) == [["w1", "w2"], ["w2", "w3"], ["w3", "w1"]]


def test_the_filter_refuses_bad_input_by_name():
    with pytest.raises(AnsibleFilterError, match="give {host: the preflight_info result"):
        preflight_report(["vm1"])
    with pytest.raises(AnsibleFilterError, match=r"paths must be a list of \[host, host\] pairs"):
        preflight_report({"vm1": guest(1)}, paths=[["vm1"]])
    with pytest.raises(AnsibleFilterError, match="expect: unknown key mtus"):
        preflight_report({"vm1": guest(1)}, expect={"mtus": 1500})
    with pytest.raises(AnsibleFilterError, match="expect.mtu: 'big' is not a number"):
        preflight_report({"vm1": guest(1)}, expect={"mtu": "big"})


def test_expect_reads_the_playbooks_strings():
    # what the playbook's Jinja makes of lab_mtu undefined, lab_line_rate and a boolean
    assert Expect.from_dict({"mtu": None, "min_gbps": "40.0", "rdma": "True", "perftest": "False"}) == Expect(
        mtu=None, min_gbps=40.0, rdma=True, perftest=False)


def test_the_input_is_not_changed():
    results = {"vm1": guest(1), "vm2": guest(2, mtu=1400, leftovers=[THROTTLE])}
    before = copy.deepcopy(results)
    report(results, expect={"mtu": 1500})
    assert results == before


def test_the_clock_sample_with_the_shortest_round_trip():
    # (sent, host clock, received): the second round trip is 0.1 s, its midpoint 2.05, the host read 12.05
    samples = [(0.0, 10.5, 1.0), (2.0, 12.05, 2.1), (3.0, None, 3.01), (5.0, 15.2, 5.4)]
    got = clock_offset(samples)
    assert got == {"offset_s": pytest.approx(10.0), "uncertainty_s": pytest.approx(0.05),
                   "rtt_s": pytest.approx(0.1), "samples": 3}
    assert clock_offset([(0.0, None, 1.0)]) is None


# the netns lab's own record, as the leftovers' scan lists it (_leftovers.Scanner.labs, Leftover.to_dict): up on purpose
NETNS_LAB = {"kind": "lab", "name": "switch (4/4 namespaces up)", "owner": None, "live": True, "action": "kept",
             "reason": "up on purpose (built without an owner): netns_lab state=down takes it", "scope": "machine",
             "path": "/run/aifabric-lab/labs/afl-switch.json", "namespaces": ["afl-switch", "afl-w1", "afl-w2"]}


def test_a_lab_that_is_up_is_the_lab_not_a_leftover():
    """The netns lab's hosts share one state directory, whose labs/ holds the lab they are: the preflight before an
    experiment on it must not fail on that. A lab whose namespaces are gone (stale) still counts."""
    stale = dict(NETNS_LAB, name="old (0/3 namespaces up)", live=False, action="would remove",
                 reason="stale: none of its namespaces exists", namespaces=[])
    out = report({"vm1": guest(1, leftovers=[NETNS_LAB]), "vm2": guest(2, leftovers=[NETNS_LAB, stale])})
    assert _cells(out, "vm1")["leftovers"] == "0" and _cells(out, "vm2")["leftovers"] == "1!"
    assert [(f["host"], f["check"]) for f in out["failed"]] == [("vm2", "leftovers")]
    assert "old (0/3 namespaces up)" in out["failed"][0]["message"] and "switch" not in out["failed"][0]["message"]
