# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run record's typed model: a ``Run`` of ``Step`` s of ``Flow`` s, each step with its ``StepPlan`` (what the plan
says of it: its kind, bottleneck, expected workers, each flow's path and throttle).

``step_plans`` makes a plan's ``StepPlan`` s; runs written before there was a plan.json (schema 1, and flows that plain
``flow`` tasks described with ``annotations``) carry them in each flow's ``annotations``, and
``StepPlan.from_annotations`` reads them from there, the one place that does. The run directory itself (its layout,
its writer and its reader) is ``store``'s.

A flow's path is a list of the plan's ``Hop`` s (``_plan.model.Hop``: a link, its rate, whether it is the sender's
throttle), and on the fabric lab each stream is a ``Subflow`` with its own. A path from ``annotations`` or a schema-1
plan.json is read into hops by ``read_path``, the one reader of a path's dict form: a hop without a link or a rate
ends the path there, and ``PlannedFlow.path_error`` says which (the prediction's error, as it always said it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ansible_collections.aifabric.lab.plugins.plugin_utils._fabric.lab import equal_cost_paths, fabric_links
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import Hop

__all__ = ["Flow", "Hop", "PlannedFlow", "Run", "Step", "StepPlan", "Subflow", "build_run", "read_path",
           "step_plans"]


def read_path(path, host):
    """``(hops, error)`` of a path's dict form (``[{"link", "rate", "throttle"}, ...]``, as annotations and schema-1
    plan.json hold it; a ``Hop`` is taken as it is): the hops up to the first that has no link or no rate, and the
    error naming that one (None when every hop has both). ``host``: the flow's sender, for the message."""
    hops = []
    for hop in path or []:
        if isinstance(hop, Hop):
            hops.append(hop)
            continue
        if not isinstance(hop, dict) or not hop.get("link") or hop.get("rate") is None:
            return hops, "host %s: every path hop needs 'link' and 'rate' (got %r)" % (host, hop)
        hops.append(Hop(link=hop["link"], rate=hop["rate"], throttle=bool(hop.get("throttle"))))
    return hops, None


@dataclass(frozen=True)
class Subflow:
    """One stream of a flow on the fabric lab: its source port, its share of the flow's volume and the links the
    kernel's lookups gave for its five-tuple (then the flow's own path: its throttle, ...)."""

    sport: int | None
    share: float
    path: tuple = ()  # (Hop, ...)
    path_error: str | None = None  # as PlannedFlow's

    def to_dict(self):
        return {"sport": self.sport, "share": self.share, "path": [h.to_dict() for h in self.path]}

    @classmethod
    def from_dict(cls, data, host):
        hops, error = read_path(data.get("path"), host)
        return cls(sport=data.get("sport"), share=float(data.get("share") or 1.0), path=tuple(hops), path_error=error)


@dataclass
class PlannedFlow:
    """What the plan says of one flow: the links it crosses (each a ``Hop``) and what slows it."""

    path: list = field(default_factory=list)  # [Hop]
    mtu: int | None = None
    throttle: str | None = None  # the rate its host is throttled to
    throttle_mechanism: str | None = None  # "worker3: tc htb on eth0's egress": what the throttle module applied
    goodput_factor: float | None = None  # payload share of the wire, when the plan knows it (perftest over RoCE)
    subflows: list = field(default_factory=list)  # the fabric lab: [Subflow], one per stream
    path_error: str | None = None  # a path read from its dict form that stopped at a hop without link or rate
    start_offset: float = 0.0  # seconds after the step's common instant that the flow starts (experiment start_offsets)

    def as_dict(self):
        out = {"path": [h.to_dict() for h in self.path], "mtu": self.mtu, "throttle": self.throttle,
               "throttle_mechanism": self.throttle_mechanism, "goodput_factor": self.goodput_factor}
        if self.subflows:
            out["subflows"] = [s.to_dict() for s in self.subflows]
        if self.start_offset:
            out["start_offset"] = self.start_offset
        return out

    @classmethod
    def from_dict(cls, data, host):
        """A flow's plan from its dict form (a schema-1 step's flow, a flow's ``annotations``)."""
        path, error = read_path(data.get("path"), host)
        return cls(path=path, mtu=data.get("mtu"), throttle=data.get("throttle"),
                   throttle_mechanism=data.get("throttle_mechanism"), goodput_factor=data.get("goodput_factor"),
                   subflows=[Subflow.from_dict(s, host) for s in data.get("subflows") or []], path_error=error,
                   start_offset=float(data.get("start_offset") or 0.0))


@dataclass
class StepPlan:
    """What the plan says of one step."""

    kind: str = "barrier"  # or baseline: a single flow, the elephant
    pattern: str | None = None
    engine: str | None = None
    bottleneck: str | None = None  # the rate of the link every flow of the pattern shares
    expected_workers: list = field(default_factory=list)  # hosts that send flows; one that never reports fails it
    late_bound: object = None  # a share of the predicted step (0.01) or a duration ("5ms"); None: the default
    flows: dict = field(default_factory=dict)  # (host, flow_id) -> PlannedFlow
    fabric: dict | None = None  # the fabric lab: hash, seed, placement, links {name: {switch, interface, rate, tier}}
    job: object = None  # a job's step: the experiment's ``_plan.model.Plan`` (its ``job``, hosts, line rate, MTU)

    def flow(self, host, flow_id=None):
        return self.flows.get((host, flow_id or host)) or PlannedFlow()

    def as_dict(self):
        out = {"kind": self.kind, "pattern": self.pattern, "engine": self.engine, "bottleneck": self.bottleneck,
               "expected_workers": list(self.expected_workers), "late_bound": self.late_bound,
               "flows": [dict(f.as_dict(), host=h, flow_id=i) for (h, i), f in sorted(self.flows.items())]}
        if self.fabric:
            out["fabric"] = self.fabric
        return out

    @classmethod
    def from_dict(cls, data):
        flows = {(f["host"], f.get("flow_id") or f["host"]): PlannedFlow.from_dict(f, f["host"])
                 for f in data.get("flows") or []}
        return cls(kind=data.get("kind") or "barrier", pattern=data.get("pattern"), engine=data.get("engine"),
                   bottleneck=data.get("bottleneck"), expected_workers=list(data.get("expected_workers") or []),
                   late_bound=data.get("late_bound"), flows=flows, fabric=data.get("fabric"))

    @classmethod
    def from_annotations(cls, records):
        """The plan of a step whose flows describe it themselves (``annotations``): schema-1 runs, and plain ``flow``
        tasks given a path. The first flow that names a step-level fact names it for the step."""
        plan = cls()
        facts = {}
        for rec in records:
            ann = rec.get("annotations") if isinstance(rec.get("annotations"), dict) else {}
            for key in ("kind", "pattern", "engine", "bottleneck", "late_bound"):
                if ann.get(key) is not None:
                    facts.setdefault(key, ann[key])
            plan.expected_workers.extend(w for w in ann.get("expected_workers") or []
                                         if w not in plan.expected_workers)
            if ann and rec.get("host"):
                # (a flow's annotations carry no subflows: those are the fabric lab's, made from its plan)
                plan.flows[(rec["host"], rec.get("flow_id") or rec["host"])] = PlannedFlow.from_dict(
                    dict(ann, subflows=None), rec["host"])
        plan.kind = facts.get("kind") or "barrier"
        plan.pattern, plan.engine = facts.get("pattern"), facts.get("engine")
        plan.bottleneck, plan.late_bound = facts.get("bottleneck"), facts.get("late_bound")
        return plan


# What a flow's record holds: the host's measurements and, for a flow that failed, why. Anything else a host
# returns (the engine's details) stays in ``extra``.
_FLOW_FIELDS = ("status", "error", "bytes", "volume_bytes", "completion_s", "gbps", "late_s", "start", "start_at",
                "setup_s", "teardown_s", "samples", "cause_from")


@dataclass
class Flow:
    """One flow's measurements, as its host reported them (or the controller's account of why there are none)."""

    host: str
    flow_id: str
    status: str = "error"
    error: str | None = None
    bytes: int | None = None
    volume_bytes: int | None = None
    completion_s: float | None = None  # the receiver's confirmation of the last byte minus the common instant
    gbps: float | None = None
    late_s: float | None = None  # the first byte's lateness against the common instant, on the host's clock
    start: float | None = None
    start_at: float | None = None
    setup_s: float | None = None  # perftest: before its first packet on the wire
    teardown_s: float | None = None
    samples: list | None = None
    cause_from: str | None = None  # who gave the cause: None (the host), "rendezvous" (the coordinator), "stop"
    extra: dict = field(default_factory=dict)

    @property
    def key(self):
        return (self.host, self.flow_id)

    @property
    def ok(self):
        return self.status == "ok" and self.completion_s is not None

    @classmethod
    def from_record(cls, record):
        if "host" not in record:
            raise ValueError("a flow record has no 'host': %r" % sorted(record))
        known = {k: record.get(k) for k in _FLOW_FIELDS}
        known["status"] = known["status"] or "error"
        extra = {k: v for k, v in record.items()
                 if k not in _FLOW_FIELDS and k not in ("host", "flow_id", "annotations", "step", "received_at")}
        return cls(host=record["host"], flow_id=record.get("flow_id") or record["host"], extra=extra, **known)


@dataclass
class Step:
    name: str
    plan: StepPlan
    flows: list  # [Flow], clients only, in the order their results reached the controller
    counters: dict = field(default_factory=dict)  # host -> {before, after, interface, engine}
    start: dict | None = None  # how the step started (starts/<step>.json)
    events: dict | None = None  # what the hosts saw beside the flows (events/<step>.json: _run.records.step_events)
    programs: dict = field(default_factory=dict)  # a job's step: host -> its program result (programs/<step>/)

    def planned(self, flow):
        return self.plan.flow(flow.host, flow.flow_id)


@dataclass
class Run:
    path: str | None
    steps: list  # [Step], in the order their first flow arrived
    lab: dict = field(default_factory=dict)
    experiments: list = field(default_factory=list)


def step_plans(plan):
    """``{step name: StepPlan}`` for the steps of one experiment's plan (a ``_plan.model.Plan``): each step the round
    it runs, each flow with its path, its host's throttle and what applied it."""
    by_round = []
    for this_round in plan.rounds:
        flows = {}
        for flow in this_round.flows():
            throttle = plan.hosts[flow.src].throttle
            flows[(flow.src, flow.flow_id)] = PlannedFlow(
                path=list(flow.path), mtu=plan.mtu, throttle=throttle.rate if throttle else None,
                throttle_mechanism="%s: %s" % (flow.src, throttle.applied) if throttle and throttle.applied else None,
                goodput_factor=plan.goodput_factor, start_offset=flow.start_offset)
        # one link that every flow of the step shares: the sink's port of an incast (other patterns have none)
        by_round.append(StepPlan(kind=plan.kind, pattern=plan.pattern, engine=plan.engine,
                                 bottleneck=plan.line_rate if plan.pattern == "incast" else None,
                                 expected_workers=list(plan.job.ranks) if plan.job else this_round.sources,
                                 late_bound=plan.late_bound, flows=flows, job=plan if plan.job else None))
    steps = {step: by_round[k] for step, k in plan.step_round.items()}
    if plan.fabric and plan.fabric.placed:
        steps = {step: _on_fabric(step_plan, plan, step) for step, step_plan in steps.items()}
    return steps


def _on_fabric(step_plan, plan, step):
    """The step's plan on the fabric lab: each flow's subflows (a stream each) with the links its lookup gave, and its
    equal-cost paths (what perfect spreading would share it over: the ideal's input)."""
    fabric = plan.fabric
    links = fabric_links(fabric.topology)
    destinations = {(f.src, f.flow_id): f.dst for f in plan.round_of(step).flows()}
    flows = {}
    for (host, flow_id), planned in step_plan.flows.items():
        streams = fabric.streams(step, host, flow_id)
        subflows = []
        for stream in streams:
            path = tuple(Hop(link=name, rate=links[name]["rate"]) for name in stream.links) + tuple(planned.path)
            subflows.append(Subflow(sport=stream.sport, share=1.0 / len(streams), path=path))
        flows[(host, flow_id)] = PlannedFlow(**dict(planned.__dict__, subflows=subflows))
    info = {"hash": fabric.hash, "seed": fabric.seed, "placement": fabric.placement, "port_seed": fabric.port_seed,
            "links": links,
            "paths": {"%s|%s" % key: equal_cost_paths(fabric.topology, key[0], destinations[key]) for key in flows}}
    return StepPlan(**dict(step_plan.__dict__, flows=flows, fabric=info))


def build_run(records, plans=None, counters=None, starts=None, path=None, lab=None, experiments=None, events=None,
              programs=None):
    """A ``Run`` from flow records grouped by step (``{step: [record]}``), the steps' plans (``{step: StepPlan}``;
    a step without one is described by its flows' annotations), counters, starts, events and a job's steps' program
    results (``{step: {host: result}}``; a job's step has no flow)."""
    plans, counters, starts, events, programs = plans or {}, counters or {}, starts or {}, events or {}, programs or {}
    records = dict(records)
    for name in programs:
        records.setdefault(name, [])
    steps = []
    for name, recs in records.items():
        recs = [r for r in recs if r.get("role", "client") == "client"]
        plan = plans.get(name) or StepPlan.from_annotations(recs)
        steps.append(Step(name=name, plan=plan, flows=[Flow.from_record(r) for r in recs],
                          counters=counters.get(name) or {}, start=starts.get(name), events=events.get(name),
                          programs=programs.get(name) or {}))
    return Run(path=path, steps=steps, lab=lab or {}, experiments=experiments or [])
