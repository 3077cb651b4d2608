# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who holds what the collection makes on a host for an experiment: the owner record, and whether it is still live.

An owner record (the ``owner`` option of the modules that change a host for an experiment, kept beside what they
make)::

    {"id": "<the experiment's id>",
     "controller": {"host": "<the controller's hostname>", "pid": <ansible-playbook's PID>,
                    "start_ticks": <its start time, /proc/<pid>/stat field 22>, "boot_id": "<the controller's boot>"},
     "lease_until": <epoch seconds>}

An owner is live while its lease has not expired and, when its controller runs on the machine that asks (same
hostname and same boot id: the netns lab, where every host is a namespace of the controller's machine), only while
that controller process is itself (``_proc.same_process``): a killed ``ansible-playbook`` frees what it held at
once there, and elsewhere when its lease runs out. The lease is wall-clock time, because it is compared across
machines; keep it short and renew it (the record is rewritten with each task that passes the owner).
"""

from __future__ import annotations

import math
import socket
import time

from . import _proc

__all__ = ["OWNER_OPTIONS", "OwnerError", "validate", "owner_record", "this_machine", "liveness", "same_owner",
           "describe"]

# The argument spec of ``owner`` (its documentation: doc_fragments/owner.py).
OWNER_OPTIONS = dict(
    id=dict(type="str", required=True),
    controller=dict(type="dict", required=True, options=dict(
        host=dict(type="str", required=True),
        pid=dict(type="int", required=True),
        start_ticks=dict(type="int"),
        boot_id=dict(type="str"),
    )),
    lease_until=dict(type="float", required=True),
)

# an epoch in seconds stays below this until the year 5138; a larger number is an epoch in milliseconds
_MAX_EPOCH = 1e11


class OwnerError(ValueError):
    """A malformed owner record; the message names the parameter and the fix."""


def validate(owner, param="owner"):
    """The record, checked and normalised (``None`` stays ``None``); raises OwnerError naming the field."""
    if owner is None:
        return None
    if not isinstance(owner, dict):
        raise OwnerError("%s: %r is not an owner record; give {id, controller: {host, pid, start_ticks, boot_id}, "
                         "lease_until}" % (param, owner))
    ident = owner.get("id")
    if not isinstance(ident, str) or not ident.strip() or len(ident) > 200 or not ident.isprintable():
        raise OwnerError("%s.id: %r; give the experiment's id, printable text of 1-200 characters" % (param, ident))
    ctrl = owner.get("controller")
    if not isinstance(ctrl, dict):
        raise OwnerError("%s.controller: %r; give {host, pid, start_ticks, boot_id} of the controller process"
                         % (param, ctrl))
    host = ctrl.get("host")
    if not isinstance(host, str) or not host:
        raise OwnerError("%s.controller.host: %r; give the controller's hostname" % (param, host))
    pid = ctrl.get("pid")
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        raise OwnerError("%s.controller.pid: %r; give the controller process's PID (a positive integer)"
                         % (param, pid))
    ticks = ctrl.get("start_ticks")
    if ticks is not None and (isinstance(ticks, bool) or not isinstance(ticks, int) or ticks < 0):
        raise OwnerError("%s.controller.start_ticks: %r; give the process's start time in clock ticks (field 22 of "
                         "/proc/PID/stat) or leave it out" % (param, ticks))
    boot = ctrl.get("boot_id")
    if boot is not None and (not isinstance(boot, str) or not boot):
        raise OwnerError("%s.controller.boot_id: %r; give /proc/sys/kernel/random/boot_id of the controller or "
                         "leave it out" % (param, boot))
    lease = owner.get("lease_until")
    if isinstance(lease, bool) or not isinstance(lease, (int, float)) or not math.isfinite(lease) or lease <= 0:
        raise OwnerError("%s.lease_until: %r; give the lease's end as epoch seconds (a finite number)"
                         % (param, lease))
    if lease > _MAX_EPOCH:
        raise OwnerError("%s.lease_until: %r looks like epoch milliseconds; give seconds" % (param, lease))
    return {"id": ident, "controller": {"host": host, "pid": pid, "start_ticks": ticks, "boot_id": boot},
            "lease_until": float(lease)}


def owner_record(owner_id, lease_seconds, pid=None, now=None, root="/"):
    """The record for an experiment run by this process (or ``pid``), leased for ``lease_seconds`` from ``now``."""
    ident = _proc.identity(pid, root)
    controller = {"host": socket.gethostname(), "pid": ident["pid"], "start_ticks": ident["start_ticks"],
                  "boot_id": ident["boot_id"]}
    start = time.time() if now is None else now
    return validate({"id": owner_id, "controller": controller, "lease_until": start + float(lease_seconds)})


def this_machine(root="/"):
    """What tells this machine from another: its hostname and its boot id."""
    return {"host": socket.gethostname(), "boot_id": _proc.boot_id(root)}


def liveness(owner, now=None, root="/", machine=None):
    """``(live, reason)``: True while the owner holds what it made, False once it is gone (lease expired, or its
    controller on this machine ended), None when there is no owner to ask."""
    if owner is None:
        return None, "no owner recorded"
    try:
        owner = validate(owner)
    except OwnerError as exc:
        return False, "the owner record is unreadable (%s)" % exc
    now = time.time() if now is None else now
    machine = machine or this_machine(root)
    ctrl = owner["controller"]
    if now >= owner["lease_until"]:
        return False, "its lease expired %.0f s ago" % (now - owner["lease_until"])
    here = ctrl["host"] == machine.get("host") and ctrl["boot_id"] and ctrl["boot_id"] == machine.get("boot_id")
    if here:
        if not _proc.same_process(ctrl, root):
            return False, "its controller (pid %d on this machine) has ended" % ctrl["pid"]
        return True, "its controller (pid %d) runs on this machine; lease %.0f s left" % (
            ctrl["pid"], owner["lease_until"] - now)
    return True, "lease %.0f s left (controller pid %d on %s)" % (owner["lease_until"] - now, ctrl["pid"], ctrl["host"])


def same_owner(a, b):
    """Whether two records name the same experiment run by the same controller process."""
    if not a or not b:
        return False
    ca, cb = a.get("controller") or {}, b.get("controller") or {}
    return a.get("id") == b.get("id") and all(ca.get(k) == cb.get(k) for k in ("host", "pid", "start_ticks",
                                                                               "boot_id"))


def describe(owner):
    """``experiment <id> (controller <host> pid <pid>)`` for messages and tables."""
    if not owner:
        return "no owner"
    ctrl = owner.get("controller") or {}
    return "experiment %s (controller %s pid %s)" % (owner.get("id"), ctrl.get("host"), ctrl.get("pid"))
