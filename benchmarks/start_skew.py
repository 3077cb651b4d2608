"""Start skew of a step's flows: the collection's synchronized start against a naive Ansible fan-out.

For 3 and 16 workers, a lab of namespaces (aflb-skew-*) and one sink: the barrier playbook (one start instant, each
client admitted early, sleeping and spinning to it) against a play whose clients start the moment Ansible runs their
task (what a plain fan-out does). Skew = max - min of the first byte sent, host clocks. Goal: <= 1 ms.
"""
from __future__ import annotations

import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BIN = os.path.dirname(sys.executable)
REPEATS = 3
NAIVE = """
- name: Naive fan-out
  hosts: sinks:workers
  gather_facts: false
  tasks:
    - name: Receiver
      aifabric.lab.flow:
        {role: server, address: "{{ lab_address }}", token: naive, expected_clients: "%(n)d", timeout: 60,
         background: true}
      when: inventory_hostname in groups['sinks']
    - name: Start as soon as Ansible gets here
      aifabric.lab.flow:
        role: client
        address: "{{ hostvars[groups['sinks'][0]].lab_address }}"
        token: naive
        volume: 20MB
        start_at: "{{ now().timestamp() }}"
        start_tolerance: 1000
        flow_id: "{{ inventory_hostname }}"
      register: naive_flow
      when: inventory_hostname in groups['workers']
    - name: Collect
      aifabric.lab.flow: {role: server, state: stopped, background: true, address: "{{ lab_address }}", token: naive}
      when: inventory_hostname in groups['sinks']
    - name: Starts
      ansible.builtin.copy:
        content: "{{ groups['workers'] | map('extract', hostvars, ['naive_flow', 'flow', 'start']) | list | to_json }}"
        dest: "%(out)s"
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


def playbook(env, inv, *args):
    cmd = [os.path.join(BIN, "ansible-playbook"), "-i", inv] + list(args)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT, check=False)
    if proc.returncode:
        raise RuntimeError("%s failed:\n%s" % (" ".join(cmd), proc.stdout[-3000:]))
    return proc.stdout


def main():
    work = tempfile.mkdtemp(prefix="aflb-skew-")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
               AIFABRIC_RUNS_DIR=os.path.join(work, "runs"), ANSIBLE_FORKS="40")
    results = {}
    try:
        for n in (3, 16):
            inv = os.path.join(work, "hosts-%d.yml" % n)
            inventory(inv, n)
            playbook(env, inv, "playbooks/lab_up.yml")
            try:
                for i in range(REPEATS):
                    before = set(glob.glob(os.path.join(work, "runs", "*")))
                    playbook(env, inv, "playbooks/barrier.yml", "-e", "barrier_volume=20MB",
                             "-e", '{"barrier_throttles": {}}')
                    run = (set(glob.glob(os.path.join(work, "runs", "*"))) - before).pop()
                    step = json.load(open(os.path.join(run, "report.json")))["steps"][0]
                    results.setdefault((n, "synchronized"), []).append(step["start_skew_s"] * 1000)
                    out = os.path.join(work, "naive-%d-%d.json" % (n, i))
                    pb = os.path.join(work, "naive.yml")
                    with open(pb, "w") as handle:
                        handle.write(NAIVE % {"n": n, "out": out})
                    playbook(env, inv, pb)
                    starts = json.load(open(out))
                    results.setdefault((n, "naive fan-out"), []).append((max(starts) - min(starts)) * 1000)
                    print("%2d workers run %d: synchronized %.3f ms, naive %.1f ms" % (
                        n, i + 1, results[(n, "synchronized")][-1], results[(n, "naive fan-out")][-1]))
            finally:
                playbook(env, inv, "playbooks/lab_down.yml")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print("%-8s %-14s %12s %12s" % ("workers", "start", "median ms", "max ms"))
    for (n, how), skews in sorted(results.items()):
        print("%-8d %-14s %12.3f %12.3f" % (n, how, statistics.median(skews), max(skews)))


if __name__ == "__main__":
    main()
