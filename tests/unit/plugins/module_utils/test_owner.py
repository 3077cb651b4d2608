# -*- coding: utf-8 -*-
"""_owner: the owner record, and when an owner is live (lease, and on this machine its controller process)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils import _owner, _proc
from ansible_collections.aifabric.lab.plugins.module_utils._owner import (
    OwnerError,
    liveness,
    owner_record,
    same_owner,
    validate,
)

NOW = 1_750_000_000.0


def record(host="ctl1", pid=4242, ticks=777, boot="b-ctl", lease=NOW + 300):
    return {"id": "barrier-7f3a", "controller": {"host": host, "pid": pid, "start_ticks": ticks, "boot_id": boot},
            "lease_until": lease}


HERE = {"host": "lab1", "boot_id": "b-lab"}


def test_a_controller_elsewhere_is_live_until_its_lease_ends():
    assert liveness(record(), now=NOW, machine=HERE) == (True, "lease 300 s left (controller pid 4242 on ctl1)")
    assert liveness(record(lease=NOW - 12), now=NOW, machine=HERE) == (False, "its lease expired 12 s ago")
    assert liveness(record(lease=NOW), now=NOW, machine=HERE)[0] is False  # the end of the lease is not in it


def test_on_this_machine_the_controller_must_be_the_same_process():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        mine = owner_record("exp", 300, pid=child.pid, now=NOW)
        machine = _owner.this_machine()
        with open("/proc/%d/stat" % child.pid) as handle:
            start_ticks = int(handle.read().rsplit(")", 1)[1].split()[19])  # field 22 (after "(comm)": 3, 4, ...)
        assert mine["controller"]["host"] == machine["host"] and mine["controller"]["start_ticks"] == start_ticks
        live, why = liveness(mine, now=NOW + 1, machine=machine)
        assert live and why.startswith("its controller (pid %d) runs on this machine" % child.pid)
        # the same PID with another start time is a later process: not the controller
        reused = dict(mine, controller=dict(mine["controller"], start_ticks=mine["controller"]["start_ticks"] + 1))
        assert liveness(reused, now=NOW + 1, machine=machine) == (
            False, "its controller (pid %d on this machine) has ended" % child.pid)
    finally:
        child.kill()
        child.wait()
    assert liveness(mine, now=NOW + 1, machine=machine) == (
        False, "its controller (pid %d on this machine) has ended" % child.pid)
    # the lease decides first: an ended controller whose lease ran out says so
    assert liveness(mine, now=NOW + 400, machine=machine) == (False, "its lease expired 100 s ago")


def test_same_host_another_boot_is_judged_by_the_lease_alone():
    """The hostname matches but the boot id does not: a machine with the same name, or this one before a reboot;
    nothing tells them apart, so the lease decides."""
    assert liveness(record(host="lab1", boot="older"), now=NOW, machine=HERE)[0] is True
    assert liveness(record(host="lab1", boot=None), now=NOW, machine=HERE)[0] is True


def test_no_owner_and_a_broken_one():
    assert liveness(None) == (None, "no owner recorded")
    live, why = liveness({"id": "x"}, now=NOW, machine=HERE)
    assert live is False and why.startswith("the owner record is unreadable (owner.controller: None")


@pytest.mark.parametrize("change,message", [
    ({"id": ""}, "owner.id: ''"),
    ({"id": "a\nb"}, "owner.id: 'a\\\\nb'"),
    ({"controller": "ctl1"}, "owner.controller: 'ctl1'"),
    ({"controller": {"host": "ctl1", "pid": 0}}, "owner.controller.pid: 0"),
    ({"controller": {"host": "ctl1", "pid": True}}, "owner.controller.pid: True"),
    ({"controller": {"host": "", "pid": 1}}, "owner.controller.host: ''"),
    ({"controller": {"host": "c", "pid": 1, "start_ticks": -1}}, "owner.controller.start_ticks: -1"),
    ({"lease_until": float("inf")}, "owner.lease_until: inf"),
    ({"lease_until": float("nan")}, "owner.lease_until: nan"),
    ({"lease_until": "soon"}, "owner.lease_until: 'soon'"),
    ({"lease_until": 1_750_000_000_000}, "looks like epoch milliseconds"),
])
def test_a_bad_record_names_its_field(change, message):
    with pytest.raises(OwnerError, match=message):
        validate(dict(record(), **change))


def test_validate_normalises_and_keeps_none():
    assert validate(None) is None
    out = validate(dict(record(), lease_until=NOW + 5, controller={"host": "c", "pid": 9}))
    assert out == {"id": "barrier-7f3a", "controller": {"host": "c", "pid": 9, "start_ticks": None, "boot_id": None},
                   "lease_until": NOW + 5}


def test_same_owner_is_the_same_experiment_and_controller():
    a = record()
    assert same_owner(a, dict(a, lease_until=NOW + 999))
    assert not same_owner(a, dict(a, id="other"))
    assert not same_owner(a, dict(a, controller=dict(a["controller"], start_ticks=778)))
    assert not same_owner(a, None)


def test_owner_record_of_this_process():
    mine = owner_record("exp", 60, now=NOW)
    assert mine["controller"]["pid"] == os.getpid() and mine["lease_until"] == NOW + 60
    assert mine["controller"]["boot_id"] == _proc.boot_id()
