# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An experiment, described once, expanded into the flows of a step.

An experiment is a dict (from the inventory's ``experiment`` or ``-e``)::

    name: barrier            # report label; steps are named <name> or <name>-<n> when repeated
    kind: barrier            # or baseline (a single flow, the elephant)
    pattern: incast          # who sends to whom; see PATTERNS
    workers: 3               # the first N hosts of the workers group (all when omitted)
    volume: 1GB              # per flow
    steps: 1                 # repeated steps, each with its own start instant
    throttles: {worker3: 2gbit}
    engine: tcp
    port: 18600              # first port; tcp: a destination's flows share its server; perftest: one port per flow
    control_port: 18599      # the rendezvous' port on the coordinating host
    coordinator: null        # the host that coordinates the rendezvous (default: the first sink, else the first host)
    timeout: 120             # seconds a flow may take from the start instant
    arm_timeout: 60          # seconds within which every host must arm (a limit for failures, not a lead time)
    result_grace: 30         # seconds past the timeout that the coordinator and the servers wait for late results
    streams: 1               # parallel TCP connections per flow (perftest: perftest.qps)
    late_bound: 0.01         # a start later than this share of the predicted step (or a duration: 5ms) fails it
    strict_start: false      # true: a flow later than start_tolerance refuses to start (on the host)
    start_tolerance: 0.001   # with strict_start, seconds
    start_at: null           # a fixed start instant (PTP-synchronized labs) instead of the rendezvous' own
    batch_start: true        # netns lab, tcp: one task starts every host's part (see batch_args)
    expect: {step_vs_predicted: 1.05, healthy_idle_share: 0.05, counters: clean, vs_baseline: 0.95}  # expect
    fabric: {hash: l4, seed: 1, placement: hash, port_seed: 0}  # the fabric lab only (_fabric.lab)
    job: {iterations: 20, compute_ms: 5, collectives: [{op: allreduce, algorithm: ring, size: 64MB}]}  # below
    tcp: {ecn: on, congestion: cubic}  # tcp: every host's net.ipv4.tcp_ecn and its flows' congestion control
    start_offsets: {worker3: 3, worker4: 3}  # a sender's flows start that long after the common instant (3, 500ms)

With ``job`` (docs/jobs.md) the experiment is a training job instead of a pattern: every step runs the job's
per-host programs (``_job.program.build_programs``) on the workers, from one instant, each worker's program server
on ``port``; the job is validated by ``_job.spec.parse_job`` before anything starts (``experiment.job.collectives[0]
.algorithm: ...``). ``pattern``, ``volume``, ``root``, ``streams`` and ``start_offsets`` do not apply and are
refused, and so are the perftest engine (perftest runs one transfer per process) and the fabric lab.

``plan()`` returns a ``Plan`` (``model``): the hosts (address, namespace, interface, throttle) and the rounds of the
pattern (``patterns``; a collective has several, one step each): per round, each host's servers and the flows it sends,
each flow with its destination and its path of links and rates, which the barrier report's fair-share prediction
reads. Steps are named NAME, NAME-i when repeated, NAME.k for a collective's rounds (NAME-i.k repeated). The playbooks
consume only the plan, through the modules' arguments made from it (``args``).
"""

from __future__ import annotations

import math

from ansible_collections.aifabric.lab.plugins.module_utils._link import link_name
from ansible_collections.aifabric.lab.plugins.module_utils._netns_enter import namespace_name
from ansible_collections.aifabric.lab.plugins.module_utils._units import UnitError, format_rate, parse_rate, parse_size
from ansible_collections.aifabric.lab.plugins.plugin_utils._fabric.lab import PLACEMENTS, FabricLabError, assign_ports
from ansible_collections.aifabric.lab.plugins.plugin_utils._inventory import InventoryError, lab_address
from ansible_collections.aifabric.lab.plugins.plugin_utils._model.fair_share import roce_goodput
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.expect import (
    GateError,
    LateBoundError,
    check_expect,
    parse_late_bound,
)
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import (
    Collective,
    FabricPlan,
    Flow,
    Hop,
    Host,
    HostPart,
    JobPlan,
    Plan,
    PlanError,
    Rendezvous,
    Round,
    Server,
    Throttle,
    throttle_link,
)
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.patterns import (
    BUS_FACTOR,
    COLLECTIVES,
    NEEDS_SINK,
    PATTERNS,
    PatternError,
    rounds,
)

__all__ = ["ExperimentError", "PERFTEST_ARGS", "plan", "PATTERNS"]


class ExperimentError(PlanError):
    """An experiment that cannot run; the message names the field, the value and the fix."""


_KNOWN = {"name", "kind", "pattern", "workers", "volume", "steps", "throttles", "engine", "port", "timeout",
          "interval", "description", "perftest", "counters", "start_tolerance", "strict_start", "late_bound",
          "arm_timeout", "streams", "start_at", "coordinator", "control_port", "batch_start", "root", "expect",
          "fabric", "job", "tcp", "result_grace", "labels", "start_offsets", "verbs"}
_NOT_FOR_A_JOB = ("pattern", "volume", "root", "streams", "start_offsets")


_FABRIC_KNOWN = ("hash", "seed", "placement", "port_seed")


_NETNS_CONNECTIONS = ("aifabric.lab.netns", "netns")


PERFTEST_ARGS = ("tool", "ib_port", "gid_index", "msg_size", "qps", "rdma_cm",
                 "qp_timeout")  # flow_step's perftest options


TCP_ECN = ("off", "on", "accept", "accecn")  # flow_step's tcp.ecn

VERBS_ARGS = ("ib_port", "gid_index", "qp_timeout")  # flow_step's verbs options (the device is each host's)


def _labels(value):
    """The experiment's ``labels``: names (letters, digits, ``_``) to strings or numbers, at most 16, recorded in the
    report (a sweep's cell: ``{n: 8, buffer: 200KB, mode: ecn}``); ``{}`` when not given."""
    if value in (None, {}):
        return {}
    if not isinstance(value, dict) or len(value) > 16:
        raise ExperimentError("experiment.labels: %r; give a dict of at most 16 names to strings or numbers, like "
                              "{n: 8, buffer: 200KB, mode: ecn}" % (value,))
    out = {}
    for key, item in value.items():
        if not isinstance(key, str) or not key.replace("_", "").isalnum() or len(key) > 32:
            raise ExperimentError("experiment.labels: %r is not a label's name; use letters, digits and _ (at most "
                                  "32)" % (key,))
        if isinstance(item, bool) or not isinstance(item, (str, int, float)) or len(str(item)) > 64:
            raise ExperimentError("experiment.labels.%s: %r; give a string (at most 64 characters) or a number"
                                  % (key, item))
        out[key] = item
    return out


def _seconds(value, where):
    """Seconds from a number or a duration's text (``500ms``, ``3s``, ``3``); ExperimentError names ``where``."""
    text = value.strip() if isinstance(value, str) else None
    try:
        if text is not None and text.endswith("ms"):
            seconds = float(text[:-2]) / 1000
        elif text is not None:
            seconds = float(text[:-1] if text.endswith("s") else text)
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(value)
        else:
            seconds = float(value)
    except ValueError:
        seconds = float("nan")
    if not math.isfinite(seconds) or seconds < 0:
        raise ExperimentError("%s: %r; give seconds, 0 or more (3, 2.5, 500ms, 3s)" % (where, value))
    return seconds


def _start_offsets(value, senders, timeout):
    """The experiment's ``start_offsets``: sending host -> seconds after the step's common instant that its flows
    start (the M flows that join M running ones: convergence, docs/congestion.md); ``{}`` when not given."""
    if value in (None, {}):
        return {}
    if not isinstance(value, dict):
        raise ExperimentError("experiment.start_offsets: %r; give {host: seconds}, like {worker3: 3, worker4: 3}: "
                              "each host's flows start that long after the step's common instant" % (value,))
    out = {}
    for host, given in value.items():
        if host not in senders:
            raise ExperimentError("experiment.start_offsets.%s: %s sends no flow in this experiment (its senders: "
                                  "%s); name a sender" % (host, host, ", ".join(sorted(senders))))
        seconds = _seconds(given, "experiment.start_offsets.%s" % host)
        if seconds >= timeout:
            raise ExperimentError("experiment.start_offsets.%s: %s s is not less than timeout (%s s), which counts "
                                  "from the common instant; give a smaller offset or a longer timeout"
                                  % (host, seconds, timeout))
        out[host] = seconds
    return out


def _verbs(value, engine):
    """The experiment's ``verbs`` options (flow_step's ``verbs``, and ``rdma_mtu`` for the prediction: the RoCE
    headers per RDMA MTU), checked; ``{}`` when not given."""
    if value in (None, {}):
        return {}
    known = VERBS_ARGS + ("rdma_mtu",)
    if not isinstance(value, dict) or set(value) - set(known):
        raise ExperimentError("experiment.verbs: %r; give {%s}" % (value, ", ".join(known)))
    if engine != "verbs":
        raise ExperimentError("experiment.verbs: the verbs engine's options; give engine: verbs (and a job)")
    limits = {"ib_port": (1, 255), "gid_index": (0, 255), "qp_timeout": (0, 31)}
    for key, (low, high) in limits.items():
        item = value.get(key)
        if item is not None and (isinstance(item, bool) or not isinstance(item, int) or not low <= item <= high):
            raise ExperimentError("experiment.verbs.%s: %r; give a whole number from %d to %d" % (key, item, low, high))
    if value.get("rdma_mtu", 1024) not in (256, 512, 1024, 2048, 4096):
        raise ExperimentError("experiment.verbs.rdma_mtu: %r; the RDMA path MTU is 256, 512, 1024, 2048 or 4096 "
                              "(soft-RoCE on a 1500-byte link: 1024)" % (value["rdma_mtu"],))
    return {k: v for k, v in value.items() if v is not None}


def _tcp(value, engine):
    """The experiment's ``tcp`` options (flow_step's: ``ecn``, ``congestion``), checked; ``{}`` when not given."""
    if value in (None, {}):
        return {}
    if not isinstance(value, dict) or set(value) - {"ecn", "congestion"}:
        raise ExperimentError("experiment.tcp: %r; give {ecn: on|off|accept|accecn, congestion: cubic|reno|bbr|...}"
                              % (value,))
    if engine != "tcp":
        raise ExperimentError("experiment.tcp: the kernel's TCP options are the tcp engine's; the %s engine's "
                              "transport is the NIC's" % engine)
    out = {}
    ecn = value.get("ecn")
    if ecn is True:  # YAML reads a bare on as true
        ecn = "on"
    elif ecn is False:
        ecn = "off"
    if ecn is not None:
        if ecn not in TCP_ECN:
            raise ExperimentError("experiment.tcp.ecn: %r; use one of %s" % (ecn, ", ".join(TCP_ECN)))
        out["ecn"] = ecn
    congestion = value.get("congestion")
    if congestion is not None:
        if not isinstance(congestion, str) or not congestion.replace("_", "").isalnum() or len(congestion) > 15:
            raise ExperimentError("experiment.tcp.congestion: %r is not a congestion control's name (cubic, reno, "
                                  "bbr; what the hosts' kernels have)" % (congestion,))
        out["congestion"] = congestion
    return out


def _address(hostvars, host):
    try:
        return str(lab_address(hostvars, host))
    except InventoryError as exc:
        raise ExperimentError(str(exc)) from None


def _netns(hostvars, host):
    """The network namespace that is ``host`` when the inventory reaches it with the netns connection (the name
    the connection enters: ansible_netns_prefix + ansible_netns_name, else the host's address or name); else None."""
    hv = hostvars.get(host) or {}
    if hv.get("ansible_connection") not in _NETNS_CONNECTIONS:
        return None
    return namespace_name(hv.get("ansible_netns_prefix"),
                          hv.get("ansible_netns_name") or hv.get("ansible_host") or host)


def plan(experiment, groups, hostvars, line_rate="8gbit", mtu=9000, switch="switch", interface="eth0",
         rdma_device=None, fabric=None):
    """Expand ``experiment`` over the inventory. ``groups``/``hostvars`` are Ansible's magic variables. A host's lab
    interface is its ``experiment_interface``, else its ``lab_interface``, else ``interface``; its RDMA device (the
    perftest engine) its ``lab_rdma_device``, else ``rdma_device``. ``fabric``: the fabric lab's description
    (``_fabric.lab.fabric_topology``); each flow's path through it is found by the kernel's lookups before the steps
    (``args.lookup_flows`` and ``_fabric.lab.place``), from source ports the plan chooses."""
    if not isinstance(experiment, dict):
        raise ExperimentError("experiment: expected a dict (name, pattern, volume, ...), got %r" % (experiment,))
    # a field given as null takes its default (docs/experiments.md writes the defaults that way: control_port: null)
    experiment = {key: value for key, value in experiment.items() if value is not None}
    if "start_lead" in experiment:
        raise ExperimentError("experiment.start_lead: no longer used: a step fires when every host has armed, at an "
                              "instant the rendezvous measures; remove it (give start_at for a fixed instant)")
    unknown = sorted(set(experiment) - _KNOWN)
    if unknown:
        raise ExperimentError("experiment: unknown field(s) %s; known: %s"
                              % (", ".join(unknown), ", ".join(sorted(_KNOWN))))
    job = experiment.get("job")
    if job is not None:
        _check_job_fields(experiment)
    pattern = experiment.get("pattern", "incast") if job is None else "job"
    if job is None and pattern not in PATTERNS and pattern not in COLLECTIVES:
        raise ExperimentError("experiment.pattern: %r is not known; use one of %s" % (
            pattern, ", ".join(list(PATTERNS) + list(COLLECTIVES))))
    kind = experiment.get("kind", "barrier")
    if kind not in ("barrier", "baseline"):
        raise ExperimentError("experiment.kind: %r; use barrier or baseline" % kind)
    pool = list(groups.get("workers") or [])
    sinks = list(groups.get("sinks") or [])
    if not sinks and job is None and pattern in NEEDS_SINK:
        raise ExperimentError("the inventory has no host in group 'sinks'; a step needs a sink to send to")
    if not pool:
        raise ExperimentError("the inventory has no host in group 'workers'")
    count = experiment.get("workers", len(pool))
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= len(pool):
        raise ExperimentError("experiment.workers: %r; give a number from 1 to %d (the workers in the inventory)"
                              % (count, len(pool)))
    workers = pool[:count]
    try:
        volume = parse_size(experiment.get("volume", "1GB"), "experiment.volume")
        line = parse_rate(line_rate, "lab_line_rate")
        throttles = {}
        for host, rate in (experiment.get("throttles") or {}).items():
            if host not in pool and host not in sinks:
                raise ExperimentError("experiment.throttles: %r is not a lab host (workers: %s)"
                                      % (host, ", ".join(pool)))
            throttles[host] = parse_rate(rate, "experiment.throttles.%s" % host)
    except UnitError as exc:
        raise ExperimentError(str(exc)) from None
    steps = experiment.get("steps", 1)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ExperimentError("experiment.steps: %r; give a whole number of steps, 1 or more" % (steps,))
    port = experiment.get("port", 18600)
    if isinstance(port, bool) or not isinstance(port, int) or not 1024 <= port <= 65535:
        raise ExperimentError("experiment.port: %r; give a port from 1024 to 65535" % (port,))
    timeout = experiment.get("timeout", 120)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ExperimentError("experiment.timeout: %r; give seconds, more than 0" % (timeout,))
    engine = experiment.get("engine", "tcp")
    if engine not in ("tcp", "perftest", "verbs"):
        raise ExperimentError("experiment.engine: %r; use tcp, perftest or verbs (a job's)" % (engine,))
    if engine == "verbs" and job is None:
        raise ExperimentError("experiment.engine: verbs runs a job's programs (their data in RDMA queue pairs); give "
                              "job, or use engine perftest for flows over RDMA")
    verbs = _verbs(experiment.get("verbs"), engine)
    perftest = experiment.get("perftest") or {}
    if not isinstance(perftest, dict) or set(perftest) - set(PERFTEST_ARGS) - {"rdma_mtu"}:
        raise ExperimentError("experiment.perftest: unknown option(s) %s; known: %s" % (
            ", ".join(sorted(set(perftest) - set(PERFTEST_ARGS) - {"rdma_mtu"})) if isinstance(perftest, dict)
            else repr(perftest), ", ".join(PERFTEST_ARGS + ("rdma_mtu",))))
    rdma_mtu = perftest.get("rdma_mtu", 1024)
    if rdma_mtu not in (256, 512, 1024, 2048, 4096):
        raise ExperimentError("experiment.perftest.rdma_mtu: %r; the RDMA path MTU is 256, 512, 1024, 2048 or 4096 "
                              "(soft-RoCE on a 1500-byte link: 1024)" % (rdma_mtu,))
    tcp = _tcp(experiment.get("tcp"), engine)
    labels = _labels(experiment.get("labels"))
    job_spec = None
    try:
        if job is not None:
            job_spec = _parse_job(job, workers)
            planned_rounds = [[]]  # one round: the job's programs, no flows
        else:
            planned_rounds = rounds(pattern, workers, sinks, experiment.get("root"))
    except PatternError as exc:
        raise ExperimentError(str(exc)) from None
    tolerance = experiment.get("start_tolerance", 0.001)
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 <= tolerance <= 1:
        raise ExperimentError("experiment.start_tolerance: %r; give seconds from 0 to 1 (used with strict_start)"
                              % (tolerance,))
    strict = experiment.get("strict_start", False)
    if not isinstance(strict, bool):
        raise ExperimentError("experiment.strict_start: %r; give true or false" % (strict,))
    arm_timeout = experiment.get("arm_timeout", 60)
    if isinstance(arm_timeout, bool) or not isinstance(arm_timeout, (int, float)) or arm_timeout <= 0:
        raise ExperimentError("experiment.arm_timeout: %r; give seconds, more than 0 (how long every host may take "
                              "to arm before the step fails)" % (arm_timeout,))
    result_grace = experiment.get("result_grace")
    if result_grace is not None and (isinstance(result_grace, bool) or not isinstance(result_grace, (int, float))
                                     or not 0 <= result_grace <= 3600):
        raise ExperimentError("experiment.result_grace: %r; give seconds from 0 to 3600 (how long past the timeout "
                              "the coordinator waits for a late host's results; default 30)" % (result_grace,))
    streams = experiment.get("streams", 1)
    if isinstance(streams, bool) or not isinstance(streams, int) or not 1 <= streams <= 64:
        raise ExperimentError("experiment.streams: %r; give a whole number of parallel connections per flow, 1-64"
                              % (streams,))
    if streams > 1 and engine == "perftest":
        raise ExperimentError("experiment.streams: the perftest engine runs parallel queue pairs instead; set "
                              "perftest.qps")
    try:
        late_bound = parse_late_bound(experiment.get("late_bound"), "experiment.late_bound")
    except LateBoundError as exc:
        raise ExperimentError(str(exc)) from None
    try:
        expect = check_expect(experiment.get("expect"))
    except GateError as exc:
        raise ExperimentError(str(exc)) from None
    control_port = experiment.get("control_port", port - 1)
    if isinstance(control_port, bool) or not isinstance(control_port, int) or not 1024 <= control_port <= 65535:
        raise ExperimentError("experiment.control_port: %r; give a port from 1024 to 65535" % (control_port,))
    batch = experiment.get("batch_start", True)
    if not isinstance(batch, bool):
        raise ExperimentError("experiment.batch_start: %r; give true or false" % (batch,))
    name = str(experiment.get("name") or kind)
    fabric_spec = _fabric_spec(experiment.get("fabric"), fabric, engine)
    hosts = {}

    def host_entry(host):
        if host not in hosts:
            hv = hostvars.get(host) or {}
            hosts[host] = Host(name=host, address=_address(hostvars, host), netns=_netns(hostvars, host),
                               interface=str(hv.get("experiment_interface") or hv.get("lab_interface") or interface),
                               rdma_device=(hv.get("lab_rdma_device") or rdma_device or None)
                               if engine in ("perftest", "verbs") else None)
        return hosts[host]

    def path(src, dst):
        """A flow's path: out of its host's switch port, into its destination's, each at the line rate, and the
        sender's throttle. On the fabric, only the throttle: the links come from the kernel's lookups (``place``)."""
        hops = [] if fabric_spec else [Hop(link_name(src, switch), format_rate(line)),
                                       Hop(link_name(switch, dst), format_rate(line))]
        if src in throttles:
            # marked, so that the report can predict the same step without it (what the straggler cost)
            hops.append(Hop(throttle_link(src), format_rate(throttles[src]), throttle=True))
        return hops

    senders = {src for flows in planned_rounds for src, _dst, _share in flows}
    offsets = _start_offsets(experiment.get("start_offsets"), senders, timeout)
    plan_rounds = []
    for flows in planned_rounds:
        parts = {}  # host -> HostPart
        sent = {}
        for src, dst, _share in flows:
            sent.setdefault(src, []).append(dst)
        for src, dst, share in flows:
            for host in (src, dst):
                host_entry(host)
                parts.setdefault(host, HostPart())
            server = next(iter(parts[dst].servers), None)
            if server is None:
                # "volume": what each of its flows carries (one share per round in every pattern)
                server = Server(port=port, expected_clients=0, address=hosts[dst].address,
                                volume=max(1, int(round(volume * share))))
                parts[dst].servers.append(server)
            # a tcp server counts connections (a flow's streams); a perftest server runs one process per client,
            # on port, port + 1, ...
            first = server.expected_clients
            server.expected_clients += streams if engine == "tcp" else 1
            # a host that sends one flow names it after itself (the seed's report); several flows, after their peers
            parts[src].flows.append(Flow(
                flow_id=src if len(sent[src]) == 1 else link_name(src, dst), src=src, dst=dst,
                address=hosts[dst].address, port=server.port + (first if engine == "perftest" else 0),
                volume=max(1, int(round(volume * share))), streams=streams,
                path=path(src, dst),  # the links it crosses with their rates: the prediction reads them
                start_offset=offsets.get(src, 0.0)))
        if job_spec is not None:
            for host in workers:  # every worker runs its program (no servers, no flows)
                host_entry(host)
                parts[host] = HostPart()
        plan_rounds.append(Round(parts={h: parts[h] for h in sorted(parts)}))
    for host, rate in throttles.items():
        if host in hosts:
            # tc: the rate shared fairly between the host's destinations (every round's), when it has several; a
            # job's worker: its whole egress (its program's connections share it as TCP does)
            host_entry(host).throttle = Throttle(rate=format_rate(rate),
                                                 peers=_peers(plan_rounds, host) if job_spec is None else [])
    participants = sorted(hosts)
    coordinator = experiment.get("coordinator")
    if coordinator is None:
        coordinator = next((s for s in sinks if s in hosts), participants[0])
    elif coordinator not in hosts:
        raise ExperimentError("experiment.coordinator: %r is not a host of this experiment's steps (%s)"
                              % (coordinator, ", ".join(participants)))
    bases = [name if steps == 1 else "%s-%d" % (name, i + 1) for i in range(steps)]
    step_names = [step for base in bases for step in
                  ([base] if len(plan_rounds) == 1 else ["%s.%d" % (base, k + 1) for k in range(len(plan_rounds))])]
    the_plan = Plan(
        name=name, kind=kind, pattern=pattern, engine=engine, volume=volume, line_rate=format_rate(line), mtu=mtu,
        hosts=hosts, rounds=plan_rounds, steps=step_names,
        rendezvous=Rendezvous(host=coordinator, port=control_port, start_at=experiment.get("start_at"),
                              result_grace=float(result_grace) if result_grace is not None else None),
        timeout=timeout, arm_timeout=arm_timeout, late_bound=late_bound, strict_start=strict,
        start_tolerance=tolerance, streams=streams, interval=experiment.get("interval", 1.0),
        counters=bool(experiment.get("counters", True)), perftest=dict(experiment.get("perftest") or {}),
        # payload share of the wire when the plan knows it better than TCP's at the MTU (RoCE headers per RDMA MTU)
        goodput_factor=roce_goodput(verbs.get("rdma_mtu", 1024) if engine == "verbs" else rdma_mtu)
        if engine in ("perftest", "verbs") else None, expect=expect,
        # Every host a namespace of the controller's machine (the netns lab): one task can start them all. Not for
        # perftest, whose RDMA device is set per host.
        batch_start=batch and engine == "tcp" and all(hosts[h].netns for h in participants),
        collective=Collective(name=pattern, ranks=len(workers), size=volume,
                              bus_factor=BUS_FACTOR[pattern](len(workers))) if pattern in COLLECTIVES else None,
        fabric=fabric_spec, tcp=tcp, labels=labels, verbs=verbs)
    if job_spec is not None:
        the_plan.job = _job_plan(job, job_spec, workers, port, hosts, path)
    if fabric_spec:
        def flows_of_step(step):
            return [(f.src, f.flow_id, f.streams) for f in the_plan.round_of(step).flows()]
        try:
            fabric_spec.ports = assign_ports(step_names, flows_of_step, fabric_spec.placement, fabric_spec.port_seed)
        except FabricLabError as exc:
            raise ExperimentError(str(exc)) from None
    return the_plan


def _check_job_fields(experiment):
    """What an experiment with a ``job`` cannot also have, refused with the fix."""
    for key in _NOT_FOR_A_JOB:
        if key in experiment:
            raise ExperimentError("experiment.%s: a job's traffic is its collectives (experiment.job.collectives), "
                                  "so %s does not apply; remove it, or remove job to run a pattern" % (key, key))
    if experiment.get("kind", "barrier") != "barrier":
        raise ExperimentError("experiment.kind: %r; a job runs as kind barrier (remove kind)" % experiment["kind"])
    if experiment.get("engine", "tcp") not in ("tcp", "verbs"):
        raise ExperimentError("experiment.engine: %r; a job's programs run on the hosts' own executor, over TCP "
                              "(engine tcp) or RDMA verbs (engine verbs). perftest runs one transfer per process, so a "
                              "chained schedule over perftest would pay a process launch per operation "
                              "(docs/jobs.md); use engine: tcp or verbs" % experiment["engine"])
    if experiment.get("fabric") is not None:
        raise ExperimentError("experiment.fabric: a job runs on the netns or the VM lab (the fabric lab's paths are "
                              "looked up per flow and source port, which a job's program connections do not have); "
                              "remove fabric or job")


def _parse_job(job, workers):
    from ansible_collections.aifabric.lab.plugins.plugin_utils._job.spec import JobError, parse_job
    try:
        return parse_job(job, workers)
    except JobError as exc:
        raise ExperimentError("experiment.%s" % exc) from None


def _job_plan(job, job_spec, workers, port, hosts, path):
    """The plan's ``JobPlan``: the job, its ranks, the program servers' port, the path of every pair that exchanges
    data, each collective's algorithm and chunking stated."""
    from ansible_collections.aifabric.lab.plugins.plugin_utils._job.program import ProgramError, match_connections
    the_job = JobPlan(spec=dict(job), ranks=list(workers), port=port,
                      described=[s.describe() for s in job_spec.schedules()])
    try:
        programs = the_job.programs(hosts)
        pairs = sorted({(c.src, c.dst) for c in match_connections(programs).values()})
    except ProgramError as exc:
        raise ExperimentError("experiment.job: %s" % exc) from None
    the_job.paths = {"%s %s" % (src, dst): path(src, dst) for src, dst in pairs}
    return the_job


def _fabric_spec(given, fabric, engine):
    """The plan's ``fabric``: the experiment's hash, seed and placement over the fabric lab's description."""
    if given is not None and not fabric:
        raise ExperimentError("experiment.fabric: this inventory has no fabric (groups leaves and spines); remove it "
                              "or use inventories/fabric")
    if not fabric:
        return None
    given = dict(given or {})
    unknown = sorted(set(given) - set(_FABRIC_KNOWN))
    if unknown:
        raise ExperimentError("experiment.fabric: unknown field(s) %s; known: %s" % (
            ", ".join(unknown), ", ".join(_FABRIC_KNOWN)))
    if engine != "tcp":
        raise ExperimentError("experiment.engine: the fabric lab runs the tcp engine (its flows' source ports are "
                              "chosen so that their paths are known); use engine: tcp")
    spec = {"hash": given.get("hash", fabric.get("hash") or "l4"), "seed": given.get("seed", fabric.get("seed")),
            "placement": given.get("placement", "hash"), "port_seed": given.get("port_seed", 0)}
    if spec["hash"] not in ("l3", "l4"):
        raise ExperimentError("experiment.fabric.hash: %r; use l3 (addresses) or l4 (the five-tuple)" % (spec["hash"],))
    for key in ("seed", "port_seed"):
        value = spec[key]
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not
                                  0 <= value <= 0xFFFFFFFF):
            raise ExperimentError("experiment.fabric.%s: %r; give a whole number from 0 to 4294967295" % (key, value))
    if spec["placement"] not in PLACEMENTS:
        raise ExperimentError("experiment.fabric.placement: %r; use hash (the hash decides, as with any ephemeral "
                              "port) or spread (source ports chosen so that the flows spread)" % (spec["placement"],))
    return FabricPlan(hash=spec["hash"], seed=spec["seed"], placement=spec["placement"], port_seed=spec["port_seed"],
                      topology=dict({key: fabric.get(key) for key in ("leaves", "spines", "hosts", "mtu", "host_rate",
                                                                      "uplink_rate")},
                                    # a 3-tier Clos's and a rail fabric's parts, when it has them
                                    **{key: fabric[key] for key in _SHAPE_KEYS if key in fabric}))


_SHAPE_KEYS = ("superspines", "superspine_rate", "relay", "relay_rate")


def _peers(plan_rounds, host):
    peers = sorted({f.address for r in plan_rounds for f in r.part(host).flows})
    return peers if len(peers) > 1 else []
