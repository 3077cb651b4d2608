"""Namespaces for the benchmarks: a veth pair between two namespaces, removed in every case (context manager)."""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PY = sys.executable
ENGINE_RUNNER = r"""
import json, sys, time
sys.path.insert(0, %(coll)r)
from ansible_collections.aifabric.lab.plugins.module_utils._flow.engine import FlowSpec
from ansible_collections.aifabric.lab.plugins.module_utils._flow.tcp import TcpEngine
args = json.loads(sys.argv[1])
spec = FlowSpec(**args)
out = TcpEngine().serve(spec) if spec.role == "server" else TcpEngine().send(spec)
out.pop("samples", None)
print(json.dumps(out))
""" % {"coll": os.path.join(ROOT, ".collections")}


def sh(*cmd, check=True):
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


@contextlib.contextmanager
def veth_pair(prefix="aflb", mtu=9000):
    """Two namespaces ``<prefix>-a`` (198.18.250.1) and ``<prefix>-b`` (198.18.250.2) joined by a veth."""
    a, b = "%s-%d-a" % (prefix, os.getpid()), "%s-%d-b" % (prefix, os.getpid())
    try:
        sh("ip", "netns", "add", a)
        sh("ip", "netns", "add", b)
        sh("ip", "-n", a, "link", "add", "eth0", "mtu", str(mtu), "type", "veth", "peer", "name", "eth0", "netns", b,
           "mtu", str(mtu))
        for ns, addr in ((a, "198.18.250.1/24"), (b, "198.18.250.2/24")):
            sh("ip", "-n", ns, "addr", "add", addr, "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        yield a, b
    finally:
        sh("ip", "netns", "del", a, check=False)
        sh("ip", "netns", "del", b, check=False)


def timed(cmd):
    """Run ``cmd``; return (stdout, cpu seconds user+sys of the child)."""
    before = os.times()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    after = os.times()
    return proc.stdout, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def engine_flow(ns_client, ns_server, volume, port=18700, start_lead=1.0):
    """One tcp-engine flow between the namespaces; returns (client result, client cpu s, server cpu s)."""
    server_args = json.dumps({"role": "server", "address": "198.18.250.2", "port": port, "token": "bench",
                              "timeout": 120.0})
    server = subprocess.Popen(["ip", "netns", "exec", ns_server, PY, "-c", ENGINE_RUNNER, server_args],
                              stdout=subprocess.PIPE, text=True)
    try:
        before = os.times()
        client_args = json.dumps({"role": "client", "address": "198.18.250.2", "port": port, "token": "bench",
                                  "volume": volume, "start_at": time.time() + start_lead, "timeout": 120.0})
        out, client_cpu = timed(["ip", "netns", "exec", ns_client, PY, "-c", ENGINE_RUNNER, client_args])
        server.wait(30)
        after = os.times()
        total = (after.children_user - before.children_user) + (after.children_system - before.children_system)
        return json.loads(out), client_cpu, total - client_cpu
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
