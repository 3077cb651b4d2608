# -*- coding: utf-8 -*-
"""netns_topology's glue (``_netns_topology_module``): the lab's record and its owner, read, compared and written
beside what Topology changes (its netlink side stands in: what it would change is given, what it was asked is kept)."""
from __future__ import annotations

import os

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils import _host_state, _netns_topology_module
from ansible_collections.aifabric.lab.plugins.module_utils._netns_topology import Topology
from ansible_collections.aifabric.lab.plugins.module_utils._owner import owner_record
from module_like import Done, ModuleLike


def params(**kw):
    base = {"switch_namespace": "t-sw", "bridge": "br0", "mtu": 9000, "state": "present", "process_grace": 6.0,
            "state_dir": "/run/aifabric-lab", "owner": None,
            "hosts": [{"namespace": "t-a", "interface": "eth0", "port": "p-a", "address": "198.18.0.1/24"},
                      {"namespace": "t-b", "interface": None, "port": "p-b", "address": "198.18.0.2/24"}]}
    base.update(kw)
    return base


def _run(module, monkeypatch, missing=(), present=("t-sw", "t-a", "t-b")):
    applied = []
    monkeypatch.setattr(Topology, "missing", lambda self, topo: list(missing))
    monkeypatch.setattr(Topology, "apply", lambda self, topo: applied.append(topo["switch"]))
    monkeypatch.setattr(Topology, "present_namespaces", lambda self, topo: list(present))
    monkeypatch.setattr(Topology, "processes", lambda self, topo: {})
    monkeypatch.setattr(Topology, "remove", lambda self, topo, grace=6.0: applied.append("removed") or {})
    with pytest.raises(Done):
        _netns_topology_module.run_module(module)
    return module.result, applied


def test_the_lab_is_recorded_with_its_owner_and_the_record_goes_with_it(tmp_path, monkeypatch):
    owner = owner_record("exp-a", 600)
    up = params(state_dir=str(tmp_path), owner=owner, process_grace=0.1)
    result, applied = _run(ModuleLike(up), monkeypatch, missing=["namespace t-sw"])
    assert result["changed"] and applied == ["t-sw"]
    record = _host_state.read_record(os.path.join(str(tmp_path), "labs", "t-sw.json"))
    assert record["kind"] == "netns_lab" and record["namespaces"] == ["t-sw", "t-a", "t-b"]
    assert record["owner"] == owner and record["topology"]["hosts"][1]["address"] == "198.18.0.2/24"
    # up already, the same record: nothing to do
    result, applied = _run(ModuleLike(up), monkeypatch)
    assert not result["changed"] and applied == []
    # another live experiment neither changes the lab nor takes it down
    other = dict(up, owner=owner_record("exp-b", 600))
    result, _applied = _run(ModuleLike(other), monkeypatch, missing=["link p-a"])
    assert result["failed"] and "the lab t-sw belongs to experiment exp-a" in result["msg"]
    module = ModuleLike(dict(other, state="absent"))
    result, applied = _run(module, monkeypatch)
    assert not result["changed"] and result["held_by"]["id"] == "exp-a" and applied == []
    assert "leaving the lab t-sw: it belongs to experiment exp-a" in module.warnings[0]
    # its own owner takes it down, and the record with it
    result, applied = _run(ModuleLike(dict(up, state="absent")), monkeypatch)
    assert result["changed"] and applied == ["removed"]
    assert not os.path.exists(os.path.join(str(tmp_path), "labs", "t-sw.json"))


def test_a_lab_up_before_its_record_gets_one(tmp_path, monkeypatch):
    up = params(state_dir=str(tmp_path), owner=None, process_grace=0.1)
    result, _applied = _run(ModuleLike(up, check_mode=True), monkeypatch)
    assert result["changed"] and _host_state.records(str(tmp_path), "labs") == []
    result, _applied = _run(ModuleLike(up), monkeypatch)
    assert result["changed"] and _host_state.records(str(tmp_path), "labs")[0][1]["owner"] is None
    assert not _run(ModuleLike(up), monkeypatch)[0]["changed"]


def test_taking_the_lab_down_takes_its_shapers_records_and_no_others(tmp_path, monkeypatch):
    for netns in ("netns-t-sw", "netns-t-a", "netns-other"):
        _host_state.write_record(_host_state.shaper_record_path(str(tmp_path), netns, "eth0"),
                                 {"kind": "shaper", "device": "eth0", "owner": None})
    result, applied = _run(ModuleLike(params(state="absent", state_dir=str(tmp_path), owner=None, process_grace=0.1)),
                           monkeypatch, present=("t-sw", "t-a"))
    assert result["changed"] and applied == ["removed"]
    assert [os.path.basename(os.path.dirname(p)) for p, _r in _host_state.records(str(tmp_path), "shapers")] == [
        "netns-other"]
