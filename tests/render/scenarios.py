# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Experiments played through a tree's barrier_report callback, as the experiment role would feed it: the plan from
the tree's own filters (flow_plan, fabric_lab_topology, fabric_lookup_flows, fabric_place, flow_step_args), the
throttles' results, each step's coordinator record, the fabric's counters; then the report at the end of the play.

    python tests/render/scenarios.py --tree /work/wt/base --out /tmp/x     # the run directories, one per scenario

Everything that varies between two runs is fixed: the clock (a counter), the collection's version; so two trees fed
the same scenarios write run directories of the same names, whose report files must be the same byte for byte
(tests/render/compare.sh). Only the tree's public interfaces are used (the filters and the callback), never its
modules' internals, so that the old and the new layout run the same script.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import importlib
import os
import sys
import time

# -- a deterministic clock: every call a millisecond later (run directory stamps, received_at, taken_at) ---------------
_NOW = [1796064600.0]


def _clock():
    _NOW[0] += 0.001
    return _NOW[0]


_TAKEN = [1796064611.0]  # the hosts' own clocks (snapshots' taken_at): apart from the tree's calls to time.time


def _host_clock(advance=0.001):
    _TAKEN[0] += advance
    return _TAKEN[0]


def reset_clocks():
    _NOW[0], _TAKEN[0] = 1796064600.0, 1796064611.0


def _load_tree(tree):
    sys.path.insert(0, os.path.join(os.path.abspath(tree), ".collections"))
    filters = {}
    for path in sorted(glob.glob(os.path.join(tree, "plugins", "filter", "*.py"))):
        name = os.path.splitext(os.path.basename(path))[0]
        module = importlib.import_module("ansible_collections.aifabric.lab.plugins.filter.%s" % name)
        if hasattr(module, "FilterModule"):
            filters.update(module.FilterModule().filters())
    callback = importlib.import_module("ansible_collections.aifabric.lab.plugins.callback.barrier_report")
    for name in ("ansible_collections.aifabric.lab.plugins.callback.barrier_report",
                 "ansible_collections.aifabric.lab.plugins.plugin_utils._run.store"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        for attr in ("_collection_version", "collection_version"):
            if hasattr(module, attr):
                setattr(module, attr, lambda: "0.0.0-scenario")
    pin_controller(setattr)
    return filters, callback


CONTROLLER = {"kernel": "6.1.0-scenario-amd64", "python": "3.11.0", "ansible_core": "2.19.0"}


def pin_controller(set_attr):
    """The controller's facts that plan.json records (kernel, Python, ansible-core) fixed, so that the same tree
    writes the same bytes on any machine and any ansible-core of the matrix. ``set_attr``: setattr, or a
    MonkeyPatch's."""
    import platform

    set_attr(platform, "release", lambda: CONTROLLER["kernel"])
    set_attr(platform, "python_version", lambda: CONTROLLER["python"])
    for name, module in list(sys.modules.items()):
        if name.startswith("ansible_collections.aifabric.lab.") and hasattr(module, "ansible_version"):
            set_attr(module, "ansible_version", CONTROLLER["ansible_core"])


# -- Ansible's result objects, as the callback reads them --------------------------------------------------------------
class _Task:
    def __init__(self, action, args, name="task"):
        self.action, self.args, self._name = action, args, name

    def get_name(self):
        return self._name


class _Host:
    def __init__(self, name):
        self.name = name

    def get_name(self):
        return self.name


class _Result:
    def __init__(self, host, action, args, result, name="task"):
        self._host, self._task, self._result = _Host(host), _Task(action, args, name), dict(result)
        self._result.setdefault("invocation", {"module_args": args})


class _Display:
    def __init__(self):
        self.lines = []

    def display(self, msg, *args, **kw):
        self.lines.append(str(msg))

    banner = warning = error = display


def _unit(*parts):
    """A number in [0, 1) from the parts, the same on every machine."""
    digest = hashlib.sha256(repr(parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0 ** 64


# -- inventories -------------------------------------------------------------------------------------------------------
def _netns_inventory(workers, sinks=1):
    groups = {"workers": ["worker%d" % i for i in range(1, workers + 1)],
              "sinks": ["sink%s" % ("" if sinks == 1 else i) for i in range(1, sinks + 1)]}
    hostvars = {}
    for i, host in enumerate(groups["sinks"]):
        hostvars[host] = {"lab_address": "198.18.0.%d" % (1 + i), "ansible_connection": "aifabric.lab.netns",
                          "ansible_netns_prefix": "afl-"}
    for i, host in enumerate(groups["workers"]):
        hostvars[host] = {"lab_address": "198.18.0.%d" % (11 + i), "ansible_connection": "aifabric.lab.netns",
                          "ansible_netns_prefix": "afl-"}
    return groups, hostvars


def _fabric_inventory(per_leaf=2, leaves=2, spines=2):
    groups = {"leaves": ["leaf%d" % i for i in range(1, leaves + 1)],
              "spines": ["spine%d" % i for i in range(1, spines + 1)], "workers": [], "sinks": []}
    hostvars = {}
    for i, leaf in enumerate(groups["leaves"]):
        hostvars[leaf] = {"lab_subnet": "198.18.%d.0/24" % (i + 1)}
        for j in range(per_leaf):
            host = "worker%d" % (i * per_leaf + j + 1)
            groups["workers"].append(host)
            hostvars[host] = {"lab_leaf": leaf, "lab_address": "198.18.%d.%d" % (i + 1, 11 + j),
                              "ansible_connection": "aifabric.lab.netns", "ansible_netns_prefix": "aff-"}
    return groups, hostvars


# -- what the hosts return -------------------------------------------------------------------------------------------
def _snapshot(tx_bytes, tx_packets, qdisc=None, taken_at=0.0):
    netdev = {"tx_bytes": tx_bytes, "tx_packets": tx_packets, "rx_bytes": 0, "rx_packets": 0, "tx_errors": 0,
              "rx_errors": 0, "tx_dropped": 0}
    snap = {"taken_at": taken_at, "rdma": {}, "netdev": {"eth0": netdev}, "qdisc": {}}
    if qdisc is not None:
        snap["qdisc"] = {"eth0": {"qdisc": {"bytes": qdisc[0], "packets": qdisc[1], "overlimits": qdisc[2],
                                            "drops": 0, "requeues": 0, "backlog_bytes": 0, "qlen": 0},
                                  "classes": {"1:1": {"bytes": qdisc[0], "packets": qdisc[1],
                                                      "overlimits": qdisc[2], "drops": 0}}}}
    return snap


def _host_counters(host, payload, throttled, engine, seed):
    packets = max(1, payload // 8948)
    wire = payload + 66 * packets
    before = _snapshot(0, 0, (0, 0, 0) if throttled else None, taken_at=_host_clock())
    after = _snapshot(wire, packets, (wire + 1200, packets + 20, int(1000 + 9000 * _unit(seed, host)))
                      if throttled else None, taken_at=_host_clock() + 8.0)
    return {"before": before, "after": after, "interface": "eth0", "engine": engine}


def _flow_result(step, host, client, completion, late, engine, samples=True):
    volume = client["volume"]
    out = {"flow_id": client["flow_id"], "status": "ok", "error": None, "bytes": volume, "volume_bytes": volume,
           "completion_s": round(completion, 6), "gbps": round(volume * 8 / completion / 1e9, 6),
           "late_s": round(late, 6), "start": 1796064611.5 + late, "start_at": 1796064611.5, "role": "client",
           "engine": engine, "peer": client["address"], "port": client["port"]}
    if engine == "tcp":
        out.update(retransmits=0, bytes_retrans=0, rtt_us=900)
        if samples:
            n = max(1, int(completion))
            out["samples"] = [{"t": round(min(completion, k + 1.0), 6), "bytes": volume * (k + 1) // n,
                               "gbps": round(volume * 8 / completion / 1e9 * (1 - 0.001 * k), 6), "retransmits": 0,
                               "rtt_us": 800 + 10 * k} for k in range(n)]
    else:
        out.update(setup_s=0.21, teardown_s=0.05, argv=["ib_write_bw", "-d", "rxe0"],
                   perftest={"test": "RDMA_Write", "connection_type": "RC", "transport_type": "IB",
                             "link_type": "Ethernet", "device": "rxe0", "mtu": 1024, "number_of_qps": 1,
                             "tx_depth": 128, "version": "6.22"})
    if client.get("source_ports"):
        out["source_ports"] = list(client["source_ports"])
    return out


class Lab:
    """One play: the callback, the filters, and the role's steps played against them."""

    def __init__(self, filters, callback_module, runs_dir, label):
        self.f = filters
        cb = callback_module.CallbackModule()
        cb._plugin_options = {"runs_dir": runs_dir, "show_json_path": True, "history": True,
                              "history_db": os.path.join(runs_dir, "history.sqlite")}
        cb._runs_dir, cb._show_json_path = runs_dir, True
        cb._history_on, cb._history_db = True, cb._plugin_options["history_db"]
        cb._display = _Display()
        cb._label = label
        self.cb = cb

    def ok(self, host, action, args, result, name="task"):
        self.cb.v2_runner_on_ok(_Result(host, action, args, result, name))

    def experiment(self, spec, groups, hostvars, line_rate="8gbit", mtu=9000, fabric_args=None, engine_device=None,
                   baseline=None, drop=None, late=None, skip_kernel=False):
        """The experiment role, one experiment: plan, throttles, set_stats, every step. ``drop``: {step: host}, a
        host whose part never reports; ``late``: {step: (host, late_s)}."""
        fabric = None
        if fabric_args is not None:
            fabric = self.f["fabric_lab_topology"](groups, hostvars, "aff-", fabric_args.get("hash", "l4"),
                                                   fabric_args.get("seed"), line_rate, line_rate, mtu)
        the_plan = self.f["flow_plan"](spec, groups, hostvars, line_rate, mtu, "switch", "eth0", engine_device,
                                       fabric)
        if fabric is not None:
            lookups = self.f["fabric_lookup_flows"](the_plan)
            the_plan = self.f["fabric_place"](the_plan, [self._lookup(fabric, x) for x in lookups])
        throttles = [{"item": host, "changed": True, "mechanism": "tc" if spec.get("engine", "tcp") == "tcp"
                      else "perftest", "description": "tc htb on eth0's egress" if spec.get("engine", "tcp") == "tcp"
                      else "perftest's rate limit (--rate_limit)", "flow_args": {} if spec.get("engine", "tcp") ==
                      "tcp" else {"rate_limit": "2gbit"}}
                     for host in the_plan["throttled"]]
        data = {"aifabric_lab_plan": {"plan": the_plan, "throttles": throttles, "baseline": baseline or {}}}
        self.ok("localhost", "ansible.builtin.set_stats", {"data": data},
                {"changed": False, "ansible_stats": {"data": data, "per_host": False, "aggregate": False}})
        for step in the_plan["steps"]:
            self._step(the_plan, step, throttles, fabric, (drop or {}).get(step), (late or {}).get(step),
                       skip_kernel, float(line_rate.replace("gbit", "")))
        return the_plan

    @staticmethod
    def _lookup(fabric, entry):
        by_address = {h["address"].split("/")[0]: h for h in fabric["hosts"]}
        src, dst = by_address[entry["src"]], by_address[entry["dst"]]
        if src["leaf"] == dst["leaf"]:
            links = ["%s->%s" % (src["name"], src["leaf"]), "%s->%s" % (src["leaf"], dst["name"])]
        else:
            pick = _unit(entry["sport"], entry["dport"], fabric.get("seed"), fabric.get("hash"))
            spine = fabric["spines"][int(pick * len(fabric["spines"]))]["name"]
            links = ["%s->%s" % (src["name"], src["leaf"]), "%s->%s" % (src["leaf"], spine),
                     "%s->%s" % (spine, dst["leaf"]), "%s->%s" % (dst["leaf"], dst["name"])]
        return {"id": entry["id"], "links": links, "hops": [], "error": None}

    def _step(self, the_plan, step, throttles, fabric, dropped, late, skip_kernel, line_gbps):
        token = hashlib.sha1(step.encode()).hexdigest()[:32]
        coordinator = the_plan["rendezvous"]["host"]
        by_host = {t["item"]: t for t in throttles}
        args = {h: self.f["flow_step_args"](the_plan, h, step, token, by_host.get(h, {}))
                for h in the_plan["participants"]}
        coordinator_args = args[coordinator]
        engine = coordinator_args["engine"]
        streams_on = {}  # link -> bytes, for the fabric's counters
        hosts, parties = {}, {}
        fired = 1796064611.5
        for k, host in enumerate(the_plan["participants"]):
            parties[host] = {"armed_at": fired - 0.4 + 0.01 * k, "offset_s": round(-2e-5 + 1e-6 * k, 6),
                             "rtt_s": round(1.2e-4 + 1e-6 * k, 6), "fire_sent_at": fired - 0.002}
            if host == dropped:
                parties[host] = {"lost": "its step process ended (SIGKILL)"}
                continue
            mine = args[host]
            results = []
            throttled = host in by_host
            for i, client in enumerate(mine["clients"]):
                rate = min(line_gbps, 2.0) / 4 if throttled else line_gbps / max(1, len(mine["clients"]))
                completion = client["volume"] * 8 / (rate * 1e9) * (1.0 + 0.03 * _unit(step, host, i))
                lateness = 5e-5 + 4e-5 * _unit("late", step, host, i)
                if late and late[0] == host:
                    lateness = late[1]
                results.append(_flow_result(step, host, client, completion, lateness, engine))
                for n, port in enumerate(client.get("source_ports") or []):
                    share = client["volume"] // len(client["source_ports"])
                    entry = {"src": the_plan["hosts"][host]["address"], "dst": client["address"], "sport": port,
                             "dport": client["port"], "id": "x"}
                    for link in self._lookup(fabric, entry)["links"]:
                        streams_on[link] = streams_on.get(link, 0) + share
                    del n
            part = {"clients": results, "servers": [{"port": s["port"]} for s in mine["servers"]]}
            if mine.get("counters") and results:
                payload = sum(r["bytes"] for r in results)
                part["counters"] = _host_counters(host, payload, throttled and engine == "tcp", engine, step)
            if not skip_kernel:
                part["kernel"] = "6.1.0-%d-amd64" % (28 + k % 2)
            hosts[host] = part
        record = {"step": step, "status": "ok" if not dropped else "failed",
                  "error": None if not dropped else "%s's part ended without a result" % dropped,
                  "mode": "rendezvous", "started_at": fired - 0.5,
                  "fire": {"at": fired, "margin_s": 0.002394, "probe_fanout_s": [0.000465, 0.000237, 0.000171],
                           "decided_at": fired - 0.0024, "armed_last_at": fired - 0.31},
                  "parties": parties, "hosts": hosts,
                  "expected_flows": coordinator_args["rendezvous"]["expected_flows"]}
        step_args = {"leaves": [], "spines": [], "hosts": [], "counters": True, "step": step}
        if fabric is not None:
            self.ok("leaf1", "aifabric.lab.fabric_paths_info", dict(step_args, label="before"),
                    {"changed": False, "paths": [], "fabric_counters": {
                        "step": step, "label": "before", "switches": self._switches(fabric, {})}})
        collect = {"state": "collected", "step": step, "party": coordinator, "token": token}
        self.ok(coordinator, "aifabric.lab.flow_step", collect, {"step": record}, name="Wait")
        if fabric is not None:
            self.ok("leaf1", "aifabric.lab.fabric_paths_info", dict(step_args, label="after"),
                    {"changed": False, "paths": [], "fabric_counters": {
                        "step": step, "label": "after", "switches": self._switches(fabric, streams_on)}})

    @staticmethod
    def _switches(fabric, carried):
        """Every switch's port counters: each link's bytes (a little more than the flows put on it: headers)."""
        leaves = [x["name"] for x in fabric["leaves"]]
        spines = [x["name"] for x in fabric["spines"]]
        out = {name: {"taken_at": _host_clock(1.0), "rdma": {}, "qdisc": {}, "netdev": {}}
               for name in leaves + spines}

        def count(switch, iface, key, link):
            value = int(carried.get(link, 0) * 1.0073)
            out[switch]["netdev"].setdefault(iface, {"tx_bytes": 0, "rx_bytes": 0})[key] = value

        for i, leaf in enumerate(leaves):
            for k, spine in enumerate(spines):
                count(leaf, "s%d" % (k + 1), "tx_bytes", "%s->%s" % (leaf, spine))
                count(spine, "l%d" % (i + 1), "tx_bytes", "%s->%s" % (spine, leaf))
        for host in fabric["hosts"]:
            port = ("h-" + host["name"])[:15]
            count(host["leaf"], port, "rx_bytes", "%s->%s" % (host["name"], host["leaf"]))
            count(host["leaf"], port, "tx_bytes", "%s->%s" % (host["leaf"], host["name"]))
        return out

    def end(self):
        self.cb.v2_playbook_on_stats(None)
        return self.cb._run.path if self.cb._run else None


# -- the scenarios ---------------------------------------------------------------------------------------------------
def demo(lab):
    """make demo: the elephant, then the barrier with worker3 throttled; gates on the barrier."""
    groups, hostvars = _netns_inventory(3)
    lab.experiment({"name": "elephant", "kind": "baseline", "workers": 1, "volume": "4GB"}, groups, hostvars)
    lab.experiment({"name": "barrier", "volume": "2GB", "throttles": {"worker3": "2gbit"},
                    "expect": {"step_vs_predicted": 1.05, "healthy_idle_share": 0.05, "counters": "clean"}},
                   groups, hostvars)


def collective(lab):
    """playbooks/collective.yml's kind: rounds of a ring AllReduce repeated, a pairwise exchange, an all-to-all."""
    groups, hostvars = _netns_inventory(4)
    lab.experiment({"name": "allreduce", "pattern": "allreduce_ring", "volume": "1GB", "steps": 2,
                    "throttles": {"worker2": "2gbit"}}, groups, hostvars)
    lab.experiment({"name": "pairwise", "pattern": "pairwise", "volume": "256MB", "throttles": {"worker4": "4gbit"}},
                   groups, hostvars)
    lab.experiment({"name": "a2a", "pattern": "all_to_all", "volume": "128MB", "steps": 5, "streams": 2},
                   groups, hostvars)
    lab.experiment({"name": "bcast", "pattern": "one_to_many", "volume": "128MB", "root": "worker2"},
                   groups, hostvars)


def fabric(lab):
    """make fabric-demo's kind: the shift over a leaf-spine fabric, hashed and spread, and over several seeds."""
    groups, hostvars = _fabric_inventory()
    for placement in ("hash", "spread"):
        lab.experiment({"name": "shift-%s" % placement, "pattern": "shift", "volume": "500MB",
                        "fabric": {"placement": placement, "seed": 1}}, groups, hostvars, line_rate="1gbit",
                       fabric_args={"hash": "l4", "seed": 1})
    for seed in (2, 3):
        lab.experiment({"name": "seed-%d" % seed, "pattern": "shift", "volume": "500MB",
                        "fabric": {"seed": seed}}, groups, hostvars, line_rate="1gbit",
                       fabric_args={"hash": "l4", "seed": seed})
    lab.experiment({"name": "shift-streams", "pattern": "shift", "volume": "500MB", "streams": 2,
                    "throttles": {"worker2": "500mbit"}, "fabric": {"hash": "l3"}}, groups, hostvars,
                   line_rate="1gbit", fabric_args={"hash": "l3"})


def faults(lab):
    """Failed steps and the gates: a host that never reported, a late start, perftest over RoCE, a baseline run."""
    groups, hostvars = _netns_inventory(3)
    baseline = {"run": "20261130T110734-demo", "path": "/somewhere/runs/20261130T110734-demo",
                "steps": {"barrier-1": 8.06}, "p50_step_s": 8.06}
    lab.experiment({"name": "barrier", "volume": "1GB", "steps": 3, "throttles": {"worker1": "2gbit"},
                    "expect": {"vs_baseline": 0.95, "step_vs_predicted": 1.01}}, groups, hostvars,
                   baseline=baseline, drop={"barrier-2": "worker2"}, late={"barrier-3": ("worker3", 0.5)})
    lab.experiment({"name": "rdma", "engine": "perftest", "volume": "512MB", "throttles": {"worker2": "2gbit"},
                    "perftest": {"rdma_mtu": 1024, "qps": 2}}, groups, hostvars, line_rate="8gbit",
                   engine_device="rxe0", skip_kernel=True)


SCENARIOS = {"demo": demo, "collective": collective, "fabric": fabric, "faults": faults}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--tree", required=True, help="the checkout whose callback and filters to use")
    parser.add_argument("--out", required=True, help="runs_dir: one run directory per scenario under it")
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args(argv)
    time.time = _clock  # before the tree is imported: its modules may bind it
    filters, callback = _load_tree(args.tree)
    os.makedirs(args.out, exist_ok=True)
    for name, play in SCENARIOS.items():
        if args.only and name not in args.only:
            continue
        lab = Lab(filters, callback, os.path.abspath(args.out), name)
        play(lab)
        path = lab.end()
        print("%s: %s" % (name, path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
