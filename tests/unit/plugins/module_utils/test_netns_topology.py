# -*- coding: utf-8 -*-
from __future__ import annotations

import os
import signal
import time

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._netns_topology import Topology, TopologyError, validate


def params(**kw):
    base = {"switch_namespace": "t-sw", "bridge": "br0", "mtu": 9000, "state": "present",
            "hosts": [{"namespace": "t-a", "interface": "eth0", "port": "p-a", "address": "198.18.0.1/24"},
                      {"namespace": "t-b", "interface": None, "port": "p-b", "address": "198.18.0.2/24"}]}
    base.update(kw)
    return base


def test_valid_topology_defaults_the_interface():
    topo = validate(params())
    assert [h["interface"] for h in topo["hosts"]] == ["eth0", "eth0"]


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"switch_namespace": "bad/name"}, "switch_namespace"),
        ({"bridge": "a-bridge-name-too-long"}, "bridge"),
        ({"mtu": 40}, "mtu: 40 is outside 68-65535"),
        ({"hosts": [{"namespace": "t-sw", "port": "p", "address": "198.18.0.1/24"}]}, "used twice"),
        ({"hosts": [{"namespace": "t-a", "port": "p-a", "address": "198.18.0.1/24"},
                    {"namespace": "t-b", "port": "p-a", "address": "198.18.0.2/24"}]}, "port: p-a is used twice"),
        ({"hosts": [{"namespace": "t-a", "port": "p-a", "address": "198.18.0.1/24"},
                    {"namespace": "t-b", "port": "p-b", "address": "198.18.0.1/24"}]}, "198.18.0.1 is used twice"),
        ({"hosts": [{"namespace": "t-a", "port": "p-a", "address": "sink"}]}, r"hosts\[0\].address: 'sink'"),
        ({"hosts": [{"namespace": "t-a", "port": "port-name-too-long", "address": "198.18.0.1/24"}]}, "port"),
    ],
)
def test_bad_topology(kw, message):
    with pytest.raises(TopologyError, match=message):
        validate(params(**kw))


def test_pids_in_namespace_matches_by_inode(tmp_path):
    """A fixture /proc and /run/netns: the process whose ns/net is the same file as the bind mount is found."""
    from ansible_collections.aifabric.lab.plugins.module_utils._netns_topology import pids_in_namespace

    run = tmp_path / "run"
    proc = tmp_path / "proc"
    run.mkdir()
    (run / "lab-a").write_text("")
    (run / "lab-b").write_text("")
    for pid, target in (("10", "lab-a"), ("11", "lab-b"), ("12", "lab-a")):
        (proc / pid / "ns").mkdir(parents=True)
        os.link(str(run / target), str(proc / pid / "ns" / "net"))  # same inode, as the kernel shows it
    (proc / "self").mkdir()
    (proc / "13" / "ns").mkdir(parents=True)  # a process whose namespace cannot be read
    assert pids_in_namespace("lab-a", run_dir=str(run), proc=str(proc)) == [10, 12]
    assert pids_in_namespace("lab-b", run_dir=str(run), proc=str(proc)) == [11]
    assert pids_in_namespace("missing", run_dir=str(run), proc=str(proc)) == []


def test_stop_processes_escalates_to_kill():
    from ansible_collections.aifabric.lab.plugins.module_utils._netns_topology import stop_processes

    sent = []
    alive = {1: True, 2: True}

    def kill(pid, sig):
        sent.append((pid, sig))
        if pid == 1:  # obeys SIGTERM
            alive[1] = False

    assert stop_processes([1, 2], grace=0.1, kill=kill, alive=lambda pid: alive[pid]) == [1, 2]
    assert sent == [(1, signal.SIGTERM), (2, signal.SIGTERM), (2, signal.SIGKILL)]


@pytest.mark.needs_root
def test_real_process_in_a_namespace_is_stopped():
    """The real thing: a sleep inside a fresh namespace is found by inode and stopped."""
    import shutil
    import subprocess

    from ansible_collections.aifabric.lab.plugins.module_utils._netns_topology import pids_in_namespace, stop_processes

    if os.geteuid() != 0 or not shutil.which("ip"):
        pytest.skip("needs root and iproute2")
    name = "aflt-unit-%d" % os.getpid()
    subprocess.check_call(["ip", "netns", "add", name])
    proc = None
    try:
        proc = subprocess.Popen(["ip", "netns", "exec", name, "sleep", "30"])
        for _attempt in range(50):
            pids = pids_in_namespace(name)
            if pids:
                break
            time.sleep(0.05)
        assert pids, "the sleep did not show up in the namespace"
        assert stop_processes(pids, grace=2) == pids
        assert proc.wait(5) is not None
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
        subprocess.call(["ip", "netns", "delete", name])


def test_server_files_of_the_lab_are_removed_and_only_those(tmp_path):
    from ansible_collections.aifabric.lab.plugins.module_utils._netns_topology import Topology

    for name in ("server-198.18.0.1-18600.json", "server-198.18.0.1-18600.pid", "server-198.18.0.100-18600.pid",
                 "server-2001_db8__1-18600.pid", "other.txt"):
        (tmp_path / name).write_text("{}")
    topo = validate(params(hosts=[{"namespace": "t-a", "interface": None, "port": "p-a", "address": "198.18.0.1/24"},
                                  {"namespace": "t-b", "interface": None, "port": "p-b", "address": "2001:db8::1/64"}]))
    removed = Topology.remove_server_files(topo, str(tmp_path))
    assert removed == ["server-198.18.0.1-18600.json", "server-198.18.0.1-18600.pid", "server-2001_db8__1-18600.pid"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.txt", "server-198.18.0.100-18600.pid"]


def test_lab_down_removes_the_files_of_ended_steps_and_keeps_a_running_ones(tmp_path):
    import json

    def write(name, data):
        (tmp_path / name).write_text(json.dumps(data))

    write("step-aaaa-worker1.pid", {"pid": 999999999})  # ended
    write("step-aaaa-worker1.json", {"status": "error"})
    write("step-aaaa-sink.rendezvous.json", {"coordinator_pid": 999999999})
    write("step-bbbb-worker1.pid", {"pid": os.getpid()})  # a step still running (this process)
    write("step-bbbb-worker1.json", {"status": "ok"})
    write("server-198.18.0.1-18600.json", {})  # not a step's file: not this method's business

    def alive(pid):
        return pid == os.getpid()

    removed = Topology.remove_step_files(str(tmp_path), alive)
    assert removed == ["step-aaaa-sink.rendezvous.json", "step-aaaa-worker1.pid", "step-aaaa-worker1.json"]
    assert sorted(os.listdir(tmp_path)) == ["server-198.18.0.1-18600.json", "step-bbbb-worker1.json",
                                            "step-bbbb-worker1.pid"]


# ------------------------------------------------------------------ the lab's record and its owner
class Done(Exception):
    pass


class Module:
    """Records exit_json/fail_json and warnings; the namespaces themselves are behind Topology's netlink seam."""

    def __init__(self, params, check_mode=False):
        self.params = params
        self.check_mode = check_mode
        self.warnings = []
        self.result = None

    def warn(self, msg):
        self.warnings.append(msg)

    def exit_json(self, **kw):
        self.result = kw
        raise Done()

    def fail_json(self, **kw):
        self.result = dict(kw, failed=True)
        raise Done()


def _run(module, monkeypatch, missing=(), present=("t-sw", "t-a", "t-b")):
    from ansible_collections.aifabric.lab.plugins.module_utils import _netns_topology

    applied = []
    monkeypatch.setattr(Topology, "missing", lambda self, topo: list(missing))
    monkeypatch.setattr(Topology, "apply", lambda self, topo: applied.append(topo["switch"]))
    monkeypatch.setattr(Topology, "present_namespaces", lambda self, topo: list(present))
    monkeypatch.setattr(Topology, "processes", lambda self, topo: {})
    monkeypatch.setattr(Topology, "remove", lambda self, topo, grace=6.0: applied.append("removed") or {})
    with pytest.raises(Done):
        _netns_topology.run(module, None, None)
    return module.result, applied


def test_the_lab_is_recorded_with_its_owner_and_the_record_goes_with_it(tmp_path, monkeypatch):
    from ansible_collections.aifabric.lab.plugins.module_utils import _host_state
    from ansible_collections.aifabric.lab.plugins.module_utils._owner import owner_record

    owner = owner_record("exp-a", 600)
    up = params(state_dir=str(tmp_path), owner=owner, process_grace=0.1)
    result, applied = _run(Module(up), monkeypatch, missing=["namespace t-sw"])
    assert result["changed"] and applied == ["t-sw"]
    record = _host_state.read_record(os.path.join(str(tmp_path), "labs", "t-sw.json"))
    assert record["kind"] == "netns_lab" and record["namespaces"] == ["t-sw", "t-a", "t-b"]
    assert record["owner"] == owner and record["topology"]["hosts"][1]["address"] == "198.18.0.2/24"
    # up already, the same record: nothing to do
    result, applied = _run(Module(up), monkeypatch)
    assert not result["changed"] and applied == []
    # another live experiment neither changes the lab nor takes it down
    other = dict(up, owner=owner_record("exp-b", 600))
    result, _applied = _run(Module(other), monkeypatch, missing=["link p-a"])
    assert result["failed"] and "the lab t-sw belongs to experiment exp-a" in result["msg"]
    module = Module(dict(other, state="absent"))
    result, applied = _run(module, monkeypatch)
    assert not result["changed"] and result["held_by"]["id"] == "exp-a" and applied == []
    assert "leaving the lab t-sw: it belongs to experiment exp-a" in module.warnings[0]
    # its own owner takes it down, and the record with it
    result, applied = _run(Module(dict(up, state="absent")), monkeypatch)
    assert result["changed"] and applied == ["removed"]
    assert not os.path.exists(os.path.join(str(tmp_path), "labs", "t-sw.json"))


def test_a_lab_up_before_its_record_gets_one(tmp_path, monkeypatch):
    from ansible_collections.aifabric.lab.plugins.module_utils import _host_state

    up = params(state_dir=str(tmp_path), owner=None, process_grace=0.1)
    result, _applied = _run(Module(up, check_mode=True), monkeypatch)
    assert result["changed"] and _host_state.records(str(tmp_path), "labs") == []
    result, _applied = _run(Module(up), monkeypatch)
    assert result["changed"] and _host_state.records(str(tmp_path), "labs")[0][1]["owner"] is None
    assert not _run(Module(up), monkeypatch)[0]["changed"]


def test_taking_the_lab_down_takes_its_shapers_records_and_no_others(tmp_path, monkeypatch):
    from ansible_collections.aifabric.lab.plugins.module_utils import _host_state

    for netns in ("netns-t-sw", "netns-t-a", "netns-other"):
        _host_state.write_record(_host_state.shaper_record_path(str(tmp_path), netns, "eth0"),
                                 {"kind": "shaper", "device": "eth0", "owner": None})
    result, applied = _run(Module(params(state="absent", state_dir=str(tmp_path), owner=None, process_grace=0.1)),
                           monkeypatch, present=("t-sw", "t-a"))
    assert result["changed"] and applied == ["removed"]
    assert [os.path.basename(os.path.dirname(p)) for p, _r in _host_state.records(str(tmp_path), "shapers")] == [
        "netns-other"]
