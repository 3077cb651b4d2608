# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The flow_step module's action: runs the module; with ``state=collected`` and ``progress=true``, first shows the
step's progress about once a second while its flows run (a short ``state=progress`` query of the coordinating host
each time), then collects the step as the module alone would."""

from __future__ import annotations

import time

from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.aifabric.lab.plugins.module_utils._units import format_size

display = Display()

PERIOD = 1.0  # s between two progress lines
GRACE = 60.0  # s past arm_timeout + timeout that the progress may be shown (the collect task's own wait follows)


def progress_line(step, prog):
    """One line: the step's elapsed time, each flow's bytes so far, rate and share of its volume, and the time left
    at those rates."""
    parts = []
    for f in prog.get("flows") or []:
        name = f["host"] if f["flow_id"] == f["host"] else f["flow_id"]
        if f.get("done"):
            parts.append("%s done" % name)
        elif f.get("bytes") is None:
            parts.append("%s running (no interval samples)" % name)
        else:
            rate = "%.2f Gb/s" % f["gbps"] if f.get("gbps") is not None else "-"
            share = " %.0f%%" % (f["share"] * 100) if f.get("share") is not None else ""
            parts.append("%s %s %s%s" % (name, format_size(f["bytes"], digits=2, sep=" "), rate, share))
    left = prog.get("remaining_s")
    tail = "; ~%.1f s left at these rates" % left if left is not None else ""
    return "[%s %5.1f s] %s%s" % (step, prog.get("elapsed_s") or 0.0, " | ".join(parts) or "no flow sample yet", tail)


class ActionModule(ActionBase):
    _supports_async = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        wrap_async = self._task.async_val and not self._connection.has_native_async
        try:
            # (with hosts that will never arm, ``missing``, the collect aborts the step at once: nothing to show)
            if (args.get("state") == "collected" and boolean(args.get("progress", False), strict=False)
                    and not args.get("missing") and not self._task.check_mode and not self._task.async_val):
                self._show_progress(args, task_vars)
            result.update(self._execute_module(module_args=args, task_vars=task_vars, wrap_async=wrap_async))
        finally:
            if not wrap_async:
                self._remove_tmp_path(self._connection._shell.tmpdir)
        return result

    def _show_progress(self, args, task_vars):
        """Query the coordinating host until the step has ended, printing a line per answer once the flows have run
        a second. Any trouble ends the display (never the step): the collect that follows reports what happened."""
        try:
            self._watch(args, task_vars)
        except Exception as exc:  # noqa: BLE001  the display is a courtesy: the collect that follows is the step
            display.warning("flow_step: the progress display stopped (%s: %s); collecting the step"
                            % (type(exc).__name__, exc))

    def _watch(self, args, task_vars):
        step = args.get("step") or self._task.get_name()
        wait = args.get("wait") or (float(args.get("arm_timeout") or 60.0) + float(args.get("timeout") or 300.0))
        deadline = time.monotonic() + float(wait) + GRACE
        query = dict(args, state="progress", watch=True)
        while time.monotonic() < deadline:
            asked = time.monotonic()
            res = self._execute_module(module_args=query, task_vars=task_vars)
            if res.get("failed") or res.get("done"):
                return
            if res.get("phase") == "running":
                query["watch"] = False
                if (res.get("elapsed_s") or 0.0) >= PERIOD:
                    display.display(progress_line(step, res))
            time.sleep(max(0.0, asked + PERIOD - time.monotonic()))
