"""What showing progress costs the flows: the barrier step with and without progress, interleaved, in one run.

A netns lab (aflb-prog-*: 3 workers and a sink at 8gbit, worker3 throttled to 2gbit) runs the barrier playbook
``--runs`` times each way, alternating (progress on, off, on, off, ...), so that drift of the machine falls on both
alike. Per way: each flow's goodput, the sum of the flows' rates and the step time, as median and spread (min - max)
over the runs; the difference of the medians; and, with progress on, how many progress lines a step printed and the
longest gap between two of them (the elapsed time they print). Default volume 5GB: the throttled flow runs about
20 s. Goal: the medians within 0.5%, a line at least about once a second. Figures are printed, never asserted.

    python benchmarks/progress.py [--runs 5] [--volume 5GB]
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BIN = os.path.dirname(sys.executable)
LINE = re.compile(r"^\[barrier\s+([0-9.]+) s\]", re.M)
INVENTORY = """all:
  vars:
    ansible_connection: aifabric.lab.netns
    ansible_netns_prefix: aflb-prog-
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
    lab_namespace_prefix: aflb-prog-
    lab_subnet: 198.18.241.0/24
    lab_line_rate: 8gbit
  children:
    switches: {hosts: {switch: {}}}
    sinks: {hosts: {sink: {lab_address: 198.18.241.1}}}
    workers:
      hosts:
        worker1: {lab_address: 198.18.241.11}
        worker2: {lab_address: 198.18.241.12}
        worker3: {lab_address: 198.18.241.13}
"""


def playbook(env, inv, *args, check=True):
    cmd = [os.path.join(BIN, "ansible-playbook"), "-i", inv] + list(args)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT, check=False)
    if proc.returncode and check:
        raise RuntimeError("%s failed:\n%s" % (" ".join(cmd), proc.stdout[-3000:]))
    return proc


def one_run(env, inv, runs, volume, progress):
    before = set(glob.glob(os.path.join(runs, "*")))
    proc = playbook(env, inv, "playbooks/barrier.yml", "-e", "barrier_volume=%s" % volume,
                    "-e", "experiment_progress=%s" % str(progress).lower(), check=False)
    fresh = sorted(d for d in set(glob.glob(os.path.join(runs, "*"))) - before if os.path.isdir(d))
    if not fresh:
        raise RuntimeError("no run directory:\n%s" % proc.stdout[-3000:])
    step = json.load(open(os.path.join(fresh[-1], "report.json")))["steps"][0]
    if step["status"] != "ok":
        raise RuntimeError("the step failed: %s" % step.get("verdict"))
    elapsed = [float(x) for x in LINE.findall(proc.stdout)]
    gaps = [b - a for a, b in zip(elapsed, elapsed[1:])]
    return {"flows": {w["host"]: w["gbps"] for w in step["workers"]}, "sum": step["sum_of_flow_gbps"],
            "step_s": step["step_s"], "lines": len(elapsed), "max_gap": max(gaps) if gaps else None,
            "first": elapsed[0] if elapsed else None}


def spread(values):
    return "%.4f (%.4f - %.4f)" % (statistics.median(values), min(values), max(values))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--volume", default="5GB")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="aflb-prog-")
    runs = os.path.join(work, "runs")
    inv = os.path.join(work, "hosts.yml")
    with open(inv, "w") as handle:
        handle.write(INVENTORY)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), AIFABRIC_RUNS_DIR=runs)
    results = {True: [], False: []}
    started = time.time()
    try:
        playbook(env, inv, "playbooks/lab_up.yml")
        try:
            for i in range(args.runs):
                for progress in (True, False) if i % 2 == 0 else (False, True):
                    results[progress].append(one_run(env, inv, runs, args.volume, progress))
                print("run %d of %d done" % (i + 1, args.runs), flush=True)
        finally:
            playbook(env, inv, "playbooks/lab_down.yml", check=False)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print("barrier step, 3 workers at 8gbit, worker3 throttled to 2gbit, %s per flow, %d runs each way, interleaved "
          "(%.0f s)" % (args.volume, args.runs, time.time() - started))
    print("%-22s %-30s %-30s %9s" % ("figure", "progress on: median (min - max)", "progress off", "on / off"))
    on, off = results[True], results[False]
    rows = [("%s Gb/s" % h, [r["flows"][h] for r in on], [r["flows"][h] for r in off]) for h in sorted(on[0]["flows"])]
    rows += [("sum of flows Gb/s", [r["sum"] for r in on], [r["sum"] for r in off]),
             ("step time s", [r["step_s"] for r in on], [r["step_s"] for r in off])]
    for name, a, b in rows:
        change = (statistics.median(a) / statistics.median(b) - 1) * 100
        print("%-22s %-30s %-30s %+8.2f%%" % (name, spread(a), spread(b), change))
    print("progress lines per step: %s; first line at %s s; longest gap between two lines: %s s" % (
        ", ".join(str(r["lines"]) for r in on), ", ".join("%.1f" % r["first"] for r in on if r["first"]),
        ", ".join("%.1f" % r["max_gap"] for r in on if r["max_gap"] is not None)))
    print("with progress off, lines printed: %d (expected 0)" % sum(r["lines"] for r in off))


if __name__ == "__main__":
    main()
