# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the preflight: ``preflight_report`` (every host's preflight_info result checked into one table and its
failures), and from a plan ``preflight_paths`` (the host pairs of its flows), ``preflight_args`` (one host's
preflight_info arguments) and ``preflight_checks`` (what preflight_report checks the results against)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.args import (
    host_pairs,
    preflight_args,
    preflight_checks,
)
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import Plan, PlanError
from ansible_collections.aifabric.lab.plugins.plugin_utils._preflight import report


def _plan(the_plan, name):
    try:
        return Plan.from_dict(the_plan)
    except (PlanError, KeyError, TypeError) as exc:
        raise AnsibleFilterError("%s: give a plan (the flow_plan filter's result): %s" % (name, exc)) from None


def preflight_report(results, paths=None, expect=None, addresses=None):
    if not isinstance(results, dict) or not all(isinstance(v, dict) for v in results.values()):
        raise AnsibleFilterError("preflight_report: give {host: the preflight_info result registered on it}")
    if paths is not None:
        if not isinstance(paths, (list, tuple)) or not all(isinstance(p, (list, tuple)) and len(p) == 2 for p in paths):
            raise AnsibleFilterError("preflight_report: paths must be a list of [host, host] pairs, got %r" % (paths,))
        paths = [tuple(p) for p in paths]
    try:
        return report(dict(results), paths, expect, addresses)
    except ValueError as exc:
        raise AnsibleFilterError("preflight_report: %s" % exc) from None


def preflight_paths(plan):
    return [list(p) for p in host_pairs(_plan(plan, "preflight_paths"))]


def preflight_args_filter(plan, host):
    try:
        return preflight_args(_plan(plan, "preflight_args"), str(host))
    except PlanError as exc:
        raise AnsibleFilterError("preflight_args: %s" % exc) from None


def preflight_checks_filter(plan):
    return preflight_checks(_plan(plan, "preflight_checks"))


class FilterModule:
    def filters(self):
        return {"preflight_report": preflight_report, "preflight_paths": preflight_paths,
                "preflight_args": preflight_args_filter, "preflight_checks": preflight_checks_filter}
