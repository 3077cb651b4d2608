# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: barrier_report
type: aggregate
short_description: Turn the flows of a play into a barrier report
version_added: 0.1.0
description:
  - Collects the flows of every synchronized step (the record that M(aifabric.lab.flow_step) returns with
    C(state=collected), and what C(state=stopped) recovers after a failure) and the results of plain
    M(aifabric.lab.flow) client tasks, grouped into steps by the flow's C(annotations.step) (else the task name), and
    prints at the end of the playbook a report per step.
  - Per worker, its completion time, Gb/s, idle time (step minus its own completion) and idle share of the step; the
    step time (the maximum); the mean completion time and how far the mean understates the step; the sum of the flows'
    rates against the bottleneck and against the single-flow baseline; the
    straggler with the throttle that explains it; and the max-min fair-share prediction of every completion. A
    baseline is a step the experiment's plan marks C(kind=baseline) (the elephant).
  - The experiment role hands the callback its plan once (C(set_stats) key C(aifabric_lab_plan), with what each
    throttle applied); the callback writes it to the run's C(plan.json), the run record the report reads each step's
    paths, throttles and expected workers from. Flows that no plan describes carry those facts in C(annotations).
  - Uses the timestamps measured on the hosts (C(completion_s) is the receiver's confirmation of the last byte minus
    the common start instant), never the time a result reached the controller.
  - A step in which any worker failed, timed out, never armed, started later than the lateness bound or was
    unreachable is reported as failed with the hosts and causes, and no step time is computed over the survivors.
  - How the step started is reported beside it - the measured margin, the probe rounds, how long the hosts took to arm,
    each flow's lateness against the bound.
  - Each flow's result is written to the run directory the moment it arrives (atomically), and at the end the report
    in eight files - C(report.json), C(report.txt), C(report.md), C(report.html), C(flows.csv), C(steps.csv),
    C(junit.xml) (C(docs/reports.md)) and C(metrics.prom), the figures as OpenMetrics gauges for Prometheus and
    Grafana (C(docs/metrics.md)). C(playbooks/render_report.yml) rebuilds them from a run directory.
requirements:
  - jinja2
options:
  runs_dir:
    description: Directory under which a new directory is made for every run that has flows.
    type: path
    default: runs
    env:
      - name: AIFABRIC_RUNS_DIR
    ini:
      - section: aifabric_barrier_report
        key: runs_dir
  history_db:
    description:
      - The run history (SQLite) every run is recorded in once its report is written (C(make history) lists the
        runs, C(make compare) compares two). Empty - C(history.sqlite) under O(runs_dir). A missing or corrupt file
        is rebuilt from the run directories; a history that cannot be written is warned about, never fatal.
    type: str
    default: ""
    env:
      - name: AIFABRIC_HISTORY_DB
    ini:
      - section: aifabric_barrier_report
        key: history_db
  history:
    description: Record the run in the history.
    type: bool
    default: true
    env:
      - name: AIFABRIC_HISTORY
    ini:
      - section: aifabric_barrier_report
        key: history
  show_json_path:
    description: Print the path of C(report.json) after the report.
    type: bool
    default: true
    env:
      - name: AIFABRIC_SHOW_JSON_PATH
    ini:
      - section: aifabric_barrier_report
        key: show_json_path
notes:
  - Enable it with C(callbacks_enabled = aifabric.lab.barrier_report) in C(ansible.cfg); the collection's own
    C(ansible.cfg) does.
  - The JSON schema is documented in C(docs/report-schema.md).
seealso:
  - module: aifabric.lab.flow
"""

import os
import signal
import sqlite3
import tempfile

from ansible.plugins.callback import CallbackBase
from ansible_collections.aifabric.lab.plugins.plugin_utils._history.store import (
    HistoryError,
    default_db_path,
    record_run,
)
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import Plan, PlanError
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.build import analyze_run, build_report, report_files
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.text import render_text
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.model import build_run, step_plans
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.records import (
    Collector,
    applied_throttles,
    rdma_identity,
)
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.store import RunDirectory, controller_facts

_FLOW_ACTIONS = frozenset(("aifabric.lab.flow", "flow"))
_STEP_ACTIONS = frozenset(("aifabric.lab.flow_step", "flow_step"))
# (fabric_paths: the module's name before 0.5.0, redirected to fabric_paths_info by meta/runtime.yml)
_FABRIC_ACTIONS = frozenset(("aifabric.lab.fabric_paths_info", "fabric_paths_info", "aifabric.lab.fabric_paths",
                             "fabric_paths"))
_RDMA_INFO_ACTIONS = frozenset(("aifabric.lab.rdma_info", "rdma_info"))
# (port_counters: the module's name before 0.5.0) a snapshot with a step is a switch's, taken by the experiment role
_PORT_COUNTER_ACTIONS = frozenset(("aifabric.lab.port_counters_info", "port_counters_info",
                                   "aifabric.lab.port_counters", "port_counters"))
_STATS_ACTIONS = frozenset(("ansible.builtin.set_stats", "set_stats", "ansible.legacy.set_stats"))
PLAN_STAT = "aifabric_lab_plan"  # the experiment role's set_stats key: {plan: flow_plan's result, throttles: [...]}


def _cause_without_result(res):
    """Why a flow task has no flow result, in the words an engineer needs (a signal, an exit code, Ansible's msg)."""
    rc = res.get("rc")
    if isinstance(rc, int) and (rc < 0 or 128 < rc < 128 + 65):
        number = -rc if rc < 0 else rc - 128
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "signal %d" % number
        return "the flow process was killed by %s (signal %d) before it reported" % (name, number)
    msg = res.get("msg") or "the flow task returned no result"
    if isinstance(rc, int) and rc:
        msg += " (exit code %d)" % rc
    return msg


class _Writer:
    """The collector's writer: the run directory, made when the first record comes (with the plans known so far),
    each record written at once; a write that fails is remembered, never raised (the report says so)."""

    def __init__(self, callback):
        self.cb = callback

    def _write(self, what, *args):
        cb = self.cb
        try:
            if cb._run is None:
                cb._run = cb._open_run()
                if what != "write_plan":
                    cb._run.write_plan(cb._experiments, cb._lab)
            getattr(cb._run, what)(*args)
        except OSError as exc:
            cb._write_error = "cannot write results under %s: %s" % (cb._run.path if cb._run else cb._runs_dir, exc)

    def add_flow(self, step, record):
        self._write("add_flow", step, record)

    def add_counters(self, step, host, entry):
        self._write("add_counters", step, host, entry)

    def add_start(self, step, start):
        self._write("add_start", step, start)

    def add_events(self, step, events):
        self._write("add_events", step, events)

    def add_program(self, step, host, result):
        self._write("add_program", step, host, result)

    def set_kernel(self, host, kernel):
        self.set_fact(host, "kernel", kernel)

    def set_nic(self, host, nic):
        self.set_fact(host, "nic", nic)

    def set_fact(self, host, key, value):
        """A fact of a host into plan.json's lab (its kernel, the NIC its step ran on, its RDMA devices)."""
        self.cb._lab["hosts"].setdefault(host, {})[key] = value
        self._write("write_plan", self.cb._experiments, self.cb._lab)

    def plans_changed(self):
        if self.cb._run is not None:
            self._write("write_plan", self.cb._experiments, self.cb._lab)


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "aifabric.lab.barrier_report"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._plans = {}  # step -> StepPlan, from the experiments' plans
        self._experiments = []  # [Plan]
        self._lab = {"controller": controller_facts(), "hosts": {}}
        self._writer = _Writer(self)
        self._collector = Collector(self._writer, planned=lambda step: step in self._plans)
        self._run = None
        self._label = "run"
        self._write_error = None
        self._printed = set()

    def set_options(self, task_keys=None, var_options=None, direct=None):
        super().set_options(task_keys=task_keys, var_options=var_options, direct=direct)
        self._runs_dir = self.get_option("runs_dir")
        self._show_json_path = self.get_option("show_json_path")
        self._history_on = self.get_option("history")
        db = self.get_option("history_db")
        self._history_db = (os.path.abspath(os.path.expanduser(db)) if db else
                            default_db_path(self._runs_dir, environ={}))

    def v2_playbook_on_start(self, playbook):
        self._label = os.path.splitext(os.path.basename(playbook._file_name))[0]

    # -- collecting -------------------------------------------------------------------------------------------
    def _add_plan(self, data):
        """An experiment's plan (the experiment role's set_stats), with what each throttle applied, into plan.json."""
        try:
            the_plan = Plan.from_dict(data.get("plan"))
        except (PlanError, KeyError, TypeError) as exc:
            self._display.warning("barrier_report: the experiment's plan cannot be read (%s); its steps are reported "
                                  "from their flows alone" % exc)
            return
        the_plan.with_applied(applied_throttles(data.get("throttles")))
        if isinstance(data.get("baseline"), dict) and data["baseline"]:
            the_plan.baseline = data["baseline"]  # the history's run the vs_baseline gate compares against
        self._plans.update(step_plans(the_plan))
        self._experiments.append(the_plan)
        self._writer.plans_changed()

    def _record_step_task(self, result, unreachable=False, failed=False):
        res = result._result
        if "results" in res:
            return  # a loop: its items came one by one (v2_runner_item_on_*)
        args = (res.get("invocation") or {}).get("module_args") or result._task.args or {}
        host = args.get("party") or result._host.get_name()  # under delegate_to, the party is the host
        step = args.get("step") or result._task.get_name()
        state = args.get("state") or "started"
        if isinstance(res.get("step"), dict):
            self._collector.add_step_record(res["step"], fill_only=state == "stopped",
                                            coordinator=host if state == "collected" else None)
        if isinstance(res.get("part"), dict) and state == "stopped":
            self._collector.add_part(step, host, res["part"], fill_only=True)
        if not (unreachable or failed or res.get("failed")):
            return
        cause = res.get("msg") or "unreachable"
        if unreachable:
            cause = "unreachable: %s" % cause
        if isinstance(args.get("parts"), list):
            # one task started every host's part (the netns lab): a host that could not start says why itself
            # (and the hosts that did start were stopped because of it)
            errors = {p.get("host"): p.get("error") for p in res.get("parts") or [] if isinstance(p, dict)
                      and p.get("status") != "started"}
            why = "; ".join("%s could not start its part: %s" % item for item in sorted(errors.items()))
            for part in args["parts"]:
                if not isinstance(part, dict):
                    continue
                party = part.get("party")
                self._collector.add_failed_clients(step, party, part.get("clients"),
                                                   cause if not errors else "could not start: %s" % errors[party]
                                                   if party in errors else "not started: %s" % why)
            return
        self._collector.add_failed_clients(step, host, args.get("clients"), cause)

    def _record(self, result, status_override=None, failed=False):
        task = result._task
        if task.action in _STATS_ACTIONS and not (failed or status_override):
            data = (result._result.get("ansible_stats") or {}).get("data") or {}
            if isinstance(data.get(PLAN_STAT), dict):
                self._add_plan(data[PLAN_STAT])
            return
        if task.action in _RDMA_INFO_ACTIONS and not (failed or status_override):
            devices = result._result.get("devices")
            if isinstance(devices, dict) and devices:
                self._writer.set_fact(result._host.get_name(), "rdma", rdma_identity(devices))
            return
        if task.action in _FABRIC_ACTIONS and not (failed or status_override):
            if isinstance(result._result.get("fabric_counters"), dict):
                self._collector.add_fabric_counters(result._result["fabric_counters"])
            return
        if task.action in _PORT_COUNTER_ACTIONS and not (failed or status_override):
            res = result._result
            if res.get("step") and isinstance(res.get("counters"), dict):
                delegated = res.get("_ansible_delegated_vars") or {}
                host = delegated.get("ansible_delegated_host") or result._host.get_name()
                self._collector.add_port_counters(res["step"], host, res.get("label"), res["counters"])
            return
        if task.action in _STEP_ACTIONS:
            # (ansible-core 2.19 hands a failed task's result to v2_runner_on_failed without its "failed" key)
            self._record_step_task(result, unreachable=status_override == "unreachable", failed=failed)
            return
        if task.action not in _FLOW_ACTIONS:
            return
        res = result._result
        flow = res.get("flow")
        args = (res.get("invocation") or {}).get("module_args") or task.args
        role = (flow or {}).get("role") or args.get("role")
        if role != "client":
            return
        host = result._host.get_name()
        record = dict(flow or {})
        annotations = record.get("annotations") or args.get("annotations") or {}
        if not isinstance(annotations, dict):
            annotations = {}
        record["annotations"] = annotations
        if status_override:
            record["status"] = status_override
            record["error"] = res.get("msg") or "unreachable"
        elif not flow:
            record["status"] = "error"
            record["error"] = _cause_without_result(res)
        record["flow_id"] = host  # one plain flow per host and task
        self._collector.add_flow(annotations.get("step") or task.get_name(), host, record)

    def _open_run(self):
        """The run directory under runs_dir, or, when that cannot be written, one under the system's temp directory
        (said loudly), so that measured results are never lost to a configuration mistake."""
        try:
            return RunDirectory(self._runs_dir, self._label)
        except OSError as exc:
            fallback = tempfile.mkdtemp(prefix="aifabric-runs-")
            self._display.warning(
                "barrier_report: cannot create a run directory under runs_dir=%s (%s); writing this run's results to "
                "%s instead. Set AIFABRIC_RUNS_DIR or [aifabric_barrier_report] runs_dir to a writable directory."
                % (self._runs_dir, exc, fallback))
            return RunDirectory(fallback, self._label)

    def v2_runner_on_ok(self, result):
        self._record(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, failed=True)

    def v2_runner_on_unreachable(self, result):
        self._record(result, status_override="unreachable")

    def v2_runner_item_on_ok(self, result):
        if result._task.action in _STEP_ACTIONS or result._task.action in _PORT_COUNTER_ACTIONS:
            self._record(result)

    def v2_runner_item_on_failed(self, result):
        if result._task.action in _STEP_ACTIONS:
            self._record(result, failed=True)

    # -- reporting --------------------------------------------------------------------------------------------
    def v2_playbook_on_stats(self, stats):
        if not self._collector.flows and not self._collector.programs:  # (a job's steps have programs, no flows)
            return
        report = None
        if self._run is not None and self._write_error is None:
            # the one analysis, from the run directory every result was written to as it came
            try:
                report = analyze_run(self._run.path)
            except (OSError, ValueError) as exc:
                self._write_error = "cannot read back the run directory %s: %s" % (self._run.path, exc)
        if report is None:  # nothing could be written: the report from what this process holds
            collected = self._collector
            report = build_report(build_run(collected.records(), self._plans, collected.counters, collected.starts,
                                            path=self._run.path if self._run else None, lab=self._lab,
                                            experiments=self._experiments, programs=collected.programs))
        self._display.banner("BARRIER REPORT")
        if self._run is not None and self._write_error is None:
            try:
                self._run.write_files(report_files(report))
            except OSError as exc:
                self._write_error = "cannot write the report under %s: %s" % (self._run.path, exc)
        # Several playbooks in one command share one run (and its baseline); each prints only its new steps.
        fresh = dict(report, steps=[s for s in report["steps"] if s["step"] not in self._printed])
        self._printed.update(s["step"] for s in report["steps"])
        self._display.display(render_text(fresh))
        if self._write_error:
            self._display.error("barrier_report: %s (the report above was not saved)" % self._write_error)
            return
        if self._show_json_path:
            self._display.display("report: %s" % os.path.join(self._run.path, "report.json"))
        if self._history_on:
            self._record_history(report)

    def _record_history(self, report):
        """The run into the history (after its files are written: a history that fails costs nothing measured)."""
        try:
            recorded = record_run(self._history_db, self._run.path, report=report,
                                  runs_dir=os.path.dirname(self._run.path),
                                  notify=lambda m: self._display.warning("history: %s" % m))
        except (HistoryError, OSError, sqlite3.Error) as exc:
            self._display.warning("barrier_report: the run was not recorded in the history %s: %s"
                                  % (self._history_db, exc))
            return
        self._display.display("history: run %s recorded in %s (make history lists the runs, make compare compares "
                              "two)" % (recorded["id"], self._history_db))
