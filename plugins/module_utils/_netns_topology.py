# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A star of network namespaces around a switch namespace's bridge, through netlink (pyroute2).

Every lab host is a namespace with one veth (``interface``, default ``eth0``) whose peer (``port``) sits in the
switch namespace, enslaved to the bridge. Addresses, MTU and link state are part of the desired state, so a second
run changes nothing, and ``absent`` removes every namespace the topology names (and with them their links).
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import signal
import time

from ._flow.state import is_step_file, server_file_address
from ._netns_enter import NETNS_RUN_DIR, valid_name

_IFNAME = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")


class TopologyError(ValueError):
    pass


def pids_in_namespace(name, run_dir=NETNS_RUN_DIR, proc="/proc"):
    """PIDs of the processes whose network namespace is ``name`` (same device and inode as its bind mount)."""
    try:
        ref = os.stat(os.path.join(run_dir, name))
    except OSError:
        return []
    pids = []
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            st = os.stat(os.path.join(proc, entry, "ns", "net"))
        except OSError:
            continue  # gone, or not ours to read
        if (st.st_dev, st.st_ino) == (ref.st_dev, ref.st_ino):
            pids.append(int(entry))
    return sorted(pids)


def _alive(pid):
    try:
        with open("/proc/%d/status" % pid) as handle:
            return not any(line.startswith("State:") and line.split()[1] == "Z" for line in handle)
    except (OSError, ValueError, IndexError, TypeError):
        return False


def stop_processes(pids, grace=3.0, kill=os.kill, alive=None):
    """SIGTERM, wait up to ``grace`` seconds, SIGKILL what is left. Returns the PIDs that were signalled."""
    alive = alive or (lambda pid: os.path.exists("/proc/%d" % pid))
    signalled = []
    for pid in pids:
        try:
            kill(pid, signal.SIGTERM)
            signalled.append(pid)
        except ProcessLookupError:
            pass
    deadline = time.time() + grace
    while time.time() < deadline and any(alive(pid) for pid in signalled):
        time.sleep(0.05)
    for pid in signalled:
        if alive(pid):
            try:
                kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return signalled


def validate(params):
    """Check names, addresses and uniqueness; return the normalised topology."""
    switch = params["switch_namespace"]
    bridge = params["bridge"]
    if not valid_name(switch):
        raise TopologyError(
            "switch_namespace: %r is not a namespace name (letters, digits, . _ -; at most 64)" % switch)
    if not _IFNAME.match(bridge):
        raise TopologyError("bridge: %r is not an interface name (at most 15 characters)" % bridge)
    if not 68 <= params["mtu"] <= 65535:
        raise TopologyError("mtu: %d is outside 68-65535" % params["mtu"])
    hosts, seen_ns, seen_port, seen_addr = [], {switch}, {bridge}, set()
    for i, host in enumerate(params["hosts"]):
        where = "hosts[%d]" % i
        ns = host.get("namespace")
        if not ns or not valid_name(ns):
            raise TopologyError("%s.namespace: %r is not a namespace name" % (where, ns))
        if ns in seen_ns:
            raise TopologyError("%s.namespace: %s is used twice (or is the switch's)" % (where, ns))
        seen_ns.add(ns)
        iface = host.get("interface") or "eth0"
        port = host.get("port")
        for key, value in (("interface", iface), ("port", port)):
            if not value or not _IFNAME.match(value):
                raise TopologyError("%s.%s: %r is not an interface name (at most 15 characters)" % (where, key, value))
        if port in seen_port:
            raise TopologyError("%s.port: %s is used twice in the switch namespace" % (where, port))
        seen_port.add(port)
        try:
            addr = ipaddress.ip_interface(host.get("address"))
        except ValueError:
            raise TopologyError("%s.address: %r is not an address with a prefix (e.g. 198.18.0.11/24)" % (
                where, host.get("address"))) from None
        if addr.ip in seen_addr:
            raise TopologyError("%s.address: %s is used twice" % (where, addr.ip))
        seen_addr.add(addr.ip)
        hosts.append({"namespace": ns, "interface": iface, "port": port, "address": str(addr)})
    return {"switch": switch, "bridge": bridge, "mtu": params["mtu"], "hosts": hosts}


class Topology:
    def __init__(self, netns, iproute):
        """``netns``: pyroute2.netns-like (listnetns/create/remove); ``iproute``: IPRoute class (netns= keyword)."""
        self.netns = netns
        self.iproute = iproute

    def missing(self, topo):
        """What differs from the desired topology, as a list of readable items (empty: nothing to do)."""
        present = set(self.netns.listnetns())
        todo = []
        if topo["switch"] not in present:
            todo.append("namespace %s" % topo["switch"])
            todo += ["namespace %s" % h["namespace"] for h in topo["hosts"] if h["namespace"] not in present]
            todo += ["link %s" % h["port"] for h in topo["hosts"]]
            return todo
        with self.iproute(netns=topo["switch"]) as sw:
            bridge = sw.link_lookup(ifname=topo["bridge"])
            if not bridge:
                todo.append("bridge %s" % topo["bridge"])
            else:
                link = sw.get_links(bridge[0])[0]
                if link.get_attr("IFLA_MTU") != topo["mtu"] or not link["flags"] & 1:
                    todo.append("bridge %s mtu/up" % topo["bridge"])
            for h in topo["hosts"]:
                if h["namespace"] not in present:
                    todo.append("namespace %s" % h["namespace"])
                    todo.append("link %s" % h["port"])
                    continue
                port = sw.link_lookup(ifname=h["port"])
                if not port:
                    todo.append("link %s" % h["port"])
                    continue
                link = sw.get_links(port[0])[0]
                if (link.get_attr("IFLA_MTU") != topo["mtu"] or not link["flags"] & 1
                        or link.get_attr("IFLA_MASTER") != (bridge[0] if bridge else None)):
                    todo.append("port %s mtu/up/master" % h["port"])
                todo += self._host_missing(h, topo["mtu"])
        return todo

    def _host_missing(self, h, mtu):
        with self.iproute(netns=h["namespace"]) as ipr:
            found = ipr.link_lookup(ifname=h["interface"])
            if not found:
                return ["interface %s in %s" % (h["interface"], h["namespace"])]
            link = ipr.get_links(found[0])[0]
            todo = []
            if link.get_attr("IFLA_MTU") != mtu or not link["flags"] & 1:
                todo.append("interface %s in %s mtu/up" % (h["interface"], h["namespace"]))
            want = ipaddress.ip_interface(h["address"])
            have = {(a.get_attr("IFA_ADDRESS"), a["prefixlen"]) for a in ipr.get_addr(index=found[0])}
            if (str(want.ip), want.network.prefixlen) not in have:
                todo.append("address %s in %s" % (h["address"], h["namespace"]))
            lo = ipr.link_lookup(ifname="lo")
            if lo and not ipr.get_links(lo[0])[0]["flags"] & 1:
                todo.append("lo up in %s" % h["namespace"])
            return todo

    def apply(self, topo):
        present = set(self.netns.listnetns())
        for ns in [topo["switch"]] + [h["namespace"] for h in topo["hosts"]]:
            if ns not in present:
                self.netns.create(ns)
        with self.iproute(netns=topo["switch"]) as sw:
            if not sw.link_lookup(ifname=topo["bridge"]):
                sw.link("add", ifname=topo["bridge"], kind="bridge")
            bridge = sw.link_lookup(ifname=topo["bridge"])[0]
            sw.link("set", index=bridge, mtu=topo["mtu"], state="up")
            lo = sw.link_lookup(ifname="lo")[0]
            sw.link("set", index=lo, state="up")
            for h in topo["hosts"]:
                with self.iproute(netns=h["namespace"]) as ipr:
                    if not ipr.link_lookup(ifname=h["interface"]):
                        stale = sw.link_lookup(ifname=h["port"])
                        if stale:
                            sw.link("del", index=stale[0])
                        sw.link("add", ifname=h["port"], kind="veth",
                                peer={"ifname": h["interface"], "net_ns_fd": h["namespace"]})
                    index = ipr.link_lookup(ifname=h["interface"])[0]
                    ipr.link("set", index=index, mtu=topo["mtu"], state="up")
                    want = ipaddress.ip_interface(h["address"])
                    have = {(a.get_attr("IFA_ADDRESS"), a["prefixlen"]) for a in ipr.get_addr(index=index)}
                    if (str(want.ip), want.network.prefixlen) not in have:
                        ipr.addr("add", index=index, address=str(want.ip), prefixlen=want.network.prefixlen)
                    ipr.link("set", index=ipr.link_lookup(ifname="lo")[0], state="up")
                port = sw.link_lookup(ifname=h["port"])[0]
                sw.link("set", index=port, master=bridge, mtu=topo["mtu"], state="up")

    def present_namespaces(self, topo):
        present = set(self.netns.listnetns())
        return [ns for ns in [h["namespace"] for h in topo["hosts"]] + [topo["switch"]] if ns in present]

    def processes(self, topo):
        """``{namespace: [pid, ...]}`` of processes still running inside the topology's namespaces."""
        found = {}
        for ns in self.present_namespaces(topo):
            pids = [pid for pid in pids_in_namespace(ns) if pid != os.getpid()]
            if pids:
                found[ns] = pids
        return found

    @staticmethod
    def remove_server_files(topo, state_dir):
        """Background flow servers' PID and result files of the lab's addresses (left by an interrupted step)."""
        removed = []
        if not os.path.isdir(state_dir):
            return removed
        addresses = {str(ipaddress.ip_interface(h["address"]).ip).replace(":", "_") for h in topo["hosts"]}
        for name in sorted(os.listdir(state_dir)):
            if server_file_address(name) in addresses:
                os.unlink(os.path.join(state_dir, name))
                removed.append(name)
        return removed

    @staticmethod
    def remove_step_files(state_dir, alive):
        """Synchronized steps' files whose process has ended (the lab's were stopped just before): a host part's PID
        and result files, a rendezvous record whose coordinator is gone. Files of a step still running stay."""
        removed = []
        if not os.path.isdir(state_dir):
            return removed
        for name in sorted(os.listdir(state_dir)):
            if not is_step_file(name):
                continue
            path = os.path.join(state_dir, name)
            try:
                with open(path) as handle:
                    pid = json.load(handle).get("coordinator_pid" if name.endswith(".json") else "pid")
            except (OSError, ValueError, AttributeError):
                pid = None
            if pid and alive(pid):
                continue
            for stale in (path, path[:-4] + ".json") if name.endswith(".pid") else (path,):
                if os.path.exists(stale):
                    os.unlink(stale)
                    removed.append(os.path.basename(stale))
        return removed

    def remove(self, topo, grace=6.0):
        """Stop what runs inside the lab (flow servers of an interrupted step), then delete the namespaces.

        A deleted namespace lives on while a process holds it, so the processes go first. They get ``grace`` seconds
        to end by themselves (Ansible's async watchdog outlives a finished job by up to 5 s); what is left is stopped.
        """
        deadline = time.time() + grace
        while self.processes(topo) and time.time() < deadline:
            time.sleep(0.1)
        stopped = {}
        for ns, pids in self.processes(topo).items():
            stopped[ns] = stop_processes(pids)
        for ns in self.present_namespaces(topo):
            self.netns.remove(ns)
        return stopped


def lab_record(topo, owner, old=None, now=None):
    """The lab's marker record (``<state_dir>/labs/<switch>.json``): its namespaces, its topology, its owner. A lab
    without owner is up on purpose (M(aifabric.lab.lab_leftovers) never removes it); one with an owner is held while
    that owner is live."""
    now = time.time() if now is None else now
    return {"kind": "netns_lab", "switch": topo["switch"], "bridge": topo["bridge"],
            "namespaces": [topo["switch"]] + [h["namespace"] for h in topo["hosts"]], "topology": topo,
            "owner": owner, "created_at": (old or {}).get("created_at") or now, "updated_at": now}
