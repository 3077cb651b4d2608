# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run record: what a run directory holds, read into one typed model.

A run directory holds::

    plan.json                       the experiments as planned (hosts, flows and their paths, throttles with the
                                    mechanism the throttle module applied, the lab: line rate, MTU, kernels, versions)
    flows/<step>/<host>[--<flow>].json   one record per flow: measurements only (bytes, times, status, cause)
    counters/<step>/<host>.json     the host's snapshots {before, after} of one step
    starts/<step>.json              how the step started (the rendezvous' margin, probe rounds, arm times)
    report.json, report.txt         the analysis (plugin_utils/_report.analyze_run)

``load_run(path)`` reads it into a ``Run`` of ``Step`` s of ``Flow`` s, each step with its ``StepPlan``. What the plan
says of a step (its kind, bottleneck, expected workers, each flow's path and throttle) is read from ``plan.json``;
runs written before there was one (schema 1, and flows that plain ``flow`` tasks described with ``annotations``) carry
it in each flow's ``annotations``, and ``StepPlan.from_annotations`` reads it from there, the one place that does.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time

from ansible_collections.aifabric.lab.plugins.module_utils._atomic import write_json, write_text
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import Plan, PlanError
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.model import StepPlan, build_run, step_plans

__all__ = ["PLAN_FILE", "PLAN_SCHEMA_VERSION", "RunDirectory", "load_run", "plan_record", "read_plan", "write_files"]


PLAN_FILE = "plan.json"
PLAN_SCHEMA_VERSION = 2  # 1: each step's plan kept beside the experiments' (twice)


def read_plan(path):
    """``plan.json`` of a run directory as ``(experiments, step plans, lab)``: the experiments' ``Plan`` s, each step's
    ``StepPlan`` and the lab's facts; None when the run has none (before there was plan.json). Schema 1 kept each
    step's plan beside the experiments (those are read as they were written); schema 2 holds the plans once, and the
    steps' are made from them."""
    full = os.path.join(path, PLAN_FILE)
    if not os.path.exists(full):
        return None
    with open(full) as handle:
        data = json.load(handle)
    version = data.get("schema_version") if isinstance(data, dict) else None
    if version == 1 and not isinstance(data.get("steps"), dict):
        raise ValueError("%s: not a run plan (no 'steps')" % full)
    if version not in (1, 2):
        raise ValueError("%s: not a run plan this collection reads (schema_version %r; it reads 1 and %d)"
                         % (full, version, PLAN_SCHEMA_VERSION))
    try:
        experiments = [Plan.from_dict(e) for e in data.get("experiments") or []]
    except (PlanError, KeyError, TypeError) as exc:
        raise ValueError("%s: an experiment's plan cannot be read: %s" % (full, exc)) from None
    if version == 1:
        steps = {name: StepPlan.from_dict(s) for name, s in data["steps"].items()}
    else:
        steps = {}
        for experiment in experiments:
            steps.update(step_plans(experiment))
    return experiments, steps, data.get("lab") or {}


def plan_record(experiments, lab):
    """plan.json's content: the experiments' plans, once each, and the lab's facts."""
    return {"schema_version": PLAN_SCHEMA_VERSION, "experiments": [e.to_dict(views=False) for e in experiments],
            "lab": lab}


def _load_flows(path):
    """``{step: [record, ...]}`` from flows/ (each step's records in the order they reached the controller)."""
    flows = os.path.join(path, "flows")
    if not os.path.isdir(flows):
        raise FileNotFoundError("%s has no flows/ directory: is it a run directory?" % path)
    entries = []
    for step in os.listdir(flows):
        for name in os.listdir(os.path.join(flows, step)):
            if name.endswith(".json"):
                full = os.path.join(flows, step, name)
                with open(full) as handle:
                    record = json.load(handle)
                entries.append((record.get("received_at", os.path.getmtime(full)), record.get("step", step), record))
    steps = {}
    for _received, step, record in sorted(entries, key=lambda e: e[0]):
        steps.setdefault(step, []).append(record)
    return steps


def _load_counters(path):
    out = {}
    base = os.path.join(path, "counters")
    for step in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        for name in sorted(os.listdir(os.path.join(base, step))):
            if name.endswith(".json"):
                with open(os.path.join(base, step, name)) as handle:
                    entry = json.load(handle)
                out.setdefault(entry.get("step", step), {})[entry.get("host", name[:-5])] = entry
    return out


def _load_starts(path):
    out = {}
    base = os.path.join(path, "starts")
    for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        if name.endswith(".json"):
            with open(os.path.join(base, name)) as handle:
                entry = json.load(handle)
            out[entry.pop("step", name[:-5])] = entry
    return out


def load_run(path):
    """The run directory at ``path`` as a ``Run``."""
    experiments, plans, lab = read_plan(path) or ([], {}, {})
    return build_run(_load_flows(path), plans, _load_counters(path), _load_starts(path), path=os.path.abspath(path),
                     lab=lab, experiments=experiments)


_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def _safe(name):
    """A file name for a host, step or flow name: the name itself when it is one, else its safe characters and a
    short digest of the whole name (so "a b" and "a_b" never share a file)."""
    name = str(name)
    safe = _SAFE.sub("_", name).strip("._") or "unnamed"
    if safe == name:
        return safe
    return "%s-%s" % (safe, hashlib.sha1(name.encode("utf-8")).hexdigest()[:8])


class RunDirectory:
    """One directory per run under ``runs_dir``."""

    def __init__(self, runs_dir, label="run", clock=None):
        stamp = time.strftime("%Y%m%dT%H%M%S", time.localtime((clock or time.time)()))
        base = os.path.join(runs_dir, "%s-%s" % (stamp, _safe(label)))
        path, n = base, 1
        while os.path.exists(path):
            n += 1
            path = "%s-%d" % (base, n)
        os.makedirs(path)
        self.path = os.path.abspath(path)

    def write_plan(self, plan):
        """``plan.json``: the run's plan record (rewritten whole as the run learns more: an applied throttle, a
        host's kernel)."""
        write_json(os.path.join(self.path, PLAN_FILE), plan)

    def add_counters(self, step, host, snapshots):
        write_json(os.path.join(self.path, "counters", _safe(step), _safe(host) + ".json"), snapshots)

    def add_flow(self, step, record):
        name = _safe(record["host"])
        if record.get("flow_id") not in (None, record["host"]):
            name += "--" + _safe(record["flow_id"])
        write_json(os.path.join(self.path, "flows", _safe(step), name + ".json"), record)

    def add_start(self, step, start):
        write_json(os.path.join(self.path, "starts", _safe(step) + ".json"), dict(start, step=step))

    def write_files(self, files):
        """Files of the run's report, ``{name: text}``, each written atomically."""
        write_files(self.path, files)


def write_files(path, files):
    """``{name: text}`` into the run directory at ``path``, each file atomically."""
    for name, text in files.items():
        write_text(os.path.join(path, name), text)
