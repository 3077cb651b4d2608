# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters ``preflight_report`` (every host's preflight_info result checked into one table and its failures) and
``preflight_paths`` (the host pairs of a plan's flows)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.aifabric.lab.plugins.plugin_utils._preflight import paths_of_plan, report


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
    if not isinstance(plan, dict):
        raise AnsibleFilterError("preflight_paths: give a plan (the flow_plan filter's result)")
    return [list(p) for p in paths_of_plan(plan)]


class FilterModule:
    def filters(self):
        return {"preflight_report": preflight_report, "preflight_paths": preflight_paths}
