# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A leaf-spine fabric of network namespaces that route (not bridge), through netlink (pyroute2).

Every leaf and spine is a namespace. A leaf holds a bridge (``br0``) with the gateway address of its hosts' subnet
and one port per host (``h-<host>``), and one routed link per spine (``s<k>``, a /31 from ``link_subnet``); a spine
holds one routed link per leaf (``l<i>``). A leaf reaches every other leaf's subnet by a multipath route through all
spines; a spine reaches each leaf's subnet through its link to that leaf. Each switch forwards, with rp_filter off,
and hashes multipath flows by the ``hash`` given: ``l3`` (policy 0: source and destination address) or ``l4``
(policy 3 with fields 0x37: source and destination address, protocol, source and destination port). Policy 1 (the
kernel's "Layer 4") would hash a forwarded packet by the socket's hash that a veth carries across namespaces, which no
route lookup can know; policy 3 hashes the packet's own five-tuple, which ``lookup`` can ask for. ``seed`` sets
``fib_multipath_hash_seed`` (Linux 6.11+), so a run's placement is reproducible.

``lookup`` asks each switch, hop by hop, which next hop a five-tuple takes: an RTM_GETROUTE with the input interface,
the source and destination address and ports and the protocol, as the forwarding path would see the packet.

The same module builds a 3-tier Clos (spines in pods, each linked to its plane's superspines by ``u<c>`` / ``p<k>``: a
spine reaches its own pod's leaves directly and every other subnet by a multipath route through its superspines, a
superspine each leaf's subnet through its spines in that leaf's pod) and a rail-optimized fabric whose hosts are a
machine's NICs, optionally joined by in-host relay links (``x<j>`` in NIC i's namespace toward its machine's NIC j):
with the relay, a NIC forwards, and reaches every other rail's subnet through its machine's NIC on that rail. A
flow from a relaying NIC is looked up from its own namespace first (the locally sent packet's output interface).
"""

from __future__ import annotations

import ipaddress

from .._link import link_name
from .._netns_enter import NetnsError, run_in_namespace
from .spec import BRIDGE, PORT_BUCKETS, FabricError, relay_hosts, relay_switch, shapers, switches

__all__ = ["Fabric", "in_netns_fork", "route_get", "sysctl_path"]


RTM_GETROUTE = 26
RTA_IIF_IN_ROUTE_GET = True


def sysctl_path(key):
    return "/proc/sys/" + key.replace(".", "/")


def _shape(ipr, device, direction, rate, check_mode):
    from .._tc import shape

    params = {"device": device, "direction": direction, "qdisc": "htb", "rate": rate, "burst": None,
              "latency": None, "fair_share_sources": [], "fair_share_destinations": [], "ack_priority": True,
              "fair_share_ports": PORT_BUCKETS, "ifb_device": None, "state": "present"}
    # no warn: the ports are the fabric's own veths (no RDMA under them, no record, a root only the fabric makes)
    return shape(ipr, params, check_mode=check_mode)["changed"]


def _read_sysctls(keys):
    out = {}
    for key in keys:
        try:
            with open(sysctl_path(key)) as handle:
                out[key] = int(handle.read().split()[0])
        except (OSError, ValueError, IndexError):
            out[key] = None
    return out


def _write_sysctls(values):
    for key, value in values.items():
        with open(sysctl_path(key), "w") as handle:
            handle.write("%d\n" % value)


class Fabric:
    """Reads and changes the fabric. ``netns``: pyroute2.netns-like (listnetns/create/remove); ``iproute``: the
    IPRoute class (netns= keyword); ``in_netns(name, fn, *args)``: runs ``fn`` inside a namespace, returns its value
    (sysctls are per namespace and live in /proc/sys of a process inside it)."""

    def __init__(self, netns, iproute, in_netns):
        self.netns = netns
        self.iproute = iproute
        self.in_netns = in_netns

    # -------------------------------------------------------------------------------------------- desired state
    @staticmethod
    def _wanted(topo):
        """Per namespace: its links {ifname: {address, peer_ns, peer_if, master}} and routes {dst: [gateways]}."""
        want = {}
        for leaf in topo["leaves"]:
            want[leaf["namespace"]] = {"links": {BRIDGE: {"kind": "bridge", "address": leaf["gateway"]}},
                                       "routes": {}, "switch": True}
        for spine in topo["spines"] + topo.get("superspines", []):
            want[spine["namespace"]] = {"links": {}, "routes": {}, "switch": True}
        ns_of = {x["name"]: x["namespace"] for x in switches(topo)}
        for link in topo["links"]:
            leaf_ns, spine_ns = ns_of[link["leaf"]], ns_of[link["spine"]]
            want[leaf_ns]["links"][link["leaf_interface"]] = {
                "kind": "veth", "address": link["leaf_address"] + "/31", "peer_ns": spine_ns,
                "peer_if": link["spine_interface"]}
            want[spine_ns]["links"][link["spine_interface"]] = {
                "kind": "veth", "address": link["spine_address"] + "/31", "peer_ns": leaf_ns,
                "peer_if": link["leaf_interface"]}
        for leaf in topo["leaves"]:
            for other in topo["leaves"]:
                if other is leaf:
                    continue
                want[leaf["namespace"]]["routes"][other["subnet"]] = sorted(
                    (lk["spine_address"], lk["leaf_interface"]) for lk in topo["links"] if lk["leaf"] == leaf["name"])
            for lk in topo["links"]:
                if lk["leaf"] == leaf["name"]:
                    want[ns_of[lk["spine"]]]["routes"][leaf["subnet"]] = [(lk["leaf_address"], lk["spine_interface"])]
        Fabric._wanted_superspines(topo, want, ns_of)
        for host in topo["hosts"]:
            leaf = next(x for x in topo["leaves"] if x["name"] == host["leaf"])
            want[leaf["namespace"]]["links"][host["port"]] = {"kind": "veth", "master": BRIDGE,
                                                              "peer_ns": host["namespace"],
                                                              "peer_if": host["interface"]}
            want[host["namespace"]] = {
                "links": {host["interface"]: {"kind": "veth", "address": host["address"]}},
                "routes": {"0.0.0.0/0": [(leaf["gateway"].split("/")[0], host["interface"])]}, "switch": False}
        Fabric._wanted_relays(topo, want)
        return want

    @staticmethod
    def _wanted_superspines(topo, want, ns_of):
        """The spine-superspine links, and the routes they carry: a spine reaches another pod's leaf subnets through
        its superspines, a superspine each leaf subnet through its spines in that leaf's pod."""
        for up in topo.get("uplinks") or []:
            spine_ns, super_ns = ns_of[up["spine"]], ns_of[up["superspine"]]
            want[spine_ns]["links"][up["spine_interface"]] = {
                "kind": "veth", "address": up["spine_address"] + "/31", "peer_ns": super_ns,
                "peer_if": up["super_interface"]}
            want[super_ns]["links"][up["super_interface"]] = {
                "kind": "veth", "address": up["super_address"] + "/31", "peer_ns": spine_ns,
                "peer_if": up["spine_interface"]}
        pod_of = {x["name"]: x.get("pod") for x in topo["leaves"] + topo["spines"]}
        for spine in topo["spines"]:
            ups = sorted((u["super_address"], u["spine_interface"]) for u in topo.get("uplinks") or []
                         if u["spine"] == spine["name"])
            if not ups:
                continue
            for leaf in topo["leaves"]:
                if pod_of[leaf["name"]] != spine.get("pod"):
                    want[spine["namespace"]]["routes"][leaf["subnet"]] = ups
        for sup in topo.get("superspines", []):
            for leaf in topo["leaves"]:
                hops = sorted((u["spine_address"], u["super_interface"]) for u in topo.get("uplinks") or []
                              if u["superspine"] == sup["name"] and pod_of[u["spine"]] == pod_of[leaf["name"]])
                if hops:
                    want[sup["namespace"]]["routes"][leaf["subnet"]] = hops

    @staticmethod
    def _wanted_relays(topo, want):
        """The in-host relay links of each machine, and a relaying NIC's routes: every other rail's subnet through
        its machine's NIC on that rail (which forwards: it is a switch for its sysctls)."""
        by_name = {h["name"]: h for h in topo["hosts"]}
        subnet = {leaf["name"]: leaf["subnet"] for leaf in topo["leaves"]}
        for r in topo.get("relays") or []:
            one, two = by_name[r["a"]], by_name[r["b"]]
            want[one["namespace"]]["links"][r["a_interface"]] = {
                "kind": "veth", "address": r["a_address"] + "/31", "peer_ns": two["namespace"],
                "peer_if": r["b_interface"]}
            want[two["namespace"]]["links"][r["b_interface"]] = {
                "kind": "veth", "address": r["b_address"] + "/31", "peer_ns": one["namespace"],
                "peer_if": r["a_interface"]}
            want[one["namespace"]]["routes"][subnet[two["leaf"]]] = [(r["b_address"], r["a_interface"])]
            want[two["namespace"]]["routes"][subnet[one["leaf"]]] = [(r["a_address"], r["b_interface"])]
            # what the NIC sends over its relay carries its own address, not the relay's /31 (which no switch knows
            # the way back to): the route's preferred source
            for host, other in ((one, two), (two, one)):
                want[host["namespace"]].setdefault("prefsrc", {})[subnet[other["leaf"]]] = \
                    host["address"].split("/")[0]
        for host in relay_hosts(topo):
            want[host["namespace"]]["switch"] = True

    def missing(self, topo):
        """What differs from the desired fabric, as readable items (empty: nothing to do)."""
        present = set(self.netns.listnetns())
        todo = []
        want = self._wanted(topo)
        for ns, spec in want.items():
            if ns not in present:
                todo.append("namespace %s" % ns)
                continue
            with self.iproute(netns=ns) as ipr:
                todo += ["%s in %s" % (item, ns) for item in self._links_missing(ipr, spec, topo["mtu"])]
                todo += ["%s in %s" % (item, ns) for item in self._routes_missing(ipr, spec)]
            if spec["switch"]:
                with self.iproute(netns=ns) as ipr:
                    todo += ["shaper %s %s %s in %s" % (dev, direction, rate, ns)
                             for sns, dev, direction, rate in shapers(topo)
                             if sns == ns and ipr.link_lookup(ifname=dev) and _shape(ipr, dev, direction, rate, True)]
                have = self.in_netns(ns, _read_sysctls, sorted(topo["sysctls"]))
                todo += ["sysctl %s=%s (is %s) in %s" % (k, v, have.get(k), ns)
                         for k, v in sorted(topo["sysctls"].items()) if have.get(k) != v]
        return todo

    @staticmethod
    def _links_missing(ipr, spec, mtu):
        todo = []
        lo = ipr.link_lookup(ifname="lo")
        if lo and not ipr.get_links(lo[0])[0]["flags"] & 1:
            todo.append("lo up")
        for ifname, link in sorted(spec["links"].items()):
            found = ipr.link_lookup(ifname=ifname)
            if not found:
                todo.append("link %s" % ifname)
                continue
            msg = ipr.get_links(found[0])[0]
            if msg.get_attr("IFLA_MTU") != mtu or not msg["flags"] & 1:
                todo.append("link %s mtu/up" % ifname)
            if link.get("master"):
                master = ipr.link_lookup(ifname=link["master"])
                if not master or msg.get_attr("IFLA_MASTER") != master[0]:
                    todo.append("link %s master %s" % (ifname, link["master"]))
            if link.get("address"):
                want = ipaddress.ip_interface(link["address"])
                have = {(a.get_attr("IFA_ADDRESS"), a["prefixlen"]) for a in ipr.get_addr(index=found[0])}
                if (str(want.ip), want.network.prefixlen) not in have:
                    todo.append("address %s on %s" % (link["address"], ifname))
        return todo

    @staticmethod
    def _routes(ipr, prefsrc=None):
        """``{dst/len: sorted [(gateway, ifname)]}`` of the main table's unicast routes with a gateway (a route whose
        preferred source is not ``prefsrc[dst]`` reads as missing)."""
        names = {msg["index"]: msg.get_attr("IFLA_IFNAME") for msg in ipr.get_links()}
        out = {}
        for route in ipr.get_routes(family=2, table=254):
            dst = "%s/%d" % (route.get_attr("RTA_DST") or "0.0.0.0", route["dst_len"])
            if (prefsrc or {}).get(dst) and route.get_attr("RTA_PREFSRC") != prefsrc[dst]:
                continue
            hops = []
            if route.get_attr("RTA_GATEWAY"):
                hops.append((route.get_attr("RTA_GATEWAY"), names.get(route.get_attr("RTA_OIF"))))
            for nh in route.get_attr("RTA_MULTIPATH") or []:
                hops.append((nh.get_attr("RTA_GATEWAY"), names.get(nh["oif"])))
            if hops:
                out[dst] = sorted(hops)
        return out

    def _routes_missing(self, ipr, spec):
        have = self._routes(ipr, spec.get("prefsrc"))
        return ["route %s via %s" % (dst, ", ".join("%s dev %s" % h for h in hops))
                for dst, hops in sorted(spec["routes"].items()) if have.get(dst) != sorted(hops)]

    def apply(self, topo):
        present = set(self.netns.listnetns())
        want = self._wanted(topo)
        for ns in want:
            if ns not in present:
                self.netns.create(ns)
        # links first (a veth's two ends are made together, from the namespace that owns the first end), then
        # addresses and state, then routes (a gateway must be reachable when its route is added)
        for ns, spec in want.items():
            with self.iproute(netns=ns) as ipr:
                for ifname, link in sorted(spec["links"].items()):
                    if ipr.link_lookup(ifname=ifname):
                        continue
                    if link["kind"] == "bridge":
                        ipr.link("add", ifname=ifname, kind="bridge")
                    elif ns < link["peer_ns"] or link["peer_ns"] not in want:
                        self._add_veth(ipr, ifname, link)
                    else:
                        with self.iproute(netns=link["peer_ns"]) as peer:
                            if not peer.link_lookup(ifname=link["peer_if"]):
                                self._add_veth(ipr, ifname, link)
        for ns, spec in want.items():
            with self.iproute(netns=ns) as ipr:
                ipr.link("set", index=ipr.link_lookup(ifname="lo")[0], state="up")
                for ifname, link in sorted(spec["links"].items(), key=lambda kv: kv[1]["kind"] != "bridge"):
                    index = ipr.link_lookup(ifname=ifname)[0]
                    extra = {}
                    if link.get("master"):
                        extra["master"] = ipr.link_lookup(ifname=link["master"])[0]
                    ipr.link("set", index=index, mtu=topo["mtu"], state="up", **extra)
                    if link.get("address"):
                        want_addr = ipaddress.ip_interface(link["address"])
                        have = {(a.get_attr("IFA_ADDRESS"), a["prefixlen"]) for a in ipr.get_addr(index=index)}
                        if (str(want_addr.ip), want_addr.network.prefixlen) not in have:
                            ipr.addr("add", index=index, address=str(want_addr.ip),
                                     prefixlen=want_addr.network.prefixlen)
            if spec["switch"]:
                self.in_netns(ns, _write_sysctls, topo["sysctls"])
        for ns, dev, direction, rate in shapers(topo):
            with self.iproute(netns=ns) as ipr:
                _shape(ipr, dev, direction, rate, False)
        for ns, spec in want.items():
            with self.iproute(netns=ns) as ipr:
                have = self._routes(ipr, spec.get("prefsrc"))
                for dst, hops in sorted(spec["routes"].items()):
                    if have.get(dst) == sorted(hops):
                        continue
                    net = ipaddress.ip_network(dst)
                    index = {name: ipr.link_lookup(ifname=name)[0] for _gw, name in hops}
                    if len(hops) == 1:
                        args = {"gateway": hops[0][0], "oif": index[hops[0][1]]}
                    else:
                        args = {"multipath": [{"gateway": gw, "oif": index[name]} for gw, name in hops]}
                    if (spec.get("prefsrc") or {}).get(dst):
                        args["prefsrc"] = spec["prefsrc"][dst]
                    ipr.route("replace", dst=str(net.network_address), dst_len=net.prefixlen, **args)

    @staticmethod
    def _add_veth(ipr, ifname, link):
        ipr.link("add", ifname=ifname, kind="veth", peer={"ifname": link["peer_if"], "net_ns_fd": link["peer_ns"]})

    def namespaces(self, topo):
        return [x["namespace"] for x in topo["hosts"]] + [x["namespace"] for x in switches(topo)]

    def present_namespaces(self, topo):
        present = set(self.netns.listnetns())
        return [ns for ns in self.namespaces(topo) if ns in present]

    def remove(self, topo):
        for ns in self.present_namespaces(topo):
            self.netns.remove(ns)

    # --------------------------------------------------------------------------------------------------- lookups
    def lookup(self, topo, flows):
        """Each flow's path through the fabric: ``flows`` ``[{id, src, dst, sport, dport, proto}]`` (addresses of
        fabric hosts). Returns ``[{id, hops: [{switch, in, out, next}], links: [names], error}]``: the switches it
        crosses, from its source's leaf to its destination's, each with the interface the kernel chose."""
        host_by_ip = {str(ipaddress.ip_interface(h["address"]).ip): h for h in topo["hosts"]}
        switch = {x["name"]: x for x in switches(topo)}
        # next switch across each routed link: (switch, out interface) -> (switch, its in interface)
        across = {}
        for lk in topo["links"]:
            across[(lk["leaf"], lk["leaf_interface"])] = (lk["spine"], lk["spine_interface"])
            across[(lk["spine"], lk["spine_interface"])] = (lk["leaf"], lk["leaf_interface"])
        for up in topo.get("uplinks") or []:
            across[(up["spine"], up["spine_interface"])] = (up["superspine"], up["super_interface"])
            across[(up["superspine"], up["super_interface"])] = (up["spine"], up["spine_interface"])
        relaying = {h["name"]: h for h in relay_hosts(topo)}
        relay_across = {}
        for r in topo.get("relays") or []:
            relay_across[(r["a"], r["a_interface"])] = (r["b"], r["b_interface"])
            relay_across[(r["b"], r["b_interface"])] = (r["a"], r["a_interface"])
        sockets = {}
        out = []
        try:
            for flow in flows:
                src, dst = host_by_ip.get(flow["src"]), host_by_ip.get(flow["dst"])
                entry = {"id": flow["id"], "hops": [], "links": [], "error": None}
                out.append(entry)
                if src is None or dst is None:
                    entry["error"] = "%s is not a fabric host's address" % (flow["src"] if src is None else flow["dst"])
                    continue
                if src["name"] in relaying:
                    start = self._from_host(sockets, relaying, flow, src, dst, relay_across, entry)
                    if start is None:  # arrived over the in-host link alone, or an error
                        continue
                    name, iif = start
                else:
                    name, iif = src["leaf"], BRIDGE
                    entry["links"].append(link_name(src["name"], name))
                for _hop in range(8):
                    if name == dst["leaf"]:
                        entry["hops"].append({"switch": name, "in": iif, "out": dst["port"], "next": dst["name"]})
                        entry["links"].append(link_name(name, dst["name"]))
                        break
                    ns = switch[name]["namespace"]
                    if ns not in sockets:
                        sockets[ns] = self.iproute(netns=ns)
                    oif = route_get(sockets[ns], flow, iif)
                    nxt = across.get((name, oif))
                    if nxt is None:
                        entry["error"] = "%s sends it out of %s, which is not a fabric link" % (name, oif)
                        break
                    entry["hops"].append({"switch": name, "in": iif, "out": oif, "next": nxt[0]})
                    entry["links"].append(link_name(name, nxt[0]))
                    name, iif = nxt
                else:
                    entry["error"] = "no path within 8 switches (a routing loop?)"
        finally:
            for sock in sockets.values():
                sock.close()
        return out

    def _from_host(self, sockets, relaying, flow, src, dst, relay_across, entry):
        """A relaying NIC's flow, from its own namespace: out of its interface to its leaf, or over an in-host link
        to its machine's NIC that forwards it to that NIC's leaf. ``(leaf, BRIDGE)`` to go on from, or None: arrived
        (a flow to another NIC of its machine crosses the in-host link alone), or the entry's error set."""
        name, iif = src["name"], None
        for _hop in range(2):
            if name == dst["name"]:
                return None
            host = relaying[name]
            if host["namespace"] not in sockets:
                sockets[host["namespace"]] = self.iproute(netns=host["namespace"])
            oif = route_get(sockets[host["namespace"]], flow, iif)
            if oif == host["interface"]:
                entry["hops"].append({"switch": name, "in": iif, "out": oif, "next": host["leaf"]})
                entry["links"].append(link_name(name, host["leaf"]))
                return host["leaf"], BRIDGE
            nxt = relay_across.get((name, oif))
            if nxt is None:
                break
            entry["hops"].append({"switch": name, "in": iif, "out": oif, "next": nxt[0]})
            entry["links"].append(link_name(name, nxt[0]))
            name, iif = nxt
        entry["error"] = "%s sends it out of %s, which is neither its leaf's link nor one relay" % (name, oif)
        return None

    def counters(self, topo, clock=None):
        """``{switch: snapshot}`` of every fabric port (the leaves' host ports and uplinks, the spines' links), read
        through netlink in each switch's namespace, shaped as port_counters_info' snapshots (``taken_at``, ``netdev``
        statistics by name, ``qdisc`` counters, ``rdma`` empty), so a run's counters diff reads them alike."""
        import time

        from .._counters import read_qdiscs

        clock = clock or time.time

        out = {}
        want = self._wanted(topo)
        relays = {}
        for r in topo.get("relays") or []:
            relays.setdefault(r["a"], set()).add(r["a_interface"])
            relays.setdefault(r["b"], set()).add(r["b_interface"])
        for item in switches(topo) + relay_hosts(topo):
            ports = (set(want[item["namespace"]]["links"]) - {BRIDGE} if item["name"] not in relays
                     else relays[item["name"]])
            with self.iproute(netns=item["namespace"]) as ipr:
                stats = {msg.get_attr("IFLA_IFNAME"): _stats64(msg) for msg in ipr.get_links()
                         if msg.get_attr("IFLA_IFNAME") in ports}
                name = item["name"] if item["name"] not in relays else relay_switch(item["name"])
                out[name] = {"taken_at": clock(), "rdma": {}, "netdev": stats, "qdisc": read_qdiscs(ipr, sorted(stats))}
        return out


_STATS = ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_errors", "tx_errors", "rx_dropped", "tx_dropped",
          "multicast", "collisions", "rx_length_errors", "rx_over_errors", "rx_crc_errors", "rx_frame_errors",
          "rx_fifo_errors", "rx_missed_errors", "tx_aborted_errors", "tx_carrier_errors", "tx_fifo_errors",
          "tx_heartbeat_errors", "tx_window_errors", "rx_compressed", "tx_compressed", "rx_nohandler")


def _stats64(msg):
    """A link's IFLA_STATS64 as /sys/class/net/<dev>/statistics names them."""
    stats = msg.get_attr("IFLA_STATS64") or {}
    return {key: int(stats.get(key, 0) or 0) for key in _STATS}


def _rtmsg_class():
    """pyroute2's rtmsg with the attributes a five-tuple route lookup needs (pyroute2 0.9 stops at RTA_EXPIRES and
    would drop the ports and protocol without a word)."""
    from pyroute2.netlink.rtnl.rtmsg import rtmsg

    class rtmsg_lookup(rtmsg):
        _nlmsg_base__compiled_nla = False  # compile this class's own map, not reuse rtmsg's
        nla_map = tuple(rtmsg.nla_map) + (
            ("RTA_PAD", "hex"),
            ("RTA_UID", "uint32"),
            ("RTA_TTL_PROPAGATE", "uint8"),
            ("RTA_IP_PROTO", "uint8"),
            ("RTA_SPORT", "be16"),
            ("RTA_DPORT", "be16"),
            ("RTA_NH_ID", "uint32"),
        )

    return rtmsg_lookup


_PROTOCOLS = {"tcp": 6, "udp": 17}


def route_get(ipr, flow, iif):
    """The output interface the kernel's forwarding path picks for ``flow`` arriving on ``iif``."""
    names = {msg["index"]: msg.get_attr("IFLA_IFNAME") for msg in ipr.get_links()}
    index = {v: k for k, v in names.items()}
    if iif is not None and iif not in index:
        raise FabricError("no interface %s to look a route up from" % iif)
    cls = _rtmsg_class()
    msg = cls()
    msg["family"] = 2
    msg["dst_len"] = 32
    msg["src_len"] = 32
    # no iif: a packet the namespace itself sends (its source address given), as a host's socket would
    msg["attrs"] = [("RTA_DST", flow["dst"]), ("RTA_SRC", flow["src"])] + (
        [("RTA_IIF", index[iif])] if iif is not None else []) + [
        ("RTA_IP_PROTO", _PROTOCOLS.get(flow.get("proto") or "tcp", 6)),
        ("RTA_SPORT", int(flow["sport"])), ("RTA_DPORT", int(flow["dport"]))]
    from pyroute2.netlink import NLM_F_REQUEST

    status = getattr(ipr, "status", None)
    if isinstance(status, dict) and "nlm_generator" not in status:
        # pyroute2 0.9's synchronous nlm_request reads its own status dict, which only the async core fills
        status["nlm_generator"] = False
    replies = ipr.nlm_request(msg, msg_type=RTM_GETROUTE, msg_flags=NLM_F_REQUEST)
    for reply in replies:
        oif = reply.get_attr("RTA_OIF")
        if oif is not None:
            return names.get(oif)
    raise FabricError("the kernel returned no output interface for %s:%s -> %s:%s" % (
        flow["src"], flow["sport"], flow["dst"], flow["dport"]))


def in_netns_fork(name, fn, *args):
    """Run ``fn(*args)`` in a child process inside network namespace ``name``; return its (JSON) value
    (``_netns_enter.run_in_namespace``; its error as a FabricError)."""
    try:
        return run_in_namespace(name, fn, *args)
    except NetnsError as exc:
        raise FabricError(exc.strerror) from None
