# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the barrier report: a run directory's report (``run_report``, the one analysis) and its files
(``report_json``, ``report_text``, ``report_files``); ``render_run`` (deprecated) writes them."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.build import analyze_run
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.build import render_run as _render_run
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.build import report_files as _report_files
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.build import report_json as _report_json
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.text import render_text as _render_text


def run_report(run_dir):
    try:
        return analyze_run(str(run_dir))
    except (OSError, ValueError) as exc:
        raise AnsibleFilterError("run_report: %s" % exc) from None


def report_json(report):
    if not isinstance(report, dict) or "steps" not in report:
        raise AnsibleFilterError("report_json: give a report (the run_report filter's result)")
    return _report_json(report)


def report_text(report):
    if not isinstance(report, dict) or "steps" not in report:
        raise AnsibleFilterError("report_text: give a report (the run_report filter's result)")
    return _render_text(report)


def report_files(report):
    if not isinstance(report, dict) or "steps" not in report:
        raise AnsibleFilterError("report_files: give a report (the run_report filter's result)")
    return _report_files(report)


def render_run(run_dir):
    try:
        return _render_run(str(run_dir))
    except (OSError, ValueError) as exc:
        raise AnsibleFilterError("render_run: %s" % exc) from None


class FilterModule:
    def filters(self):
        return {"run_report": run_report, "report_json": report_json, "report_text": report_text,
                "report_files": report_files, "render_run": render_run}
