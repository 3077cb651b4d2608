# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The barrier report as text (``report.txt``, and what the callback prints at the end of a play): the template
``templates/report.txt.j2`` (its lines are the report's lines; a line that goes on ends with ``{# #}``)."""

from __future__ import annotations

from ansible_collections.aifabric.lab.plugins.plugin_utils._report.bmwg import rows as test_report_rows
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.templates import template_text
from jinja2 import Environment, StrictUndefined

__all__ = ["render_text"]


_ENV = Environment(undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False, trim_blocks=True,
                   lstrip_blocks=True)
_TEMPLATE = _ENV.from_string(template_text("report.txt.j2"))


def render_text(report):
    rows = test_report_rows(report["test_report"]) if report.get("test_report") else []
    return _TEMPLATE.render(report=report, brief=_brief_steps(report), test_report_rows=rows)


def _brief_steps(report):
    """Steps printed on one line: an experiment's repeated steps after its first (the summary follows), unless
    they failed."""
    brief = set()
    ok = {s["step"] for s in report["steps"] if s["status"] == "ok"}
    for e in report.get("experiments") or []:
        names = [x["step"] for x in e.get("series") or []]
        if len(names) > 1:
            brief.update(n for n in names[1:] if n in ok)
    return brief
