# -*- coding: utf-8 -*-
"""A network namespace's traffic control, answering netlink as the kernel does, for the tc_shape tests.

``TcKernel`` is an ``IPRoute`` for one namespace: links, and per link its qdiscs, classes and filters. Requests are
turned into the options the real request carries by pyroute2's own tc plugins (``sched_htb.get_parameters`` and
friends), and every dump is a pyroute2 message (``tcmsg``/``ifinfmsg``) encoded and decoded again, so a reader sees
what it sees on a real kernel, down to pyroute2 0.9.7's decoding of u32 keys.

The qdisc requests follow ``tc_modify_qdisc`` (net/sched/sch_api.c): the kernel's default root (handle 0) is
ignored, so "add" or "replace" with a handle grafts over it; a root with another handle is swapped only with
NLM_F_REPLACE ("replace"), else EEXIST; a root with the same handle is changed in place, which fails with EINVAL for a
kind it is not, and for htb, which has no change operation; tbf changes. Deleting the root puts the default back.
Classes: "add-class" fails with EEXIST on an existing class, "replace-class" changes it; both need the qdisc (ENOENT).
``fail(predicate, errno)`` makes the next requests the predicate matches fail as a driver or the kernel would.

The defaults copy real hosts: a veth has ``noqueue 0:`` (IFF_NO_QUEUE), a hardware NIC ``mq 0:`` with one
``fq_codel 0:`` per queue (systemd's net.core.default_qdisc), an ifb ``fq_codel 0:``.
"""
from __future__ import annotations

import errno
import socket

from pyroute2.netlink.exceptions import NetlinkError
from pyroute2.netlink.rtnl import RTM_NEWQDISC, RTM_NEWTCLASS, RTM_NEWTFILTER
from pyroute2.netlink.rtnl.ifinfmsg import ifinfmsg
from pyroute2.netlink.rtnl.tcmsg import cls_u32, sched_htb, sched_ingress, sched_tbf, tcmsg

TC_H_ROOT = 0xFFFFFFFF
TC_H_INGRESS = 0xFFFFFFF1
FQ_CODEL = {"attrs": [["TCA_FQ_CODEL_TARGET", 4999], ["TCA_FQ_CODEL_LIMIT", 10240],
                      ["TCA_FQ_CODEL_INTERVAL", 99999], ["TCA_FQ_CODEL_ECN", 1], ["TCA_FQ_CODEL_FLOWS", 1024],
                      ["TCA_FQ_CODEL_QUANTUM", 1514], ["TCA_FQ_CODEL_CE_THRESHOLD", 2147483647],
                      ["TCA_FQ_CODEL_DROP_BATCH_SIZE", 64], ["TCA_FQ_CODEL_MEMORY_LIMIT", 33554432]]}
PLUGINS = {"htb": sched_htb, "tbf": sched_tbf, "ingress": sched_ingress}


def _msg(mtype, index, handle, parent, info, attrs):
    msg = tcmsg()
    msg["header"]["type"] = mtype
    msg["family"], msg["index"], msg["handle"], msg["parent"], msg["info"] = 0, index, handle, parent, info
    msg["attrs"] = attrs
    msg.encode()
    out = tcmsg(msg.data)
    out.decode()
    return out


def _strip_tables(options):
    """The request's options as the kernel dumps them: no rate tables."""
    tables = ("TCA_HTB_RTAB", "TCA_HTB_CTAB", "TCA_TBF_RTAB", "TCA_TBF_PTAB")
    attrs = [a for a in (options or {}).get("attrs", []) if a[0] not in tables]
    return {"attrs": attrs}


def _stats():
    return {"attrs": [["TCA_STATS_BASIC", {"bytes": 0, "packets": 0}],
                      ["TCA_STATS_QUEUE", {"qlen": 0, "backlog": 0, "drops": 0, "requeues": 0, "overlimits": 0}]]}


class TcKernel:
    def __init__(self):
        self.links = {}
        self.qdiscs = {}
        self.classes = {}
        self.filters = {}
        self.failures = []
        self.requests = []
        self._next_index = 1
        self.add_link("lo", "loopback", default=("noqueue", None))

    # ------------------------------------------------------------------ set-up
    def add_link(self, name, kind="veth", mtu=9000, default=None, queues=0, alias=None):
        index = self._next_index
        self._next_index += 1
        self.links[index] = {"ifname": name, "kind": kind, "mtu": mtu, "alias": alias, "up": True}
        self.qdiscs[index], self.classes[index], self.filters[index] = [], [], []
        self._default_root(index, default, queues)
        return index

    def _default_root(self, index, default=None, queues=0):
        kind = self.links[index]["kind"]
        if default is None:
            default = ("noqueue", None) if kind in ("veth", "bridge", "loopback") else ("fq_codel", FQ_CODEL)
        self.links[index]["default"], self.links[index]["queues"] = default, queues
        if queues:
            self.qdiscs[index].append({"handle": 0, "parent": TC_H_ROOT, "kind": "mq", "options": None})
            for q in range(queues):
                self.qdiscs[index].append({"handle": 0, "parent": q + 1, "kind": "fq_codel", "options": FQ_CODEL})
        else:
            self.qdiscs[index].append({"handle": 0, "parent": TC_H_ROOT, "kind": default[0], "options": default[1]})

    def add_qdisc(self, index, kind, handle, options, parent=TC_H_ROOT):
        """A qdisc someone else put there (``tc qdisc replace dev X root handle 8001: fq_codel``)."""
        self.qdiscs[index] = [q for q in self.qdiscs[index] if q["parent"] != parent and
                              not (parent == TC_H_ROOT and q["handle"] == 0)]
        self.qdiscs[index].append({"handle": handle, "parent": parent, "kind": kind, "options": options})

    def fail(self, predicate, code):
        """Requests ``predicate(command, kind, index, handle, kwargs)`` matches fail with ``code``."""
        self.failures.append((predicate, code))

    # ------------------------------------------------------------------ the IPRoute it stands in for
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def link_lookup(self, ifname):
        return [i for i, link in self.links.items() if link["ifname"] == ifname]

    def get_links(self, *indexes, **kwargs):
        wanted = indexes or sorted(self.links)
        out = []
        for index in wanted:
            if index not in self.links:
                raise NetlinkError(errno.ENODEV)
            link = self.links[index]
            msg = ifinfmsg()
            msg["index"], msg["family"], msg["flags"] = index, 0, 0x1043 if link["up"] else 0x1002
            attrs = [["IFLA_IFNAME", link["ifname"]], ["IFLA_MTU", link["mtu"]]]
            if link["alias"]:
                attrs.append(["IFLA_IFALIAS", link["alias"]])
            if link["kind"] not in ("loopback", "ether"):
                attrs.append(["IFLA_LINKINFO", {"attrs": [["IFLA_INFO_KIND", link["kind"]]]}])
            msg["attrs"] = attrs
            msg.encode()
            dec = ifinfmsg(msg.data)
            dec.decode()
            out.append(dec)
        return out

    def link(self, command, **kw):
        self.requests.append(("link-" + command, kw.get("kind"), kw.get("index"), None, kw))
        self._maybe_fail("link-" + command, kw.get("kind"), kw.get("index"), None, kw)
        if command == "add":
            if self.link_lookup(kw["ifname"]):
                raise NetlinkError(errno.EEXIST)
            self.add_link(kw["ifname"], kw["kind"], mtu=1500)
        elif command == "set":
            link = self.links[kw["index"]]
            link["mtu"] = kw.get("mtu", link["mtu"])
            link["alias"] = kw.get("ifalias", link["alias"])
            link["up"] = kw.get("state", "up") == "up"
        elif command == "del":
            index = kw["index"]
            if index not in self.links:
                raise NetlinkError(errno.ENODEV)
            for table in (self.links, self.qdiscs, self.classes, self.filters):
                del table[index]

    def _maybe_fail(self, command, kind, index, handle, kw):
        for predicate, code in self.failures:
            if predicate(command, kind, index, handle, kw):
                raise NetlinkError(code)

    def get_qdiscs(self, index=None):
        out = []
        for idx in [index] if index is not None else sorted(self.qdiscs):
            for q in self.qdiscs.get(idx, []):
                attrs = [["TCA_KIND", q["kind"]]]
                if q["options"] is not None:
                    attrs.append(["TCA_OPTIONS", q["options"]])
                attrs.append(["TCA_STATS2", _stats()])
                out.append(_msg(RTM_NEWQDISC, idx, q["handle"], q["parent"], 2 if q["parent"] == TC_H_ROOT else 1,
                                attrs))
        return out

    def get_classes(self, index):
        return [_msg(RTM_NEWTCLASS, index, c["handle"], c["parent"], 0,
                     [["TCA_KIND", "htb"], ["TCA_OPTIONS", c["options"]], ["TCA_STATS2", _stats()]])
                for c in self.classes.get(index, [])]

    def get_filters(self, index, parent=None):
        return [_msg(RTM_NEWTFILTER, index, f["handle"], f["parent"], f["info"],
                     [["TCA_KIND", "u32"], ["TCA_OPTIONS", f["options"]]])
                for f in self.filters.get(index, []) if parent is None or f["parent"] == parent]

    # ------------------------------------------------------------------ tc
    def root(self, index, parent=TC_H_ROOT):
        return next((q for q in self.qdiscs[index] if q["parent"] == parent), None)

    def tc(self, command, kind=None, index=None, handle=None, **kw):
        self.requests.append((command, kind, index, handle, kw))
        if index not in self.links:
            raise NetlinkError(errno.ENODEV)
        self._maybe_fail(command, kind, index, handle, kw)
        if command in ("add", "replace"):
            return self._new_qdisc(command, kind, index, handle, kw)
        if command == "del":
            return self._del_qdisc(index, handle, kw.get("parent", TC_H_ROOT))
        if command in ("add-class", "replace-class"):
            return self._new_class(command, index, handle, kw)
        if command == "add-filter":
            return self._new_filter(kind, index, kw)
        raise NotImplementedError(command)

    def _new_qdisc(self, command, kind, index, handle, kw):
        plugin = PLUGINS[kind]
        parent = kw.pop("parent", plugin.parent)
        options = None if kind == "ingress" else _strip_tables(plugin.get_parameters(dict(kw)))
        q = self.root(index, parent)
        if q is not None and q["handle"] == 0:
            q = None  # "It may be default qdisc, ignore it"
        if q is not None and q["handle"] == handle:
            if command == "add":
                raise NetlinkError(errno.EEXIST, "Exclusivity flag on, cannot override")
            if q["kind"] != kind:
                raise NetlinkError(errno.EINVAL, "Invalid qdisc name")
            if kind == "htb":
                raise NetlinkError(errno.EINVAL, "Change operation not supported by specified qdisc")
            q["options"] = options
            return []
        if q is not None and command != "replace":
            raise NetlinkError(errno.EEXIST, "NLM_F_REPLACE needed to override")
        self._drop(index, q)
        self.qdiscs[index] = [x for x in self.qdiscs[index] if x["parent"] != parent]
        if parent == TC_H_ROOT:
            self.qdiscs[index] = [x for x in self.qdiscs[index] if x["handle"] != 0]
        self.qdiscs[index].append({"handle": handle, "parent": parent, "kind": kind, "options": options})
        return []

    def _drop(self, index, q):
        if q is None:
            return
        major = q["handle"] & 0xFFFF0000
        self.classes[index] = [c for c in self.classes[index] if c["handle"] & 0xFFFF0000 != major]
        self.filters[index] = [f for f in self.filters[index] if f["parent"] & 0xFFFF0000 != major]

    def _del_qdisc(self, index, handle, parent):
        q = self.root(index, parent)
        if q is None:
            raise NetlinkError(errno.EINVAL, "Failed to find qdisc with specified classid")
        if q["handle"] == 0:
            raise NetlinkError(errno.ENOENT, "Cannot delete qdisc with handle of zero")
        if handle and q["handle"] != handle:
            raise NetlinkError(errno.ENOENT, "Specified qdisc not found")
        self._drop(index, q)
        self.qdiscs[index].remove(q)
        if parent == TC_H_ROOT:
            link = self.links[index]
            self._default_root(index, link["default"], link["queues"])
        return []

    def _new_class(self, command, index, handle, kw):
        major = handle & 0xFFFF0000
        if not any(q["handle"] == major and q["kind"] == "htb" for q in self.qdiscs[index]):
            raise NetlinkError(errno.ENOENT, "Failed to find qdisc with specified handle")
        options = _strip_tables(sched_htb.get_class_parameters(dict(kw)))
        existing = next((c for c in self.classes[index] if c["handle"] == handle), None)
        if existing is not None:
            if command == "add-class":
                raise NetlinkError(errno.EEXIST)
            existing["options"] = options
            return []
        self.classes[index].append({"handle": handle, "parent": kw["parent"], "options": options})
        return []

    def _new_filter(self, kind, index, kw):
        parent = kw["parent"]
        if not any(q["handle"] == parent for q in self.qdiscs[index]):
            raise NetlinkError(errno.EINVAL, "Parent Qdisc doesn't exists")
        options = cls_u32.get_parameters(dict(kw))
        number = len(self.filters[index]) + 1
        self.filters[index].append({"handle": 0x80000800 + number, "parent": parent, "options": options,
                                    "info": (kw["prio"] << 16) | socket.htons(kw["protocol"])})
        return []
