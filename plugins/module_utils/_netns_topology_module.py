# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The netns_topology module's glue: its arguments, and ``run_module`` (the star checked by ``validate``, read,
compared and built or removed by ``Topology``; the lab's record and its owner, ``_host_state``)."""

from __future__ import annotations

import os

from . import _host_state, _pyroute2
from ._netns_topology import Topology, TopologyError, _alive, lab_record, validate
from ._owner import OWNER_OPTIONS, OwnerError, describe
from ._owner import validate as validate_owner


def module_args():
    """AnsibleModule's keyword arguments for netns_topology."""
    return dict(
        argument_spec=dict(
            switch_namespace=dict(type="str", required=True),
            bridge=dict(type="str", default="br0"),
            mtu=dict(type="int", default=9000),
            hosts=dict(type="list", elements="dict", required=True, options=dict(
                namespace=dict(type="str", required=True),
                interface=dict(type="str", default="eth0"),
                port=dict(type="str", required=True),
                address=dict(type="str", required=True),
            )),
            state=dict(type="str", default="present", choices=["present", "absent"]),
            process_grace=dict(type="float", default=6.0),
            state_dir=dict(type="path", default="/run/aifabric-lab"),
            owner=dict(type="dict", options=OWNER_OPTIONS),
        ),
        supports_check_mode=True,
    )


def run_module(module, netns=None, iproute=None):
    _pyroute2.require_pyroute2(module)
    try:
        topo = validate(module.params)
        owner = validate_owner(module.params.get("owner"))
    except (TopologyError, OwnerError) as exc:
        module.fail_json(msg=str(exc))
    topology = Topology(netns or _pyroute2.netns, iproute or _pyroute2.IPRoute)
    state_dir = module.params["state_dir"]
    record_path = _host_state.lab_record_path(state_dir, topo["switch"])
    record = _host_state.read_record(record_path)
    held = _host_state.held_by_another(record, owner)
    if module.params["state"] == "present":
        todo = topology.missing(topo)
        if held and todo:
            module.fail_json(msg="switch_namespace: the lab %s belongs to %s, which is live (%s); this task would "
                                 "change it (%s). Use another namespace prefix, or wait for that experiment to end"
                                 % (topo["switch"], describe(held[0]), held[1], ", ".join(todo)))
        new = lab_record(topo, owner, record)
        record_changed = not held and not _host_state.same_record(record, new)
        changed = bool(todo) or record_changed
        if not module.check_mode:
            if todo:
                topology.apply(topo)
            if not held and (record_changed or (record or {}).get("owner") != owner):
                try:
                    _host_state.write_record(record_path, new)
                except OSError as exc:
                    if owner:
                        module.fail_json(msg="state_dir: cannot record the lab's owner in %s: %s" % (
                            record_path, exc.strerror or exc))
                    module.warn("the lab is up but its record could not be written (%s): aifabric.lab.lab_leftovers "
                                "will not know it" % (exc.strerror or exc))
        diff = {"before": {"missing": todo}, "after": {"missing": []}}
    stopped = {}
    if module.params["state"] == "absent":
        if held:
            module.warn("leaving the lab %s: it belongs to %s, which is live (%s)"
                        % (topo["switch"], describe(held[0]), held[1]))
            module.exit_json(changed=False, changes=[], diff={}, stopped_processes={}, held_by=held[0],
                             namespaces=[topo["switch"]] + [h["namespace"] for h in topo["hosts"]])
        todo = topology.present_namespaces(topo)
        running = topology.processes(topo)
        changed = bool(todo)
        if changed and not module.check_mode:
            stopped = topology.remove(topo, module.params["process_grace"])
            Topology.remove_server_files(topo, state_dir)
            Topology.remove_step_files(state_dir, _alive)
        if not module.check_mode:
            if record is not None:
                _host_state.remove_record(record_path)
            # the shapers' records of the lab's namespaces go with their namespaces
            gone = {"netns-" + ns for ns in todo}
            for path, _rec in _host_state.records(state_dir, "shapers"):
                if os.path.basename(os.path.dirname(path)) in gone:
                    _host_state.remove_record(path)
        diff = {"before": {"namespaces": todo, "processes": running}, "after": {"namespaces": [], "processes": {}}}
        if stopped:
            module.warn("stopped processes still running inside the lab: %s" % stopped)
    module.exit_json(changed=changed, changes=todo, diff=diff, stopped_processes=stopped, record=record_path,
                     namespaces=[topo["switch"]] + [h["namespace"] for h in topo["hosts"]])
