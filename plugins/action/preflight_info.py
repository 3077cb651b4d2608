# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight_info module's action: runs the module, then measures the host's clock against the controller's with a
few ``date +%s.%N`` round trips over the task's connection (``clock_offset``): what a ``start_at`` instant set on the
controller means on that host."""

from __future__ import annotations

import time

from ansible.plugins.action import ActionBase

SAMPLES = 5


def clock_offset(samples):
    """``{offset_s, uncertainty_s, rtt_s, samples}`` from ``[(sent, host_time, received)]`` (controller, host,
    controller clocks): the sample with the shortest round trip, host minus its midpoint, give or take half of it (the
    host read its clock somewhere inside the round trip). None without a usable sample."""
    usable = [(t0, h, t1) for t0, h, t1 in samples if h is not None and t1 >= t0]
    if not usable:
        return None
    t0, host, t1 = min(usable, key=lambda s: s[2] - s[0])
    return {"offset_s": host - (t0 + t1) / 2.0, "uncertainty_s": (t1 - t0) / 2.0, "rtt_s": t1 - t0,
            "samples": len(usable)}


def _host_time(stdout):
    try:
        return float(stdout.strip())
    except (AttributeError, ValueError):
        return None  # no GNU date (%N unsupported prints "N"), or no output


class ActionModule(ActionBase):
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        try:
            result.update(self._execute_module(module_args=dict(self._task.args), task_vars=task_vars))
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        if result.get("failed"):
            return result
        samples = []
        for _sample in range(SAMPLES):
            sent = time.time()
            out = self._low_level_execute_command("date +%s.%N")
            received = time.time()
            samples.append((sent, _host_time(out.get("stdout")) if out.get("rc") == 0 else None, received))
        result["clock"] = clock_offset(samples)
        return result
