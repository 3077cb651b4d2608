"""The netns lab for the benchmarks that need all of it (convergence.py, burst.py).

``netns_lab`` brings the lab of an inventory up under a namespace prefix of its own (``playbooks/lab_up.yml`` with
``-e lab_namespace_prefix=...``) and takes it down in every case: on success, on an error, on KeyboardInterrupt (the
teardown itself ignores a second Ctrl-C). ``inventory_facts`` reads the line rate, the MTU and the hosts' addresses
from the inventory. ``fifo`` turns a switch port into one tail-drop FIFO at the line rate; ``qdisc_drops`` and
``port_drops`` read the qdiscs' drop counters. Netlink goes through pyroute2 only: no ``ip``/``tc`` output is parsed.
``playbook`` runs ``ansible-playbook`` for these and the other benchmarks that drive a lab (incast_sweep.py,
job_overhead.py).
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BIN = os.path.dirname(sys.executable)
COLL = os.path.join(ROOT, ".collections")
if COLL not in sys.path:
    sys.path.insert(0, COLL)

from ansible_collections.aifabric.lab.plugins.module_utils._units import parse_rate  # noqa: E402
from pyroute2 import IPRoute  # noqa: E402


def playbook(env, inventory, *args, prefix=None, timed=False, check=False):
    """``ansible-playbook -i inventory *args`` (this venv's) from the checkout's root with ``env``, its output captured
    as text. With ``prefix``, ``-e lab_namespace_prefix=PREFIX`` comes last: the lab under a namespace prefix of its
    own. Returns the CompletedProcess (a failed play is its returncode unless ``check``, subprocess.run's), with
    ``timed`` a pair (CompletedProcess, the play's wall time in seconds)."""
    cmd = [os.path.join(BIN, "ansible-playbook"), "-i", inventory, *args]
    if prefix is not None:
        cmd += ["-e", "lab_namespace_prefix=%s" % prefix]
    start = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT, check=check)
    return (proc, time.monotonic() - start) if timed else proc


def inventory_facts(inv):
    """Line rate, MTU and the hosts' addresses, from the inventory (ansible-inventory)."""
    out = subprocess.run([os.path.join(BIN, "ansible-inventory"), "-i", inv, "--list"], capture_output=True,
                         text=True, check=True, cwd=ROOT).stdout
    data = json.loads(out)
    hostvars = data["_meta"]["hostvars"]
    workers = sorted(data["workers"]["hosts"], key=lambda h: int(re.sub(r"\D", "", h) or 0))
    anyhost = hostvars[workers[0]]
    return {"rate": parse_rate(anyhost["lab_line_rate"]), "mtu": int(anyhost["lab_mtu"]), "workers": workers,
            "address": {h: v.get("lab_address") for h, v in hostvars.items()}}


@contextlib.contextmanager
def _sigint_ignored():
    """SIGINT ignored in the block (and by the processes started in it): a teardown that a second Ctrl-C cannot cut
    short. Only the main thread can change a signal's handler; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def netns_lab(inv, prefix, label="aflb-lab-"):
    """The inventory's lab up under ``prefix`` for the block, down after it in every case. Its runs go to a
    temporary directory (``label``...), removed with the lab. Raises RuntimeError when lab_up fails (the lab is taken
    down all the same)."""
    work = tempfile.mkdtemp(prefix=label)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), AIFABRIC_RUNS_DIR=work,
               ANSIBLE_FORKS="40")
    try:
        proc = playbook(env, inv, "playbooks/lab_up.yml", prefix=prefix)
        if proc.returncode:
            raise RuntimeError("lab_up on %s failed:\n%s" % (inv, proc.stdout[-3000:]))
        yield
    finally:
        with _sigint_ignored():
            proc = playbook(env, inv, "playbooks/lab_down.yml", prefix=prefix)
            if proc.returncode:
                print("lab_down failed; remove the %s namespaces by hand:\n%s" % (prefix, proc.stdout[-2000:]))
            shutil.rmtree(work, ignore_errors=True)


def _qdisc_drops(msg):
    """A qdisc's drop counter from its netlink message: TCA_STATS2's queue stats (the old TCA_STATS without it)."""
    stats2 = msg.get_attr("TCA_STATS2")
    queue = stats2.get_attr("TCA_STATS_QUEUE") if stats2 else None
    if queue is None:
        queue = msg.get_attr("TCA_STATS")
    return int((queue or {}).get("drops", 0))


def qdisc_drops(ipr):
    """{device name: the sum of the drops of its qdiscs} in ``ipr``'s namespace: every qdisc a plain dump lists (the
    root, the ingress qdisc; a classful qdisc's default leaves are invisible and counted in their parent), as
    ``tc -s qdisc show`` adds them up."""
    names = {link["index"]: link.get_attr("IFLA_IFNAME") for link in ipr.get_links()}
    out = {}
    for msg in ipr.get_qdiscs():
        name = names.get(msg["index"], str(msg["index"]))
        out[name] = out.get(name, 0) + _qdisc_drops(msg)
    return out


def port_drops(prefix, port):
    """The drops of ``port``'s qdiscs in the lab's switch namespace."""
    with IPRoute(netns=prefix + "switch") as ipr:
        return qdisc_drops(ipr).get(port, 0)


def fifo(prefix, port, rate, buffer, burst=65536):
    """Replace the port's per-sender fair classes with one tail-drop FIFO of ``buffer`` bytes at the line rate (tbf,
    a bucket of ``burst`` bytes): a switch's shared egress queue, where the senders' congestion control, not the
    arbiter, shares the link. The kernel picks the new root's handle, as ``tc qdisc replace ... root tbf`` does."""
    with IPRoute(netns=prefix + "switch") as ipr:
        tbf(ipr, port, rate, buffer, burst)


def tbf(ipr, device, rate, limit, burst):
    """A tbf at the root of ``device`` in ``ipr``'s namespace: ``rate`` bit/s, a bucket of ``burst`` bytes, a queue
    (its inner bfifo) of ``limit`` bytes."""
    found = ipr.link_lookup(ifname=device)
    if not found:
        raise RuntimeError("no device %s" % device)
    ipr.tc("replace", "tbf", found[0], 0, rate=int(rate) // 8, burst=int(burst), limit=int(limit))
