# -*- coding: utf-8 -*-
"""The experiment role's preflight (experiment_preflight: true), as a play runs it: ansible-playbook, the role's
preflight tasks, the real preflight_info module and its action on two hosts of this machine (connection local, the
loopback interface; it only reads). A plan at MTU 9000 over ``lo`` (MTU 65536) fails both hosts' MTU check: the play
prints the table and stops there, and the task after the preflight (where the traffic would start) never runs; the
same in check mode. A plan at lo's own MTU passes the MTU check (the other columns depend on the machine: its
leftovers, its clocks)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
COLLECTIONS = os.path.join(ROOT, ".collections")
INVENTORY = """
all:
  children:
    workers:
      hosts:
        w1: {lab_address: 127.0.0.1}
    sinks:
      hosts:
        sink: {lab_address: 127.0.0.2}
  vars:
    ansible_connection: local
    ansible_python_interpreter: %s
"""
PLAY = """
- name: The experiment role's preflight on two local hosts
  hosts: sinks:workers
  gather_facts: false
  # a state directory of the test's own: what other runs left on this machine is not this test's (the leftovers check)
  module_defaults:
    aifabric.lab.preflight_info:
      state_dir: "@STATE@"
  tasks:
    - name: Plan an incast over the loopback interface
      ansible.builtin.set_fact:
        experiment_plan: >-
          {{ {'volume': '1MB'} | aifabric.lab.flow_plan(groups, hostvars, '8gbit', mtu, 'switch', 'lo') }}
      run_once: true
    - name: The preflight
      ansible.builtin.include_role:
        name: aifabric.lab.experiment
        tasks_from: preflight
    - name: Where the traffic would start
      ansible.builtin.debug:
        msg: TRAFFIC-WOULD-START
      run_once: true
"""


def _task(out, name):
    """The results the default callback printed under ``TASK [name]``: ``{host: (status, result)}``, the result its
    JSON when it printed one (a debug message, a failure), else None."""
    block = out.split("TASK [%s]" % name, 1)[1].split("\nTASK [", 1)[0].split("\nPLAY RECAP", 1)[0]
    found = {}
    for match in re.finditer(r"^(ok|fatal|changed|skipping): \[([^]]+)\](?:: FAILED!)?( => )?", block, re.M):
        result = json.JSONDecoder().raw_decode(block[match.end():])[0] if match.group(3) else None
        found[match.group(2)] = (match.group(1), result)
    return found


def play(tmp_path, *args):
    """``(rc, stdout)`` of the play, with the default callback and none of the checkout's settings (its callback)."""
    (tmp_path / "hosts.yml").write_text(INVENTORY % sys.executable)
    (tmp_path / "play.yml").write_text(PLAY.replace("@STATE@", str(tmp_path / "state")))
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "AIFABRIC_"))}
    env.update(ANSIBLE_CONFIG=str(tmp_path / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_DISPLAY_OK_HOSTS="true",
               ANSIBLE_DISPLAY_SKIPPED_HOSTS="true")
    done = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i",
                           str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml")] + list(args),
                          env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=300, check=False)
    return done.returncode, done.stdout + done.stderr


READ = "aifabric.lab.experiment : Read what this host has for the experiment (read only; the action also measures " \
       "the host's clock)"
TABLE = "aifabric.lab.experiment : The preflight table"
STOP = "aifabric.lab.experiment : Stop before any traffic when a preflight check failed"


@pytest.mark.skipif(not os.path.isdir("/sys/class/net/lo"), reason="needs a Linux loopback interface")
@pytest.mark.parametrize("check", [False, True])
def test_a_failed_check_stops_the_play_before_any_traffic(tmp_path, check):
    rc, out = play(tmp_path, "-e", "mtu=9000", *(["--check"] if check else []))
    assert rc == 2, out
    assert _task(out, READ) == {"sink": ("ok", None), "w1": ("ok", None)}  # read, nothing changed
    table = _task(out, TABLE)["sink"][1]["msg"]
    assert table[0].split()[:3] == ["host", "link", "mtu"]
    rows = {line.split()[0]: line for line in table[1:3]}
    assert sorted(rows) == ["sink", "w1"] and all(" 65536! " in row and "FAIL mtu" in row for row in rows.values())
    assert "FAIL sink mtu: lo has MTU 65536, the experiment expects 9000" in table[3]
    status, stop = _task(out, STOP)["sink"]
    assert status == "fatal" and stop["msg"].startswith("preflight: 2 check(s) failed, no step ran: FAIL sink mtu")
    assert "TRAFFIC-WOULD-START" not in out
    assert re.findall(r"changed=(\d+)", out) == ["0", "0"]


@pytest.mark.skipif(not os.path.isdir("/sys/class/net/lo"), reason="needs a Linux loopback interface")
def test_the_plans_own_mtu_passes_that_check(tmp_path):
    with open("/sys/class/net/lo/mtu") as handle:
        mtu = int(handle.read())
    _rc, out = play(tmp_path, "-e", "mtu=%d" % mtu)
    table = _task(out, TABLE)["sink"][1]["msg"]
    assert all(line.split()[3] == str(mtu) for line in table[1:3]), table
    assert not any(" mtu: " in line for line in table[3:]), table
