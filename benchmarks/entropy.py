"""The entropy sweep (draft-calabria-bmwg-ai-fabric-training-bench 8.1): streams (or QPs) per pair 1..16, and the
busiest uplink's load, by the exact formula, by the simulator and, given a run, as measured in the fabric lab.

The fabric is the lab's (inventories/fabric): 2 leaves, 4 spines, 4 workers per leaf at 1 Gb/s under 4 uplinks at
1 Gb/s (1:1), the shift pattern (every worker's elephant crosses to the other leaf). Each elephant is split into k
streams of 1/k of its bytes, each hashed onto a spine on its own. The busiest uplink's load, in elephants' worth
(streams on it / k), over both leaves:

* formula: ``E[max load of 4k streams on 4 uplinks, the busiest of 2 leaves] / k``
  (``_model.ecmp.expected_max_load(4k, 4, groups=2) / k``, exact);
* simulator: ``trials`` random placements (``leaf_spine(2, 4, 4, ...).ecmp``, seeded) of the same streams, the
  busiest uplink's load averaged, and each placement's step played by the flow simulator (``simulate_arrays``)
  against the ideal (every stream alone at its share of the line rate: perfect spreading); the leaves' uplinks' MMR
  and JFI by streams (``_analysis.balance``), averaged;
* measured (``--runs DIR ...``): from each run directory's report.json, its fabric steps' busiest uplink
  (``worst_uplink_load``, streams) over their streams per flow, their slowdown against the ideal, their worst MMR
  and lowest JFI. The lab shares each port fairly between at most 64 streams a step (``PORT_BUCKETS``): 8 elephants
  of up to 8 streams (``make fabric-demo`` with ``fabric_streams``).

Figures are printed, never asserted.

    python benchmarks/entropy.py [--streams 1,2,4,8,16] [--trials 2000] [--seed 0] [--runs runs/<dir> ...]
"""
from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, ".collections"))

LEAVES, SPINES, PER_LEAF = 2, 4, 4
RATE = 1e9
VOLUME = 250e6


def simulated(k, trials, seed):
    import numpy as np
    from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.balance import jfi, mmr
    from ansible_collections.aifabric.lab.plugins.plugin_utils._model.simulate import leaf_spine, simulate_arrays

    fab = leaf_spine(LEAVES, SPINES, PER_LEAF, RATE, RATE)
    n = LEAVES * PER_LEAF
    hosts = np.arange(n)
    src = np.repeat(hosts, k)
    dst = (src + PER_LEAF) % n  # shift: leaf1's worker i to leaf2's worker i, and back
    rng = np.random.default_rng(seed)
    loads, slowdowns, mmrs, jfis = [], [], [], []
    # the ideal: every stream alone at its share of its host's line rate (1:1, perfect spreading), V / rate
    ideal = VOLUME * 8 / RATE
    for _trial in range(trials):
        choice = rng.integers(0, SPINES, size=src.size)
        per_leaf = [np.bincount(choice[src // PER_LEAF == leaf], minlength=SPINES) for leaf in range(LEAVES)]
        loads.append(max(int(c.max()) for c in per_leaf) / k)
        mmrs.append(max(mmr(c.tolist()) for c in per_leaf))
        jfis.append(min(jfi(c.tolist()) for c in per_leaf))
        indptr, indices = fab.path_links(src, dst, choice)
        sim = simulate_arrays(fab.capacity, indptr, indices, np.full(src.size, VOLUME / k))
        slowdowns.append(float(sim.finish.max()) / ideal)
    return {"load": float(np.mean(loads)), "slowdown": float(np.mean(slowdowns)), "mmr": float(np.mean(mmrs)),
            "jfi": float(np.mean(jfis))}


def measured(run_dirs):
    """{streams per flow: [figures of each fabric step]} from the runs' report.json."""
    out = {}
    for run in run_dirs:
        with open(os.path.join(run, "report.json")) as handle:
            report = json.load(handle)
        for step in report.get("steps") or []:
            fab = step.get("fabric")
            if not fab or step.get("status") != "ok":
                continue
            flows = len({f["host"] for f in fab["flows"]}) or 1
            k = round(fab["elephants"] / flows)
            lb = fab.get("load_balance") or {}
            out.setdefault(k, []).append({"load": fab["worst_uplink_load"] / k,
                                          "slowdown": fab.get("slowdown_vs_ideal"),
                                          "mmr": lb.get("worst_flows_mmr"), "jfi": lb.get("lowest_flows_jfi")})
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--streams", default="1,2,4,8,16")
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", nargs="*", default=[])
    args = parser.parse_args(argv)
    from ansible_collections.aifabric.lab.plugins.plugin_utils._model.ecmp import expected_max_load

    lab = measured(args.runs)
    print("entropy sweep: %d leaves x %d spines, %d elephants out of each leaf (shift), each split into k streams; "
          "busiest uplink in elephants' worth (streams on it / k), ideal %.2f"
          % (LEAVES, SPINES, PER_LEAF, PER_LEAF / SPINES))
    print("simulator: %d placements per k, seed %d; measured: %s"
          % (args.trials, args.seed, ", ".join(args.runs) or "no run given"))
    head = ("k", "streams", "formula", "sim load", "sim x ideal", "sim MMR", "sim JFI", "lab load", "lab x ideal",
            "lab MMR", "lab JFI", "lab n")
    print("%3s %8s %8s %9s %11s %8s %8s %9s %11s %8s %8s %5s" % head)
    for k in [int(x) for x in args.streams.split(",")]:
        formula = float(expected_max_load(PER_LEAF * k, SPINES, groups=LEAVES)) / k
        sim = simulated(k, args.trials, args.seed)
        got = lab.get(k) or []

        def avg(key, got=got):
            values = [g[key] for g in got if g[key] is not None]
            return "%.3f" % (sum(values) / len(values)) if values else "-"

        print("%3d %8d %8.3f %9.3f %11.3f %8.3f %8.3f %9s %11s %8s %8s %5d" % (
            k, PER_LEAF * k, formula, sim["load"], sim["slowdown"], sim["mmr"], sim["jfi"], avg("load"),
            avg("slowdown"), avg("mmr"), avg("jfi"), len(got)))


if __name__ == "__main__":
    main()
