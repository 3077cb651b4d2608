# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the experiment's plan: ``flow_plan`` (the experiment over the inventory, as the plan's dict form) and
the modules' arguments made from it: one host's ``flow_step`` arguments (``flow_step_args``), every host's in one task
(``flow_step_batch_args``), a throttled host's ``throttle`` arguments (``throttle_args``), and the owner record of
the experiment's run that every module changing a host is given (``experiment_owner``). Each reads the plan back
with ``Plan.from_dict`` and returns plain dicts."""

from __future__ import annotations

import multiprocessing
import os

from ansible.errors import AnsibleFilterError
from ansible_collections.aifabric.lab.plugins.module_utils._owner import OwnerError, owner_record
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.args import batch_args, host_args, throttle_args
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import plan
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.model import Plan, PlanError

OWNER_GRACE_S = 90.0  # past a step's timeout: its servers' and coordinator's grace (30 s each) and the collect


def _plan(the_plan, name):
    try:
        return Plan.from_dict(the_plan)
    except (PlanError, KeyError, TypeError) as exc:
        raise AnsibleFilterError("%s: give the flow_plan filter's result (%s)" % (name, exc)) from None


def flow_plan(experiment, groups, hostvars, line_rate="8gbit", mtu=9000, switch="switch", interface="eth0",
              rdma_device=None, fabric=None):
    try:
        return plan(experiment, groups, hostvars, line_rate=line_rate, mtu=int(mtu), switch=switch,
                    interface=interface or "eth0", rdma_device=rdma_device or None, fabric=fabric or None).to_dict()
    except PlanError as exc:
        raise AnsibleFilterError("flow_plan: %s" % exc) from None


def flow_step_args(the_plan, host, step, token, throttle=None):
    the_plan = _plan(the_plan, "flow_step_args")
    if host not in the_plan.hosts:
        raise AnsibleFilterError("flow_step_args: %s is not a host of this plan (give the flow_plan filter's result "
                                 "and one of its participants)" % (host,))
    try:
        return host_args(the_plan, host, str(step), str(token), throttle=throttle or None)
    except PlanError as exc:
        raise AnsibleFilterError("flow_step_args: %s" % exc) from None


def flow_step_batch_args(the_plan, step, token, throttles=None, only=None):
    the_plan = _plan(the_plan, "flow_step_batch_args")
    by_host = {}
    for result in throttles or []:
        if isinstance(result, dict) and result.get("item") and not result.get("skipped"):
            by_host[result["item"]] = result
    try:
        return batch_args(the_plan, str(step), str(token), throttles=by_host,
                          only=list(only) if only is not None else None)
    except PlanError as exc:
        raise AnsibleFilterError("flow_step_batch_args: %s" % exc) from None


def throttle_args_filter(the_plan, host):
    try:
        return throttle_args(_plan(the_plan, "throttle_args"), str(host))
    except PlanError as exc:
        raise AnsibleFilterError("throttle_args: %s" % exc) from None


def _controller_pid():
    """The ansible-playbook process: a filter runs in one of its worker processes (forked by multiprocessing), whose
    parent it is; run outside a worker (a test, a script), this process."""
    parent = multiprocessing.parent_process()
    return parent.pid if parent is not None and parent.pid else os.getpid()


def experiment_owner(the_plan, owner_id, now=None):
    """The owner record of one run of an experiment (module_utils/_owner.py): its id, this controller process, and a
    lease as long as the experiment may take (every step's arm timeout, timeout and grace, plus ten minutes)."""
    the_plan = _plan(the_plan, "experiment_owner")
    if not owner_id or not str(owner_id).strip():
        raise AnsibleFilterError("experiment_owner: give the experiment's id (e.g. its name and a random token)")
    lease = len(the_plan.steps) * (the_plan.arm_timeout + the_plan.timeout + OWNER_GRACE_S) + 600.0
    try:
        return owner_record(str(owner_id), lease, pid=_controller_pid(), now=now)
    except OwnerError as exc:
        raise AnsibleFilterError("experiment_owner: %s" % exc) from None


class FilterModule:
    def filters(self):
        return {"flow_plan": flow_plan, "flow_step_args": flow_step_args, "flow_step_batch_args": flow_step_batch_args,
                "throttle_args": throttle_args_filter, "experiment_owner": experiment_owner}
