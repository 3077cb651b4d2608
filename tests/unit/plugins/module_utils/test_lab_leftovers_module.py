# -*- coding: utf-8 -*-
"""lab_leftovers' glue (``_lab_leftovers_module``): the options checked, the scanner's findings reported (a table, a
diff, the summary), check mode first, then the removal, then nothing left."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils import _lab_leftovers_module
from module_like import Done, ModuleLike

RUN = "3f2a9c0d11e4b7a2"


def module(params, check_mode=False, diff=True):
    defaults = {"remove": False, "state_dir": None, "owner": None, "unowned": "keep", "results": "move",
                "min_age": 900.0, "grace": 5.0, "namespaces": None}
    return ModuleLike(dict(defaults, **params), check_mode=check_mode, diff=diff)


@pytest.fixture
def children():
    """Processes this test starts; every one ends with the test."""
    started = []

    def start():
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        started.append(child)
        return child

    yield start
    for child in started:
        if child.poll() is None:
            child.kill()
        child.wait()


def dead_pid(children):
    child = children()
    child.kill()
    child.wait()
    return child.pid


def write(path, data, age=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        json.dump(data, handle)
    if age is not None:
        then = time.time() - age
        os.utime(path, (then, then))
    return path


def test_the_module_lists_then_removes_and_says_what_with_a_diff(tmp_path, monkeypatch, children):
    monkeypatch.setattr(_lab_leftovers_module, "IPRoute", None)  # the files only: no qdisc of this host is read
    write(tmp_path / ("step-%s-worker1.pid" % RUN), {"pid": dead_pid(children), "run": RUN, "started_at": 1.0})
    write(tmp_path / ("step-%s-worker1.json" % RUN), {"host": "worker1"}, age=3600)
    mod = module({"state_dir": str(tmp_path)}, check_mode=True)
    with pytest.raises(Done):
        _lab_leftovers_module.run_module(mod)
    listed = mod.result
    assert not listed["changed"] and listed["summary"]["would_remove"] == 2 and listed["summary"]["removed"] == 0
    assert [i["action"] for i in listed["leftovers"]] == ["would remove", "would move"]
    assert listed["table"][0].split()[:2] == ["kind", "name"] and "pyroute2 is not installed" in mod.warnings[0]
    assert "pidfile step-%s-worker1 (owner none): stale: pid" % RUN in listed["diff"]["before"]
    assert listed["diff"]["after"] == ""
    mod = module({"state_dir": str(tmp_path), "remove": True})
    with pytest.raises(Done):
        _lab_leftovers_module.run_module(mod)
    assert mod.result["changed"] and mod.result["summary"]["removed"] == 2
    mod = module({"state_dir": str(tmp_path), "remove": True})
    with pytest.raises(Done):
        _lab_leftovers_module.run_module(mod)
    assert not mod.result["changed"] and mod.result["leftovers"] == [] and mod.result["table"] == [
        "no leftovers"]


@pytest.mark.parametrize("params,message", [
    ({"min_age": -1.0}, "min_age: -1.0 is negative"),
    ({"namespaces": ["afl-worker1", "../etc"]}, "namespaces[1]: '../etc' is not a network namespace name"),
    ({"owner": {"id": "x", "controller": {"host": "c", "pid": 1}, "lease_until": float("inf")}},
     "owner.lease_until: inf"),
])
def test_the_module_refuses_bad_options(tmp_path, params, message):
    mod = module(dict(params, state_dir=str(tmp_path)))
    with pytest.raises(Done):
        _lab_leftovers_module.run_module(mod)
    assert mod.result["failed"] and message in mod.result["msg"]
