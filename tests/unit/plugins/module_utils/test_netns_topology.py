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
        assert proc.wait(5) == -signal.SIGTERM  # `ip netns exec` execs sleep: the TERM ends it, no KILL needed
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
