"""The incast sweep (issue 27; docs/congestion.md "The incast grid"): N senders to one receiver times the switch
ports' buffer, tail drop and ECN marking, each cell an experiment of ``playbooks/incast.yml``'s ``incast_grid``; the
table per buffer and mode, with each column's goodput cliff named (the report's ``incast_grid``).

By default the full sweep on ``inventories/netns32`` (32 workers, 250 Mb/s ports): N = 2, 4, 8, 16, 32 x buffers 50KB,
100KB, 200KB x {tail drop, ECN}, 30 cells of one step each. The cell's efficiency is the fair share's step time (the
simulator's max-min prediction) over the measured one; the cliff is the smallest N whose efficiency is below 0.8, or
whose step failed (timed out). Figures are printed, never asserted. Run it under the lab lock: it brings the lab up
and down (``flock /tmp/aifabric-lab.lock python benchmarks/incast_sweep.py``).

    python benchmarks/incast_sweep.py [--inventory netns32] [--workers 2,4,8,16,32] [--buffers 50KB,100KB,200KB]
                                      [--volume 10MB] [--steps 1] [--threshold 60KB] [--keep DIR]
    python benchmarks/incast_sweep.py --report runs/<run>/report.json      # print a run's grid, run nothing
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import sys
import tempfile
import time

from _lab import ROOT, playbook


def fmt(value, spec, unit=""):
    return "-" if value is None else (spec % value) + unit


def print_grid(grid, out=sys.stdout):
    """The report's ``incast_grid`` as Markdown: a table per column (buffer, mode), its cliff under it."""
    if not grid:
        print("no incast grid in this report (fewer than two cells labelled n, buffer and mode)", file=out)
        return
    header = ("N", "step p50", "efficiency", "goodput Gb/s", "FCT p99", "dropped", "marked", "retrans", "RTOs",
              "verdict")
    for column in grid["columns"]:
        print(file=out)
        cliff = column["cliff"]
        if cliff:
            what = ("efficiency %.3f" % cliff["efficiency"]) if cliff["efficiency"] is not None else "its step failed"
            where = "cliff at" if cliff["last_good_n"] is not None else "below the cliff from the smallest"
            last = "; last good N=%d" % cliff["last_good_n"] if cliff["last_good_n"] is not None else ""
            said = "%s N=%d (%s, %s RTO expiries, %s drops%s)" % (
                where, cliff["n"], what, fmt(cliff["rto_timeouts"], "%d"), fmt(cliff["dropped_segs"], "%d"), last)
        else:
            said = "no cliff up to N=%d" % column["rows"][-1]["n"]
        print("buffer %s, %s: %s" % (column["buffer"], column["mode"], said), file=out)
        print(file=out)
        print("| %s |" % " | ".join(header), file=out)
        print("|%s|" % "|".join(["---:"] * (len(header) - 1) + ["---"]), file=out)
        for r in column["rows"]:
            verdict = ("%d of %d steps failed" % (r["failed_steps"], r["steps"]) if r["failed_steps"]
                       else "lossless" if r["lossless"] else "lossy")
            print("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                r["n"], fmt(r["step_s"], "%.3f", " s"), fmt(r["efficiency"], "%.3f"), fmt(r["goodput_gbps"], "%.3f"),
                fmt(r["fct_p99_s"], "%.3f", " s"), fmt(r["dropped_segs"], "%d"), fmt(r["marked_segs"], "%d"),
                fmt(r["retransmits"], "%d"), fmt(r["rto_timeouts"], "%d"), verdict), file=out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", help="print this report.json's grid and run nothing")
    parser.add_argument("--inventory", default="netns32", help="an inventory under inventories/ (default netns32)")
    parser.add_argument("--workers", default="2,4,8,16,32", help="the incast ratios N, comma-separated")
    parser.add_argument("--buffers", default="50KB,100KB,200KB", help="the switch ports' buffers, comma-separated")
    parser.add_argument("--modes", default="taildrop,ecn")
    parser.add_argument("--volume", default="10MB", help="bytes each sender sends per step (default 10MB)")
    parser.add_argument("--steps", type=int, default=1, help="steps per cell (default 1)")
    parser.add_argument("--threshold", default="60KB", help="K of the marked cells (30%% of a smaller buffer's)")
    parser.add_argument("--timeout", type=int, default=90, help="seconds a cell's step may take (default 90)")
    parser.add_argument("--keep", help="keep the run directory here (default: a temporary one, removed)")
    args = parser.parse_args()
    if args.report:
        with open(args.report) as handle:
            print_grid(json.load(handle).get("incast_grid"))
        return 0
    grid = {"workers": [int(n) for n in args.workers.split(",")], "buffers": args.buffers.split(","),
            "modes": args.modes.split(",")}
    inv = os.path.join(ROOT, "inventories", args.inventory, "hosts.yml")
    work = tempfile.mkdtemp(prefix="aflb-incast-")
    runs = args.keep or os.path.join(work, "runs")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), AIFABRIC_RUNS_DIR=runs,
               ANSIBLE_FORKS="40")
    before = set(glob.glob(os.path.join(runs, "*")))
    began = time.monotonic()
    try:
        proc = playbook(env, inv, "playbooks/incast.yml", "-e", json.dumps({
            "incast_grid": grid, "incast_volume": args.volume, "incast_steps": args.steps,
            "incast_threshold": args.threshold, "incast_timeout": args.timeout, "experiment_progress": False}))
    finally:
        playbook(env, inv, "playbooks/lab_down.yml")
    elapsed = time.monotonic() - began
    try:
        fresh = sorted(d for d in set(glob.glob(os.path.join(runs, "*"))) - before if os.path.isdir(d))
        path = os.path.join(fresh[-1], "report.json") if fresh else None
        if path is None or not os.path.exists(path):
            print("the sweep wrote no report (exit %d):\n%s" % (proc.returncode, proc.stdout[-3000:]))
            return 1
        with open(path) as handle:
            report = json.load(handle)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("Incast sweep on %s: N %s x buffers %s x %s; %s per sender, %d step(s) per cell; K %s (30%% of a smaller "
          "buffer's); %.0f s" % (args.inventory, args.workers, args.buffers, args.modes, args.volume, args.steps,
                                 args.threshold, elapsed))
    print_grid(report.get("incast_grid"))
    if proc.returncode:
        print("\n(the playbook exited %d: a cell that failed is in its column as such)" % proc.returncode)
    return 0


if __name__ == "__main__":
    sys.exit(main())
