"""The flow simulator at 10k, 100k and 1M flows on a three-tier fat tree of 8,192 hosts, beside _fair_share.

The fabric: ``fat_tree(32)`` (32 pods, 512 edge and 512 aggregation switches, 256 cores, 8,192 hosts, 49,152
directed links), 100 Gb/s everywhere (non-blocking). Every host sends the same number of flows (round robin) to
uniformly drawn other hosts; each flow takes one of its equal-cost paths (up to 256) by a seeded ECMP draw. Two
workloads: ``step``, 64 MB each, all at t=0 (a barrier step's elephants: the goals are for this one); ``mixed``,
log-normal volumes starting over 5 ms (every start and most completions change rates below the fastest flows, so
most events fill many flows again: it costs far more per flow). Per size, in a fresh process:

* build: the flows' paths as CSR arrays (``Fabric.ecmp`` + ``Fabric.path_links``);
* simulate: ``simulate_arrays`` (events, progressive-filling iterations, flows filled again), its wall time, the
  process's peak RSS, and the simulation's own peak allocations (tracemalloc, in a second, untimed run);
* the same flows under perfect spreading (``Fabric.hose``: on a non-blocking fabric, the host links alone) and the
  step's slowdown from ECMP collisions.

The peer, in the same run: the pure-Python ``_fair_share.predict_completions`` (a full max-min recomputation at every
completion, lists and dicts: 300 flows take it seconds, 1,000 minutes) on the same workloads (all flows at t=0: it
has no start offsets) at sizes where it finishes in reasonable time, its time beside the simulator's on the same
flows, and their largest relative disagreement on any completion.
Figures are printed, never asserted: they belong to this machine at this moment.

    python benchmarks/simulator.py [--sizes 10000,100000,1000000] [--mixed-sizes 1000,3000] [--peer-sizes 100,300]
                                   [--k 32] [--seed 0]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, ".collections"))

RATE = 100e9
VOLUME = 64e6


def workload(k, flows, seed, kind="step"):
    """The fabric, each flow's hosts and path (CSR), volume and start. ``step``: 64 MB each, all at t=0; ``mixed``:
    log-normal volumes (median 16 MB, sigma 1) starting uniformly over the first 5 ms."""
    import numpy as np
    from ansible_collections.aifabric.lab.plugins.plugin_utils._model.simulate import fat_tree

    fab = fat_tree(k, RATE)
    n = len(fab.hosts)
    rng = np.random.default_rng(seed)
    src = np.arange(flows, dtype=np.int64) % n
    dst = (src + rng.integers(1, n, flows)) % n
    choice = fab.ecmp(src, dst, seed=seed)
    indptr, indices = fab.path_links(src, dst, choice)
    if kind == "step":
        return fab, src, dst, indptr, indices, np.full(flows, VOLUME), np.zeros(flows)
    volume = rng.lognormal(np.log(VOLUME / 4), 1.0, flows)
    return fab, src, dst, indptr, indices, volume, rng.uniform(0.0, 0.005, flows)


def one_size(k, flows, seed, kind):
    """Runs in its own process: prints one JSON line."""
    import tracemalloc

    from ansible_collections.aifabric.lab.plugins.plugin_utils._model.simulate import simulate_arrays

    t0 = time.perf_counter()
    fab, src, dst, indptr, indices, volume, start = workload(k, flows, seed, kind)
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    sim = simulate_arrays(fab.capacity, indptr, indices, volume, start=start)
    elapsed = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kB on Linux
    hose = simulate_arrays(fab.capacity, *fab.hose(src, dst), volume, start=start)
    tracemalloc.start()
    simulate_arrays(fab.capacity, indptr, indices, volume, start=start)
    traced = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    print(json.dumps({
        "flows": flows, "hosts": len(fab.hosts), "links": int(fab.capacity.size), "entries": int(indices.size),
        "build_s": build, "sim_s": elapsed, "events": sim.events, "iterations": sim.iterations,
        "refilled": sim.refilled, "step_s": sim.step_time, "ideal_step_s": hose.step_time,
        "peak_rss_mb": rss, "traced_mb": traced}))


def peer(k, flows, seed, kind):
    """Runs in its own process: _fair_share and the simulator on the same flows; prints one JSON line."""
    from ansible_collections.aifabric.lab.plugins.plugin_utils._model.fair_share import predict_completions
    from ansible_collections.aifabric.lab.plugins.plugin_utils._model.simulate import simulate_arrays

    fab, _src, _dst, indptr, indices, volume, _start = workload(k, flows, seed, kind)  # _fair_share: one start
    paths = {i: [fab.link_names[j] for j in indices[indptr[i]:indptr[i + 1]]] for i in range(flows)}
    used = {link for path in paths.values() for link in path}
    links = {name: cap for name, cap in fab.links.items() if name in used}  # the links the flows cross
    volumes = dict(enumerate(volume.tolist()))
    t0 = time.perf_counter()
    expected = predict_completions(paths, links, volumes)
    slow = time.perf_counter() - t0
    t0 = time.perf_counter()
    sim = simulate_arrays(fab.capacity, indptr, indices, volume)
    fast = time.perf_counter() - t0
    worst = max(abs(sim.finish[i] - expected[i]) / expected[i] for i in range(flows))
    print(json.dumps({"flows": flows, "fair_share_s": slow, "sim_s": fast, "max_rel_diff": worst,
                      "events": sim.events}))


def child(what, k, flows, seed, kind):
    out = subprocess.run([sys.executable, __file__, "--child", what, "--kind", kind, "--k", str(k), "--seed",
                          str(seed), "--sizes", str(flows)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(sizes, mixed_sizes, peer_sizes, k, seed):
    import numpy as np

    print("flow simulator (numpy %s, Python %s), fat_tree(k=%d): %g Gb/s links, seeded ECMP (seed %d)"
          % (np.__version__, sys.version.split()[0], k, RATE / 1e9, seed))
    print("step: %g MB per flow, all at t=0 (a barrier step); mixed: log-normal volumes (median %g MB, sigma 1), "
          "starts spread over 5 ms" % (VOLUME / 1e6, VOLUME / 4e6))
    print()
    print("%-6s %8s %6s %7s %9s %7s %8s %7s %7s %10s %7s %9s %8s %9s" % (
        "kind", "flows", "hosts", "links", "entries", "build s", "sim s", "events", "iters", "refilled", "RSS MB",
        "traced MB", "step s", "vs ideal"))
    for kind, todo in (("step", sizes), ("mixed", mixed_sizes)):
        for flows in todo:
            r = child("size", k, flows, seed, kind)
            print("%-6s %8d %6d %7d %9d %7.2f %8.3f %7d %7d %10d %7.0f %9.0f %8.4f %8.2fx" % (
                kind, r["flows"], r["hosts"], r["links"], r["entries"], r["build_s"], r["sim_s"], r["events"],
                r["iterations"], r["refilled"], r["peak_rss_mb"], r["traced_mb"], r["step_s"],
                r["step_s"] / r["ideal_step_s"]))
    print()
    print("goals (step): <= 1 s at 100k flows, <= 5 s at 1M ('sim s': simulate_arrays, input checks included; "
          "'build s': the workload's paths). RSS: the process's peak; traced: the simulation's own peak allocations.")
    print("'vs ideal': the step time against perfect spreading (every flow split over its equal-cost paths: on this "
          "non-blocking fabric, the host links alone, Fabric.hose).")
    print()
    print("peer: _fair_share.predict_completions (pure Python, one start for all) on the same flows, same run")
    print("%-6s %8s %14s %12s %8s %16s" % ("kind", "flows", "fair_share s", "simulator s", "events", "max rel. diff"))
    for kind in ("step", "mixed"):
        for flows in peer_sizes:
            r = child("peer", k, flows, seed, kind)
            row = (kind, r["flows"], r["fair_share_s"], r["sim_s"], r["events"], r["max_rel_diff"])
            print("%-6s %8d %14.3f %12.4f %8d %16.2e" % row)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="flows of the barrier step")
    parser.add_argument("--mixed-sizes", default="1000,3000", help="flows of the mixed workload")
    parser.add_argument("--peer-sizes", default="100,300")
    parser.add_argument("--k", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", choices=["size", "peer"])
    parser.add_argument("--kind", choices=["step", "mixed"], default="step")
    args = parser.parse_args()
    sizes = [int(x) for x in args.sizes.split(",") if x]
    if args.child == "size":
        one_size(args.k, sizes[0], args.seed, args.kind)
    elif args.child == "peer":
        peer(args.k, sizes[0], args.seed, args.kind)
    else:
        run(sizes, [int(x) for x in args.mixed_sizes.split(",") if x],
            [int(x) for x in args.peer_sizes.split(",") if x], args.k, args.seed)


if __name__ == "__main__":
    main()
