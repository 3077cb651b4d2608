# -*- coding: utf-8 -*-
"""Entering a network namespace from a forked process, and one task starting several hosts' parts of a step, each in
its own namespace - on real namespaces and a real veth pair this test creates (and removes, also when it fails)."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils import _netns_enter
from ansible_collections.aifabric.lab.plugins.module_utils._flow import step as _step
from ansible_collections.aifabric.lab.plugins.module_utils._flow import step_module
from ansible_collections.aifabric.lab.plugins.module_utils._flow.engine import FlowError
from ansible_collections.aifabric.lab.plugins.module_utils._flow.server import alive

pytestmark = [pytest.mark.needs_root,
              pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ip"), reason="needs root and iproute2")]

SUBNET = "198.18.251.%d"


def ip(*args):
    subprocess.run(["ip"] + list(args), check=True, capture_output=True)


@pytest.fixture
def two_hosts():
    """Namespaces a and b joined by a veth pair: a = 198.18.251.1, b = 198.18.251.2."""
    base = "aflt-enter-%d" % os.getpid()
    names = {"a": base + "-a", "b": base + "-b"}
    try:
        for name in names.values():
            ip("netns", "add", name)
            ip("-n", name, "link", "set", "lo", "up")
        ip("link", "add", "afltva%d" % os.getpid(), "netns", names["a"], "type", "veth", "peer", "name",
           "afltvb%d" % os.getpid(), "netns", names["b"])
        for i, (host, name) in enumerate(sorted(names.items())):
            dev = "afltv%s%d" % (host, os.getpid())
            ip("-n", name, "link", "set", dev, "name", "eth0")
            ip("-n", name, "addr", "add", (SUBNET % (i + 1)) + "/24", "dev", "eth0")
            ip("-n", name, "link", "set", "eth0", "up")
        yield names
    finally:
        for name in names.values():
            subprocess.call(["ip", "netns", "delete", name], stderr=subprocess.DEVNULL)


def in_namespace(name, work):
    """``work()``'s JSON result, run in a forked child inside ``name`` (as the step module's parts are)."""
    return _netns_enter.gather(*_netns_enter.fork_in_namespace(name, lambda _fd: work()))


def test_a_forked_process_enters_the_namespace_with_its_own_sys(two_hosts):
    def look():
        with socket.socket() as s:
            s.bind((SUBNET % 1, 0))  # the address exists only in namespace a
        with open("/sys/class/net/eth0/address") as handle:
            mac = handle.read().strip()
        return {"status": "ok", "interfaces": sorted(os.listdir("/sys/class/net")), "mac": mac}

    seen = in_namespace(two_hosts["a"], look)
    assert seen["status"] == "ok", seen
    assert seen["interfaces"] == ["eth0", "lo"]
    mac = subprocess.run(["ip", "netns", "exec", two_hosts["a"], "cat", "/sys/class/net/eth0/address"],
                         check=True, capture_output=True, text=True).stdout.strip()
    assert seen["mac"] == mac
    # nothing propagated back: this process' /sys still describes its own namespace, not a's
    mine = "/sys/class/net/eth0/address"
    assert not os.path.exists(mine) or open(mine).read().strip() != mac


def test_a_missing_namespace_is_named():
    out = in_namespace("aflt-enter-none-%d" % os.getpid(), lambda: {"status": "ok"})
    assert out["status"] == "failed"
    assert "aflt-enter-none-%d does not exist" % os.getpid() in out["error"]
    with pytest.raises(_netns_enter.NetnsError, match="not a network namespace name"):
        _netns_enter.enter("../etc")


def params(parts, port, **kw):
    p = {key: spec.get("default") for key, spec in step_module.module_args()["argument_spec"].items()}
    p.update(party=None, token="tok-enter", step="s1", perftest={}, counters=None, arm_timeout=20.0, timeout=20.0,
             rendezvous={"host": "a", "address": SUBNET % 1, "port": port, "parties": ["a", "b"],
                         "expected_flows": {"b": ["b"]}, "annotations": {}, "start_at": None,
                         "wait_for_collect": True},
             parts=parts)
    p.update(kw)
    return p


def part(party, netns, servers=(), clients=(), counters=None):
    return {"party": party, "netns": netns, "counters": counters,
            "servers": [dict({"max_bytes": None, "volume": None, "duration": None}, **s) for s in servers],
            "clients": [dict({"duration": None, "streams": 1, "source": None, "rate_limit": None,
                              "annotations": {}}, **c) for c in clients]}


def collect(names, built, state_dir):
    coordinator = built[0][1]
    return in_namespace(names["a"], lambda: _step.collect(coordinator, state_dir, 60))


def test_one_process_starts_every_hosts_part_each_in_its_namespace(two_hosts, tmp_path):
    state_dir = str(tmp_path)
    parts = [part("a", two_hosts["a"], servers=[{"address": SUBNET % 1, "port": 18700, "expected_clients": 1}],
                  counters={"interface": "eth0", "netdevs": ["eth0"], "qdiscs": [], "rdma_devices": []}),
             part("b", two_hosts["b"], clients=[{"flow_id": "b", "address": SUBNET % 1, "port": 18700,
                                                 "volume": "8MB"}],
                  counters={"interface": "eth0", "netdevs": ["eth0"], "qdiscs": [], "rdma_devices": []})]
    built = step_module.build_parts(params(parts, 18699))
    started = _step.start_in_namespaces(built, state_dir)
    try:
        assert [s["status"] for s in started] == ["started", "started"], started
        assert [(s["host"], s["netns"]) for s in started] == [("a", two_hosts["a"]), ("b", two_hosts["b"])]
        record = collect(two_hosts, built, state_dir)
        assert record["status"] == "ok", record.get("error")
        flow = record["hosts"]["b"]["clients"][0]
        assert flow["status"] == "ok" and flow["bytes"] == 8 * 10**6 and flow["start"] >= flow["start_at"]
        # each part read its own namespace's counters: b sent the flow out of its eth0, a received it on its own
        sent = record["hosts"]["b"]["counters"]
        got = record["hosts"]["a"]["counters"]
        tx = sent["after"]["netdev"]["eth0"]["tx_bytes"] - sent["before"]["netdev"]["eth0"]["tx_bytes"]
        rx = got["after"]["netdev"]["eth0"]["rx_bytes"] - got["before"]["netdev"]["eth0"]["rx_bytes"]
        assert tx >= 8 * 10**6 and rx >= 8 * 10**6
    finally:
        for s in started:
            if s.get("pid") and alive(s["pid"]):
                os.kill(s["pid"], 9)


def test_a_part_that_cannot_start_is_named_and_aborts_the_step(two_hosts, tmp_path):
    state_dir = str(tmp_path)
    missing = "aflt-enter-gone-%d" % os.getpid()
    parts = [part("a", two_hosts["a"], servers=[{"address": SUBNET % 1, "port": 18702, "expected_clients": 1}]),
             part("b", missing, clients=[{"flow_id": "b", "address": SUBNET % 1, "port": 18702, "volume": "1MB"}])]
    built = step_module.build_parts(params(parts, 18701))
    started = _step.start_in_namespaces(built, state_dir)
    try:
        assert started[0]["status"] == "started"
        assert started[1]["status"] == "failed" and missing in started[1]["error"]
        # the coordinating part was told at once: the step is aborted, naming the host and the reason
        record = collect(two_hosts, built, state_dir)
        assert record["status"] == "aborted"
        assert "b could not start its part" in record["error"] and missing in record["error"]
    finally:
        for s in started:
            if s.get("pid") and alive(s["pid"]):
                os.kill(s["pid"], 9)
    assert json.loads(json.dumps(started))  # what the module returns is plain data


def test_when_the_coordinating_part_cannot_start_the_others_are_stopped_by_pid(two_hosts, tmp_path):
    state_dir = str(tmp_path)
    parts = [part("a", "aflt-enter-gone-%d" % os.getpid(),
                  servers=[{"address": SUBNET % 1, "port": 18705, "expected_clients": 1}]),
             part("b", two_hosts["b"], clients=[{"flow_id": "b", "address": SUBNET % 1, "port": 18705,
                                                 "volume": "1MB"}])]
    started = _step.start_in_namespaces(step_module.build_parts(params(parts, 18704)), state_dir)
    assert started[0]["status"] == "failed" and started[1]["status"] == "started"
    # nobody could take the abort: b's part was ended by its PID, at once, not after its arm timeout
    assert started[1]["stopped"] == "SIGTERM" and not alive(started[1]["pid"])


@pytest.mark.parametrize("change, message", [
    (dict(state="collected"), "parts: only state=started"),
    (dict(parts=[part("a", "ns-a"), part("a", "ns-b")]), r"parts\[1\].party: a is listed twice"),
    (dict(parts=[part("a", "../x")]), r"parts\[0\].netns: '../x' is not a network namespace name"),
    (dict(parts=[part("a", "ns-a", clients=[{"flow_id": "f", "address": "198.18.251.1", "port": 1}])]),
     r"parts\[0\] \(a\): clients\[0\]: give exactly one of volume"),
    # a shared option's error names the shared option, not a part
    (dict(token=""), r"^token: must not be empty"),
])
def test_bad_parts_name_the_entry_and_the_fix(change, message):
    base = params([part("a", "ns-a"), part("b", "ns-b")], 18703)
    base.update(change)
    with pytest.raises(FlowError, match=message):
        step_module.build_parts(base)


RING = "198.18.252.%d"


@pytest.fixture
def three_hosts():
    """Namespaces a, b, c on one bridge (in a fourth namespace): a = 198.18.252.1, b = .2, c = .3."""
    base = "aflt-ring-%d" % os.getpid()
    names = {h: "%s-%s" % (base, h) for h in ("a", "b", "c")}
    switch = base + "-sw"
    try:
        for name in list(names.values()) + [switch]:
            ip("netns", "add", name)
            ip("-n", name, "link", "set", "lo", "up")
        ip("-n", switch, "link", "add", "br0", "type", "bridge")
        ip("-n", switch, "link", "set", "br0", "up")
        for i, (host, name) in enumerate(sorted(names.items())):
            port = "p%s" % host
            ip("-n", switch, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", name)
            ip("-n", switch, "link", "set", port, "master", "br0")
            ip("-n", switch, "link", "set", port, "up")
            ip("-n", name, "addr", "add", (RING % (i + 1)) + "/24", "dev", "eth0")
            ip("-n", name, "link", "set", "eth0", "up")
        yield names
    finally:
        for name in list(names.values()) + [switch]:
            subprocess.call(["ip", "netns", "delete", name], stderr=subprocess.DEVNULL)


def test_a_ring_allreduce_program_runs_on_three_namespaces_from_one_task(three_hosts, tmp_path):
    from ansible_collections.aifabric.lab.plugins.plugin_utils._job.program import build_programs
    from ansible_collections.aifabric.lab.plugins.plugin_utils._job.spec import parse_job

    state_dir = str(tmp_path)
    hosts = sorted(three_hosts)
    job = parse_job({"iterations": 4, "compute_ms": 2, "collectives": [
        {"op": "allreduce", "algorithm": "ring", "size": "6MB", "chunks": 2, "window": 2}]}, hosts)
    programs = build_programs(job, {h: {"address": RING % (i + 1), "port": 18710} for i, h in enumerate(hosts)})
    parts = [dict(part(h, three_hosts[h]), program=programs[h]) for h in hosts]
    built = step_module.build_parts(params(parts, 18709, rendezvous={
        "host": "a", "address": RING % 1, "port": 18709, "parties": hosts, "expected_flows": {},
        "annotations": {}, "start_at": None, "wait_for_collect": True}))
    started = _step.start_in_namespaces(built, state_dir)
    try:
        assert [s["status"] for s in started] == ["started"] * 3, started
        record = in_namespace(three_hosts["a"], lambda: _step.collect(built[0][1], state_dir, 60))
        assert record["status"] == "ok", record.get("error")
        for h in hosts:
            prog = record["hosts"][h]["program"]
            assert prog["status"] == "ok", prog["error"]
            assert len(prog["iteration_end"]) == 4 and None not in prog["iteration_end"]
            # 4 iterations x 2(n-1) segments of 2 MB, over the namespaces' own veths
            assert prog["bytes_sent"] == prog["bytes_received"] == 4 * 4 * 2 * 10**6
            for row in prog["t"]["end"]:
                assert None not in row
        # the hosts' ring: each sends only to its right neighbour
        sends = {h: {c["peer"] for c in record["hosts"][h]["program"]["connections"] if c["direction"] == "send"}
                 for h in hosts}
        assert sends == {"a": {"b"}, "b": {"c"}, "c": {"a"}}
    finally:
        for s in started:
            if s.get("pid") and alive(s["pid"]):
                os.kill(s["pid"], 9)
    assert os.listdir(state_dir) == []
