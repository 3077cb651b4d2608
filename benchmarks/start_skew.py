"""Start skew of a step's flows: the armed rendezvous against a naive Ansible fan-out, at 3, 8 and 32 workers.

For each size, a netns lab (aflb-skew-*: the workers and one sink) runs, in the same run:

* the barrier playbook with ``barrier_steps=20`` (every host arms, the rendezvous fires them all at one instant);
* a naive fan-out: 20 steps in which every client starts the moment Ansible runs its task (what a plain fan-out does);
* the barrier playbook with one step, three times each way, for the orchestration overhead: the playbook's wall time
  minus the step's time (the first byte to the last worker's confirmation) - with one task starting every host's part
  (the netns lab's default) and with a task per host (``barrier_batch_start=false``, as over SSH).

Skew of a step = max - min of its flows' first-byte instants, host clocks (the netns lab has one clock; the rendezvous
records each flow's start against the instant it fired in that host's own clock). Printed per size: steps completed
and refused (failed), skew p50 / p99 / max for both, how much tighter the rendezvous is, and the overhead. Figures
are printed, never asserted: they belong to this machine at this moment.

    python benchmarks/start_skew.py [--sizes 3,8,32] [--steps 20] [--volume 20MB]
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BIN = os.path.dirname(sys.executable)
NAIVE = """
- name: Naive fan-out
  hosts: sinks:workers
  gather_facts: false
  tasks:
    - name: One step after another
      ansible.builtin.include_tasks: %(steps_file)s
      loop: "{{ range(%(steps)d) | list }}"
"""
NAIVE_STEP = """
- name: Receiver
  aifabric.lab.flow:
    {role: server, address: "{{ lab_address }}", token: "naive{{ item }}", expected_clients: %(n)d, timeout: 60,
     background: true}
  when: inventory_hostname in groups['sinks']
- name: Start as soon as Ansible gets here
  aifabric.lab.flow:
    role: client
    address: "{{ hostvars[groups['sinks'][0]].lab_address }}"
    token: "naive{{ item }}"
    volume: %(volume)s
    start_at: "{{ now().timestamp() }}"
    flow_id: "{{ inventory_hostname }}"
  register: naive_flow
  when: inventory_hostname in groups['workers']
- name: Collect
  aifabric.lab.flow: {role: server, state: stopped, background: true, address: "{{ lab_address }}",
                      token: "naive{{ item }}"}
  when: inventory_hostname in groups['sinks']
- name: Starts
  ansible.builtin.copy:
    content: "{{ groups['workers'] | map('extract', hostvars, ['naive_flow', 'flow']) | list | to_json }}"
    dest: "%(out)s/naive-{{ item }}.json"
    mode: "0600"
  delegate_to: localhost
  run_once: true
"""


def inventory(path, n):
    workers = "\n".join("        w%d: {lab_address: 198.18.240.%d}" % (i, 10 + i) for i in range(1, n + 1))
    with open(path, "w") as handle:
        handle.write("""all:
  vars:
    ansible_connection: aifabric.lab.netns
    ansible_netns_prefix: aflb-skew-
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
    lab_namespace_prefix: aflb-skew-
    lab_subnet: 198.18.240.0/24
    lab_line_rate: 8gbit
  children:
    switches: {hosts: {switch: {}}}
    sinks: {hosts: {sink: {lab_address: 198.18.240.1}}}
    workers:
      hosts:
%s
""" % workers)


def playbook(env, inv, *args, check=True):
    cmd = [os.path.join(BIN, "ansible-playbook"), "-i", inv] + list(args)
    start = time.time()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT, check=False)
    if proc.returncode and check:
        raise RuntimeError("%s failed:\n%s" % (" ".join(cmd), proc.stdout[-3000:]))
    return proc, time.time() - start


def new_run(runs, before):
    fresh = sorted(d for d in set(glob.glob(os.path.join(runs, "*"))) - before if os.path.isdir(d))
    return fresh[-1] if fresh else None


def pct(values, q):
    ordered = sorted(values)
    rank = q * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def rendezvous(env, inv, runs, steps, volume):
    before = set(glob.glob(os.path.join(runs, "*")))
    playbook(env, inv, "playbooks/barrier.yml", "-e", "barrier_volume=%s" % volume, "-e", "barrier_steps=%d" % steps,
             "-e", '{"barrier_throttles": {}}', check=False)
    report = json.load(open(os.path.join(new_run(runs, before), "report.json")))
    skews, failed = [], []
    for step in report["steps"]:
        if step["status"] == "ok":
            skews.append(step["start_skew_s"] * 1000)
        else:
            failed.append("%s: %s" % (step["step"], step.get("verdict")))
    return skews, failed


def naive(env, inv, work, n, steps, volume):
    out = os.path.join(work, "naive-%d" % n)
    os.makedirs(out)
    steps_file = os.path.join(work, "naive-step-%d.yml" % n)
    with open(steps_file, "w") as handle:
        handle.write(NAIVE_STEP % {"n": n, "out": out, "volume": volume})
    pb = os.path.join(work, "naive-%d.yml" % n)
    with open(pb, "w") as handle:
        handle.write(NAIVE % {"steps_file": steps_file, "steps": steps})
    playbook(env, inv, pb, check=False)
    skews, failed = [], []
    for path in sorted(glob.glob(os.path.join(out, "naive-*.json"))):
        flows = json.load(open(path))
        starts = [f.get("start") for f in flows]
        if all(s is not None for s in starts) and all(f.get("status") == "ok" for f in flows):
            skews.append((max(starts) - min(starts)) * 1000)
        else:
            failed.append(path)
    failed += ["step %d: no result" % i for i in range(len(skews) + len(failed), steps)]
    return skews, failed


def overhead(env, inv, runs, volume, repeats=3, batch=True):
    figures = []
    for _repeat in range(repeats):
        before = set(glob.glob(os.path.join(runs, "*")))
        _proc, wall = playbook(env, inv, "playbooks/barrier.yml", "-e", "barrier_volume=%s" % volume,
                               "-e", '{"barrier_throttles": {}}', "-e", "barrier_batch_start=%s" % batch, check=False)
        step = json.load(open(os.path.join(new_run(runs, before), "report.json")))["steps"][0]
        if step["status"] == "ok":
            figures.append(wall - step["step_s"])
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="3,8,32")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--volume", default="20MB")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="aflb-skew-")
    runs = os.path.join(work, "runs")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), AIFABRIC_RUNS_DIR=runs,
               ANSIBLE_FORKS="40")
    rows = []
    try:
        for n in [int(x) for x in args.sizes.split(",")]:
            inv = os.path.join(work, "hosts-%d.yml" % n)
            inventory(inv, n)
            playbook(env, inv, "playbooks/lab_up.yml")
            try:
                synced, synced_failed = rendezvous(env, inv, runs, args.steps, args.volume)
                plain, plain_failed = naive(env, inv, work, n, args.steps, args.volume)
                over = overhead(env, inv, runs, args.volume)
                over_per_host = overhead(env, inv, runs, args.volume, batch=False)
            finally:
                playbook(env, inv, "playbooks/lab_down.yml", check=False)
            rows.append((n, synced, synced_failed, plain, plain_failed, over, over_per_host))
            for line in synced_failed:
                print("%2d workers, rendezvous, failed %s" % (n, line))
            print("%2d workers done: rendezvous %d/%d steps, naive %d/%d" % (
                n, len(synced), args.steps, len(plain), args.steps), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print("start skew (first byte, max - min over a step's flows), %d steps per size, volume %s per flow"
          % (args.steps, args.volume))
    print("%-8s %-12s %9s %7s %9s %9s %9s %10s %22s %22s" % (
        "workers", "start", "completed", "failed", "p50 ms", "p99 ms", "max ms", "tighter", "overhead s",
        "overhead s, per host"))
    for n, synced, sf, plain, pf, over, over_per_host in rows:
        for how, skews, failed in (("rendezvous", synced, sf), ("naive", plain, pf)):
            if skews:
                figures = (pct(skews, 0.5), pct(skews, 0.99), max(skews))
            else:
                figures = (float("nan"),) * 3
            tighter = ""
            if how == "rendezvous" and synced and plain:
                tighter = "%.0fx" % (pct(plain, 0.99) / max(pct(synced, 0.99), 1e-6))
            costs = [("%.2f (median of %d)" % (statistics.median(o), len(o))) if how == "rendezvous" and o else ""
                     for o in (over, over_per_host)]
            print("%-8d %-12s %9d %7d %9.3f %9.3f %9.3f %10s %22s %22s" % (
                (n, how, len(skews), len(failed)) + figures + (tighter,) + tuple(costs)))
    print("tighter: the naive fan-out's p99 skew over the rendezvous' p99 skew; overhead: the one-step barrier "
          "playbook's wall time minus its step time - with one task starting every host's part (the netns lab's "
          "default), and with a task per host (barrier_batch_start=false, as over SSH)")


if __name__ == "__main__":
    main()
