"""The fabric lab against the flow simulator: every lab-sized case, measured beside predicted, flow by flow.

Brings up the fabric lab of ``inventories/fabric`` (2 leaves, 4 spines, 4 workers per leaf, 1 Gb/s links; its own
namespaces, prefix aflb-fab-), runs the variants of ``playbooks/fabric.yml`` (l4 hash, l3 hash, 4 streams per flow,
ports chosen to spread) for each port seed given, and prints per step: the step time beside the simulator's
prediction (the max-min model on the paths the kernel gave, event by event), the largest per-flow disagreement, and
the time the simulator took beside its peer, the pure-Python ``_fair_share.predict_completions``, on the same flows
(and their largest disagreement with each other). Goal: every flow within 3% of the simulator. Figures are printed,
never asserted. The fabric is removed at the end, also on failure.

    python benchmarks/fabric.py [--port-seeds 0,1] [--volume 1GB]
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BIN = os.path.dirname(sys.executable)
sys.path.insert(0, os.path.join(ROOT, ".collections"))
PREFIX = "aflb-fab-"


def playbook(env, *args):
    cmd = [os.path.join(BIN, "ansible-playbook"), "-i", os.path.join(ROOT, "inventories/fabric"),
           "-e", "lab_namespace_prefix=%s" % PREFIX] + list(args)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT, check=False)
    if proc.returncode:
        raise RuntimeError("%s failed:\n%s" % (" ".join(cmd), proc.stdout[-3000:]))
    return proc


def peer_check(run_dir, step_name):
    """The simulator and the pure-Python model on one step's own flows: their times and largest disagreement."""
    from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis import barrier as _barrier
    from ansible_collections.aifabric.lab.plugins.plugin_utils._model.fair_share import predict_completions
    from ansible_collections.aifabric.lab.plugins.plugin_utils._model.simulate import simulate
    from ansible_collections.aifabric.lab.plugins.plugin_utils._run.store import load_run

    run = load_run(run_dir)
    step = next(s for s in run.steps if s.name == step_name)
    _predicted, model = _barrier._predict(step, model=True)
    start = time.perf_counter()
    fast = simulate(model["links"], model["flows"], model["volumes"], factors=model["factors"]).completions()
    t_sim = time.perf_counter() - start
    start = time.perf_counter()
    slow = predict_completions(model["flows"], model["links"], model["volumes"], model["factors"])
    t_py = time.perf_counter() - start
    worst = max(abs(fast[k] / slow[k] - 1) for k in slow)
    return t_sim, t_py, worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port-seeds", default="0,1")
    parser.add_argument("--volume", default="1GB")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="aifabric-bench-fabric-")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), AIFABRIC_RUNS_DIR=work,
               AIFABRIC_HISTORY_DB=os.path.join(work, "history.sqlite"), ANSIBLE_FORKS="20",
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    print("fabric lab vs the flow simulator: 2 leaves x 4 spines x 4 workers, 1 Gb/s, %s per elephant" % args.volume)
    columns = ("port seed", "step", "step s", "pred s", "x pred", "worst", "sim ms", "peer ms", "sim/peer")
    print("%-10s %-11s %9s %9s %8s %8s %9s %9s %9s" % columns)
    worst_all = 0.0
    try:
        playbook(env, "playbooks/fabric_up.yml")
        for seed in [int(s) for s in args.port_seeds.split(",") if s]:
            before = set(glob.glob(os.path.join(work, "*")))
            playbook(env, "playbooks/fabric.yml", "-e", "experiment_progress=false", "-e",
                     "fabric_volume=%s" % args.volume, "-e", "fabric_port_seed=%d" % seed)
            run_dir = sorted(d for d in set(glob.glob(os.path.join(work, "*"))) - before if os.path.isdir(d))[-1]
            report = json.load(open(os.path.join(run_dir, "report.json")))
            for step in report["steps"]:
                if step["status"] != "ok":
                    print("%-10d %-11s FAILED: %s" % (seed, step["step"], step.get("verdict")))
                    continue
                worst = max(abs(w["prediction_error"]) for w in step["workers"])
                worst_all = max(worst_all, worst)
                t_sim, t_py, agree = peer_check(run_dir, step["step"])
                print("%-10d %-11s %9.3f %9.3f %8.4f %7.2f%% %9.2f %9.2f %9.2g" % (
                    seed, step["step"], step["step_s"], step["predicted_step_s"],
                    step["step_s"] / step["predicted_step_s"], worst * 100, t_sim * 1e3, t_py * 1e3, agree))
    finally:
        subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", os.path.join(ROOT, "inventories/fabric"),
                        "-e", "lab_namespace_prefix=%s" % PREFIX, "playbooks/fabric_down.yml"], env=env, cwd=ROOT,
                       capture_output=True, check=False)
    print("every flow of every step within %.2f%% of the simulator's prediction (goal: 3%%); sim/peer: the "
          "simulator's largest relative disagreement with the pure-Python model" % (worst_all * 100))


if __name__ == "__main__":
    main()
