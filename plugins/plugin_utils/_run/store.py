# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run store: the one owner of a run directory - its layout, its name (the stamp), its writer, its reader, and the
listing of the run directories under a runs_dir. The callback writes through it, the re-render and the history read
through it.

A run directory, ``<runs_dir>/<stamp>-<label>[-n]`` (stamp ``20261130T185009``, local time; label the playbook's
name), holds::

    plan.json                       the experiments' plans, once each (_plan.model's dict form, with what each
                                    throttle applied and the baseline run), and the lab: the controller's versions,
                                    each host's kernel. Schema 2; schema 1 also kept each step's plan, a second copy
    flows/<step>/<host>[--<flow>].json   one record per flow: measurements only (bytes, times, status, cause)
    counters/<step>/<host>.json     the host's snapshots {before, after} of one step
    starts/<step>.json              how the step started (the rendezvous' margin, probe rounds, arm times)
    events/<step>.json              what the hosts saw beside the flows: peers refused, results that survived a
                                    coordinator that died, a result a host could not keep (``_run.records``)
    programs/<step>/<host>.json     a job's step: the host's program result (docs/job-contract.md section 2)
    report.json, report.txt, ...    the report's files (_report.build.report_files), written whole

Every file is written atomically the moment the controller has it, so a run interrupted before its report loses
nothing. ``load_run(path)`` reads a run directory into a ``Run`` (``model``) of ``Step`` s of ``Flow`` s, each step
with its ``StepPlan``: made from the experiments' plans (schema 2), as stored (schema 1), or, for runs written before
there was a plan.json and steps no plan describes, from each flow's ``annotations`` (``StepPlan.from_annotations``).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import time

from ansible.release import __version__ as ansible_version
from ansible_collections.aifabric.lab.plugins.module_utils._atomic import write_json, write_text
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import Plan, PlanError
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.model import StepPlan, build_run, step_plans

__all__ = ["PLAN_FILE", "PLAN_SCHEMA_VERSION", "FLOWS", "COUNTERS", "STARTS", "EVENTS", "PROGRAMS", "RunDirectory",
           "collection_version", "controller_facts", "is_run_dir", "load_run", "plan_record", "read_plan", "run_dirs",
           "safe_name", "stamp_of", "write_files"]

PLAN_FILE = "plan.json"
PLAN_SCHEMA_VERSION = 2  # 1: each step's plan kept beside the experiments' (twice)
FLOWS, COUNTERS, STARTS, EVENTS, PROGRAMS = "flows", "counters", "starts", "events", "programs"
STAMP_FORMAT = "%Y%m%dT%H%M%S"
_STAMP = re.compile(r"^(\d{8}T\d{6})(?:-(.*))?$")
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


# -- names ---------------------------------------------------------------------------------------------------------
def safe_name(name):
    """A file name for a host, step or flow name: the name itself when it is one, else its safe characters and a
    short digest of the whole name (so "a b" and "a_b" never share a file)."""
    name = str(name)
    safe = _SAFE.sub("_", name).strip("._") or "unnamed"
    if safe == name:
        return safe
    return "%s-%s" % (safe, hashlib.sha1(name.encode("utf-8")).hexdigest()[:8])


def stamp_of(path):
    """``(when, label)`` of a run directory from its name: when it was made (a ``time.struct_time``, local time; None
    when the name has no stamp) and the label after the stamp (the whole name when it has none)."""
    name = os.path.basename(os.path.normpath(str(path)))
    match = _STAMP.match(name)
    if match:
        try:
            return time.strptime(match.group(1), STAMP_FORMAT), match.group(2) or ""
        except ValueError:
            pass
    return None, name


# -- the listing ---------------------------------------------------------------------------------------------------
def is_run_dir(path):
    """A directory with a plan.json or a flows/ directory."""
    return os.path.isdir(path) and (os.path.isfile(os.path.join(path, PLAN_FILE))
                                    or os.path.isdir(os.path.join(path, FLOWS)))


def run_dirs(runs_dir):
    """The run directories under ``runs_dir``, oldest name first."""
    if not os.path.isdir(runs_dir):
        return []
    return [os.path.join(runs_dir, name) for name in sorted(os.listdir(runs_dir))
            if is_run_dir(os.path.join(runs_dir, name))]


# -- the lab -------------------------------------------------------------------------------------------------------
def collection_version():
    """This collection's version, from its MANIFEST.json (installed) or galaxy.yml (a checkout)."""
    base = os.path.abspath(__file__)
    for _level in range(4):  # plugins/plugin_utils/_run/store.py -> the collection's root
        base = os.path.dirname(base)
    try:
        with open(os.path.join(base, "MANIFEST.json")) as handle:
            return json.load(handle)["collection_info"]["version"]
    except (OSError, ValueError, KeyError):
        pass
    try:
        with open(os.path.join(base, "galaxy.yml")) as handle:
            for line in handle:
                if line.startswith("version:"):
                    return line.split(":", 1)[1].strip().strip("\"'")
    except OSError:
        pass
    return None


def controller_facts():
    """The controller's side of plan.json's ``lab``: its kernel, Python, ansible-core and this collection."""
    return {"kernel": platform.release(), "python": platform.python_version(), "ansible_core": ansible_version,
            "collection": collection_version()}


def plan_record(experiments, lab):
    """plan.json's content: the experiments' plans, once each (``Plan`` s), and the lab's facts."""
    return {"schema_version": PLAN_SCHEMA_VERSION, "experiments": [e.to_dict(views=False) for e in experiments],
            "lab": lab}


# -- the writer ----------------------------------------------------------------------------------------------------
class RunDirectory:
    """A new run directory under ``runs_dir`` (``<stamp>-<label>``, ``-2``... when taken), and its writer: each record
    into its file the moment it comes, atomically. ``clock``: the time it is named by (default: now)."""

    def __init__(self, runs_dir, label="run", clock=None):
        stamp = time.strftime(STAMP_FORMAT, time.localtime((clock or time.time)()))
        base = os.path.join(runs_dir, "%s-%s" % (stamp, safe_name(label)))
        path, n = base, 1
        while os.path.exists(path):
            n += 1
            path = "%s-%d" % (base, n)
        os.makedirs(path)
        self.path = os.path.abspath(path)

    def write_plan(self, experiments, lab):
        """``plan.json``: the run's plans and lab (rewritten whole as the run learns more: another experiment, an
        applied throttle, a host's kernel)."""
        write_json(os.path.join(self.path, PLAN_FILE), plan_record(experiments, lab))

    def add_counters(self, step, host, snapshots):
        write_json(os.path.join(self.path, COUNTERS, safe_name(step), safe_name(host) + ".json"), snapshots)

    def add_flow(self, step, record):
        name = safe_name(record["host"])
        if record.get("flow_id") not in (None, record["host"]):
            name += "--" + safe_name(record["flow_id"])
        write_json(os.path.join(self.path, FLOWS, safe_name(step), name + ".json"), record)

    def add_start(self, step, start):
        write_json(os.path.join(self.path, STARTS, safe_name(step) + ".json"), dict(start, step=step))

    def add_events(self, step, events):
        write_json(os.path.join(self.path, EVENTS, safe_name(step) + ".json"), dict(events, step=step))

    def add_program(self, step, host, result):
        """A job step's host result (docs/job-contract.md section 2), as the host returned it."""
        write_json(os.path.join(self.path, PROGRAMS, safe_name(step), safe_name(host) + ".json"),
                   dict(result, host=host, step=step))

    def write_files(self, files):
        """The report's files, ``{name: text}``, each written atomically."""
        write_files(self.path, files)


def write_files(path, files):
    """``{name: text}`` into the run directory at ``path``, each file atomically."""
    for name, text in files.items():
        write_text(os.path.join(path, name), text)


# -- the reader ----------------------------------------------------------------------------------------------------
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


def _load_flows(path):
    """``{step: [record, ...]}`` from flows/ (each step's records in the order they reached the controller)."""
    flows = os.path.join(path, FLOWS)
    if not os.path.isdir(flows) and os.path.isdir(os.path.join(path, PROGRAMS)):
        return {}  # a run of jobs only
    if not os.path.isdir(flows):
        raise FileNotFoundError("%s has no flows/ directory: is it a run directory?" % path)
    entries = []
    for step in os.listdir(flows):
        for name in os.listdir(os.path.join(flows, step)):
            if name.endswith(".json"):
                full = os.path.join(flows, step, name)
                record = _read_json(full)
                entries.append((record.get("received_at", os.path.getmtime(full)), record.get("step", step), record))
    steps = {}
    for _received, step, record in sorted(entries, key=lambda e: e[0]):
        steps.setdefault(step, []).append(record)
    return steps


def _load_entries(path, kind, by_host=False, keep_names=False):
    """The JSON entries under ``kind/`` of a run directory, read in one place: ``kind/<step>.json`` as ``{step:
    entry}`` (starts, events), or with ``by_host`` ``kind/<step>/<host>.json`` as ``{step: {host: entry}}`` (counters,
    programs). An entry's own ``step`` (and ``host``) names it, else its file's path does; ``keep_names`` leaves them
    in the entry (the counters' snapshots keep theirs), else they are taken out."""
    take = dict.get if keep_names else dict.pop
    out = {}
    base = os.path.join(path, kind)
    for step in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        if not by_host:
            if step.endswith(".json"):
                entry = _read_json(os.path.join(base, step))
                out[take(entry, "step", step[:-5])] = entry
            continue
        for name in sorted(os.listdir(os.path.join(base, step))):
            if name.endswith(".json"):
                entry = _read_json(os.path.join(base, step, name))
                out.setdefault(take(entry, "step", step), {})[take(entry, "host", name[:-5])] = entry
    return out


def _read_json(full):
    with open(full) as handle:
        return json.load(handle)


def load_run(path):
    """The run directory at ``path`` as a ``Run``."""
    experiments, plans, lab = read_plan(path) or ([], {}, {})
    return build_run(_load_flows(path), plans, _load_entries(path, COUNTERS, by_host=True, keep_names=True),
                     _load_entries(path, STARTS), path=os.path.abspath(path), lab=lab, experiments=experiments,
                     events=_load_entries(path, EVENTS), programs=_load_entries(path, PROGRAMS, by_host=True))
