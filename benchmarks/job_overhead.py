"""Ansible's overhead of a collective: its schedule on the hosts (one armed step) against a barrier step per round.

Issue 26, item 7. For each lab (inventories/netns8: 8 workers at 1 Gb/s; inventories/netns32: 32 workers at
250 Mb/s), in the same run:

* a trivial playbook over the same workers (one ``ansible.builtin.ping`` each): what any play costs here, so the
  overheads below read as ratios on any machine;
* the **job** mode: ``playbooks/job.yml``, one iteration of a ring AllReduce (2(n-1) rounds: 14 at 8 workers, 62 at
  32), no compute, nobody throttled: its overhead is the playbook's wall time minus the JCT;
* the **rounds** mode: ``playbooks/collective.yml`` with ``allreduce_ring``, a barrier step per round, nobody
  throttled: its overhead is the wall time minus the collective's time (the sum of its rounds' step times).

The goal (the issue's): the job mode's overhead independent of the rounds, under 5 s at 32 workers. Figures are
printed, never asserted: they belong to this machine at this moment. Run it under the lab lock
(``flock /work/wt/lab.lock python benchmarks/job_overhead.py``): it brings each lab up and down.

    python benchmarks/job_overhead.py [--sizes 8,32] [--size8 64MB] [--size32 128MB] [--modes job,rounds]

``--modes job`` leaves the rounds mode out (at 32 workers it runs 62 barrier steps: minutes).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import tempfile

from _lab import ROOT, playbook

TRIVIAL = """
- name: Trivial
  hosts: workers
  gather_facts: false
  tasks:
    - name: Ping
      ansible.builtin.ping:
"""


def new_report(runs, before):
    fresh = sorted(d for d in set(glob.glob(os.path.join(runs, "*"))) - before if os.path.isdir(d))
    path = os.path.join(fresh[-1], "report.json") if fresh else None
    if path is None or not os.path.exists(path):
        return None  # the play wrote no report: the caller says so, with the play's output
    with open(path) as handle:
        return json.load(handle)


def job_mode(env, inv, runs, size):
    before = set(glob.glob(os.path.join(runs, "*")))
    proc, wall = playbook(env, inv, "playbooks/job.yml", "-e", "job_iterations=1", "-e", "job_compute_ms=0",
                          "-e", "job_size=%s" % size, "-e", '{"job_throttles": {}}', "-e", "experiment_progress=false",
                          timed=True)
    report = new_report(runs, before)
    step = ((report or {}).get("steps") or [{}])[0]
    if proc.returncode or step.get("status") != "ok":
        return wall, None, "job mode failed: %s" % (step.get("verdict") or proc.stdout[-2000:])
    return wall, step["step_s"], None


def rounds_mode(env, inv, runs, size):
    before = set(glob.glob(os.path.join(runs, "*")))
    proc, wall = playbook(env, inv, "playbooks/collective.yml", "-e", '{"collective_patterns": ["allreduce_ring"]}',
                          "-e", "collective_volume=%s" % size, "-e", '{"collective_throttles": {}}',
                          "-e", "experiment_progress=false",
                          # a round of a few ms starts its hosts more than 1% of it apart on a busy machine: this
                          # measures Ansible's time between rounds, not the start skew
                          "-e", "collective_late_bound=0.5", timed=True)
    report = new_report(runs, before) or {}
    collective = next((e.get("collective") for e in report.get("experiments") or [] if e.get("collective")), None)
    rep = (collective or {}).get("repetitions", [{}])[0]
    if proc.returncode or rep.get("status") != "ok":
        return wall, None, "rounds mode failed: %s" % proc.stdout[-2000:]
    return wall, rep["time_s"], None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="8,32")
    parser.add_argument("--size8", default="64MB", help="the AllReduce's size at 8 workers")
    parser.add_argument("--size32", default="128MB", help="the AllReduce's size at 32 workers")
    parser.add_argument("--modes", default="job,rounds", help="which modes to run (job, rounds)")
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = set(modes) - {"job", "rounds"}
    if unknown or not modes:
        parser.error("--modes: give job, rounds or both, comma-separated (got %r)" % args.modes)
    work = tempfile.mkdtemp(prefix="aflb-jobover-")
    runs = os.path.join(work, "runs")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), AIFABRIC_RUNS_DIR=runs,
               ANSIBLE_FORKS="40")
    trivial = os.path.join(work, "trivial.yml")
    with open(trivial, "w") as handle:
        handle.write(TRIVIAL)
    rows = []
    try:
        for n in [int(x) for x in args.sizes.split(",")]:
            inv = os.path.join(ROOT, "inventories", "netns%d" % n, "hosts.yml")
            size = args.size8 if n == 8 else args.size32
            proc = playbook(env, inv, "playbooks/lab_up.yml")
            if proc.returncode:
                raise RuntimeError("lab_up on %s failed:\n%s" % (inv, proc.stdout[-3000:]))
            try:
                _proc, trivial_s = playbook(env, inv, trivial, timed=True)
                job = job_mode(env, inv, runs, size) if "job" in modes else None
                rounds = rounds_mode(env, inv, runs, size) if "rounds" in modes else None
            finally:
                playbook(env, inv, "playbooks/lab_down.yml")
            rows.append((n, size, trivial_s, job, rounds))
            print("%d workers done" % n, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print("Ansible's overhead of one ring AllReduce (2(n-1) rounds), nobody throttled: playbook wall time minus the "
          "collective's time")
    header = ("workers", "rounds", "size", "trivial s", "mode", "wall s", "wire s", "overhead s", "x trivial")
    print("%-8s %6s %7s %10s  %-7s %8s %8s %10s %8s" % header)
    for n, size, trivial_s, job, rounds in rows:
        for mode, measured in (("job", job), ("rounds", rounds)):
            if measured is None:
                continue
            wall, wire, error = measured
            if error:
                print("%-8d %6d %7s %10.2f  %-7s %8.2f  %s" % (n, 2 * (n - 1), size, trivial_s, mode, wall, error))
                continue
            print("%-8d %6d %7s %10.2f  %-7s %8.2f %8.2f %10.2f %8.2f" % (
                n, 2 * (n - 1), size, trivial_s, mode, wall, wire, wall - wire, (wall - wire) / trivial_s))
    print("job: the whole schedule on the hosts, one armed step (playbooks/job.yml); rounds: a barrier step per round "
          "(playbooks/collective.yml); trivial: one ping task over the same workers")


if __name__ == "__main__":
    main()
