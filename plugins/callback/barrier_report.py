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
  - Collects the results of M(aifabric.lab.flow) client tasks, grouped into steps by the flow's C(annotations.step)
    (else the task name), and prints at the end of the playbook a report per step.
  - Per worker, its completion time, Gb/s, idle time (step minus its own completion) and idle share of the step; the
    step time (the maximum); the mean completion time and how far the mean understates the step; the sum of the flows'
    rates against the bottleneck and against the single-flow baseline (a step annotated C(kind=baseline)); the
    straggler with the throttle that explains it; and the max-min fair-share prediction of every completion.
  - Uses the timestamps measured on the hosts (C(completion_s) is the receiver's confirmation of the last byte minus
    the common start instant), never the time a result reached the controller.
  - A step in which any worker failed, timed out, started late or was unreachable is reported as failed with the hosts
    and causes, and no step time is computed over the survivors.
  - Each flow's result is written to the run directory the moment it arrives (atomically), then C(report.json) and
    C(report.txt) at the end. C(playbooks/render_report.yml) rebuilds a report from a run directory.
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
import tempfile
import time

from ansible.plugins.callback import CallbackBase
from ansible_collections.aifabric.lab.plugins.plugin_utils._report import RunDirectory, build_report, render_text

_FLOW_ACTIONS = frozenset(("aifabric.lab.flow", "flow"))
_COUNTER_ACTIONS = frozenset(("aifabric.lab.port_counters", "port_counters"))


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


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "aifabric.lab.barrier_report"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._steps = {}
        self._counters = {}
        self._run = None
        self._label = "run"
        self._write_error = None
        self._printed = set()

    def set_options(self, task_keys=None, var_options=None, direct=None):
        super().set_options(task_keys=task_keys, var_options=var_options, direct=direct)
        self._runs_dir = self.get_option("runs_dir")
        self._show_json_path = self.get_option("show_json_path")

    def v2_playbook_on_start(self, playbook):
        self._label = os.path.splitext(os.path.basename(playbook._file_name))[0]

    # -- collecting -------------------------------------------------------------------------------------------
    def _record_counters(self, result):
        """A port_counters snapshot labelled ``STEP|before`` or ``STEP|after`` (the experiment role's), kept per step
        and host and written at once, so the report can show what the wire and the queues saw."""
        res = result._result
        label = res.get("label") or ""
        step, _sep, phase = label.rpartition("|")
        if not step or phase not in ("before", "after") or not res.get("counters"):
            return
        host = result._host.get_name()
        entry = self._counters.setdefault(step, {}).setdefault(host, {"step": step, "host": host})
        entry[phase] = res["counters"]
        for key in ("interface", "engine"):
            if res.get(key):
                entry[key] = res[key]
        try:
            if self._run is None:
                self._run = self._open_run()
            self._run.add_counters(step, host, entry)
        except OSError as exc:
            self._write_error = "cannot write counters under %s: %s" % (self._run.path if self._run else
                                                                        self._runs_dir, exc)

    def _record(self, result, status_override=None):
        task = result._task
        if task.action in _COUNTER_ACTIONS and status_override is None:
            self._record_counters(result)
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
        record["host"] = host
        if status_override:
            record["status"] = status_override
            record["error"] = res.get("msg") or "unreachable"
        elif not flow:
            record["status"] = "error"
            record["error"] = _cause_without_result(res)
        record["received_at"] = time.time()  # bookkeeping only; never used for timing
        step = annotations.get("step") or task.get_name()
        record["step"] = step
        self._steps.setdefault(step, {})[host] = record
        try:
            if self._run is None:
                self._run = self._open_run()
            self._run.add_flow(step, record)
        except OSError as exc:
            self._write_error = "cannot write results under %s: %s" % (self._run.path if self._run else self._runs_dir,
                                                                       exc)

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
        self._record(result)

    def v2_runner_on_unreachable(self, result):
        self._record(result, status_override="unreachable")

    # -- reporting --------------------------------------------------------------------------------------------
    def v2_playbook_on_stats(self, stats):
        if not self._steps:
            return
        steps = {name: list(hosts.values()) for name, hosts in self._steps.items()}
        report = build_report(steps, run_path=self._run.path if self._run else None, counters=self._counters)
        self._display.banner("BARRIER REPORT")
        if self._run is not None and self._write_error is None:
            try:
                self._run.write_report(report)
            except OSError as exc:
                self._write_error = "cannot write the report under %s: %s" % (self._run.path, exc)
        # Several playbooks in one command share one run (and its baseline); each prints only its new steps.
        fresh = dict(report, steps=[s for s in report["steps"] if s["step"] not in self._printed])
        self._printed.update(s["step"] for s in report["steps"])
        self._display.display(render_text(fresh))
        if self._write_error:
            self._display.error("barrier_report: %s (the report above was not saved)" % self._write_error)
        elif self._show_json_path:
            self._display.display("report: %s" % os.path.join(self._run.path, "report.json"))
