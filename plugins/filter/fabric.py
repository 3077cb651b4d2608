# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the fabric lab: the fabric from the inventory, the lookups a plan needs, the placement they give."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.aifabric.lab.plugins.plugin_utils._fabric.lab import FabricLabError, fabric_topology, place
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.args import lookup_flows
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import Plan, PlanError


def fabric_lab_topology(groups, hostvars, prefix="aff-", hash_name="l4", seed=None, host_rate=None, uplink_rate=None,
                        mtu=9000):
    try:
        return fabric_topology(groups, hostvars, prefix=prefix, hash_name=hash_name, seed=seed, host_rate=host_rate,
                               uplink_rate=uplink_rate, mtu=int(mtu))
    except FabricLabError as exc:
        raise AnsibleFilterError("fabric_lab_topology: %s" % exc) from None


def _plan(the_plan, name):
    try:
        return Plan.from_dict(the_plan)
    except (PlanError, KeyError, TypeError) as exc:
        raise AnsibleFilterError("%s: give the flow_plan filter's result (%s)" % (name, exc)) from None


def fabric_lookup_flows(the_plan):
    plan = _plan(the_plan, "fabric_lookup_flows")
    if not plan.fabric:
        return []
    return lookup_flows(plan)


def fabric_place(the_plan, paths):
    plan = _plan(the_plan, "fabric_place")
    if not plan.fabric:
        return the_plan
    try:
        return place(plan, paths).to_dict()
    except FabricLabError as exc:
        raise AnsibleFilterError("fabric_place: %s" % exc) from None


class FilterModule:
    def filters(self):
        return {"fabric_lab_topology": fabric_lab_topology, "fabric_lookup_flows": fabric_lookup_flows,
                "fabric_place": fabric_place}
