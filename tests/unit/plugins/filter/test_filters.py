# -*- coding: utf-8 -*-
"""The filters as a play calls them: what they return, and bad input as AnsibleFilterError naming the field."""
from __future__ import annotations

import glob
import importlib
import json
import os

import pytest
from ansible.errors import AnsibleFilterError

FILTER_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "plugins", "filter")
BY_FILE = {os.path.basename(path)[:-3]: importlib.import_module(
    "ansible_collections.aifabric.lab.plugins.filter.%s" % os.path.basename(path)[:-3]).FilterModule().filters()
    for path in sorted(glob.glob(os.path.join(FILTER_DIR, "*.py")))}
F = {name: f for filters in BY_FILE.values() for name, f in filters.items()}
GROUPS = {"workers": ["w1", "w2", "w3"], "sinks": ["sink"], "switches": ["switch"]}
NETNS = {"ansible_connection": "aifabric.lab.netns", "ansible_netns_prefix": "afl-"}
HOSTVARS = {"sink": dict(NETNS, lab_address="198.18.0.1"), "w1": dict(NETNS, lab_address="198.18.0.11"),
            "w2": dict(NETNS, lab_address="198.18.0.12"), "w3": dict(NETNS, lab_address="198.18.0.13")}
PLAN = F["flow_plan"]({"volume": "1GB", "throttles": {"w3": "2gbit"}}, GROUPS, HOSTVARS, "8gbit", "9000")


def test_every_filter_is_registered_once_in_the_file_of_its_concept():
    assert {name: sorted(filters) for name, filters in BY_FILE.items()} == {
        "barrier": ["barrier_analysis", "barrier_gates"],
        "congestion": ["ecn_books_table", "ecn_port_books", "incast_cells"],
        "counters": ["counters_diff"],
        "fabric": ["fabric_lab_topology", "fabric_lookup_flows", "fabric_place"], "fair_share": ["fair_share"],
        "history": ["history_baseline", "history_compare", "history_compare_files", "history_compare_text",
                    "history_export", "history_rebuild", "history_record", "history_runs", "history_table"],
        "job": ["job_sweep_points", "job_sweep_table"], "netns_lab": ["netns_lab_hosts"],
        "plan": ["experiment_owner", "flow_plan", "flow_step_args", "flow_step_batch_args", "throttle_args"],
        "preflight": ["preflight_args", "preflight_checks", "preflight_paths", "preflight_report"],
        "report": ["render_run", "report_files", "report_json", "report_text", "run_report"],
        "units": ["rate_bps", "size_bytes"]}
    assert sum(len(filters) for filters in BY_FILE.values()) == len(F)  # no name in two files
    documented = {os.path.basename(p)[:-4] for p in glob.glob(os.path.join(FILTER_DIR, "*.yml"))}
    assert documented == set(F)  # every filter has its page (ansible-doc -t filter)


def test_the_preflight_checks_the_paths_the_plan_makes():
    # the seed's incast: every worker sends to the sink
    assert F["preflight_paths"](PLAN) == [["w1", "sink"], ["w2", "sink"], ["w3", "sink"]]


def test_the_preflights_arguments_come_from_the_plan():
    """The seed's incast over tcp: a worker's one peer is the sink, the sink's are the workers; no RDMA device or
    perftest read; the checks at the plan's 9000 MTU and 8gbit (8 Gb/s) line rate."""
    assert F["preflight_args"](PLAN, "w2") == {"interface": "eth0", "address": "198.18.0.12", "rdma_device": None,
                                               "peers": ["198.18.0.1"], "perftest_tools": []}
    assert F["preflight_args"](PLAN, "sink")["peers"] == ["198.18.0.11", "198.18.0.12", "198.18.0.13"]
    assert F["preflight_checks"](PLAN) == {
        "paths": [["w1", "sink"], ["w2", "sink"], ["w3", "sink"]],
        "expect": {"mtu": 9000, "min_gbps": 8.0, "rdma": False, "perftest": False},
        "addresses": {"sink": "198.18.0.1", "w1": "198.18.0.11", "w2": "198.18.0.12", "w3": "198.18.0.13"}}
    rdma = dict(HOSTVARS, w1=dict(HOSTVARS["w1"], lab_rdma_device="rxe1"))
    ring = F["flow_plan"]({"pattern": "ring", "engine": "perftest", "perftest": {"tool": "ib_send_bw"},
                           "volume": "1MB"}, GROUPS, rdma, "8gbit", "4200", rdma_device="rxe0")
    w1 = F["preflight_args"](ring, "w1")
    # a ring: w1 sends to w2 and receives from w3; its own RDMA device, the plan's tool
    assert (w1["peers"], w1["rdma_device"], w1["perftest_tools"]) == (
        ["198.18.0.12", "198.18.0.13"], "rxe1", ["ib_send_bw"])
    assert F["preflight_checks"](ring)["expect"] == {"mtu": 4200, "min_gbps": 8.0, "rdma": True, "perftest": True}
    with pytest.raises(AnsibleFilterError, match="preflight_args: nobody is not a host of this plan"):
        F["preflight_args"](PLAN, "nobody")
    with pytest.raises(AnsibleFilterError, match=r"preflight_checks: give a plan \(the flow_plan filter's result\)"):
        F["preflight_checks"]({"not": "a plan"})


def test_the_seed_through_the_filters():
    plan = F["flow_plan"]({"volume": "1GB", "throttles": {"w3": "2gbit"}}, GROUPS, HOSTVARS, "8gbit", "9000")
    assert plan["participants"] == ["sink", "w1", "w2", "w3"] and plan["batch_start"] is True
    args = F["flow_step_args"](plan, "w3", "barrier", "tok", {"mechanism": "tc", "description": "tc htb on eth0"})
    assert args["counters"]["qdiscs"] == ["eth0"]  # a tc throttle: its qdisc's books beside the netdev's
    # the throttle task's loop results, as Ansible registers them (a skipped item is ignored)
    batch = F["flow_step_batch_args"](plan, "barrier", "tok", [{"item": "w3", "mechanism": "tc",
                                                                "description": "tc htb on eth0"},
                                                               {"item": "w9", "skipped": True}], ["sink", "w1", "w3"])
    assert [p["party"] for p in batch["parts"]] == ["sink", "w1", "w3"]
    assert batch["parts"][2]["counters"]["qdiscs"] == ["eth0"] and batch["parts"][1]["counters"]["qdiscs"] == []
    # the plan travels between tasks as its dict form: JSON, with the lists the role loops over
    assert json.loads(json.dumps(plan)) == plan and plan["version"] == 2 and plan["throttled"] == ["w3"]
    assert F["throttle_args"](plan, "w3") == {"rate": "2gbit", "engine": "tcp", "interface": "eth0",
                                              "rdma_device": None, "peers": []}
    # hand-computed max-min: w1 and w2 3 Gb/s each, w3 at its 2 Gb/s throttle
    shares = F["fair_share"]({"w1": ["link"], "w2": ["link"], "w3": ["link", "w3"]}, {"link": "8gbit", "w3": "2gbit"})
    assert {f: s["rate_bps"] for f, s in shares.items()} == {"w1": 3e9, "w2": 3e9, "w3": 2e9}
    assert F["rate_bps"]("2gbit") == 2e9
    assert F["size_bytes"]("400KB") == 400000 and F["size_bytes"]("1MiB") == 2**20


@pytest.mark.parametrize("name, args, message", [
    ("flow_plan", ({"volume": "lots"}, GROUPS, HOSTVARS), "flow_plan: experiment.volume: 'lots'"),
    ("flow_step_args", (PLAN, "w9", "s", "t"), "flow_step_args: w9 is not a host of this plan"),
    ("flow_step_args", ({"hosts": {}}, "w1", "s", "t"), "flow_step_args: give the flow_plan filter's result"),
    ("throttle_args", (PLAN, "w1"), "throttle_args: w1 is not throttled in this plan (throttled: w3)"),
    ("flow_step_batch_args", ([], "s", "t"), "flow_step_batch_args: give the flow_plan filter's result"),
    ("barrier_analysis", ("not a list",), "barrier_analysis: expected a list of flow results"),
    ("fair_share", ({"f": ["l"]}, {"l": "8gbps"}), "fair_share: links.l: '8gbps' is ambiguous"),
    ("rate_bps", ("fast",), "rate: 'fast'"),
    ("size_bytes", ("deep", "convergence_buffer"), "convergence_buffer: 'deep'"),
    ("counters_diff", ("x", {}), "counters_diff: give two port_counters_info snapshots"),
    ("run_report", ("/nonexistent-run",), "run_report: /nonexistent-run has no flows/ directory"),
    ("report_json", ({},), "report_json: give a report"),
    ("report_text", ([],), "report_text: give a report"),
    ("netns_lab_hosts", (GROUPS, dict(HOSTVARS, w1={"lab_address": "10.0.0.1"})),
     "netns_lab_hosts: host w1: lab_address 10.0.0.1 is outside lab_subnet 198.18.0.0/24"),
])
def test_bad_input_names_the_field(name, args, message):
    with pytest.raises(AnsibleFilterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        F[name](*args)


def test_a_plan_whose_hosts_are_not_namespaces_has_no_batch():
    plan = F["flow_plan"]({}, GROUPS, {h: {"lab_address": v["lab_address"]} for h, v in HOSTVARS.items()})
    assert plan["batch_start"] is False
    with pytest.raises(AnsibleFilterError, match="start each host's part on the host"):
        F["flow_step_batch_args"](plan, "s", "t")


def test_the_owner_of_an_experiment_is_this_process_with_a_lease_as_long_as_its_steps():
    from ansible_collections.aifabric.lab.plugins.module_utils import _proc

    owner = F["experiment_owner"](PLAN, "barrier-1a2b", now=1000.0)
    # one step of the default arm_timeout 60 s and timeout 120 s, 90 s of grace, plus ten minutes: 870 s
    assert owner["lease_until"] == 1870.0 and owner["id"] == "barrier-1a2b"
    # outside an ansible-playbook worker (this test) the controller is this process itself
    assert owner["controller"]["pid"] == os.getpid() and _proc.same_process(owner["controller"])
    with pytest.raises(AnsibleFilterError, match="experiment_owner: give the experiment's id"):
        F["experiment_owner"](PLAN, " ")


def test_counters_diff_names_the_nics_pauses_for_the_host_given():
    before = {"taken_at": 0, "rdma": {}, "netdev": {}, "qdisc": {},
              "ethtool": {"ens1f0np0": {"tx_prio3_pause": 0, "tx_prio3_pause_duration": 0}}}
    after = dict(before, taken_at=2, ethtool={"ens1f0np0": {"tx_prio3_pause": 3, "tx_prio3_pause_duration": 12500}})
    got = F["counters_diff"](before, after, host="worker3")
    assert got["nic"] == ["worker3's port ens1f0np0 paused its peer 3 times on priority 3, 12 ms in all"]
    assert F["counters_diff"](before, before)["nic"] == []
    assert F["counters_diff"](before, after)["nic"][0].startswith("the host's port ens1f0np0 paused")
