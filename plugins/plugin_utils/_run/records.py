# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the hosts return, read into the run record, in one place: the coordinator's step record (``flow_step
state=collected``: every host's part, a cause for every flow that never reported, how the step started), a host's
own part (``state=stopped``), a flow a task could not start, the fabric's counters around a step.

``Collector`` keeps what a play returned and hands each new piece to its writer (the callback gives it the run
directory's, ``store.RunDirectory``); the experiment role's gates read the same records with ``run_from_records``,
through the same ``Collector``, before the run directory is complete. Which cause of a failed flow is kept: the
first, unless it is the coordinator's view of a host that never reported (``cause_from: rendezvous``) and the host's
own account follows - unless that account only says the controller's cleanup stopped it (``cause_from: stop``).
"""

from __future__ import annotations

import copy
import time

from ansible_collections.aifabric.lab.plugins.plugin_utils._run.model import build_run, step_plans

__all__ = ["Collector", "applied_throttles", "counters_entry", "missing_flow_cause", "rdma_identity",
           "run_from_records", "start_summary", "step_events"]


def applied_throttles(results):
    """host -> what the throttle module applied (its ``description``), from the throttle task's loop results."""
    out = {}
    for res in results or []:
        if isinstance(res, dict) and res.get("item") and res.get("description") and not res.get("failed"):
            out[str(res["item"])] = str(res["description"])
    return out


def rdma_identity(devices):
    """What identifies a host's RDMA devices, from ``rdma_info``'s ``devices``: per device its firmware and node GUID,
    per port its link layer, state, speed, width and active MTU (the test report's DUT identification)."""
    out = {}
    for name, device in sorted(devices.items()):
        if not isinstance(device, dict):
            continue
        entry = {k: device[k] for k in ("fw_ver", "node_guid", "hca_type", "board_id") if device.get(k)}
        ports = {}
        for port, info in sorted((device.get("ports") or {}).items()):
            if isinstance(info, dict):
                ports[str(port)] = {k: info[k] for k in ("link_layer", "state", "speed", "width", "active_mtu",
                                                         "data_gbps", "netdevs") if info.get(k) is not None}
        if ports:
            entry["ports"] = ports
        out[str(name)] = entry
    return out


def counters_entry(step, host, counters):
    """A host part's ``counters`` ({before, after, interface, engine}) as the run directory keeps it; None when a
    snapshot is missing or could not be read (the report says so by its absence)."""
    if not isinstance(counters, dict) or "before" not in counters or "after" not in counters:
        return None
    if "error" in counters["before"] or "error" in counters["after"]:
        return None
    entry = {"step": step, "host": host, "before": counters["before"], "after": counters["after"]}
    for key in ("interface", "engine"):
        if counters.get(key):
            entry[key] = counters[key]
    return entry


def missing_flow_cause(record, host):
    """Why a host of a coordinator's step record never reported its flows."""
    info = (record.get("parties") or {}).get(host) or {}
    if record.get("status") == "aborted":
        return "did not arm: %s" % record.get("error")
    if info.get("lost"):
        return "its step process ended without a result (%s): killed, crashed or cut off" % info["lost"]
    return record.get("error") or "no result"


def start_summary(record):
    """How a step started, from the coordinator's record: the mode, the measured margin and probe rounds, how long
    the hosts took to arm, and each host's clock offset and round trip."""
    fire = record.get("fire") or {}
    parties = record.get("parties") or {}
    armed = [p["armed_at"] for p in parties.values() if p.get("armed_at")]
    opened = record.get("started_at")
    return {
        "mode": record.get("mode"),
        "status": record.get("status"),
        "margin_s": fire.get("margin_s"),
        "probe_fanout_s": fire.get("probe_fanout_s"),
        "arm_spread_s": round(max(armed) - min(armed), 6) if len(armed) > 1 else 0.0,
        "armed_after_s": round(max(armed) - opened, 6) if armed and opened else None,
        "fire_after_armed_s": round(fire["at"] - fire["armed_last_at"], 6) if fire.get("armed_last_at") else None,
        # the last fire message left this long before the instant (negative: after it, and its flows were late)
        "last_fire_sent_ahead_s": round(fire["at"] - max(p["fire_sent_at"] for p in parties.values()
                                                         if p.get("fire_sent_at")), 6)
        if fire.get("at") and any(p.get("fire_sent_at") for p in parties.values()) else None,
        "hosts": {h: {k: p.get(k) for k in ("offset_s", "rtt_s") if p.get(k) is not None}
                  for h, p in sorted(parties.items())},
    }


def _refusals(entries, by):
    """A refusal list (``_flow/refusals``' entries ``{peer, reason, count, ...}``) as the run record keeps it."""
    out = []
    for entry in entries or []:
        if isinstance(entry, dict) and entry.get("reason"):
            out.append({"peer": entry.get("peer"), "reason": str(entry["reason"]),
                        "count": int(entry.get("count") or 1), "by": by})
    return out


def _part_events(host, part):
    """What a host's part says beside its flows: the peers its flow servers refused, a result file it could not
    write."""
    refused, unlisted = [], {}
    for server in part.get("servers") or []:
        if not isinstance(server, dict):
            continue
        where = "the flow server at %s:%s on %s" % (server.get("address"), server.get("port"), host)
        refused.extend(_refusals(server.get("rejected"), where))
        if server.get("rejected_unlisted"):
            unlisted[where] = int(server["rejected_unlisted"])
    events = {}
    if refused or unlisted:
        events["refused"], events["refused_unlisted"] = refused, unlisted
    if part.get("result_file_error"):
        events["result_file_errors"] = {host: str(part["result_file_error"])}
    return events


def step_events(record, coordinator=None):
    """What the coordinator's record of a step says beside the flows (None when nothing): ``refused``, the peers the
    rendezvous refused (``{peer, reason, count, by}``), ``refused_unlisted`` (where -> how many were counted past the
    list's size); ``results``, when the coordinator died and its record was assembled from the results it had stored
    before acknowledging them: ``{survived, lost}``; ``store_errors``, party -> why the coordinator could not store a
    result durably. (What each host's part says, its flow servers' refusals and ``result_file_errors``, host -> why
    it could not keep its own copy of its result, comes with the part: ``Collector.add_part``.)"""
    where = "the rendezvous on %s" % coordinator if coordinator else "the rendezvous"
    events = {"refused": _refusals(record.get("rejected"), where), "refused_unlisted": {}}
    if record.get("rejected_unlisted"):
        events["refused_unlisted"][where] = int(record["rejected_unlisted"])
    if record.get("recovered"):
        events["results"] = {"survived": list(record.get("survived") or []), "lost": list(record.get("lost") or [])}
    if isinstance(record.get("store_errors"), dict) and record["store_errors"]:
        events["store_errors"] = {str(k): str(v) for k, v in sorted(record["store_errors"].items())}
    if not (events["refused"] or events["refused_unlisted"]):
        del events["refused"], events["refused_unlisted"]
    return events or None


def _merge_events(into, more):
    """``more`` (``step_events``' form) added to ``into``: refusals by (by, peer, reason), hosts' errors by host."""
    if more.get("refused") or more.get("refused_unlisted"):
        have = {(r["by"], r["peer"], r["reason"]) for r in into.setdefault("refused", [])}
        into["refused"].extend(r for r in more.get("refused") or [] if (r["by"], r["peer"], r["reason"]) not in have)
        into.setdefault("refused_unlisted", {}).update(more.get("refused_unlisted") or {})
    for key in ("result_file_errors", "store_errors"):
        if more.get(key):
            into.setdefault(key, {}).update(more[key])
    if more.get("results") and "results" not in into:
        into["results"] = more["results"]
    return into


class _Discard:
    """A writer that keeps nothing (the gates read the records, the run directory is the callback's)."""

    def __getattr__(self, name):
        return lambda *args: None


class Collector:
    """The flows, counters, starts and events of a play, step by step, from what the hosts returned. ``writer``:
    gets each piece as it is accepted (``add_flow(step, record)``, ``add_counters(step, host, entry)``,
    ``add_start(step, start)``, ``add_events(step, events)``, ``set_kernel(host, kernel)``, ``set_nic(host, nic)``);
    ``planned``: a step name -> whether a plan describes it (a flow of a planned step keeps no annotations: plan.json
    has its facts)."""

    def __init__(self, writer=None, planned=None, clock=None):
        self.writer = writer or _Discard()
        self.planned = planned or (lambda step: False)
        self.clock = clock or time.time
        self.flows = {}  # step -> {(host, flow_id): record}, in the order they came
        self.counters = {}  # step -> {host: entry}
        self.starts = {}  # step -> summary
        self.events = {}  # step -> what the hosts saw beside the flows (``step_events``)
        self.coordinators = {}  # step -> the host that coordinated it (the collecting task's)
        self.kernels = {}  # host -> kernel
        self.nics = {}  # host -> the NIC its step ran on (module_utils/_nic.identify)
        self.programs = {}  # step -> {host: program result} (a job's steps)
        self._fabric_before = {}
        self._ports_before = {}

    def add_flow(self, step, host, record, fill_only=False):
        """One flow's record. A failure already known for the flow is kept (the first cause is the one that explains
        it); ``fill_only`` adds a record only where the flow has none."""
        record = dict(record)
        record["host"] = host
        record["step"] = step
        record.setdefault("flow_id", host)
        annotations = record.pop("annotations", None)
        if not self.planned(step) and isinstance(annotations, dict) and annotations:
            record["annotations"] = annotations
        record["received_at"] = self.clock()  # bookkeeping only; never used for timing
        flows = self.flows.setdefault(step, {})
        key = (host, record["flow_id"])
        old = flows.get(key)
        if old is not None and not (old.get("cause_from") == "rendezvous" and record.get("cause_from") is None):
            if fill_only or (old.get("status") != "ok" and record.get("status") != "ok"):
                return
        flows[key] = record
        self.writer.add_flow(step, record)

    def add_counters(self, step, host, counters):
        entry = counters_entry(step, host, counters)
        if entry is None:
            return
        self.counters.setdefault(step, {})[host] = entry
        self.writer.add_counters(step, host, entry)

    def add_part(self, step, host, part, fill_only=False):
        """A host's part of a step (its client flows, its job program's result, its counters, its kernel)."""
        for flow in part.get("clients") or []:
            self.add_flow(step, host, flow, fill_only=fill_only)
        if isinstance(part.get("program"), dict):
            self.add_program(step, host, part["program"], fill_only=fill_only)
        self.add_counters(step, host, part.get("counters"))
        self.add_events(step, _part_events(host, part))
        if part.get("kernel") and self.kernels.get(host) != part["kernel"]:
            self.kernels[host] = part["kernel"]
            self.writer.set_kernel(host, part["kernel"])
        if isinstance(part.get("nic"), dict) and self.nics.get(host) != part["nic"]:
            self.nics[host] = part["nic"]
            self.writer.set_nic(host, part["nic"])

    def add_events(self, step, events):
        """What a step's hosts saw beside its flows (``step_events``' form), added to what the step has."""
        if not events:
            return
        before = self.events.get(step)
        merged = _merge_events(copy.deepcopy(before) if before else {}, events)
        if merged != before:
            self.events[step] = merged
            self.writer.add_events(step, merged)

    def add_step_record(self, record, fill_only=False, coordinator=None):
        """The coordinator's record of a step: every host's part, a cause for every flow that never reported, how
        the step started, and what its hosts saw beside the flows (``step_events``; ``coordinator``: its host)."""
        step = record.get("step") or "step"
        hosts = record.get("hosts") or {}
        for host, part in sorted(hosts.items()):
            self.add_part(step, host, part or {}, fill_only=fill_only)
        if coordinator:
            self.coordinators.setdefault(step, coordinator)
        self.add_events(step, step_events(record, self.coordinators.get(step)))
        for host, flow_ids in sorted((record.get("expected_flows") or {}).items()):
            if host in hosts:
                continue
            cause = missing_flow_cause(record, host)
            for flow_id in flow_ids:
                self.add_flow(step, host, {"flow_id": flow_id, "status": "error", "error": cause,
                                           "cause_from": "rendezvous"}, fill_only=True)
        if record.get("fire") or record.get("parties"):
            self.starts[step] = start_summary(record)
            self.writer.add_start(step, self.starts[step])

    def add_program(self, step, host, result, fill_only=False):
        """A job step's host result (docs/job-contract.md section 2): kept as it came, the first one kept when
        ``fill_only``."""
        programs = self.programs.setdefault(step, {})
        if fill_only and host in programs:
            return
        programs[host] = result
        self.writer.add_program(step, host, result)

    def add_failed_clients(self, step, host, clients, cause):
        """A host's flows that a task could not start: each failed with the task's cause."""
        for client in clients or []:
            if isinstance(client, dict) and client.get("flow_id"):
                self.add_flow(step, host, {"flow_id": client["flow_id"], "status": "error", "error": cause,
                                           "annotations": client.get("annotations") or {}})

    def add_fabric_counters(self, data):
        """The fabric lab's switches' snapshots (fabric_paths_info with step and label): before is kept until after."""
        step, label, switches = data.get("step"), data.get("label"), data.get("switches")
        if not step or not isinstance(switches, dict):
            return
        if label == "before":
            self._fabric_before[step] = switches
            return
        before = self._fabric_before.pop(step, {})
        for switch, after in sorted(switches.items()):
            if switch in before:
                self.add_counters(step, switch, {"before": before[switch], "after": after})

    def add_port_counters(self, step, host, label, counters):
        """One port_counters_info snapshot of ``host`` taken for ``step`` (a switch's marked ports, the experiment
        role's ``experiment_switch_ecn``): before is kept until after, then both go to the step's counters."""
        if not step or not isinstance(counters, dict) or label not in ("before", "after"):
            return
        if label == "before":
            self._ports_before[(step, host)] = counters
            return
        before = self._ports_before.pop((step, host), None)
        if before is not None:
            self.add_counters(step, host, {"before": before, "after": counters})

    def records(self):
        """``{step: [flow record, ...]}``, as ``model.build_run`` takes them."""
        return {step: list(flows.values()) for step, flows in self.flows.items()}


def run_from_records(records, plan, applied=None, baseline=None):
    """A ``Run`` from the coordinator's step records of one experiment (what ``flow_step state=collected`` returns;
    ``plan``: its ``_plan.model.Plan``), read as the callback reads them into a run directory: each host's client
    flows and counters, a flow that never reported failed with its cause. What the experiment role's gates check,
    before the run directory is complete."""
    plan = plan.with_applied(applied or {})
    if baseline:
        plan.baseline = baseline
    plans = step_plans(plan)
    collector = Collector(planned=lambda step: step in plans)
    for record in records or []:
        if isinstance(record, dict):
            collector.add_step_record(record)
    return build_run(collector.records(), plans, collector.counters, collector.starts, experiments=[plan],
                     events=collector.events, programs=collector.programs)
