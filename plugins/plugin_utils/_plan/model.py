# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The typed plan: what an experiment decided, the one contract between the planner and every reader.

``experiment.plan`` makes a ``Plan`` from the experiment spec and the inventory; the modules' arguments
(``args``), the run record (``_run``), the report and the history read its attributes. Every fact a reader needs is
carried explicitly: a ``Flow`` knows its source and destination hosts, a ``Host`` its throttle and what applied it.

The plan travels between Ansible tasks as its dict form (``to_dict``: JSON, as facts must be) and is read back with
``Plan.from_dict``; ``plan.json`` holds that dict once per experiment. The form is versioned (``PLAN_VERSION``);
``from_dict`` also reads the dict the planner returned before there was a model (version 1: plan.json schema 1's
``experiments``).

``to_dict(views=True)`` adds ``participants`` and ``throttled``, the lists the experiment role loops over; they are
derived (``from_dict`` ignores them) and plan.json leaves them out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["PLAN_VERSION", "PlanError", "Plan", "Host", "Throttle", "Round", "HostPart", "Flow", "Server", "Hop",
           "Rendezvous", "Collective", "FabricPlan", "Stream", "JobPlan", "throttle_link"]

PLAN_VERSION = 2  # 1: the planner's dict before the model (no "version" key)


class PlanError(ValueError):
    """A plan that cannot be read or asked; the message names what and the fix."""


@dataclass(frozen=True)
class Hop:
    """One link of a flow's path: its name (``w1->switch``, ``leaf1->spine2``; ``worker3 egress`` for a throttle), its
    rate as tc writes it, and whether it is the sender's throttle (the report predicts the step without it too)."""

    link: str
    rate: str
    throttle: bool = False

    def to_dict(self):
        out = {"link": self.link, "rate": self.rate}
        if self.throttle:
            out["throttle"] = True
        return out

    @classmethod
    def from_dict(cls, data):
        return cls(link=data["link"], rate=data["rate"], throttle=bool(data.get("throttle")))


def throttle_link(host):
    """The name of a host's throttle in a path: ``worker3 egress`` (the rate its flows leave it at)."""
    return "%s egress" % host


@dataclass
class Flow:
    """A flow the plan gives a host to send: to ``dst``'s server at ``address``:``port``, ``volume`` bytes over
    ``streams`` connections, across ``path``; ``start_offset`` seconds after the step's common instant (0: with the
    others)."""

    flow_id: str
    src: str
    dst: str
    address: str
    port: int
    volume: int
    streams: int = 1
    path: list = field(default_factory=list)  # [Hop]
    start_offset: float = 0.0

    def to_dict(self):
        out = {"flow_id": self.flow_id, "src": self.src, "dst": self.dst, "address": self.address, "port": self.port,
               "volume": self.volume, "streams": self.streams, "path": [h.to_dict() for h in self.path]}
        if self.start_offset:
            out["start_offset"] = self.start_offset
        return out

    @classmethod
    def from_dict(cls, data, src, dst=None):
        return cls(flow_id=data["flow_id"], src=data.get("src") or src, dst=data.get("dst") or dst,
                   address=data["address"], port=data["port"], volume=data["volume"],
                   streams=data.get("streams") or 1, path=[Hop.from_dict(h) for h in data.get("path") or []],
                   start_offset=float(data.get("start_offset") or 0.0))


@dataclass
class Server:
    """A server the plan gives a host: on ``address``:``port``, ``expected_clients`` connections (tcp: a flow's
    streams; perftest: one process each, on port, port + 1, ...), each flow ``volume`` bytes."""

    port: int
    expected_clients: int
    address: str
    volume: int

    def to_dict(self):
        return {"port": self.port, "expected_clients": self.expected_clients, "address": self.address,
                "volume": self.volume}

    @classmethod
    def from_dict(cls, data):
        return cls(port=data["port"], expected_clients=data["expected_clients"], address=data["address"],
                   volume=data["volume"])


@dataclass
class HostPart:
    """A host's part of a round: its servers and the flows it sends."""

    servers: list = field(default_factory=list)  # [Server]
    flows: list = field(default_factory=list)  # [Flow]

    def to_dict(self):
        return {"servers": [s.to_dict() for s in self.servers], "clients": [f.to_dict() for f in self.flows]}


@dataclass
class Round:
    """Flows that start together and end at one barrier: each host's part (a collective has several rounds, one step
    each)."""

    parts: dict = field(default_factory=dict)  # host -> HostPart, sorted by host

    @property
    def sources(self):
        """The hosts that send flows (the step's workers)."""
        return sorted(h for h, p in self.parts.items() if p.flows)

    @property
    def expected_flows(self):
        """``{host: [flow_id, ...]}`` of every host that sends (what the coordinator waits for)."""
        return {h: [f.flow_id for f in p.flows] for h, p in sorted(self.parts.items()) if p.flows}

    def part(self, host):
        return self.parts.get(host) or HostPart()

    def flows(self):
        """Every flow of the round, host by host."""
        return [f for _h, p in sorted(self.parts.items()) for f in p.flows]

    def to_dict(self):
        return {"hosts": {h: p.to_dict() for h, p in sorted(self.parts.items())}}

    @classmethod
    def from_dict(cls, data):
        return cls(parts={host: HostPart(servers=[Server.from_dict(s) for s in p.get("servers") or []],
                                         flows=[Flow.from_dict(c, host) for c in p.get("clients") or []])
                          for host, p in sorted((data.get("hosts") or {}).items())})


class _Rounds:
    """A plan's rounds read from its dict form one at a time, when asked for: a filter that makes one host's
    arguments for one step reads that step's round only (a 32-rank ring AllReduce has 62 rounds of 32 flows). A
    sequence of ``Round`` s like a list."""

    def __init__(self, raw):
        self._raw = list(raw)
        self._made = {}

    def __len__(self):
        return len(self._raw)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._raw)))]
        index = range(len(self._raw))[index]
        if index not in self._made:
            self._made[index] = Round.from_dict(self._raw[index])
        return self._made[index]

    def __iter__(self):
        return (self[i] for i in range(len(self._raw)))

    def __eq__(self, other):
        return list(self) == list(other)

    def __repr__(self):
        return repr(list(self))


@dataclass
class Throttle:
    """What slows a host's flows: ``rate``, shared fairly between ``peers`` (tc, when it sends to several), and once the
    throttle module ran, what it applied (``applied``: "tc htb on eth0's egress")."""

    rate: str
    peers: list = field(default_factory=list)
    applied: str | None = None

    def to_dict(self):
        return {"rate": self.rate, "peers": list(self.peers), "applied": self.applied}


@dataclass
class Host:
    """A host of the experiment: its lab address, its namespace on this machine (the netns lab), its lab interface,
    its RDMA device (perftest) and its throttle."""

    name: str
    address: str
    interface: str = "eth0"
    netns: str | None = None
    rdma_device: str | None = None
    throttle: Throttle | None = None

    def to_dict(self):
        return {"address": self.address, "interface": self.interface, "netns": self.netns,
                "rdma_device": self.rdma_device, "throttle": self.throttle.to_dict() if self.throttle else None}


@dataclass
class Rendezvous:
    """Where the step's start is agreed: the coordinating host and the rendezvous' port; ``start_at``, a fixed start
    instant instead of the rendezvous' own; ``result_grace``, the seconds past the step's timeout that the coordinator
    and the servers wait for a late host's results (None: flow_step's default, 30)."""

    host: str
    port: int
    start_at: float | None = None
    result_grace: float | None = None

    def to_dict(self):
        out = {"host": self.host, "port": self.port, "start_at": self.start_at}
        if self.result_grace is not None:
            out["result_grace"] = self.result_grace
        return out


@dataclass
class Collective:
    """A collective's figures (nccl-tests'): its name, ranks, size and the bus bandwidth factor."""

    name: str
    ranks: int
    size: int
    bus_factor: float

    def to_dict(self):
        return {"name": self.name, "ranks": self.ranks, "size": self.size, "bus_factor": self.bus_factor}


@dataclass
class JobPlan:
    """A training job's part of a plan (docs/jobs.md): the experiment's ``job`` as given (validated by
    ``_job.spec.parse_job`` for ``ranks``, the workers in rank order), the port of every worker's program server,
    the path of every pair of workers that exchange data (``"src dst"`` -> [Hop], the throttle's hop marked) and,
    per collective, its algorithm and chunking stated (``described``). The per-host programs (docs/job-contract.md
    section 1) are made from it where needed (``programs``): the same code makes the same programs, so the plan
    stays small between tasks."""

    spec: dict
    ranks: list
    port: int
    paths: dict = field(default_factory=dict)
    described: list = field(default_factory=list)

    def parsed(self):
        """The ``_job.spec.JobSpec``."""
        cached = self.__dict__.get("_parsed")
        if cached is None:
            from ansible_collections.aifabric.lab.plugins.plugin_utils._job.spec import parse_job
            cached = self.__dict__["_parsed"] = parse_job(self.spec, self.ranks)
        return cached

    def programs(self, hosts):
        """``{worker: program}``, each worker's program server on its lab address (``hosts``: the plan's)."""
        cached = self.__dict__.get("_programs")
        if cached is None:
            from ansible_collections.aifabric.lab.plugins.plugin_utils._job.program import build_programs
            cached = self.__dict__["_programs"] = build_programs(
                self.parsed(), {h: {"address": hosts[h].address, "port": self.port} for h in self.ranks})
        return cached

    def path(self, src, dst, throttle=True):
        """The links of ``src`` -> ``dst`` (``(link, rate)`` pairs as tc writes the rate); ``throttle=False``: without
        the sender's throttle (what the job would do without it)."""
        return [(h.link, h.rate) for h in self.paths.get("%s %s" % (src, dst)) or [] if throttle or not h.throttle]

    def predict(self, the_plan, throttle=True):
        """``_model.dag.predict`` of the programs over the plan's paths (the throttled worker's with its throttle;
        ``throttle=False``: without it), at the plan's goodput factor (TCP's at its MTU): ``{results, events, ...}``,
        each result in the shape of docs/job-contract.md section 2."""
        from ansible_collections.aifabric.lab.plugins.plugin_utils._model.dag import predict
        from ansible_collections.aifabric.lab.plugins.plugin_utils._model.fair_share import goodput_factor

        factor = the_plan.goodput_factor or (goodput_factor(int(the_plan.mtu)) if the_plan.mtu else 1.0)
        return predict(self.programs(the_plan.hosts),
                       lambda src, dst: [{"link": link, "rate": rate} for link, rate in self.path(src, dst, throttle)],
                       factor=factor)

    def to_dict(self):
        return {"spec": self.spec, "ranks": list(self.ranks), "port": self.port,
                "paths": {k: [h.to_dict() for h in v] for k, v in sorted(self.paths.items())},
                "described": list(self.described)}

    @classmethod
    def from_dict(cls, data):
        return cls(spec=dict(data["spec"]), ranks=list(data["ranks"]), port=data["port"],
                   paths={k: [Hop.from_dict(h) for h in v] for k, v in (data.get("paths") or {}).items()},
                   described=list(data.get("described") or []))


@dataclass
class Stream:
    """One stream of a flow on the fabric lab: its source port, and the links the kernel's route lookups gave its
    five-tuple."""

    sport: int
    links: list = field(default_factory=list)

    def to_dict(self):
        return {"sport": self.sport, "links": list(self.links)}


@dataclass
class FabricPlan:
    """The fabric lab's part of a plan: the hash, its seed, the placement and the source ports' seed; the fabric's
    description (``topology``: what fabric_topology takes); each stream's candidate source ports per step
    (``ports``: ``{step: {host: {flow_id: [[port, ...] per stream]}}}``); once placed, each stream's chosen port and
    links (``placed``: ``{step: {host: {flow_id: [Stream]}}}``)."""

    hash: str
    seed: int | None
    placement: str
    port_seed: int
    topology: dict = field(default_factory=dict)
    ports: dict = field(default_factory=dict)
    placed: dict = field(default_factory=dict)

    def streams(self, step, host, flow_id):
        """The placed streams of a flow in a step ([] before placement)."""
        return ((self.placed.get(step) or {}).get(host) or {}).get(flow_id) or []

    def to_dict(self):
        return {"hash": self.hash, "seed": self.seed, "placement": self.placement, "port_seed": self.port_seed,
                "topology": self.topology, "ports": self.ports,
                "placed": {step: {host: {f: [s.to_dict() for s in streams] for f, streams in flows.items()}
                                  for host, flows in hosts.items()} for step, hosts in self.placed.items()}}

    @classmethod
    def from_dict(cls, data):
        placed = data.get("placed")
        if placed is None:
            placed = data.get("flows") or {}  # version 1's name
        return cls(hash=data.get("hash") or "l4", seed=data.get("seed"), placement=data.get("placement") or "hash",
                   port_seed=data.get("port_seed") or 0, topology=dict(data.get("topology") or {}),
                   ports=dict(data.get("ports") or {}),
                   placed={step: {host: {f: [Stream(sport=s["sport"], links=list(s["links"])) for s in streams]
                                         for f, streams in flows.items()} for host, flows in hosts.items()}
                           for step, hosts in placed.items()})


@dataclass
class Plan:
    """One experiment, planned: its steps (each a round of the pattern), its hosts, how each step starts, what it
    expects. Steps are named NAME, NAME-i when repeated, NAME.k for a collective's rounds (NAME-i.k repeated)."""

    name: str
    kind: str
    pattern: str
    engine: str
    volume: int
    line_rate: str
    mtu: int
    hosts: dict  # name -> Host
    rounds: list  # [Round] (read from the dict form as asked for)
    steps: list  # [step name], each repetition's rounds in turn
    rendezvous: Rendezvous
    timeout: float = 120
    arm_timeout: float = 60
    late_bound: object = 0.01  # a share of the predicted step, or a duration ("5ms")
    strict_start: bool = False
    start_tolerance: float = 0.001
    streams: int = 1
    interval: float = 1.0
    counters: bool = True
    perftest: dict = field(default_factory=dict)
    goodput_factor: float | None = None  # the payload share of the wire when the plan knows it (perftest over RoCE)
    expect: dict = field(default_factory=dict)  # the gates (_plan.expect.check_expect's)
    batch_start: bool = False  # one task starts every host's part (the netns lab, tcp)
    collective: Collective | None = None
    fabric: FabricPlan | None = None
    baseline: dict | None = None  # the history's run a vs_baseline gate compares with (recorded with the plan)
    job: JobPlan | None = None  # a training job: the steps run its programs on the hosts (docs/jobs.md)
    tcp: dict = field(default_factory=dict)  # the tcp engine's kernel options: {ecn, congestion} (flow_step's tcp)
    labels: dict = field(default_factory=dict)  # the experiment's labels (a grid cell's coordinates), in the report
    verbs: dict = field(default_factory=dict)  # engine verbs: {ib_port, gid_index, qp_timeout, rdma_mtu} (flow_step's)

    # -- derived --------------------------------------------------------------------------------------------------
    @property
    def participants(self):
        """Every host of the experiment's steps, sorted."""
        return sorted(self.hosts)

    @property
    def sources(self):
        return sorted({h for r in self.rounds for h in r.sources})

    @property
    def destinations(self):
        return sorted({h for r in self.rounds for h, p in r.parts.items() if p.servers})

    @property
    def throttled(self):
        return sorted(h for h, e in self.hosts.items() if e.throttle)

    @property
    def repetitions(self):
        """Each repetition's steps (a collective's rounds, one barrier each)."""
        n = max(1, len(self.rounds))
        return [self.steps[i:i + n] for i in range(0, len(self.steps), n)]

    @property
    def step_round(self):
        """``{step: the index of the round it runs}``."""
        n = max(1, len(self.rounds))
        return {step: i % n for i, step in enumerate(self.steps)}

    def round_of(self, step):
        """The round ``step`` runs."""
        if step not in self.steps:
            raise PlanError("step %r is not one of this plan's steps (%s)" % (step, ", ".join(self.steps)))
        return self.rounds[self.steps.index(step) % max(1, len(self.rounds))]

    def host(self, name):
        if name not in self.hosts:
            raise PlanError("%s is not a host of this plan (its hosts: %s)" % (name, ", ".join(self.participants)))
        return self.hosts[name]

    def with_applied(self, applied):
        """The plan with what each throttle module applied (host -> its description)."""
        for name, host in self.hosts.items():
            if host.throttle and applied.get(name):
                host.throttle.applied = applied[name]
        return self

    # -- the dict form ----------------------------------------------------------------------------------------------
    def to_dict(self, views=True):
        out = {
            "version": PLAN_VERSION, "name": self.name, "kind": self.kind, "pattern": self.pattern,
            "engine": self.engine, "volume": self.volume, "line_rate": self.line_rate, "mtu": self.mtu,
            "timeout": self.timeout, "arm_timeout": self.arm_timeout, "late_bound": self.late_bound,
            "strict_start": self.strict_start, "start_tolerance": self.start_tolerance, "streams": self.streams,
            "interval": self.interval, "counters": self.counters, "perftest": dict(self.perftest),
            "goodput_factor": self.goodput_factor, "expect": dict(self.expect), "batch_start": self.batch_start,
            "hosts": {name: host.to_dict() for name, host in sorted(self.hosts.items())},
            "rounds": [r.to_dict() for r in self.rounds], "steps": list(self.steps),
            "rendezvous": self.rendezvous.to_dict(),
            "collective": self.collective.to_dict() if self.collective else None,
            "fabric": self.fabric.to_dict() if self.fabric else None,
            "baseline": self.baseline or None,
        }
        if self.job:  # (only then: a plan without a job keeps the dict form it always had)
            out["job"] = self.job.to_dict()
        if self.tcp:  # (likewise)
            out["tcp"] = dict(self.tcp)
        if self.labels:  # (likewise)
            out["labels"] = dict(self.labels)
        if self.verbs:  # (likewise)
            out["verbs"] = dict(self.verbs)
        if views:
            out.update(participants=self.participants, throttled=self.throttled)
        return out

    @classmethod
    def from_dict(cls, data):
        """The plan from its dict form (``to_dict``'s, any version up to ``PLAN_VERSION``)."""
        if isinstance(data, Plan):
            return data
        if not isinstance(data, dict) or not isinstance(data.get("hosts"), dict):
            raise PlanError("not a plan (a dict with hosts, rounds and steps): give the flow_plan filter's result, got "
                            "%s" % type(data).__name__)
        missing = [key for key in ("rounds", "steps", "rendezvous") if key not in data]
        if missing:
            raise PlanError("not a plan: no %s; give the flow_plan filter's result" % ", ".join(missing))
        version = data.get("version", 1)
        if not isinstance(version, int) or version > PLAN_VERSION:
            raise PlanError("a plan of version %r: this collection reads versions 1 to %d; use the aifabric.lab that "
                            "wrote it" % (version, PLAN_VERSION))
        if version == 1:
            return _from_version_1(data)
        hosts = {}
        for name, h in data["hosts"].items():
            t = h.get("throttle")
            hosts[name] = Host(name=name, address=h["address"], interface=h.get("interface") or "eth0",
                               netns=h.get("netns"), rdma_device=h.get("rdma_device"),
                               throttle=Throttle(rate=t["rate"], peers=list(t.get("peers") or []),
                                                 applied=t.get("applied")) if t else None)
        return cls(**_common(data), hosts=hosts, rounds=_Rounds(data.get("rounds") or []),
                   steps=list(data.get("steps") or []),
                   rendezvous=Rendezvous(host=data["rendezvous"]["host"], port=data["rendezvous"]["port"],
                                         start_at=data["rendezvous"].get("start_at"),
                                         result_grace=data["rendezvous"].get("result_grace")))


def _common(data):
    """The scalar fields, the same in every version."""
    collective = data.get("collective")
    fabric = data.get("fabric")
    return dict(
        name=data.get("name") or data.get("kind") or "barrier", kind=data.get("kind") or "barrier",
        pattern=data.get("pattern") or "incast", engine=data.get("engine") or "tcp", volume=data.get("volume"),
        line_rate=data.get("line_rate"), mtu=data.get("mtu"), timeout=data.get("timeout", 120),
        arm_timeout=data.get("arm_timeout", 60), late_bound=data.get("late_bound", 0.01),
        strict_start=bool(data.get("strict_start", False)), start_tolerance=data.get("start_tolerance", 0.001),
        streams=data.get("streams") or 1, interval=data.get("interval", 1.0), counters=bool(data.get("counters", True)),
        perftest=dict(data.get("perftest") or {}), goodput_factor=data.get("goodput_factor"),
        expect=dict(data.get("expect") or {}), batch_start=bool(data.get("batch_start", False)),
        collective=Collective(name=collective["name"], ranks=collective["ranks"], size=collective["size"],
                              bus_factor=collective["bus_factor"]) if isinstance(collective, dict) else None,
        fabric=FabricPlan.from_dict(fabric) if isinstance(fabric, dict) else None,
        baseline=dict(data["baseline"]) if isinstance(data.get("baseline"), dict) and data["baseline"] else None,
        job=JobPlan.from_dict(data["job"]) if isinstance(data.get("job"), dict) else None,
        tcp=dict(data.get("tcp") or {}),
        labels=dict(data.get("labels") or {}),
        verbs=dict(data.get("verbs") or {}),
    )


def _from_version_1(data):
    """The planner's dict before the model: hosts with ``throttle`` (a rate) and ``throttle_args``, rounds of
    ``clients`` that name their destination by address only, ``step_round``, and from plan.json
    ``applied_throttles``."""
    applied = data.get("applied_throttles") or {}
    hosts = {}
    for name, h in data["hosts"].items():
        rate = h.get("throttle")
        hosts[name] = Host(name=name, address=h.get("address"), interface=h.get("interface") or "eth0",
                           netns=h.get("netns"), rdma_device=h.get("rdma_device"),
                           throttle=Throttle(rate=rate, peers=list((h.get("throttle_args") or {}).get("peers") or []),
                                             applied=applied.get(name)) if rate else None)
    by_address = {}
    for name, h in sorted(hosts.items()):
        by_address.setdefault(h.address, name)
    rounds = []
    for r in data.get("rounds") or []:
        parts = {}
        for host, p in sorted((r.get("hosts") or {}).items()):
            parts[host] = HostPart(servers=[Server.from_dict(s) for s in p.get("servers") or []],
                                   flows=[Flow.from_dict(c, host, by_address.get(c.get("address")))
                                          for c in p.get("clients") or []])
        rounds.append(Round(parts=parts))
    steps = list(data.get("steps") or [])
    if not steps:
        steps = [s for rep in data.get("repetitions") or [] for s in rep]
    rendezvous = data.get("rendezvous") or {}
    return Plan(**_common(data), hosts=hosts, rounds=rounds, steps=steps,
                rendezvous=Rendezvous(host=rendezvous.get("host"), port=rendezvous.get("port"),
                                      start_at=rendezvous.get("start_at"),
                                      result_grace=rendezvous.get("result_grace")))
