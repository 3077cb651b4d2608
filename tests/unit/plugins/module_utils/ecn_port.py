# -*- coding: utf-8 -*-
"""A marked switch port on the real kernel, for test_ecn_kernel.py and benchmarks/marking.py (needs root).

Two namespaces of their own, ``<prefix>-<pid>-a`` and ``-b`` (removed on the way out, whatever happened), joined by a
veth (``ecn0`` in a, ``ecn1`` in b); an htb shaper (``aifabric.lab.tc_shape``'s) on ``ecn0`` at the port's rate, where
the ECN marker goes (``_ecn.mark``); UDP sockets in each namespace, the receiver's reporting the TOS byte of every
datagram (IP_RECVTOS); a burst of datagrams with one TOS as fast as the socket takes them. Netlink through pyroute2
only. The benchmark puts this folder on its sys.path; pytest finds it beside the test."""
from __future__ import annotations

import contextlib
import os
import socket
import time

RATE = "100mbit"
DEVICE, PEER = "ecn0", "ecn1"
ADDR_A, ADDR_B = "198.51.100.1", "198.51.100.2"
PORT = 40999
PAYLOAD = 1400  # bytes; 1442 on the wire (UDP 8, IPv4 20, Ethernet 14)
WIRE = PAYLOAD + 42
ECT0, NOT_ECT, CE = 0x02, 0x00, 0x03


def marker_params(**kw):
    """``aifabric.lab.ecn_marker``'s options for the port: DCTCP's step at 30 KB in a 100 KB buffer unless ``kw``
    says otherwise."""
    base = {"device": DEVICE, "state": "present", "mode": "step", "buffer": "100KB", "threshold": "30KB",
            "min_threshold": None, "max_threshold": None, "max_probability": None, "non_ect": "drop", "rate": None}
    base.update(kw)
    return base


def shaper_params(rate=RATE):
    """``aifabric.lab.tc_shape``'s options for the port: htb at ``rate`` on ecn0's egress, ACKs around the queue."""
    return {"device": DEVICE, "direction": "egress", "qdisc": "htb", "rate": rate, "burst": None, "latency": 0.05,
            "fair_share_sources": [], "fair_share_destinations": [], "ack_priority": True, "fair_share_ports": None,
            "ifb_device": None, "state": "present", "state_dir": None, "owner": None}


def in_ns(name, fn):
    """``fn()`` with this thread in namespace ``name`` (a socket made there stays there). A name that is gone is an
    error (pyroute2 alone would make a new, empty namespace of that name)."""
    from pyroute2 import netns

    if name not in netns.listnetns():
        raise FileNotFoundError("no network namespace %s" % name)
    netns.pushns(name)
    try:
        return fn()
    finally:
        netns.popns()


@contextlib.contextmanager
def veth_pair(prefix="aflt-wt-ecn", rate=RATE, ipv6=True):
    """Namespaces ``<prefix>-<pid>-a`` and ``-b``, a veth between them (ecn0 in a, ecn1 in b), an htb shaper at
    ``rate`` on ecn0; yields the two names; removes both namespaces on the way out, whatever happened. ``ipv6``
    False: IPv6 off in both namespaces before the link is made (no router solicitations, MLD or DAD packets through
    the port: only what the caller sends)."""
    from ansible_collections.aifabric.lab.plugins.module_utils._tc import shape
    from pyroute2 import IPRoute, netns

    owner = os.getpid()
    a, b = "%s-%d-a" % (prefix, owner), "%s-%d-b" % (prefix, owner)
    made = []
    try:
        for name in (a, b):
            netns.create(name)
            made.append(name)
            if not ipv6:
                in_ns(name, _ipv6_off)
        with IPRoute(netns=a, flags=0) as ipr:
            ipr.link("add", ifname=DEVICE, kind="veth", peer={"ifname": PEER, "net_ns_fd": b})
            index = ipr.link_lookup(ifname=DEVICE)[0]
            ipr.addr("add", index=index, address=ADDR_A, prefixlen=24)
            ipr.link("set", index=index, state="up")
        with IPRoute(netns=b, flags=0) as ipr:
            index = ipr.link_lookup(ifname=PEER)[0]
            ipr.addr("add", index=index, address=ADDR_B, prefixlen=24)
            ipr.link("set", index=index, state="up")
        with IPRoute(netns=a, flags=0) as ipr:
            shape(ipr, shaper_params(rate))
        yield a, b
    finally:
        # a forked child (pyroute2 makes some) that unwinds this stack must not take the namespaces with it
        for name in made if os.getpid() == owner else ():
            try:
                netns.remove(name)
            except OSError:
                pass


def _ipv6_off():
    for conf in ("all", "default"):
        with open("/proc/sys/net/ipv6/conf/%s/disable_ipv6" % conf, "w") as handle:
            handle.write("1")


def receiver_socket(rcvbuf=8 << 20):
    """A UDP socket bound to ADDR_B:PORT that reports each datagram's TOS byte; make it in namespace b. As root the
    buffer is forced past net.core.rmem_max (SO_RCVBUFFORCE)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_RCVBUFFORCE", 33), rcvbuf)
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
    s.bind((ADDR_B, PORT))
    return s


def sender_socket():
    """A UDP socket on ADDR_A; make it in namespace a."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    s.bind((ADDR_A, 0))
    return s


def send(sender, payload):
    """One datagram to the receiver, waiting while the socket's buffer is full (ENOBUFS: the qdisc takes more in a
    moment)."""
    while True:
        try:
            sender.sendto(payload, (ADDR_B, PORT))
            return
        except OSError:
            time.sleep(0.0005)


def receive(receiver, timeout=0.5):
    """Every datagram that arrives until none has for ``timeout`` s: ``[(payload, TOS byte)]``."""
    got = []
    receiver.settimeout(timeout)
    while True:
        try:
            data, anc, _flags, _addr = receiver.recvmsg(2048, socket.CMSG_SPACE(4))
        except socket.timeout:
            return got
        tos = None
        for level, kind, value in anc:
            if level == socket.IPPROTO_IP and kind == socket.IP_TOS:
                tos = value[0]
        got.append((data, tos))


def burst(sender, receiver, tos, count):
    """``count`` datagrams with TOS ``tos`` as fast as the socket takes them; the TOS bytes the receiver got."""
    sender.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
    payload = b"\0" * PAYLOAD
    for _i in range(count):
        send(sender, payload)
    return [t for _data, t in receive(receiver) if t is not None]
