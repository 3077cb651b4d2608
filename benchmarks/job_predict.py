"""The job predictor's own cost (issue 26, item 7): a ring AllReduce job on 8 and 32 workers, beside today's simulator.

The job: ``iterations`` (default 20) of a ``compute_ms`` compute then a ring AllReduce of ``size`` (default 320MB)
cut into ``chunks`` (default 4) per step, window 2, on a star of ``line`` (8 Gb/s) ports with worker w3's egress
throttled to a quarter of the line (the issue's done-when case), goodput factor 0.9925 (TCP at MTU 9000). 32 workers:
62 steps, 7,936 transfers per iteration, 158,720 over 20 iterations. Per size, in a fresh process: the job's parse,
schedule and programs (``build s``), ``_model.dag.predict`` (``predict s``, its events, component solves and flows
re-rated), the predicted JCT; then **the peer**: ``_simulate.simulate`` (today's vectorized max-min simulator) on the
same flows, each message one flow with its path, volume and goodput factor, started where the prediction put its
first byte (today's simulator has no dependencies: it is given the starts), its wall time (``peer s``, capped by
``--peer-timeout``), and the largest relative difference between its completions and the prediction's (each
message's last byte; the two compute the same max-min rates).

Also, with ``--others``, the same predictor on the other algorithms at 32 workers (fewer iterations): the cost when
a component is large (AlltoAll direct: every flow shares the switch ports).

The issue's figure for today's simulator: 3,000 flows with staggered starts in 6.1 s (benchmarks/simulator.py,
``mixed``). Figures are printed, never asserted: they belong to this machine at this moment.

    python benchmarks/job_predict.py [--workers 8,32] [--iterations 20] [--chunks 4] [--size 320MB]
                                     [--peer-timeout 300] [--others]
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

LINE = 8e9
THROTTLE = LINE / 4
FACTOR = 0.9925


def paths(src, dst):
    p = [(src + "->sw", LINE), ("sw->" + dst, LINE)]
    if src == "w3":
        p.append(("w3 egress", THROTTLE))
    return p


def build(workers, iterations, chunks, size, op="allreduce", algorithm="ring"):
    from ansible_collections.aifabric.lab.plugins.plugin_utils._job.program import build_programs
    from ansible_collections.aifabric.lab.plugins.plugin_utils._job.spec import parse_job

    hosts = ["w%d" % (i + 1) for i in range(workers)]
    spec = parse_job({"iterations": iterations, "compute_ms": 5, "collectives": [
        {"op": op, "algorithm": algorithm, "size": size, "chunks": chunks, "window": 2}]}, hosts)
    return spec, build_programs(spec, {h: ("198.18.%d.%d" % (i // 250, i % 250 + 1), 18700)
                                       for i, h in enumerate(hosts)})


def one(workers, iterations, chunks, size, op, algorithm):
    """Runs in its own process: prints one JSON line (and writes the flows for the peer)."""
    from ansible_collections.aifabric.lab.plugins.plugin_utils._job.program import match_connections
    from ansible_collections.aifabric.lab.plugins.plugin_utils._model.dag import predict

    t0 = time.perf_counter()
    _spec, programs = build(workers, iterations, chunks, size, op, algorithm)
    built = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), cpu()
    pred = predict(programs, paths, factor=FACTOR)
    elapsed, used = time.perf_counter() - t0, cpu() - c0
    res = pred["results"]
    flows = []
    for c in match_connections(programs).values():
        t = res[c.src]["t"]
        for pos, _i in enumerate(res[c.src]["sampled"]):
            for j, nbytes in zip(c.sends, c.nbytes):
                flows.append((c.src, c.dst, nbytes, t["first"][pos][j], t["end"][pos][j]))
    out = {"workers": workers, "op": op, "algorithm": algorithm, "iterations": iterations, "build_s": built,
           "predict_s": elapsed, "predict_cpu_s": used, "events": pred["events"], "solves": pred["solves"],
           "refilled": pred["refilled"],
           "flows": len(flows), "jct_s": max(r["iteration_end"][-1] for r in res.values())}
    with open(flow_file(workers, op, algorithm), "w") as f:
        json.dump(flows, f)
    print(json.dumps(out))


def cpu():
    return resource.getrusage(resource.RUSAGE_SELF).ru_utime


def flow_file(workers, op, algorithm):
    name = "job_predict.%d.%s.%s.%d.json" % (workers, op, algorithm, os.getppid())
    return os.path.join(os.environ.get("TMPDIR", "/tmp"), name)


def peer(workers, op, algorithm):
    """Runs in its own process: today's simulator on the predicted flows; prints one JSON line."""
    from ansible_collections.aifabric.lab.plugins.plugin_utils._simulate import simulate

    with open(flow_file(workers, op, algorithm)) as f:
        flows = json.load(f)
    links, named, volumes, starts = {}, {}, {}, {}
    for k, (src, dst, nbytes, first, _end) in enumerate(flows):
        path = paths(src, dst)
        links.update(dict(path))
        named[k] = [hop[0] for hop in path]
        volumes[k] = nbytes
        starts[k] = first
    t0, c0 = time.perf_counter(), cpu()
    sim = simulate(links, named, volumes, starts=starts, factors={k: FACTOR for k in named})
    elapsed, used = time.perf_counter() - t0, cpu() - c0
    done = sim.completions()
    worst = max(abs(done[k] - flows[k][4]) / max(flows[k][4] - flows[k][3], 1e-12) for k in named)
    print(json.dumps({"peer_s": elapsed, "peer_cpu_s": used, "max_rel_diff": float(worst), "events": int(sim.events)}))


def child(args, timeout=None):
    try:
        out = subprocess.run([sys.executable, __file__] + args, check=True, capture_output=True, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(workers, iterations, chunks, size, peer_timeout, others):
    import numpy as np

    print("job predictor (Python %s, numpy %s): ring AllReduce of %s, %d chunks per step, window 2, %d iterations, "
          "5 ms compute; star of %g Gb/s ports, w3 throttled to %g Gb/s; goodput factor %g"
          % (sys.version.split()[0], np.__version__, size, chunks, iterations, LINE / 1e9, THROTTLE / 1e9, FACTOR))
    print()
    print("%7s %6s %7s %8s %10s %8s %8s %8s %8s %10s %8s %8s %12s" % (
        "workers", "steps", "flows", "build s", "predict s", "cpu s", "events", "solves", "JCT s", "peer s", "cpu s",
        "peer ev", "max rel diff"))
    for n in workers:
        common = ["--workers", str(n), "--iterations", str(iterations), "--chunks", str(chunks), "--size", size]
        r = child(["--child", "predict"] + common)
        p = child(["--child", "peer"] + common, timeout=peer_timeout)
        peer_cols = ("%10.2f %8.2f %8d %12.2e" % (p["peer_s"], p["peer_cpu_s"], p["events"], p["max_rel_diff"])) \
            if p else "%10s %8s %8s %12s" % (">%d" % peer_timeout, "-", "-", "(timeout)")
        print("%7d %6d %7d %8.2f %10.2f %8.2f %8d %8d %8.3f %s" % (
            n, 2 * (n - 1), r["flows"], r["build_s"], r["predict_s"], r["predict_cpu_s"], r["events"], r["solves"],
            r["jct_s"], peer_cols))
        try:
            os.unlink(flow_file(n, "allreduce", "ring"))
        except OSError:
            pass
    print()
    print("goal: a 32-worker, 62-step schedule with chunks predicted in seconds, not minutes ('predict s'). 'peer s': "
          "today's _simulate.simulate on the same flows, given the predicted starts (it cannot follow dependencies); "
          "the issue's figure for it: 3,000 staggered flows in 6.1 s. 'cpu s': the process's user CPU seconds (the "
          "wall time counts a loaded machine's waits). 'max rel diff': the largest difference of a message's end, "
          "relative to its duration, between the two.")
    if others:
        print()
        print("other algorithms, 32 workers, %d iterations (flows: messages)" % max(1, iterations // 10))
        print("%-28s %7s %9s %8s %8s %9s %10s" % ("collective", "flows", "predict s", "cpu s", "events", "solves",
                                                  "refilled"))
        for op, algorithm in (("allreduce", "tree"), ("allreduce", "halving_doubling"), ("alltoall", "direct"),
                              ("alltoall", "pairwise"), ("allgather", "ring"), ("broadcast", "ring")):
            r = child(["--child", "predict", "--workers", "32", "--iterations", str(max(1, iterations // 10)),
                       "--chunks", str(chunks), "--size", size, "--op", op, "--algorithm", algorithm])
            print("%-28s %7d %9.2f %8.2f %8d %9d %10d" % (op + " " + algorithm, r["flows"], r["predict_s"],
                                                          r["predict_cpu_s"], r["events"], r["solves"], r["refilled"]))
            try:
                os.unlink(flow_file(32, op, algorithm))
            except OSError:
                pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="8,32")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--chunks", type=int, default=4)
    parser.add_argument("--size", default="320MB")
    parser.add_argument("--peer-timeout", type=int, default=300)
    parser.add_argument("--others", action="store_true")
    parser.add_argument("--op", default="allreduce")
    parser.add_argument("--algorithm", default="ring")
    parser.add_argument("--child", choices=["predict", "peer"])
    args = parser.parse_args()
    workers = [int(x) for x in args.workers.split(",") if x]
    if args.child == "predict":
        one(workers[0], args.iterations, args.chunks, args.size, args.op, args.algorithm)
    elif args.child == "peer":
        peer(workers[0], args.op, args.algorithm)
    else:
        run(workers, args.iterations, args.chunks, args.size, args.peer_timeout, args.others)


if __name__ == "__main__":
    main()
