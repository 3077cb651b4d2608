# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight on the controller: every host's ``preflight_info`` result checked, alone and against the others
(both ends of each path, the clocks, the perftest versions), into one table and a list of failures that each name the
host, the check and the fix (docs/hosts.md). The hosts only gather; this is the only place that judges."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from ansible_collections.aifabric.lab.plugins.module_utils._preflight import roce_mtu

from ._text import natural_key

__all__ = ["Expect", "Failure", "check", "report", "table"]

COLUMNS = ("host", "link", "mtu", "paths", "speed", "numa", "rdma", "gid", "pfc", "clock", "perftest", "leftovers",
           "verdict")
_RATE = re.compile(r"([0-9.]+)\s*Gb/sec")


@dataclass
class Expect:
    """What the experiment needs. ``mtu``: every data interface's MTU (None: only both ends of a path must agree);
    ``min_gbps``: the least link speed (the experiment's line rate); ``clock_tolerance_s``: the most two hosts' clocks
    may differ; ``rdma``: every host needs an ACTIVE RDMA port with a RoCE v2 GID for its address (on Ethernet);
    ``perftest``: every host needs the perftest tools, at one version."""

    mtu: int | None = None
    min_gbps: float | None = None
    clock_tolerance_s: float = 0.01
    rdma: bool = False
    perftest: bool = False

    @classmethod
    def from_dict(cls, data):
        data = dict(data or {})
        unknown = sorted(set(data) - set(cls.__dataclass_fields__))
        if unknown:
            known = ", ".join(cls.__dataclass_fields__)
            raise ValueError("expect: unknown key %s (known: %s)" % (", ".join(unknown), known))
        out = cls()
        for key, kind in (("mtu", int), ("min_gbps", float), ("clock_tolerance_s", float)):
            if data.get(key) not in (None, ""):
                try:
                    setattr(out, key, kind(data[key]))
                except (TypeError, ValueError):
                    raise ValueError("expect.%s: %r is not a number" % (key, data[key])) from None
        for key in ("rdma", "perftest"):
            if key in data:
                setattr(out, key, str(data[key]).lower() in ("1", "true", "yes", "on"))
        return out


@dataclass
class Failure:
    host: str
    check: str
    message: str
    fix: str

    def line(self):
        return "FAIL %s %s: %s. Fix: %s" % (self.host, self.check, self.message, self.fix)


@dataclass
class _Row:
    host: str
    cells: dict = field(default_factory=dict)
    failed: list = field(default_factory=list)  # the columns that failed

    def bad(self, column):
        if column not in self.failed:
            self.failed.append(column)


def _gbps(result):
    speed = (result.get("interface") or {}).get("speed_mbps")
    if speed:
        return speed / 1000.0, "%g Gb/s" % (speed / 1000.0)
    for dev in result.get("rdma") or []:
        for port in (dev.get("ports") or {}).values():
            match = _RATE.search(port.get("rate") or "")
            if match:
                return float(match.group(1)), "%s Gb/s (rdma)" % match.group(1)
    return None, "-"


def _majority(values):
    """The value most hosts have, or None on a tie."""
    counts = Counter(values.values()).most_common()
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return None
    return counts[0][0] if counts else None


def check(results, paths=None, expect=None, addresses=None):
    """``(rows, failures, reference)``: each host's ``preflight_info`` result (``{host: result}``) checked. ``paths``:
    ``[(a, b)]`` host pairs (every pair when None); ``addresses``: ``{host: lab address}``, to know which of a host's
    paths leads to which peer (the results' ``address`` otherwise)."""
    expect = expect if isinstance(expect, Expect) else Expect.from_dict(expect)
    hosts = sorted(results, key=natural_key)
    addresses = dict(addresses or {})
    for host in hosts:
        addresses.setdefault(host, results[host].get("address"))
    if paths is None:
        paths = [(a, b) for i, a in enumerate(hosts) for b in hosts[i + 1:]]
    rows = {h: _Row(h) for h in hosts}
    failures = []

    def fail(host, column, message, fix):
        rows[host].bad(column)
        failures.append(Failure(host, column, message, fix))

    for host in hosts:
        res, row = results[host], rows[host]
        if res.get("failed") or res.get("unreachable"):
            row.cells = {c: "-" for c in COLUMNS}
            fail(host, "host", "the preflight could not run (%s)" % (res.get("msg") or "unreachable"),
                 "reach the host (ansible -m ping) and prepare it (playbooks/lab_host.yml)")
            continue
        _check_link(host, res, row, expect, fail)
        _check_rdma(host, res, row, expect, fail)
        gbps, text = _gbps(res)
        row.cells["speed"] = text
        if expect.min_gbps and gbps is not None and gbps < expect.min_gbps:
            fail(host, "speed", "the link runs at %g Gb/s, below the experiment's %g Gb/s" % (gbps, expect.min_gbps),
                 "check the link's negotiated speed (ethtool %s) or lower lab_line_rate"
                 % (res.get("interface") or {}).get("name"))
        numa = (res.get("interface") or {}).get("numa_node")
        row.cells["numa"] = "-" if numa is None else str(numa)
        left = res.get("leftovers")
        if left is None:
            row.cells["leftovers"] = "-"
        else:
            # a lab of namespaces that is up (built on purpose, or its owner's still) is the lab the hosts are, not
            # something an earlier run left: the scan lists it, the preflight does not count it
            left = [i for i in left if not (i.get("kind") == "lab" and i.get("live"))]
            row.cells["leftovers"] = str(len(left))
            if left:
                what = "; ".join("%s %s (owner %s, %s)" % (i.get("kind"), i.get("name"), i.get("owner") or "none",
                                                           i.get("reason")) for i in left)
                fail(host, "leftovers", "%d left by earlier runs: %s" % (len(left), what),
                     "ansible-playbook playbooks/lab_check.yml -l %s -e remove=true (add -e unowned=remove for what "
                     "records no owner, when no other experiment runs there)" % host)
    good = [h for h in hosts if not results[h].get("failed") and not results[h].get("unreachable")]
    _check_paths(good, results, paths, addresses, rows, expect, fail)
    _check_dcb(good, results, rows, fail)
    reference = _check_clocks(good, results, rows, expect, fail)
    _check_perftest(good, results, rows, expect, fail)
    out = []
    for host in hosts:
        row = rows[host]
        for column in row.failed:
            if column in row.cells and not row.cells[column].endswith("!"):
                row.cells[column] += "!"
        row.cells["host"] = host
        row.cells["verdict"] = "ok" if not row.failed else "FAIL " + ",".join(row.failed)
        out.append(row)
    return out, failures, reference


def _check_link(host, res, row, expect, fail):
    iface = res.get("interface") or {}
    name = iface.get("name") or "?"
    if not iface.get("present"):
        row.cells.update(link="%s missing" % name, mtu="-")
        fail(host, "link", "no interface %s" % name, "set lab_interface to the host's data interface")
        return
    row.cells["link"] = "%s %s" % (name, iface.get("operstate") or "?")
    if iface.get("operstate") not in ("UP", "UNKNOWN"):
        fail(host, "link", "%s is %s" % (name, iface.get("operstate")),
             "bring it up (ip link set %s up) and check its cable and switch port" % name)
    mtu = iface.get("mtu")
    rdma = [d for d in res.get("rdma") or [] if d.get("present")]
    roce = any(p.get("link_layer") == "Ethernet" for d in rdma for p in d["ports"].values())
    row.cells["mtu"] = "%s (RoCE %s)" % (mtu, roce_mtu(mtu) or "-") if roce else str(mtu)
    if expect.mtu and mtu != expect.mtu:
        fail(host, "mtu", "%s has MTU %s, the experiment expects %s" % (name, mtu, expect.mtu),
             "ip link set %s mtu %s on %s (and the switch ports on its path), or set lab_mtu to what the lab "
             "carries" % (name, expect.mtu, host))


def _check_rdma(host, res, row, expect, fail):
    devices = res.get("rdma") or []
    iface = (res.get("interface") or {}).get("name")
    if not devices:
        row.cells.update(rdma="none", gid="-")
        if expect.rdma:
            fail(host, "rdma", "no RDMA device rides on %s" % iface,
                 "load the NIC's RDMA driver (mlx5_ib), or for soft-RoCE: modprobe rdma_rxe; rdma link add rxe0 "
                 "type rxe netdev %s; set lab_rdma_device" % iface)
        return
    rdma, gid = [], []
    for dev in devices:
        name = dev.get("device")
        if not dev.get("present"):
            rdma.append("%s missing" % name)
            gid.append("-")
            present = ", ".join(dev.get("devices") or []) or "none"
            fail(host, "rdma", "no RDMA device %s (present: %s)" % (name, present),
                 "load its driver (mlx5_ib; soft-RoCE: modprobe rdma_rxe; rdma link add %s type rxe netdev %s) or "
                 "set lab_rdma_device to a present one" % (name, iface))
            continue
        for port, info in sorted((dev.get("ports") or {}).items()):
            rdma.append("%s/%s %s" % (name, port, info.get("state")))
            if info.get("state") != "ACTIVE" or info.get("phys_state") not in ("LinkUp", "LINK_UP"):
                state = (name, port, info.get("state"), info.get("phys_state"))
                fail(host, "rdma", "%s port %s is %s (physical %s)" % state,
                     "check the port's link (rdma link show; its cable, switch port, subnet manager on InfiniBand)")
            if info.get("link_layer") != "Ethernet":
                gid.append("- (IB)")
                continue
            index = info.get("roce_v2_gid_index")
            gid.append("v2 #%s" % index if index is not None else "none")
            if index is None:
                where = (name, port, res.get("address"), iface)
                fail(host, "gid", "no RoCE v2 GID of %s port %s carries %s on %s" % where,
                     "put %s on %s (the GID table follows the netdev's addresses) or correct lab_address"
                     % (res.get("address"), iface))
    row.cells.update(rdma=", ".join(rdma), gid=", ".join(gid))


def _check_paths(hosts, results, paths, addresses, rows, expect, fail):
    cells = {h: [] for h in hosts}
    for a, b in paths:
        if a not in results or b not in results or a not in hosts or b not in hosts:
            continue
        ends = {}
        for here, there in ((a, b), (b, a)):
            entry = next((p for p in results[here].get("paths") or [] if p.get("peer") == addresses.get(there)), None)
            if entry is None:
                cells[here].append("%s ?" % there)
                fail(here, "paths", "the path to %s (%s) was not read" % (there, addresses.get(there)),
                     "give the preflight %s's lab_address among the peers" % there)
            elif entry.get("error"):
                cells[here].append("%s none" % there)
                fail(here, "paths", entry["error"], "a route to %s on the data network (lab_address, the lab's "
                     "subnet)" % addresses.get(there))
            else:
                ends[here] = entry
                cells[here].append("%s %s" % (there, entry.get("mtu")))
        if len(ends) < 2:
            continue
        ma, mb = ends[a].get("mtu"), ends[b].get("mtu")
        if ma == mb:
            continue
        if expect.mtu:
            wrong = [h for h in (a, b) if ends[h].get("mtu") != expect.mtu]
        else:
            wrong = [a, b]
        for h in wrong:
            fail(h, "paths", "the path %s <-> %s carries %s at %s and %s at %s" % (a, b, ma, a, mb, b),
                 "the same MTU at both ends%s: ip link set %s mtu N on %s (a route's own mtu: ip route)"
                 % (" (%s)" % expect.mtu if expect.mtu else "", ends[h].get("interface"), h))
    for h in hosts:
        rows[h].cells["paths"] = ", ".join(cells[h]) or "-"


def _dcb_setting(dcb):
    """``(priorities, trust)`` of a NIC that reports DCB, else None."""
    if not dcb or not dcb.get("reported"):
        return None
    return tuple(dcb.get("pfc_priorities") or ()), dcb.get("trust")


def _dcb_text(setting):
    priorities, trust = setting
    return "%s/%s" % (",".join(str(p) for p in priorities) or "off", trust or "?")


def _check_dcb(hosts, results, rows, fail):
    """PFC and trust where the NIC reports them (dcbnl): the same on every host that does."""
    settings = {}
    for h in hosts:
        dcb = results[h].get("dcb")
        setting = _dcb_setting(dcb)
        rows[h].cells["pfc"] = "-" if dcb is None else "n/r" if setting is None else _dcb_text(setting)
        if setting is not None:
            settings[h] = setting
    if len(set(settings.values())) < 2:
        return
    common = _majority(settings)
    for h, setting in sorted(settings.items()):
        if setting == common:
            continue
        iface = (results[h].get("interface") or {}).get("name")
        others = "the other hosts have %s" % _dcb_text(common) if common else "another host differs"
        fail(h, "pfc", "PFC priorities/trust %s, where %s" % (_dcb_text(setting), others),
             "the same PFC priorities and trust on every host's NIC and its switch port (mlx5: mlnx_qos -i %s "
             "--pfc 0,0,0,1,0,0,0,0 --trust dscp)" % iface)


def _check_clocks(hosts, results, rows, expect, fail):
    clocks = {h: results[h].get("clock") for h in hosts if results[h].get("clock")}
    for h in hosts:
        if h not in clocks:
            rows[h].cells["clock"] = "-"
    if not clocks:
        return None
    reference = sorted(clocks, key=natural_key)[0]
    ref = clocks[reference]
    for h, clock in clocks.items():
        if h == reference:
            rows[h].cells["clock"] = "ref (+-%.1f ms)" % (clock["uncertainty_s"] * 1000)
            continue
        offset = clock["offset_s"] - ref["offset_s"]
        bound = clock["uncertainty_s"] + ref["uncertainty_s"]
        rows[h].cells["clock"] = "%+.1f ms +-%.1f" % (offset * 1000, bound * 1000)
        if abs(offset) - bound > expect.clock_tolerance_s:
            fail(h, "clock", "its clock is %+.1f ms (+-%.1f) off %s's, more than %.1f ms"
                 % (offset * 1000, bound * 1000, reference, expect.clock_tolerance_s * 1000),
                 "synchronize the hosts' clocks (chrony or PTP: chronyc tracking, pmc) before a start_at experiment")
    return reference


def _check_perftest(hosts, results, rows, expect, fail):
    versions = {}
    for h in hosts:
        tools = results[h].get("perftest") or {}
        rows[h].cells["perftest"] = ", ".join("%s" % (v or "missing") for _t, v in sorted(tools.items())) or "-"
        missing = sorted(t for t, v in tools.items() if v is None)
        if missing and expect.perftest:
            fail(h, "perftest", "%s not found" % ", ".join(missing),
                 "install perftest (the lab_host role, or apt/dnf install perftest)")
        if tools and not missing:
            versions[h] = tuple(sorted(tools.items()))
    if len(set(versions.values())) > 1:
        common = _majority(versions)
        for h, v in sorted(versions.items()):
            if v != common:
                theirs = "the other hosts'" if common else "another host's"
                fail(h, "perftest", "its perftest (%s) differs from %s" % (", ".join("%s %s" % tv for tv in v), theirs),
                     "the same perftest on every host (the lab_host role installs the distribution's)")


def table(rows):
    """The rows as aligned text lines, one header."""
    data = [COLUMNS] + [tuple(r.cells.get(c, "-") for c in COLUMNS) for r in rows]
    widths = [max(len(str(line[i])) for line in data) for i in range(len(COLUMNS))]
    return ["  ".join(str(v).ljust(w) for v, w in zip(line, widths)).rstrip() for line in data]


def report(results, paths=None, expect=None, addresses=None):
    """``{ok, table, failures, reference}``: the one table, the failures' lines, the clock's reference host."""
    rows, failures, reference = check(results, paths, expect, addresses)
    return {"ok": not failures, "table": table(rows), "failures": [f.line() for f in failures],
            "failed": [{"host": f.host, "check": f.check, "message": f.message, "fix": f.fix} for f in failures],
            "reference": reference}
