# -*- coding: utf-8 -*-
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import ExperimentError, plan
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import Hop, Server

GROUPS = {"workers": ["worker1", "worker2", "worker3"], "sinks": ["sink"], "switches": ["switch"]}
HOSTVARS = {"sink": {"lab_address": "198.18.0.1"}, "worker1": {"lab_address": "198.18.0.11"},
            "worker2": {"lab_address": "198.18.0.12"}, "worker3": {"lab_address": "198.18.0.13/24"}}


def test_incast_plan_of_the_seed():
    p = plan({"name": "barrier", "volume": "2GB", "throttles": {"worker3": "2gbit"}}, GROUPS, HOSTVARS)
    assert p.participants == ["sink", "worker1", "worker2", "worker3"]
    assert p.sources == ["worker1", "worker2", "worker3"] and p.destinations == ["sink"]
    (this_round,) = p.rounds
    assert this_round.parts["sink"].servers == [Server(port=18600, expected_clients=3, address="198.18.0.1",
                                                       volume=2 * 10**9)]
    (w3,) = this_round.parts["worker3"].flows
    # a flow knows where it goes: its destination host, and that host's server
    assert (w3.src, w3.dst, w3.address, w3.port, w3.volume) == ("worker3", "sink", "198.18.0.1", 18600, 2 * 10**9)
    # out of the sender's switch port and into the sink's, each at the line rate, and the sender's throttle
    assert w3.path == [Hop("worker3->switch", "8gbit"), Hop("switch->sink", "8gbit"),
                       Hop("worker3 egress", "2gbit", throttle=True)]
    assert this_round.parts["worker1"].flows[0].path == [Hop("worker1->switch", "8gbit"), Hop("switch->sink", "8gbit")]
    assert p.hosts["worker3"].throttle.rate == "2gbit" and p.hosts["worker1"].throttle is None
    assert p.throttled == ["worker3"]
    assert p.steps == ["barrier"] and p.repetitions == [["barrier"]] and p.step_round == {"barrier": 0}
    assert p.hosts["worker3"].address == "198.18.0.13"
    # the sink coordinates the rendezvous of every host of the step, on the port below the flows'
    assert (p.rendezvous.host, p.rendezvous.port, p.rendezvous.start_at) == ("sink", 18599, None)
    assert this_round.expected_flows == {"worker1": ["worker1"], "worker2": ["worker2"], "worker3": ["worker3"]}
    assert p.collective is None
    assert p.arm_timeout == 60 and p.late_bound == 0.01 and p.strict_start is False
    assert w3.streams == 1


def test_first_n_workers_and_repeated_steps():
    p = plan({"name": "b", "workers": 2, "steps": 3}, GROUPS, HOSTVARS)
    assert p.sources == ["worker1", "worker2"]
    assert p.steps == ["b-1", "b-2", "b-3"] and p.repetitions == [["b-1"], ["b-2"], ["b-3"]]
    assert p.rounds[0].parts["sink"].servers[0].expected_clients == 2


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
        ({"result_grace": -1}, GROUPS, "experiment.result_grace: -1; give seconds from 0 to 3600"),
        ({"result_grace": "soon"}, GROUPS, "experiment.result_grace: 'soon'"),
        ({"result_grace": True}, GROUPS, "experiment.result_grace: True"),
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
    assert p.rounds[0].parts["sink"].servers[0].expected_clients == 12
    assert all(f.streams == 4 for f in p.rounds[0].flows()) and len(p.rounds[0].flows()) == 3


def test_ring_hosts_serve_and_send_and_the_first_host_coordinates_without_a_sink():
    p = plan({"pattern": "ring"}, {"workers": ["worker1", "worker2", "worker3"]}, HOSTVARS)
    assert p.rendezvous.host == "worker1"
    (w1,) = p.rounds[0].parts["worker1"].flows
    assert (w1.dst, w1.address) == ("worker2", "198.18.0.12")
    assert p.rounds[0].parts["worker1"].servers[0].expected_clients == 1


def test_a_host_that_sends_several_flows_names_each_after_its_destination():
    p = plan({"pattern": "all_to_all"}, {"workers": ["worker1", "worker2", "worker3"]}, HOSTVARS)
    flows = p.rounds[0].parts["worker1"].flows
    assert [(f.flow_id, f.dst, f.address) for f in flows] == [
        ("worker1->worker2", "worker2", "198.18.0.12"), ("worker1->worker3", "worker3", "198.18.0.13")]


def test_a_collective_is_rounds_of_steps_repeated():
    p = plan({"name": "ar", "pattern": "allreduce_ring", "steps": 2, "volume": "3GB"},
             {"workers": ["worker1", "worker2", "worker3"]}, HOSTVARS)
    # 3 ranks: 2 x (3 - 1) = 4 rounds, each a step, repeated twice
    assert len(p.rounds) == 4
    assert p.repetitions == [["ar-1.1", "ar-1.2", "ar-1.3", "ar-1.4"], ["ar-2.1", "ar-2.2", "ar-2.3", "ar-2.4"]]
    assert p.step_round["ar-2.3"] == 2 and p.round_of("ar-2.3") is p.rounds[2]
    # each round carries V/n: 3 GB / 3 ranks
    assert {f.volume for r in p.rounds for f in r.flows()} == {10**9}
    assert (p.collective.name, p.collective.ranks, p.collective.size) == ("allreduce_ring", 3, 3 * 10**9)
    assert p.collective.bus_factor == pytest.approx(2 * (3 - 1) / 3)


NETNS = {h: dict(v, ansible_connection="aifabric.lab.netns", ansible_netns_prefix="afl-") for h, v in HOSTVARS.items()}


def test_a_lab_of_namespaces_can_start_every_part_from_one_task():
    p = plan({"name": "b", "throttles": {"worker3": "2gbit"}}, GROUPS, NETNS)
    assert p.batch_start is True
    assert {h: e.netns for h, e in p.hosts.items()} == {
        "sink": "afl-sink", "worker1": "afl-worker1", "worker2": "afl-worker2", "worker3": "afl-worker3"}


@pytest.mark.parametrize("hostvars, spec, why", [
    (HOSTVARS, {}, "not netns"),
    (dict(NETNS, worker2=HOSTVARS["worker2"]), {}, "one host over another connection"),
    (NETNS, {"batch_start": False}, "turned off"),
    (NETNS, {"engine": "perftest"}, "perftest: the RDMA device is per host"),
])
def test_each_host_starts_its_own_part_elsewhere(hostvars, spec, why):
    assert plan(dict({"name": "b"}, **spec), GROUPS, hostvars).batch_start is False, why


def test_the_namespace_is_the_one_the_connection_enters():
    hv = dict(NETNS, worker1=dict(NETNS["worker1"], ansible_netns_name="w-one"),
              worker2=dict(NETNS["worker2"], ansible_host="w-two"))
    p = plan({"name": "b"}, GROUPS, hv)
    assert p.hosts["worker1"].netns == "afl-w-one" and p.hosts["worker2"].netns == "afl-w-two"
    with pytest.raises(ExperimentError, match="batch_start: 'yes'; give true or false"):
        plan({"batch_start": "yes"}, GROUPS, NETNS)


def test_each_host_gets_its_interface_and_each_throttle_its_peers():
    hv = dict(HOSTVARS, worker2=dict(HOSTVARS["worker2"], lab_interface="ens5"),
              worker3=dict(HOSTVARS["worker3"], experiment_interface="data0", lab_interface="ens5"))
    p = plan({"throttles": {"worker3": "2gbit", "worker2": "3gbit"}}, GROUPS, hv, interface="eth1")
    assert {h: e.interface for h, e in p.hosts.items()} == {
        "sink": "eth1", "worker1": "eth1", "worker2": "ens5", "worker3": "data0"}
    assert p.hosts["worker3"].throttle.peers == []  # one destination: nothing to share between
    rdma = plan({"engine": "perftest", "throttles": {"worker3": "2gbit"}}, GROUPS,
                dict(hv, worker3=dict(hv["worker3"], lab_rdma_device="rxe1")), rdma_device="rxe0")
    assert rdma.hosts["worker3"].rdma_device == "rxe1" and rdma.hosts["worker1"].rdma_device == "rxe0"
    # a host that sends to several peers shares its throttle between them (tc's fair classes)
    ring = plan({"pattern": "ring_bidirectional", "throttles": {"worker2": "2gbit"}},
                {"workers": ["worker1", "worker2", "worker3"]}, HOSTVARS)
    assert ring.hosts["worker2"].throttle.peers == ["198.18.0.11", "198.18.0.13"]


def test_perftest_knows_the_payload_share_of_the_roce_wire():
    p = plan({"engine": "perftest", "perftest": {"tool": "ib_read_bw", "rdma_mtu": 1024}}, GROUPS, HOSTVARS,
             rdma_device="mlx5_0")
    # RoCEv2 over Ethernet: 58 bytes of headers (14 Ethernet + 20 IPv4 + 8 UDP + 12 BTH + 4 ICRC) per 1024-byte packet
    assert p.goodput_factor == pytest.approx(1024 / (1024 + 58), abs=1e-9)
    # one perftest server process per client flow, on port, port + 1, ...
    assert [f.port for f in p.rounds[0].flows()] == [18600, 18601, 18602]


def test_a_null_field_takes_its_default():
    """docs/experiments.md lists the defaults with nulls (control_port: null): the plan reads them as not given."""
    p = plan({"name": "b", "control_port": None, "coordinator": None, "start_at": None, "throttles": None}, GROUPS,
             HOSTVARS)
    assert p.rendezvous.port == 18599 and p.rendezvous.host == "sink" and p.throttled == []


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


JOB = {"iterations": 2, "compute_ms": 10, "collectives": [{"op": "allreduce", "algorithm": "ring", "size": "30MB"}]}


def test_a_job_plans_one_step_of_programs_on_the_workers_with_their_paths():
    p = plan({"name": "j", "job": JOB, "throttles": {"worker3": "4gbit"}}, GROUPS, NETNS)
    # the workers only (no sink), one step, each worker's part its program (no servers, no flows)
    assert p.participants == ["worker1", "worker2", "worker3"] and p.steps == ["j"] and p.pattern == "job"
    (this_round,) = p.rounds
    assert all(not part.servers and not part.flows for part in this_round.parts.values())
    assert p.batch_start is True and p.rendezvous.host == "worker1"
    assert p.job.ranks == ["worker1", "worker2", "worker3"] and p.job.port == 18600
    assert p.job.described == ["allreduce ring, 1 chunk per message, window 2"]
    # a ring: each worker sends to the next only; the throttled worker's path has its throttle (its whole egress)
    assert sorted(p.job.paths) == ["worker1 worker2", "worker2 worker3", "worker3 worker1"]
    assert p.job.path("worker3", "worker1") == [("worker3->switch", "8gbit"), ("switch->worker1", "8gbit"),
                                                ("worker3 egress", "4gbit")]
    assert p.job.path("worker3", "worker1", throttle=False) == [("worker3->switch", "8gbit"),
                                                                ("switch->worker1", "8gbit")]
    assert p.hosts["worker3"].throttle.peers == []
    programs = p.job.programs(p.hosts)
    assert programs["worker2"]["listen"] == {"address": "198.18.0.12", "port": 18600}
    assert programs["worker2"]["peers"] == {"worker3": {"address": "198.18.0.13", "port": 18600}}
    # the dict form carries the job, and reads back the same
    again = type(p).from_dict(p.to_dict())
    assert again.job == p.job and again.job.programs(again.hosts) == programs
    # a plan without a job keeps the dict form it had
    assert "job" not in plan({"name": "b"}, GROUPS, HOSTVARS).to_dict()


@pytest.mark.parametrize("change, message", [
    ({"job": dict(JOB, collectives=[{"op": "allreduce", "algorithm": "halving_doubling", "size": "1MB"}])},
     r"^experiment.job.collectives\[0\].algorithm: halving_doubling needs a power-of-two number of ranks \(got 3\)"),
    ({"job": dict(JOB, iterations=0)}, r"^experiment.job.iterations: 0; give a whole number"),
    ({"job": dict(JOB, collectives=[{"op": "allreduce", "size": 0}])}, r"^experiment.job.collectives\[0\].size"),
    ({"job": dict(JOB, speed=1)}, r"^experiment.job: unknown field\(s\) speed"),
    ({"job": JOB, "pattern": "ring"}, r"^experiment.pattern: a job's traffic is its collectives"),
    ({"job": JOB, "volume": "1GB"}, r"^experiment.volume: a job's traffic is its collectives"),
    ({"job": JOB, "engine": "perftest"}, r"^experiment.engine: 'perftest'; a job's programs run on the hosts' own "
                                         r"executor, over TCP \(engine tcp\) or RDMA verbs \(engine verbs\). perftest "
                                         r"runs one transfer per process"),
    ({"job": JOB, "engine": "verbs", "verbs": {"qp_timeout": 40}}, r"^experiment.verbs.qp_timeout: 40; give a whole "
                                                                   r"number from 0 to 31"),
    ({"job": JOB, "engine": "verbs", "verbs": {"mtu": 1024}}, r"^experiment.verbs: \{'mtu': 1024\}; give \{ib_port, "
                                                              r"gid_index, qp_timeout, rdma_mtu\}"),
    ({"job": JOB, "verbs": {"qp_timeout": 18}}, r"^experiment.verbs: the verbs engine's options; give engine: verbs"),
    ({"job": JOB, "workers": 1}, r"^experiment.job: a job needs 2 workers or more"),
])
def test_a_job_that_cannot_run_is_refused_before_anything_starts(change, message):
    with pytest.raises(ExperimentError, match=message):
        plan(dict({"name": "j"}, **change), GROUPS, NETNS)


def test_a_jobs_prediction_reads_the_plans_paths_and_its_throttle():
    """docs/jobs.md's worked example, by hand: 3 workers at 8 Gb/s, worker3 throttled to 4 Gb/s, 2 iterations of
    10 ms compute and a 30 MB ring AllReduce: 90 ms per iteration with the throttle, 50 ms without."""
    p = plan({"name": "j", "job": JOB, "throttles": {"worker3": "4gbit"}}, GROUPS, NETNS, mtu=None)
    ends = [p.job.predict(p)["results"][h]["iteration_end"] for h in p.job.ranks]
    assert [max(e[i] for e in ends) for i in range(2)] == pytest.approx([0.090, 0.180], abs=1e-9)
    ends = [p.job.predict(p, throttle=False)["results"][h]["iteration_end"] for h in p.job.ranks]
    assert [max(e[i] for e in ends) for i in range(2)] == pytest.approx([0.050, 0.100], abs=1e-9)


def test_the_tcp_options_reach_every_host_s_flow_step_arguments():
    from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.args import batch_args, host_args
    from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import Plan

    # YAML reads a bare `ecn: on` as true: it means on
    p = plan({"name": "i", "tcp": {"ecn": True, "congestion": "cubic"}}, GROUPS, HOSTVARS)
    assert p.tcp == {"ecn": "on", "congestion": "cubic"}
    assert host_args(p, "worker1", "i", "t")["tcp"] == {"ecn": "on", "congestion": "cubic"}
    assert Plan.from_dict(p.to_dict()).tcp == p.tcp
    # no tcp options: the plan's dict form is as before, the hosts keep their settings
    bare = plan({"name": "i"}, GROUPS, HOSTVARS)
    assert "tcp" not in bare.to_dict() and host_args(bare, "sink", "i", "t")["tcp"] == {}
    netns = {h: dict(v, ansible_connection="aifabric.lab.netns") for h, v in HOSTVARS.items()}
    assert batch_args(plan({"name": "i", "tcp": {"ecn": "off"}}, GROUPS, netns), "i", "t")["tcp"] == {"ecn": "off"}


@pytest.mark.parametrize("tcp, message", [
    ({"ecn": "sometimes"}, "experiment.tcp.ecn: 'sometimes'; use one of off, on, accept, accecn"),
    ({"congestion": "cubic; reboot"}, "experiment.tcp.congestion: 'cubic; reboot' is not a congestion control"),
    ({"window": 3}, "experiment.tcp: {'window': 3}; give {ecn"),
])
def test_bad_tcp_options_are_named(tcp, message):
    with pytest.raises(ExperimentError, match=message.replace("(", r"\(").replace("{", r"\{")):
        plan({"name": "i", "tcp": tcp}, GROUPS, HOSTVARS)


def test_tcp_options_are_the_tcp_engine_s():
    hostvars = {h: dict(v, lab_rdma_device="rxe0") for h, v in HOSTVARS.items()}
    with pytest.raises(ExperimentError, match="experiment.tcp: the kernel's TCP options are the tcp engine's"):
        plan({"name": "i", "engine": "perftest", "tcp": {"ecn": "on"}}, GROUPS, hostvars)


def test_the_result_grace_reaches_every_host_s_rendezvous_and_the_plan_s_record():
    from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.args import batch_args, common_args, host_args
    from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import Plan

    p = plan({"name": "g", "result_grace": 5}, GROUPS, HOSTVARS)
    assert p.rendezvous.result_grace == 5.0
    assert {host_args(p, h, "g", "t")["rendezvous"]["result_grace"] for h in ("sink", "worker1", "worker3")} == {5.0}
    assert common_args(p, "g", "t")["rendezvous"]["result_grace"] == 5.0
    assert Plan.from_dict(p.to_dict()).rendezvous.result_grace == 5.0
    netns = {h: dict(v, ansible_connection="aifabric.lab.netns") for h, v in HOSTVARS.items()}
    batch = batch_args(plan({"name": "g", "result_grace": 0}, GROUPS, netns), "g", "t")
    assert batch["rendezvous"]["result_grace"] == 0
    # not given: the module's default (30 s), and the plan's record as before the option
    bare = plan({"name": "g"}, GROUPS, HOSTVARS)
    assert bare.rendezvous.result_grace is None and "result_grace" not in bare.to_dict()["rendezvous"]
    assert "result_grace" not in host_args(bare, "sink", "g", "t")["rendezvous"]


def test_labels_are_kept_in_the_plan_and_its_record():
    from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import Plan

    p = plan({"name": "i", "labels": {"n": 8, "buffer": "200KB", "mode": "ecn"}}, GROUPS, HOSTVARS)
    assert p.labels == {"n": 8, "buffer": "200KB", "mode": "ecn"}
    assert Plan.from_dict(p.to_dict()).labels == p.labels
    assert "labels" not in plan({"name": "j"}, GROUPS, HOSTVARS).to_dict()


@pytest.mark.parametrize("labels, message", [
    ({"n": [8]}, "experiment.labels.n: [8]; give a string"),
    ({"a b": 1}, "experiment.labels: 'a b' is not a label's name"),
    ("n=8", "experiment.labels: 'n=8'; give a dict"),
])
def test_bad_labels_are_named(labels, message):
    with pytest.raises(ExperimentError, match=message.replace("[", r"\[")):
        plan({"name": "i", "labels": labels}, GROUPS, HOSTVARS)


def test_start_offsets_reach_the_flows_their_arguments_and_the_prediction():
    """Convergence's plan (docs/congestion.md): worker3 joins worker1 and worker2 at 2 s. By hand, 8 Gb/s into the
    sink, 3 GB each, goodput factor left out (mtu None): worker1 and worker2 alone at 4 Gb/s for 2 s (1 GB each), then
    the three at 8/3 Gb/s; worker1 and worker2 have 2 GB = 16 Gbit left: 6 s more, done at 8 s; worker3 has sent
    2 GB by then, and its last 1 GB alone at 8 Gb/s takes 1 s: 9 s."""
    from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.barrier import _predict
    from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.args import host_args
    from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import Plan
    from ansible_collections.aifabric.lab.plugins.plugin_utils._run.model import Step, step_plans

    p = plan({"name": "c", "volume": "3GB", "start_offsets": {"worker3": "2s"}}, GROUPS, HOSTVARS, mtu=None)
    offsets = {f.src: f.start_offset for f in p.rounds[0].flows()}
    assert offsets == {"worker1": 0.0, "worker2": 0.0, "worker3": 2.0}
    again = Plan.from_dict(p.to_dict())
    assert {f.src: f.start_offset for f in again.rounds[0].flows()} == offsets
    assert host_args(p, "worker3", "c", "t")["clients"][0]["start_offset"] == 2.0
    assert "start_offset" not in host_args(p, "worker1", "c", "t")["clients"][0]
    step_plan = step_plans(p)["c"]
    from ansible_collections.aifabric.lab.plugins.plugin_utils._run.model import Flow
    flows = [Flow(host=h, flow_id=h, status="ok", volume_bytes=3 * 10**9, completion_s=1.0)
             for h in ("worker1", "worker2", "worker3")]
    predicted = _predict(Step(name="c", plan=step_plan, flows=flows))
    assert predicted == pytest.approx({("worker1", "worker1"): 8.0, ("worker2", "worker2"): 8.0,
                                       ("worker3", "worker3"): 9.0}, abs=1e-9)


@pytest.mark.parametrize("offsets, message", [
    ({"sink": 1}, r"experiment.start_offsets.sink: sink sends no flow in this experiment \(its senders: worker1, "
                  r"worker2, worker3\)"),
    ({"worker1": -1}, r"experiment.start_offsets.worker1: -1; give seconds, 0 or more"),
    ({"worker1": "soon"}, r"experiment.start_offsets.worker1: 'soon'; give seconds"),
    ({"worker1": 120}, r"experiment.start_offsets.worker1: 120.0 s is not less than timeout \(120 s\)"),
    ([1, 2], r"experiment.start_offsets: \[1, 2\]; give \{host: seconds\}"),
])
def test_bad_start_offsets_are_named(offsets, message):
    with pytest.raises(ExperimentError, match=message):
        plan({"name": "c", "start_offsets": offsets}, GROUPS, HOSTVARS)


def test_start_offsets_in_milliseconds_and_not_with_a_job():
    p = plan({"name": "c", "start_offsets": {"worker2": "500ms", "worker3": 1.5}}, GROUPS, HOSTVARS)
    assert {f.src: f.start_offset for f in p.rounds[0].flows()} == {"worker1": 0.0, "worker2": 0.5, "worker3": 1.5}
    with pytest.raises(ExperimentError, match=r"^experiment.start_offsets: a job's traffic is its collectives"):
        plan({"name": "j", "job": JOB, "start_offsets": {"worker2": 1}}, GROUPS, NETNS)


def test_a_job_over_verbs_plans_each_worker_s_device_and_the_roce_wire():
    """engine verbs: each worker's program with its RDMA device (lab_rdma_device) and the experiment's verbs options;
    the prediction's payload share is RoCE's at the RDMA MTU; flows are refused (verbs runs a job's programs)."""
    from ansible_collections.aifabric.lab.plugins.plugin_utils._model.fair_share import roce_goodput
    from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.args import host_args
    from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import Plan

    hostvars = {h: dict(v, lab_rdma_device="rxe0") for h, v in HOSTVARS.items()}
    p = plan({"name": "j", "job": JOB, "engine": "verbs", "verbs": {"qp_timeout": 18, "rdma_mtu": 2048}}, GROUPS,
             hostvars)
    assert p.engine == "verbs" and p.goodput_factor == roce_goodput(2048) and not p.batch_start
    args = host_args(p, "worker2", "j", "t")
    assert args["engine"] == "verbs" and args["verbs"] == {"qp_timeout": 18, "device": "rxe0"}
    assert args["program"] is not None and args["perftest"] == {} and args["counters"]["rdma_devices"] == ["rxe0"]
    assert Plan.from_dict(p.to_dict()).verbs == {"qp_timeout": 18, "rdma_mtu": 2048}
    assert "verbs" not in plan({"name": "b"}, GROUPS, HOSTVARS).to_dict()
    with pytest.raises(ExperimentError, match=r"^experiment.engine: verbs runs a job's programs"):
        plan({"name": "b", "engine": "verbs"}, GROUPS, HOSTVARS)
