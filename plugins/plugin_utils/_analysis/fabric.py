# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A step on the fabric lab, read link by link: which elephant took which link, which collided, the ideal (perfect
spreading) beside the prediction and the measurement, and the paths proved by the fabric's own counters.

Every flow's links are the kernel's answers to route lookups of its five-tuples made before the step
(``fabric_paths_info``). After the step, each link's port counter (the bytes its switch sent into it, or for a host's
link the bytes its leaf received from it) must agree with the bytes of the flows the lookups put on it: within
``[-PROOF_BELOW, +PROOF_ABOVE]`` of them (headers are 0.7% of a 9000-byte segment; the reverse flows' ACKs add up
to about 0.4% of a flow per flow they acknowledge), and a link that no flow was put on must carry less than
``PROOF_EMPTY`` of the smallest flow. A flow sent over a link its lookup did not give moves a whole flow's bytes, far
outside both bounds: the disagreement is named, like the books check's.
"""

from __future__ import annotations

from ansible_collections.aifabric.lab.plugins.module_utils._link import Link
from ansible_collections.aifabric.lab.plugins.module_utils._units import parse_rate
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.balance import load_balance
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.stats import mean
from ansible_collections.aifabric.lab.plugins.plugin_utils._model.ecmp import expected_slowdown
from ansible_collections.aifabric.lab.plugins.plugin_utils._model.simulate import ideal_completions, simulate
from ansible_collections.aifabric.lab.plugins.plugin_utils._model.simulate.solver import NUMPY_IMPORT_ERROR

__all__ = ["analyze_fabric", "relay_books", "PROOF_BELOW", "PROOF_ABOVE", "PROOF_EMPTY"]

PROOF_BELOW = 0.01
PROOF_ABOVE = 0.05
PROOF_EMPTY = 0.05
_FABRIC_TIERS = ("uplink", "downlink", "superuplink", "superdownlink")


def _label(flow, stream, streams):
    return flow.flow_id if streams == 1 else "%s#%d" % (flow.flow_id, stream + 1)


def _subflows(step, model):
    """One entry per stream of every flow: its links, its share of the flow, its bytes, its predicted completion."""
    out = []
    completions = (model or {}).get("completions") or {}
    for flow in step.flows:
        planned = step.planned(flow)
        ports = (flow.extra or {}).get("source_ports") or []
        streams = len(planned.subflows)
        for i, sub in enumerate(planned.subflows):
            share = sub.share
            key = flow.key + (i,)
            out.append({
                "flow": _label(flow, i, streams), "host": flow.host, "flow_id": flow.flow_id, "stream": i,
                "sport": sub.sport, "sport_used": ports[i] if i < len(ports) else None,
                "links": [hop.link for hop in sub.path if not hop.throttle],
                "share": share, "bytes": int(round((flow.bytes or 0) * share)) if flow.bytes else 0,
                "volume": int(round((flow.volume_bytes or 0) * share)),
                "predicted_s": round(completions[key], 6) if key in completions else None,
                "completion_s": flow.completion_s if flow.ok else None,
            })
    return out


def relay_books(step):
    """On a fabric with the in-host relay (links of tier ``relay``): what each NIC's own link to its rail carried by
    the plan, the interface its host's counters read (None on any other fabric, or off the fabric lab: the books are
    the host's own flows, as they always were).

    ``{host: {"link": its link to its rail, "payload": the bytes of its own streams that left through it, "retrans":
    their retransmitted bytes, "by_relay": {relay link: the bytes of its own streams that left by it instead},
    "relayed_for": {sender: the bytes (retransmissions included) of that NIC's streams this one forwarded into its
    rail}}}``. A stream's bytes are its flow's times its share, as the path proof reads them."""
    links = (step.plan.fabric or {}).get("links") or {}
    if not any(link.get("tier") == "relay" for link in links.values()):
        return None
    rail_link = {}
    for name, link in links.items():
        if link.get("tier") == "host":
            src = Link.parse(name).src
            if src != link.get("switch"):  # host->leaf (leaf->host is sent by the leaf)
                rail_link[src] = name
    books = {host: {"link": name, "payload": 0, "retrans": 0, "by_relay": {}, "relayed_for": {}}
             for host, name in rail_link.items()}
    for flow in step.flows:
        crossing, left_by = {}, {}  # host -> the share of the flow through its rail link; relay link -> share
        for sub in step.planned(flow).subflows:
            names = [hop.link for hop in sub.path if hop.link in links]
            for host, name in rail_link.items():
                if name in names:
                    crossing[host] = crossing.get(host, 0.0) + sub.share
            if names and links[names[0]].get("tier") == "relay" and Link.parse(names[0]).src == flow.host:
                left_by[names[0]] = left_by.get(names[0], 0.0) + sub.share
        sent = flow.bytes or 0
        retrans = int((flow.extra or {}).get("bytes_retrans") or 0)
        for host, share in crossing.items():
            book = books[host]
            if host == flow.host:
                book["payload"] += int(round(sent * share))
                book["retrans"] += int(round(retrans * share))
            else:
                book["relayed_for"][flow.host] = book["relayed_for"].get(flow.host, 0) + int(
                    round((sent + retrans) * share))
        if flow.host in books:
            for name, share in left_by.items():
                by_relay = books[flow.host]["by_relay"]
                by_relay[name] = by_relay.get(name, 0) + int(round(sent * share))
    return books


def _counter_delta(step, link):
    snap = (step.counters or {}).get(link["switch"]) or {}
    before, after = snap.get("before") or {}, snap.get("after") or {}
    key = link.get("counter") or "tx_bytes"
    try:
        return (after["netdev"][link["interface"]][key] - before["netdev"][link["interface"]][key])
    except (KeyError, TypeError):
        return None


def _ideal(step, info, model):
    """The step under perfect spreading (every flow split evenly over all its equal-cost paths): the simulator's
    ideal_completions, with each flow's throttle."""
    if NUMPY_IMPORT_ERROR:  # pragma: no cover - numpy is in requirements.txt
        return None, "numpy is not installed (requirements.txt): the ideal needs the simulator"
    caps = {name: parse_rate(link["rate"], name) for name, link in info["links"].items() if link.get("rate")}
    paths, volumes, factors = {}, {}, {}
    for flow in step.flows:
        planned = step.planned(flow)
        candidates = (info.get("paths") or {}).get("%s|%s" % flow.key)
        if not candidates or not flow.volume_bytes:
            return None, "flow %s has no equal-cost paths in the plan" % flow.flow_id
        extra = [hop for hop in planned.path if hop.rate]
        for hop in extra:
            caps[hop.link] = parse_rate(hop.rate, hop.link)
        key = "%s|%s" % flow.key
        paths[key] = [list(p) + [hop.link for hop in extra] for p in candidates]
        volumes[key] = flow.volume_bytes
        factors[key] = ((model or {}).get("factors") or {}).get(flow.key + (0,), 1.0)
    missing = sorted({lk for ps in paths.values() for p in ps for lk in p} - set(caps))
    if missing:
        return None, "no rate for link(s) %s" % ", ".join(missing)
    ideal = ideal_completions(caps, paths, volumes, factors=factors)
    used = {lk for ps in paths.values() for p in ps for lk in p}
    rates = {name: rate for name, rate in ((n, (info["links"].get(n) or {}).get("rate")) for n in used) if rate}
    for flow in step.flows:
        rates.update({hop.link: hop.rate for hop in step.planned(flow).path if hop.rate})
    leaves = {}
    for candidates in paths.values():
        leaf = Link.parse(candidates[0][0]).dst
        leaves[leaf] = leaves.get(leaf, 0) + 1
    link_rates = {(info["links"].get(n) or {}).get("rate") for n in used if n in info["links"]}
    what_if = {"rates": rates, "ideal_step_s": max(ideal.values()),
               "flows": [{"id": key, "candidates": paths[key], "volume": volumes[key], "factor": factors[key]}
                         for key in sorted(paths)],
               "flows_per_leaf": leaves, "spines": max(len(c) for c in paths.values()),
               "uniform": (len(link_rates) == 1 and len(set(volumes.values())) == 1
                           and all(len(c) > 1 for c in paths.values())
                           and not any(hop.throttle for f in step.flows for hop in step.planned(f).path))}
    return (ideal, what_if), None


def analyze_fabric(report, step, model):
    """The ``fabric`` section of a step's report (``report``: analyze_step's, which this may annotate: the straggler's
    cause and the verdict name the collision)."""
    info = step.plan.fabric or {}
    links = info.get("links") or {}
    subs = _subflows(step, model)
    per_link = {}
    for sub in subs:
        for name in sub["links"]:
            per_link.setdefault(name, []).append(sub)
    out = {"hash": info.get("hash"), "seed": info.get("seed"), "placement": info.get("placement"),
           "port_seed": info.get("port_seed"), "elephants": len(subs), "flows": [], "links": [], "collisions": []}
    for sub in subs:
        fabric_links = [lk for lk in sub["links"] if (links.get(lk) or {}).get("tier") in _FABRIC_TIERS]
        shared = [lk for lk in fabric_links if len(per_link.get(lk, [])) > 1]
        out["flows"].append({"flow": sub["flow"], "host": sub["host"], "sport": sub["sport"],
                             "sport_used": sub["sport_used"], "links": sub["links"], "uplink": fabric_links[0]
                             if fabric_links else None, "collides_on": shared, "predicted_s": sub["predicted_s"],
                             "completion_s": sub["completion_s"]})
    smallest = min((s["bytes"] or s["volume"] for s in subs), default=0)
    disagreements = []
    worst = 0.0
    for name in sorted(links):
        link = links[name]
        on = per_link.get(name, [])
        if link.get("tier") == "host" and not on:
            continue
        expected = sum(s["bytes"] for s in on)
        measured = _counter_delta(step, link)
        entry = {"link": name, "tier": link.get("tier"), "rate": link.get("rate"), "flows": [s["flow"] for s in on],
                 "expected_bytes": expected, "counted_bytes": measured}
        predicted = [s["volume"] * 8 / s["predicted_s"] for s in on if s["predicted_s"]]
        entry["predicted_gbps"] = round(sum(predicted) / 1e9, 6) if predicted else None
        done = [s["bytes"] * 8 / s["completion_s"] for s in on if s["completion_s"]]
        entry["measured_gbps"] = round(sum(done) / 1e9, 6) if len(done) == len(on) and on else None
        if measured is not None:
            if expected:
                difference = measured / float(expected) - 1
                entry["difference"] = round(difference, 6)
                entry["agrees"] = -PROOF_BELOW <= difference <= PROOF_ABOVE
                worst = max(worst, abs(difference))
            else:
                entry["agrees"] = measured <= PROOF_EMPTY * max(1, smallest)
            if not entry["agrees"]:
                disagreements.append(
                    "%s counted %d bytes where the lookups put %s (%d bytes): a flow did not take the path its lookup "
                    "gave" % (name, measured, ", ".join(entry["flows"]) or "no flow", expected))
        out["links"].append(entry)
        if link.get("tier") in _FABRIC_TIERS and len(on) > 1:
            out["collisions"].append({"link": name, "flows": entry["flows"]})
    for flow in out["flows"]:
        flow["shares_with"] = sorted({other for lk in flow["collides_on"] for other in
                                      next(c["flows"] for c in out["collisions"] if c["link"] == lk)} - {flow["flow"]})
    for flow in out["flows"]:
        if flow["sport_used"] is not None and flow["sport"] is not None and flow["sport_used"] != flow["sport"]:
            disagreements.append("%s sent from port %s, not %s whose path was looked up" % (
                flow["flow"], flow["sport_used"], flow["sport"]))
    counted = [e for e in out["links"] if e["counted_bytes"] is not None]
    out["proof"] = {"status": "unchecked" if not counted else "disagrees" if disagreements else "agrees",
                    "links_checked": len(counted), "largest_difference": round(worst, 6),
                    "disagreements": disagreements}
    loads = [len(e["flows"]) for e in out["links"] if e["tier"] == "uplink"]
    out["worst_uplink_load"] = max(loads, default=0)
    out["load_balance"] = load_balance(out["links"])
    answer, why = _ideal(step, info, model)
    if answer:
        ideal, out["what_if"] = answer
        out["ideal_step_s"] = round(max(ideal.values()), 6)
    else:
        out["ideal_unavailable"] = why
    if report.get("step_s") and out.get("ideal_step_s"):
        out["slowdown_vs_ideal"] = round(report["step_s"] / out["ideal_step_s"], 6)
        if report.get("predicted_step_s"):
            out["predicted_slowdown_vs_ideal"] = round(report["predicted_step_s"] / out["ideal_step_s"], 6)
    if report.get("step_s") and report.get("predicted_step_s"):
        out["vs_prediction"] = round(report["step_s"] / report["predicted_step_s"], 6)
    out["sentence"] = _sentence(report, out)
    _name_the_collision(report, out)
    return out


def _sentence(report, out):
    parts = []
    if out.get("slowdown_vs_ideal"):
        parts.append("step %.2f× the ideal (perfect spreading: %.2f s)"
                     % (out["slowdown_vs_ideal"], out["ideal_step_s"]))
    if out.get("vs_prediction"):
        parts.append("%.3f× the prediction" % out["vs_prediction"])
    if out["collisions"]:
        worst = max(out["collisions"], key=lambda c: len(c["flows"]))
        parts.append("%s carried %d of the %d elephants (%s)%s" % (
            worst["link"], len(worst["flows"]), out["elephants"], ", ".join(worst["flows"]),
            "; %d link(s) shared in all" % len(out["collisions"]) if len(out["collisions"]) > 1 else ""))
    else:
        parts.append("no two elephants shared a fabric link")
    proof = out["proof"]
    if proof["status"] == "agrees":
        parts.append("every path proved by the counters (largest difference %.1f%%)"
                     % (proof["largest_difference"] * 100))
    elif proof["status"] == "disagrees":
        parts.append("PATHS DISAGREE: %s" % "; ".join(proof["disagreements"]))
    counters = (report.get("counters") or {}).get("verdict")
    if counters and counters.startswith("all error counters zero"):
        parts.append("all error counters zero")
    return "; ".join(parts)


def _name_the_collision(report, out):
    """The straggler's cause is its shared link when it has one (and no throttle of its own); the verdict starts with
    the fabric's sentence."""
    straggler = report.get("straggler")
    old = (straggler or {}).get("cause") or ""
    mine = [f for f in out["flows"] if straggler and f["host"] == straggler["host"] and f["collides_on"]]
    if mine and not old.startswith("throttled"):
        sizes = {c["link"]: c["flows"] for c in out["collisions"]}
        link = max((lk for f in mine for lk in f["collides_on"]), key=lambda lk: len(sizes[lk]))
        straggler["cause"] = "its path's %s carried %d of the %d elephants (%s)" % (
            link, len(sizes[link]), out["elephants"], ", ".join(sizes[link]))
        if report.get("verdict") and old:
            report["verdict"] = report["verdict"].replace(old, straggler["cause"], 1)
    if report.get("verdict") and report.get("status") == "ok":
        report["verdict"] = "%s; %s" % (out["sentence"], report["verdict"])


def variants(steps):
    """The fabric steps side by side (one row each): how each hashed and placed its flows, its step time against the
    ideal and the prediction, the workers' mean idle share, the busiest uplink, the collisions, the proof."""
    rows = []
    for s in steps:
        fab = s.get("fabric")
        if not fab:
            continue
        flows = len({f["host"] for f in fab["flows"]}) or 1
        idle = [w.get("idle_share") for w in s.get("workers") or [] if w.get("idle_share") is not None]
        rows.append({"step": s["step"], "status": s["status"], "hash": fab.get("hash"), "seed": fab.get("seed"),
                     "placement": fab.get("placement"), "streams": round(fab["elephants"] / float(flows), 2),
                     "step_s": s.get("step_s"), "predicted_step_s": s.get("predicted_step_s"),
                     "ideal_step_s": fab.get("ideal_step_s"), "slowdown_vs_ideal": fab.get("slowdown_vs_ideal"),
                     "vs_prediction": fab.get("vs_prediction"),
                     "mean_idle_share": round(mean(idle), 6) if idle else None,
                     "worst_uplink_load": fab.get("worst_uplink_load"), "collisions": len(fab["collisions"]),
                     "proof": fab["proof"]["status"]})
    return rows


def seeds(report_steps, fabric_info, trials=5000):
    """Over the steps that differ only by the hash seed (l4, placement hash, a stream per flow), the measured
    slowdown against the ideal beside the lab's own prediction, the simulator's expectation under random hashing of
    the same flows on the same fabric (``trials`` placements, seeded), and the formula's. None with fewer than two
    seeds."""
    rows = [r for r in variants(report_steps) if r["hash"] == "l4" and r["placement"] == "hash" and r["streams"] == 1
            and r["status"] == "ok" and r["slowdown_vs_ideal"]]
    if len({r["seed"] for r in rows}) < 2 or not fabric_info:
        return None
    per_seed = [{"step": r["step"], "seed": r["seed"], "slowdown_vs_ideal": r["slowdown_vs_ideal"],
                 "predicted_slowdown_vs_ideal": round(r["predicted_step_s"] / r["ideal_step_s"], 6)
                 if r["predicted_step_s"] else None} for r in rows]
    out = {"seeds": len({r["seed"] for r in rows}), "steps": per_seed}
    measured = [r["slowdown_vs_ideal"] for r in rows]
    predicted = [x["predicted_slowdown_vs_ideal"] for x in out["steps"] if x["predicted_slowdown_vs_ideal"]]
    out["measured_mean"] = round(mean(measured), 6)
    out["measured_min"], out["measured_max"] = min(measured), max(measured)
    out["predicted_mean"] = round(mean(predicted), 6) if predicted else None
    sim = simulated_slowdown(fabric_info, trials)
    out.update(sim)
    return out


def simulated_slowdown(fabric_info, trials=2000, seed=0):
    """The simulator's expected slowdown against the ideal when every flow's spine is drawn uniformly (a random hash),
    over ``trials`` placements of the step's own flows on its own fabric; and the formula's, when the step is N
    equal elephants out of every leaf, each alone at its link's rate (``_model.ecmp.expected_slowdown``)."""
    import numpy as np

    links = {name: parse_rate(rate, name) for name, rate in fabric_info["rates"].items()}
    flows = fabric_info["flows"]  # [{id, candidates: [[links]...], volume, factor}]
    ideal = fabric_info["ideal_step_s"]
    rng = np.random.default_rng(seed)
    times = []
    for _trial in range(trials):
        paths = {f["id"]: f["candidates"][int(rng.integers(len(f["candidates"])))] for f in flows}
        sim = simulate(links, paths, {f["id"]: f["volume"] for f in flows},
                       factors={f["id"]: f["factor"] for f in flows})
        times.append(max(sim.completions().values()))
    out = {"simulated_mean": round(float(np.mean(times)) / ideal, 6), "simulated_trials": trials,
           "simulated_seed": seed}
    per_leaf = fabric_info.get("flows_per_leaf")
    if per_leaf and len(set(per_leaf.values())) == 1 and fabric_info.get("uniform"):
        n = next(iter(per_leaf.values()))
        out["formula"] = round(float(expected_slowdown(n, fabric_info["spines"], groups=len(per_leaf))), 6)
        out["formula_text"] = "E[max load]/ceil(N/M) with N=%d flows out of each of %d leaves onto M=%d spines" % (
            n, len(per_leaf), fabric_info["spines"])
    else:
        out["formula_unavailable"] = ("the formula takes equal elephants, the same number out of every leaf, each "
                                      "alone at its uplink's rate")
    return out
