# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the experiment's plan: ``flow_plan`` (the experiment over the inventory) and the ``flow_step``
module's arguments made from it, one host's (``flow_step_args``) or every host's in one task
(``flow_step_batch_args``)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.args import batch_args, host_args
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import ExperimentError, plan


def flow_plan(experiment, groups, hostvars, line_rate="8gbit", mtu=9000, switch="switch", interface="eth0",
              rdma_device=None, fabric=None):
    try:
        return plan(experiment, groups, hostvars, line_rate=line_rate, mtu=int(mtu), switch=switch,
                    interface=interface or "eth0", rdma_device=rdma_device or None, fabric=fabric or None)
    except ExperimentError as exc:
        raise AnsibleFilterError("flow_plan: %s" % exc) from None


def flow_step_args(the_plan, host, step, token, throttle=None):
    if not isinstance(the_plan, dict) or host not in (the_plan.get("hosts") or {}):
        raise AnsibleFilterError("flow_step_args: %s is not a host of this plan (give the flow_plan filter's result "
                                 "and one of its participants)" % (host,))
    return host_args(the_plan, host, str(step), str(token), throttle=throttle or None)


def flow_step_batch_args(the_plan, step, token, throttles=None, only=None):
    if not isinstance(the_plan, dict) or "participants" not in the_plan:
        raise AnsibleFilterError("flow_step_batch_args: give the flow_plan filter's result")
    by_host = {}
    for result in throttles or []:
        if isinstance(result, dict) and result.get("item") and not result.get("skipped"):
            by_host[result["item"]] = result
    try:
        return batch_args(the_plan, str(step), str(token), throttles=by_host,
                          only=list(only) if only is not None else None)
    except ExperimentError as exc:
        raise AnsibleFilterError("flow_step_batch_args: %s" % exc) from None


class FilterModule:
    def filters(self):
        return {"flow_plan": flow_plan, "flow_step_args": flow_step_args, "flow_step_batch_args": flow_step_batch_args}
