# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The benchmark's test report (report.json's ``test_report``), in the order the IETF BMWG draft "Benchmarking
Methodology for AI Training Network Fabrics" (draft-calabria-bmwg-ai-fabric-training-bench, section 13) asks for it:
the device under test and the hosts identified (NIC, driver, firmware, kernel, where known), the topology, the QoS and
load-balancing configuration, the host configuration, the anomalies, and the repeatability statement (iterations and
CV = sigma / mu over an experiment's repeated steps or a collective's repetitions).

Everything comes from the run record (plan.json's plans and lab, the steps' analysis): what the run did not record is
said to be unknown, never guessed."""

from __future__ import annotations

import statistics

__all__ = ["SECTIONS", "build_test_report", "cv", "rows"]

SECTIONS = ("dut", "topology", "configuration", "hosts", "anomalies", "repeatability")
NOT_RECORDED = "not recorded by this run"


def cv(values):
    """``{iterations, mean, stdev, cv}`` of ``values`` (the sample standard deviation, n - 1; cv = stdev / mean),
    each to 1e-6; None for fewer than two values (no spread can be stated) or a mean of 0."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    if mean == 0:
        return None
    stdev = statistics.stdev(values)
    return {"iterations": len(values), "mean": round(mean, 6), "stdev": round(stdev, 6), "cv": round(stdev / mean, 6)}


def _dut(lab, hosts, experiments):
    controller = dict(lab.get("controller") or {})
    switches = ("the fabric lab's switches: Linux network namespaces forwarding by the kernel's ECMP (the "
                "hosts' kernel)" if any(p.fabric for p in experiments) else NOT_RECORDED)
    out = {"controller": controller, "hosts": {}, "switches": switches}
    facts = lab.get("hosts") or {}
    for host in sorted(set(hosts) | set(facts)):
        entry = dict(facts.get(host) or {})
        entry.setdefault("kernel", None)
        entry.setdefault("nic", None)
        out["hosts"][host] = entry
    return out


def _experiment_topology(plan):
    out = {"experiment": plan.name, "pattern": plan.pattern, "kind": plan.kind, "engine": plan.engine,
           "hosts": sorted(plan.hosts), "line_rate": plan.line_rate, "mtu": plan.mtu,
           "flows_per_step": [len(list(r.flows())) for r in plan.rounds]}
    if plan.collective:
        c = plan.collective
        out["collective"] = {"name": c.name, "ranks": c.ranks, "size": c.size}
    if plan.fabric:
        topo = plan.fabric.topology or {}
        out["fabric"] = {k: topo[k] for k in sorted(topo) if isinstance(topo[k], (str, int, float))}
        for key, value in sorted(topo.items()):
            if isinstance(value, (list, dict)):
                out["fabric"]["%s_count" % key] = len(value)
    return out


def _experiment_configuration(plan):
    throttles = {h: {"rate": p.throttle.rate, "applied": p.throttle.applied} for h, p in sorted(plan.hosts.items())
                 if p.throttle}
    qos = {"throttles": throttles,
           "shaping": "each throttled host's egress shaped to its rate (what applied it: 'applied')" if throttles
           else "none: every host at the line rate",
           "pfc_ecn": NOT_RECORDED}
    if plan.fabric:
        balancing = {"hash": plan.fabric.hash, "seed": plan.fabric.seed, "placement": plan.fabric.placement,
                     "streams_per_flow": plan.streams}
    else:
        balancing = {"hash": None, "placement": "one path per flow (no equal-cost paths in this lab)",
                     "streams_per_flow": plan.streams}
    out = {"experiment": plan.name, "qos": qos, "load_balancing": balancing, "buffers": NOT_RECORDED}
    if plan.perftest:
        out["perftest"] = dict(plan.perftest)
    return out


def _host_configuration(experiments):
    hosts = {}
    for plan in experiments:
        for name, host in sorted(plan.hosts.items()):
            hosts.setdefault(name, {"address": host.address, "interface": host.interface, "netns": host.netns,
                                    "rdma_device": host.rdma_device})
    return hosts


def _anomalies(report):
    out = []
    for s in report.get("steps") or []:
        name = s["step"]
        for f in s.get("failed") or []:
            out.append("step %s: %s %s: %s" % (name, f["host"], f["status"], f["cause"]))
        for a in s.get("anomalies") or []:
            out.append("step %s: %s" % (name, a))
        if s.get("results"):
            out.append("step %s: %s" % (name, s["results"]["sentence"]))
        if s.get("refused") is not None:
            peers = sorted({str(r.get("peer")) for r in s["refused"]})
            out.append("step %s: %d connection%s refused from peers that are not the step's (%s)" % (
                name, s["refused_total"], "" if s["refused_total"] == 1 else "s", ", ".join(peers) or "not listed"))
        for d in (s.get("counters") or {}).get("disagreements") or []:
            out.append("step %s: counters: %s" % (name, d))
        hosts = (s.get("counters") or {}).get("hosts") or {}
        for host, c in sorted(hosts.items()):
            errors = {k: v for k, v in (c.get("errors") or {}).items() if v}
            if errors:
                out.append("step %s: %s error counters: %s" % (name, host, ", ".join(
                    "%s +%s" % kv for kv in sorted(errors.items()))))
    for m in (report.get("gates") or {}).get("broken") or []:
        out.append("gate broken: %s" % m)
    return out


def _repeatability(report, experiments):
    by_name = {s["step"]: s for s in report.get("steps") or []}
    out = []
    for plan in experiments:
        names = [n for n in plan.steps if n in by_name]
        if not names:
            continue
        ok = [by_name[n]["step_s"] for n in names if by_name[n]["status"] == "ok" and by_name[n].get("step_s")]
        entry = {"experiment": plan.name, "figure": "step_s", "planned": len(plan.steps), "ok": len(ok)}
        figures = cv(ok)
        summary = next((e for e in report.get("experiments") or [] if e["name"] == plan.name), None)
        reps = ((summary or {}).get("collective") or {}).get("repetitions") or []
        if plan.collective and len([r for r in reps if r["status"] == "ok"]) > 1:
            entry["figure"] = "collective time_s"
            figures = cv([r["time_s"] for r in reps if r["status"] == "ok"])
            entry["planned"], entry["ok"] = len(reps), len([r for r in reps if r["status"] == "ok"])
        # a job repeats itself within a step: the draft's figure is the CV of its iteration times (every ok step's)
        series = [t for n in names if by_name[n]["status"] == "ok"
                  for t in ((by_name[n].get("job") or {}).get("series_s") or []) if t is not None]
        if len(series) > 1:
            entry["figure"] = "job iteration_s"
            figures = cv(series)
            entry["planned"] = sum(len((by_name[n].get("job") or {}).get("series_s") or [])
                                   for n in names) or len(series)
            entry["ok"] = len(series)
        if figures:
            entry.update(figures)
            entry["statement"] = "%s over %d iterations: mean %.6f s, standard deviation %.6f s, CV %.2f%%" % (
                entry["figure"], figures["iterations"], figures["mean"], figures["stdev"], figures["cv"] * 100)
        else:
            entry["statement"] = ("%d iteration%s completed: no repeatability can be stated (set the "
                                  "experiment's steps: to 2 or more)" % (entry["ok"], "" if entry["ok"] == 1 else "s"))
        out.append(entry)
    return out


def build_test_report(report, run):
    """The test report of ``report`` (``build.build_report``'s, before this is added) and its ``run`` (a
    ``_run.model.Run``: the experiments' plans and the lab's facts): the sections in ``SECTIONS`` order, and
    ``order`` (report.json sorts its keys)."""
    experiments = list(run.experiments)
    workers = {w["host"] for s in report.get("steps") or [] for w in s.get("workers") or []}
    hosts = sorted({h for p in experiments for h in p.hosts} | workers)
    return {
        "reference": "draft-calabria-bmwg-ai-fabric-training-bench, section 13",
        "order": list(SECTIONS),
        "dut": _dut(run.lab or {}, hosts, experiments),
        "topology": [_experiment_topology(p) for p in experiments],
        "configuration": [_experiment_configuration(p) for p in experiments],
        "hosts": _host_configuration(experiments),
        "anomalies": _anomalies(report),
        "repeatability": _repeatability(report, experiments),
    }


def _nic_text(nic):
    if not nic:
        return "NIC not recorded"
    if nic.get("error"):
        return "NIC %s: could not be read (%s)" % (nic.get("interface"), nic["error"])
    parts = ["driver %s" % " ".join(x for x in (nic.get("driver"), nic.get("driver_version")) if x)
             if nic.get("driver") else "driver unknown",
             "firmware %s" % nic["firmware"] if nic.get("firmware") else "no firmware version"]
    pci = nic.get("pci") or {}
    if pci:
        parts.append("PCI %s%s%s" % (pci.get("address"), " (%s)" % pci["id"] if pci.get("id") else "",
                                     ", NUMA node %s" % pci["numa_node"] if pci.get("numa_node") is not None else ""))
    if nic.get("speed_mbps"):
        parts.append("%d Mb/s" % nic["speed_mbps"])
    if nic.get("mtu"):
        parts.append("MTU %d" % nic["mtu"])
    rdma = nic.get("rdma")
    if rdma:
        parts.append("RDMA %s%s" % (rdma["device"], "".join(
            " %s %s" % (k, rdma[k]) for k in ("hca_type", "fw_ver", "board_id") if rdma.get(k))))
    return "NIC %s: %s" % (nic.get("interface"), ", ".join(parts))


def rows(test_report):
    """The test report as ``(label, text)`` rows, in the sections' order: what report.txt, report.md and report.html
    print (one function, so the three say the same)."""
    out = []
    dut = test_report["dut"]
    c = dut.get("controller") or {}
    out.append(("DUT and hosts", "controller: kernel %s, Python %s, ansible-core %s, aifabric.lab %s" % (
        c.get("kernel") or "-", c.get("python") or "-", c.get("ansible_core") or "-", c.get("collection") or "-")))
    for host, facts in sorted(dut["hosts"].items()):
        text = "%s: kernel %s; %s" % (host, facts.get("kernel") or "not recorded", _nic_text(facts.get("nic")))
        for name, device in sorted((facts.get("rdma") or {}).items()):
            text += "; rdma_info %s firmware %s" % (name, device.get("fw_ver") or "-")
        out.append(("", text))
    out.append(("switches", dut["switches"]))
    for t in test_report["topology"]:
        text = "%s: %s (%s, %s), %s; line rate %s, MTU %s, flows a step: %s" % (
            t["experiment"], t["pattern"], t["kind"], t["engine"], ", ".join(t["hosts"]), t["line_rate"], t["mtu"],
            "/".join(str(n) for n in t["flows_per_step"]))
        if t.get("collective"):
            text += "; collective %s over %d ranks, %d bytes" % (t["collective"]["name"], t["collective"]["ranks"],
                                                                 t["collective"]["size"])
        if t.get("fabric"):
            text += "; fabric %s" % ", ".join("%s %s" % kv for kv in sorted(t["fabric"].items()))
        out.append(("topology" if t is test_report["topology"][0] else "", text))
    for k, e in enumerate(test_report["configuration"]):
        q, lb = e["qos"], e["load_balancing"]
        shaped = "; ".join("%s throttled to %s (%s)" % (h, x["rate"], x["applied"] or "not applied")
                           for h, x in sorted(q["throttles"].items())) or q["shaping"]
        text = "%s: %s; PFC/ECN %s; buffers %s" % (e["experiment"], shaped, q["pfc_ecn"], e["buffers"])
        out.append(("QoS" if k == 0 else "", text))
    for k, e in enumerate(test_report["configuration"]):
        lb = e["load_balancing"]
        text = ("%s: hash %s, seed %s, placement %s" % (e["experiment"], lb["hash"], lb.get("seed"), lb["placement"])
                if lb["hash"] else "%s: %s" % (e["experiment"], lb["placement"]))
        out.append(("load balancing" if k == 0 else "", "%s; %s stream%s a flow" % (
            text, lb["streams_per_flow"], "" if lb["streams_per_flow"] == 1 else "s")))
    for k, (host, h) in enumerate(sorted(test_report["hosts"].items())):
        out.append(("host configuration" if k == 0 else "", "%s: %s on %s%s%s" % (
            host, h["address"], h["interface"], ", netns %s" % h["netns"] if h.get("netns") else "",
            ", RDMA device %s" % h["rdma_device"] if h.get("rdma_device") else "")))
    anomalies = test_report["anomalies"] or ["none"]
    for k, a in enumerate(anomalies):
        out.append(("anomalies" if k == 0 else "", a))
    for k, r in enumerate(test_report["repeatability"]):
        out.append(("repeatability" if k == 0 else "", "%s: %s" % (r["experiment"], r["statement"])))
    return out
