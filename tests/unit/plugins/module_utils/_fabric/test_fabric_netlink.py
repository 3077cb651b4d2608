# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric on the hosts (``_fabric/netlink``): what each switch is given, the route lookups that prove a flow's
path (against a kernel's answers, and on a real fabric as root), the fork into a switch's namespace."""
from __future__ import annotations

import os
import socket
import struct

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._fabric import netlink as _fabric
from ansible_collections.aifabric.lab.plugins.module_utils._fabric.netlink import Fabric, in_netns_fork
from ansible_collections.aifabric.lab.plugins.module_utils._fabric.spec import FabricError, validate
from fabric_fixture import PREFIX, params


def test_each_leaf_routes_to_the_others_through_every_spine_and_each_spine_to_each_leaf():
    want = Fabric._wanted(validate(params()))
    assert want[PREFIX + "leaf1"]["routes"] == {"198.18.2.0/24": [("198.19.0.1", "s1"), ("198.19.0.3", "s2")]}
    assert want[PREFIX + "spine2"]["routes"] == {"198.18.1.0/24": [("198.19.0.2", "l1")],
                                                 "198.18.2.0/24": [("198.19.0.6", "l2")]}
    assert want[PREFIX + "w11"]["routes"] == {"0.0.0.0/0": [("198.18.1.254", "eth0")]}
    assert want[PREFIX + "leaf1"]["links"]["h-w11"] == {"kind": "veth", "master": "br0", "peer_ns": PREFIX + "w11",
                                                        "peer_if": "eth0"}


def test_the_lookup_message_carries_ports_and_protocol():
    """pyroute2 0.9's rtmsg stops at RTA_EXPIRES; the lookup's own class encodes the five-tuple (checked in the bytes
    the kernel would read: RTA_IP_PROTO 27 one byte, RTA_SPORT 28 and RTA_DPORT 29 big-endian)."""
    cls = _fabric._rtmsg_class()
    msg = cls()
    msg["family"] = socket.AF_INET
    msg["attrs"] = [("RTA_DST", "198.18.2.11"), ("RTA_IP_PROTO", 6), ("RTA_SPORT", 20001), ("RTA_DPORT", 18600)]
    msg.encode()
    data = bytes(msg.data)
    attrs = {}
    offset = 16 + 12  # nlmsghdr + rtmsg
    while offset < len(data):
        length, kind = struct.unpack_from("=HH", data, offset)
        attrs[kind] = data[offset + 4:offset + length]
        offset += (length + 3) & ~3
    assert attrs[27] == b"\x06" and attrs[28] == struct.pack("!H", 20001) and attrs[29] == struct.pack("!H", 18600)


class _Reply:
    def __init__(self, oif):
        self.oif = oif

    def get_attr(self, name):
        return self.oif if name == "RTA_OIF" else None


class _FakeIPR:
    """A switch's netlink as the lookup sees it: its links, and the route lookups it answers (by source port)."""

    def __init__(self, names, choose):
        self.names = names
        self.choose = choose
        self.status = {}
        self.asked = []

    def get_links(self):
        class Link(dict):
            def get_attr(self, name):
                return self["name"]
        return [Link(index=i + 1, name=n) for i, n in enumerate(self.names)]

    def nlm_request(self, msg, msg_type, msg_flags):
        attrs = dict(msg["attrs"])
        self.asked.append((msg_type, attrs))
        return [_Reply(self.names.index(self.choose(attrs)) + 1)]

    def close(self):
        pass


def test_lookup_follows_each_switchs_answer_to_the_destination_leaf():
    topo = validate(params(n_spines=2))
    switches = {
        PREFIX + "leaf1": _FakeIPR(["lo", "br0", "s1", "s2"], lambda a: "s1" if a["RTA_SPORT"] % 2 else "s2"),
        PREFIX + "spine1": _FakeIPR(["lo", "l1", "l2"], lambda a: "l2"),
        PREFIX + "spine2": _FakeIPR(["lo", "l1", "l2"], lambda a: "l2"),
    }
    fabric = Fabric(None, lambda netns: switches[netns], None)
    flows = [{"id": "odd", "src": "198.18.1.11", "dst": "198.18.2.11", "sport": 20001, "dport": 18600},
             {"id": "even", "src": "198.18.1.11", "dst": "198.18.2.11", "sport": 20002, "dport": 18600},
             {"id": "lost", "src": "10.0.0.1", "dst": "198.18.2.11", "sport": 1, "dport": 2}]
    odd, even, lost = fabric.lookup(topo, flows)
    assert odd["links"] == ["w11->leaf1", "leaf1->spine1", "spine1->leaf2", "leaf2->w21"] and odd["error"] is None
    assert even["links"] == ["w11->leaf1", "leaf1->spine2", "spine2->leaf2", "leaf2->w21"]
    assert lost["error"] == "10.0.0.1 is not a fabric host's address"
    # the leaf was asked as the forwarding path sees the packet: arriving on its bridge, with the five-tuple
    msg_type, attrs = switches[PREFIX + "leaf1"].asked[0]
    assert msg_type == 26 and attrs["RTA_IIF"] == 2 and attrs["RTA_IP_PROTO"] == 6 and attrs["RTA_DPORT"] == 18600
    # the spine was asked with its own input port (from leaf1)
    assert switches[PREFIX + "spine1"].asked[0][1]["RTA_IIF"] == 2


def test_a_next_hop_outside_the_fabric_is_an_error():
    topo = validate(params(n_spines=1))
    switches = {PREFIX + "leaf1": _FakeIPR(["lo", "br0", "s1", "eth9"], lambda a: "eth9")}
    fabric = Fabric(None, lambda netns: switches[netns], None)
    (entry,) = fabric.lookup(topo, [{"id": "x", "src": "198.18.1.11", "dst": "198.18.2.11", "sport": 1, "dport": 2}])
    assert entry["error"] == "leaf1 sends it out of eth9, which is not a fabric link"


# ------------------------------------------------------------------------------------------- the real kernel
def _send(ns_src, src, sport, dst, dport, size, ns_dst):
    """A real TCP connection from ns_src (bound to sport) to a listener in ns_dst, ``size`` bytes."""
    def listen(ready, got):
        def inside():
            from ansible_collections.aifabric.lab.plugins.module_utils._netns_enter import enter
            enter(ns_dst)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                inside()
                srv = socket.socket()
                srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                srv.bind((dst, dport))
                srv.listen(1)
                os.write(ready, b"1")
                conn, _peer = srv.accept()
                total = 0
                while True:
                    chunk = conn.recv(1 << 20)
                    if not chunk:
                        break
                    total += len(chunk)
                os.write(got, struct.pack("!Q", total))
            finally:
                os._exit(0)
        return pid

    ready_r, ready_w = os.pipe()
    got_r, got_w = os.pipe()
    pid = listen(ready_w, got_w)
    os.read(ready_r, 1)

    def sender():
        from ansible_collections.aifabric.lab.plugins.module_utils._netns_enter import enter
        enter(ns_src)
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((src, sport))
        sock.connect((dst, dport))
        sock.sendall(b"\0" * size)
        sock.close()
        return True

    assert in_netns_fork(ns_src, lambda: True) is True  # the namespace is there
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        try:
            sender()
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    total = struct.unpack("!Q", os.read(got_r, 8))[0]
    os.waitpid(pid, 0)
    for fd in (ready_r, ready_w, got_r, got_w):
        os.close(fd)
    return total


@pytest.mark.needs_root
def test_a_real_fabric_is_built_idempotently_and_each_flow_goes_where_the_lookup_said():
    from pyroute2 import IPRoute, netns

    p = params(n_spines=2, host_rate="1gbit", uplink_rate="1gbit")
    topo = validate(p)
    fabric = Fabric(netns, IPRoute, in_netns_fork)
    try:
        assert fabric.missing(topo)
        fabric.apply(topo)
        assert fabric.missing(topo) == []  # a second run has nothing to do
        flows = [{"id": str(port), "src": "198.18.1.11", "dst": "198.18.2.11", "sport": port, "dport": 18600}
                 for port in range(20000, 20016)]
        found = {e["id"]: e["links"][1] for e in fabric.lookup(topo, flows)}
        assert set(found.values()) == {"leaf1->spine1", "leaf1->spine2"}  # 16 ports: both spines drawn
        for port in (20000, 20001, 20002):
            before = fabric.counters(topo)
            assert _send(PREFIX + "w11", "198.18.1.11", port, "198.18.2.11", 18600, 4_000_000, PREFIX + "w21") \
                == 4_000_000
            after = fabric.counters(topo)
            sent = {k: after["leaf1"]["netdev"][k]["tx_bytes"] - before["leaf1"]["netdev"][k]["tx_bytes"]
                    for k in ("s1", "s2")}
            chosen = "s1" if found[str(port)] == "leaf1->spine1" else "s2"
            other = "s2" if chosen == "s1" else "s1"
            assert sent[chosen] > 4_000_000 and sent[other] < 100_000, (port, found[str(port)], sent)
        # the hash changed on a live fabric: only the sysctls differ
        changed = validate(dict(p, hash="l3"))
        assert fabric.missing(changed) == [
            "sysctl net.ipv4.fib_multipath_hash_policy=0 (is 3) in %s" % ns for ns in
            (PREFIX + "leaf1", PREFIX + "leaf2", PREFIX + "spine1", PREFIX + "spine2")]
    finally:
        fabric.remove(topo)
    assert fabric.present_namespaces(topo) == []


def test_in_netns_fork_reports_the_childs_error():
    with pytest.raises(FabricError, match="in namespace aflt-fabu-none: "):
        in_netns_fork(PREFIX + "none", lambda: 1)
