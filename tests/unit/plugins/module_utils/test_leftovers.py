# -*- coding: utf-8 -*-
"""lab_leftovers' scanner on fixture state directories with real processes (children this test starts and ends),
on a namespace's traffic control as the kernel answers it (tc_kernel), and on lab records; what has a live owner is
never touched."""
from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils import _host_state, _proc
from ansible_collections.aifabric.lab.plugins.module_utils._leftovers import Scanner, daemon_status, table
from ansible_collections.aifabric.lab.plugins.module_utils._owner import owner_record
from ansible_collections.aifabric.lab.plugins.module_utils._tc import Shaper, shape
from tc_kernel import FQ_CODEL, TcKernel

RUN = "3f2a9c0d11e4b7a2"
OTHER_RUN = "77aa00bb11cc22dd"


@pytest.fixture
def children():
    """Processes this test starts (sleepers standing in for daemons and controllers); every one ends with the test."""
    started = []

    def start():
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        started.append(child)
        return child

    yield start
    for child in started:
        if child.poll() is None:
            child.kill()
        child.wait()


def dead_pid(children):
    child = children()
    child.kill()
    child.wait()
    return child.pid


def write(path, data, age=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        json.dump(data, handle)
    if age is not None:
        then = time.time() - age
        os.utime(path, (then, then))
    return path


def scanner(state_dir, **kw):
    kw.setdefault("netns_key", _host_state.netns_key())
    kw.setdefault("grace", 5.0)
    return Scanner(str(state_dir), **kw)


def by_name(items):
    return {item.name: item for item in items}


def alive(child):
    return child.poll() is None


# ------------------------------------------------------------------ daemons
def test_a_daemon_whose_controller_is_gone_is_ended_and_a_live_owners_is_kept(tmp_path, children):
    gone_controller = owner_record("exp-killed", 600, pid=dead_pid(children))
    live_controller = owner_record("exp-live", 600)  # this test process: alive, on this machine
    a, b = children(), children()
    write(tmp_path / ("step-%s-worker1.pid" % RUN), dict(_proc.identity(a.pid), run=RUN, owner=gone_controller))
    write(tmp_path / ("step-%s-worker1.pid" % OTHER_RUN),
          dict(_proc.identity(b.pid), run=OTHER_RUN, owner=live_controller))
    items, changed, errors = scanner(tmp_path).run(remove=True)
    found = by_name(items)
    ended = found["step-%s-worker1" % RUN]
    assert (ended.kind, ended.live, ended.action) == ("daemon", False, "ended")
    assert "its controller (pid %d on this machine) has ended" % gone_controller["controller"]["pid"] in ended.reason
    assert ended.reason.endswith("ended (SIGTERM)")
    kept = found["step-%s-worker1" % OTHER_RUN]
    assert (kept.live, kept.action, kept.owner["id"]) == (True, "kept", "exp-live")
    assert changed and errors == []
    a.wait(timeout=5)
    assert not alive(a) and alive(b)
    assert not (tmp_path / ("step-%s-worker1.pid" % RUN)).exists()
    assert (tmp_path / ("step-%s-worker1.pid" % OTHER_RUN)).exists()
    # again: nothing more goes
    items, changed, _errors = scanner(tmp_path).run(remove=True)
    assert not changed and [i.action for i in items] == ["kept"]


def test_stale_reused_and_old_pid_files(tmp_path, children):
    reused, old, unknown = children(), children(), children()
    write(tmp_path / ("step-%s-sink.pid" % RUN), {"pid": dead_pid(children), "run": RUN, "started_at": time.time(),
                                                  "start_ticks": 1, "boot_id": _proc.boot_id()})
    wrong = dict(_proc.identity(reused.pid), run=RUN)
    wrong["start_ticks"] += 1  # the same PID, another process
    write(tmp_path / ("step-%s-worker2.pid" % RUN), wrong)
    write(tmp_path / ("step-%s-worker3.pid" % RUN), {"pid": old.pid, "run": RUN, "started_at": time.time() - 3600})
    write(tmp_path / ("step-%s-worker4.pid" % RUN), {"pid": unknown.pid, "run": RUN})
    write(tmp_path / "server-198.18.0.1-18500.pid", {"pid": dead_pid(children), "run": RUN,
                                                     "started_at": time.time()})
    items, _changed, _errors = scanner(tmp_path, unowned="remove").run(remove=True)
    found = by_name(items)
    assert (found["step-%s-sink" % RUN].kind, found["step-%s-sink" % RUN].action) == ("pidfile", "removed")
    assert found["step-%s-worker2" % RUN].reason.startswith("stale: pid %d is another process now (its start time "
                                                            "differs)" % reused.pid)
    assert found["step-%s-worker3" % RUN].reason.startswith("stale: pid %d is another process now (it started "
                                                            % old.pid)
    assert found["step-%s-worker3" % RUN].action == "removed"
    unverified = found["step-%s-worker4" % RUN]
    assert (unverified.kind, unverified.live, unverified.action) == ("daemon", None, "kept")
    assert "the file has no start time to tell whether it is ours; never signalled" in unverified.reason
    assert found["server-198.18.0.1-18500"].action == "removed"
    # a reused PID and an unverifiable one were never signalled, even with unowned=remove
    assert alive(reused) and alive(old) and alive(unknown)
    assert sorted(os.listdir(tmp_path)) == [".leftovers.lock", "step-%s-worker4.pid" % RUN]


def test_an_old_pid_file_is_recognised_by_its_started_at(tmp_path, children):
    child = children()
    info = {"pid": child.pid, "run": RUN, "started_at": time.time()}
    assert daemon_status(info)[0] == "running"
    write(tmp_path / ("step-%s-worker1.pid" % RUN), info)
    items, _changed, _errors = scanner(tmp_path).run(remove=True)
    assert (items[0].live, items[0].action) == (None, "kept")
    assert "no owner recorded: a running step may be another experiment's" in items[0].reason
    items, _changed, _errors = scanner(tmp_path, unowned="remove").run(remove=True)
    assert items[0].action == "ended"
    child.wait(timeout=5)


def test_without_remove_and_in_check_mode_nothing_changes(tmp_path, children):
    child = children()
    write(tmp_path / ("step-%s-worker1.pid" % RUN), dict(_proc.identity(child.pid), run=RUN,
                                                         owner=owner_record("x", 600, pid=dead_pid(children))))
    items, changed, _errors = scanner(tmp_path).run(remove=False)
    assert not changed and items[0].action == "would end"
    items, changed, _errors = scanner(tmp_path).run(remove=True, check_mode=True)
    assert changed and items[0].action == "would end"
    assert alive(child) and (tmp_path / ("step-%s-worker1.pid" % RUN)).exists()


# ------------------------------------------------------------------ results never collected
def test_results_are_moved_aside_with_the_owner_of_their_run(tmp_path, children):
    gone = owner_record("exp-killed", 600, pid=dead_pid(children))
    daemon = children()
    write(tmp_path / ("step-%s-worker1.pid" % RUN), dict(_proc.identity(daemon.pid), run=RUN, owner=gone))
    measured = {"host": "worker1", "clients": [{"bytes": 2000000000}]}
    write(tmp_path / ("step-%s-worker1.json" % RUN), measured)
    write(tmp_path / ("step-%s.rendezvous.json" % RUN), {"run": RUN, "hosts": {}})
    write(tmp_path / ("step-%s.results" % RUN) / "worker2.json", {"host": "worker2"})
    items, changed, _errors = scanner(tmp_path).run(remove=True)
    found = by_name(items)
    assert found["step-%s-worker1" % RUN].action == "ended"
    for name in ("step-%s-worker1.json" % RUN, "step-%s.rendezvous.json" % RUN, "step-%s.results/worker2.json" % RUN):
        assert (found[name].kind, found[name].live, found[name].action) == ("result", False, "moved"), name
        assert found[name].owner["id"] == "exp-killed"
    orphaned = tmp_path / "orphaned"
    with open(orphaned / ("step-%s-worker1.json" % RUN)) as handle:
        assert json.load(handle) == measured  # nothing measured is lost
    assert (orphaned / ("step-%s.results" % RUN) / "worker2.json").exists()
    assert not (tmp_path / ("step-%s.results" % RUN)).exists()
    daemon.wait(timeout=5)


def test_results_without_owner_wait_for_min_age_and_a_running_steps_are_kept(tmp_path, children):
    daemon = children()
    write(tmp_path / ("step-%s-coord.pid" % OTHER_RUN), dict(_proc.identity(daemon.pid), run=OTHER_RUN))
    write(tmp_path / ("step-%s.rendezvous.json" % OTHER_RUN), {"run": OTHER_RUN}, age=7200)
    write(tmp_path / ("step-%s-worker1.json" % RUN), {"host": "worker1"}, age=60)
    write(tmp_path / ("step-%s-worker2.json" % RUN), {"host": "worker2"}, age=3600)
    write(tmp_path / "server-198.18.0.1-18500.json", {"role": "server"}, age=3600)
    write(tmp_path / "orphaned" / ("step-%s-worker2.json" % RUN), {"host": "worker2", "earlier": True})
    items, _changed, _errors = scanner(tmp_path, min_age=900).run(remove=True)
    found = by_name(items)
    assert found["step-%s.rendezvous.json" % OTHER_RUN].action == "kept"
    assert found["step-%s.rendezvous.json" % OTHER_RUN].reason == "its step still runs (pid %d)" % daemon.pid
    young = found["step-%s-worker1.json" % RUN]
    assert young.action == "kept" and "younger than min_age (900 s), a running experiment may still" in young.reason
    old = found["step-%s-worker2.json" % RUN]
    # (3600 s old when written; a loaded machine may take a second or more to reach the scan)
    age = re.match(r"never collected, (\d+) s old, no owner recorded", old.reason)
    assert old.action == "moved" and age and 3600 <= int(age.group(1)) < 3660, old.reason
    assert old.reason.endswith("orphaned/step-%s-worker2.json.1" % RUN)  # the earlier one stays as it was
    assert found["server-198.18.0.1-18500.json"].action == "moved"
    assert alive(daemon)


@pytest.mark.parametrize("policy,action,left", [("delete", "deleted", False), ("keep", "kept", True)])
def test_results_can_be_deleted_or_kept(tmp_path, policy, action, left):
    write(tmp_path / ("step-%s-worker1.json" % RUN), {"host": "worker1"}, age=3600)
    items, _changed, _errors = scanner(tmp_path, results=policy).run(remove=True)
    assert items[0].action == action and (tmp_path / ("step-%s-worker1.json" % RUN)).exists() is left
    assert not (tmp_path / "orphaned").exists()


def test_a_result_that_records_a_live_owner_is_kept(tmp_path):
    write(tmp_path / ("step-%s.rendezvous.json" % RUN), {"run": RUN, "owner": owner_record("exp-live", 600)},
          age=7200)
    items, changed, _errors = scanner(tmp_path).run(remove=True)
    assert not changed and items[0].live is True and items[0].action == "kept"


# ------------------------------------------------------------------ shapers and ifb devices
def netns_scanner(tmp_path, kernel, **kw):
    return scanner(tmp_path, ipr=kernel, **kw)


def tc(kernel, state_dir, maker="throttle", **kw):
    args = {"device": "eth0", "direction": "egress", "qdisc": "htb", "rate": "2gbit", "burst": None,
            "latency": 0.05, "fair_share_sources": [], "fair_share_destinations": [], "ack_priority": True,
            "fair_share_ports": None, "ifb_device": None, "state": "present",
            "state_dir": str(state_dir) if state_dir is not None else None, "owner": None}
    args.update(kw)
    return shape(kernel, args, maker=maker)


def test_a_shaper_of_a_gone_owner_is_removed_a_live_ones_and_foreign_qdiscs_are_not(tmp_path, children):
    kernel = TcKernel()
    eth0, eth1, eth2 = (kernel.add_link(n) for n in ("eth0", "eth1", "eth2"))
    mgmt = kernel.add_link("mgmt0", "ether", queues=2)
    kernel.add_link("data0", "ether")
    kernel.add_qdisc(kernel.link_lookup("data0")[0], "fq_codel", 0x80010000, FQ_CODEL)
    tc(kernel, tmp_path, owner=owner_record("exp-killed", 600, pid=dead_pid(children)))
    tc(kernel, tmp_path, device="eth1", owner=owner_record("exp-live", 600))
    # an htb 1: someone made by hand (r2q 10, no record): not ours to judge
    kernel.tc("replace", "htb", eth2, 0x10000, default=1)
    data0 = kernel.link_lookup("data0")[0]
    since = len(kernel.requests)
    items, changed, errors = netns_scanner(tmp_path, kernel).run(remove=True)
    found = by_name(items)
    assert sorted(found) == ["eth0 htb 2gbit", "eth1 htb 2gbit"]
    assert (found["eth0 htb 2gbit"].live, found["eth0 htb 2gbit"].action) == (False, "removed")
    assert (found["eth1 htb 2gbit"].live, found["eth1 htb 2gbit"].action) == (True, "kept")
    assert Shaper(kernel, "eth0").read()["qdisc"] == "noqueue"
    assert Shaper(kernel, "eth1").read()["rate"] == 2 * 10**9
    assert Shaper(kernel, "eth2").read()["handle"] == "1:" and not Shaper(kernel, "eth2").marked()
    assert Shaper(kernel, "mgmt0").read()["qdisc"] == "mq" and Shaper(kernel, "data0").read()["handle"] == "8001:"
    # the only request: deleting eth0's root; nothing was asked of the other devices
    assert [(r[0], r[2]) for r in kernel.requests[since:]] == [("del", eth0)]
    assert not {eth1, eth2, mgmt, data0} & {r[2] for r in kernel.requests[since:]}
    assert [os.path.basename(p) for p, _r in _host_state.records(str(tmp_path), "shapers")] == ["eth1.json"]
    assert changed and errors == []
    assert not netns_scanner(tmp_path, kernel).run(remove=True)[1]


def test_a_marked_shaper_without_owner_and_an_ifb_of_ours_go_only_with_unowned_remove(tmp_path):
    kernel = TcKernel()
    kernel.add_link("eth0")
    kernel.add_link("p-w1")
    tc(kernel, None)  # no state_dir: no record, the mark alone
    tc(kernel, None, device="p-w1", direction="ingress", ack_priority=False)
    kernel.add_link("ifb9", "ifb")  # somebody's ifb: neither our name nor our alias
    items, changed, _errors = netns_scanner(tmp_path, kernel).run(remove=True)
    assert not changed and {(i.kind, i.name, i.action) for i in items} == {
        ("shaper", "eth0 htb 2gbit", "kept"), ("ifb", "ifb-p-w1", "kept")}
    items, changed, _errors = netns_scanner(tmp_path, kernel, unowned="remove").run(remove=True)
    assert changed and {(i.kind, i.action) for i in items} == {("shaper", "removed"), ("ifb", "removed")}
    assert kernel.link_lookup("ifb-p-w1") == [] and Shaper(kernel, "p-w1").ingress_qdisc() is None
    assert kernel.link_lookup("ifb9") and Shaper(kernel, "eth0").read()["default"]


def test_records_whose_shaper_or_namespace_is_gone_are_removed_and_the_qdisc_left(tmp_path):
    kernel = TcKernel()
    index = kernel.add_link("eth0")
    result = tc(kernel, tmp_path, owner=owner_record("exp-live", 600))
    kernel.tc("del", index=index, handle=0x10000, parent=0xFFFFFFFF)
    kernel.add_qdisc(index, "fq_codel", 0x80010000, FQ_CODEL)  # someone's qdisc replaced ours
    stale = write(tmp_path / "shapers" / "netns-aflt-gone-1" / "eth0.json",
                  {"marker": "aifabric.lab", "kind": "shaper", "device": "eth0", "owner": None})
    items, _changed, _errors = netns_scanner(tmp_path, kernel, netns_run_dir=str(tmp_path / "run-netns")).run(
        remove=True)
    found = {(i.kind, i.name): i for i in items}
    here = found[("record", "eth0 (eth0)")]
    assert here.action == "removed" and "eth0's root is fq_codel 8001: now, not the htb it records" in here.reason
    assert found[("record", "aflt-gone-1 eth0")].reason == "stale: the namespace aflt-gone-1 is gone"
    assert not os.path.exists(result["record"]) and not os.path.exists(stale)
    assert Shaper(kernel, "eth0").read()["handle"] == "8001:"


# ------------------------------------------------------------------ labs
class Netns:
    """pyroute2.netns as Topology uses it, over a fixture /run/netns."""

    def __init__(self, run_dir, names):
        self.run_dir = run_dir
        os.makedirs(run_dir, exist_ok=True)
        for name in names:
            open(os.path.join(run_dir, name), "w").close()
        self.removed = []

    def listnetns(self):
        return sorted(os.listdir(self.run_dir))

    def remove(self, name):
        os.unlink(os.path.join(self.run_dir, name))
        self.removed.append(name)


def lab(state_dir, switch, hosts, owner):
    topo = {"switch": switch, "bridge": "br0", "mtu": 9000,
            "hosts": [{"namespace": h, "interface": "eth0", "port": "p-" + h, "address": "198.18.0.%d/24" % (i + 1)}
                      for i, h in enumerate(hosts)]}
    _host_state.write_record(_host_state.lab_record_path(str(state_dir), switch),
                             {"kind": "netns_lab", "switch": switch, "bridge": "br0",
                              "namespaces": [switch] + hosts, "topology": topo, "owner": owner})


def test_labs_by_owner(tmp_path, children):
    run_dir = str(tmp_path / "run-netns")
    netns = Netns(run_dir, ["afl-switch", "afl-sink", "aflt-sw", "aflt-a", "aflu-sw", "aflu-a"])
    state = tmp_path / "state"
    lab(state, "afl-switch", ["afl-sink"], None)
    lab(state, "aflt-sw", ["aflt-a"], owner_record("test-killed", 600, pid=dead_pid(children)))
    lab(state, "aflu-sw", ["aflu-a"], owner_record("test-live", 600))
    lab(state, "aflv-sw", ["aflv-a"], owner_record("test-old", 600))
    items, changed, _errors = scanner(state, netns=netns, iproute=object, netns_run_dir=run_dir,
                                      unowned="remove").run(remove=True)
    found = {i.name.split()[0]: i for i in items}
    assert found["afl-switch"].live is True and found["afl-switch"].action == "kept"
    assert found["afl-switch"].reason.startswith("up on purpose")
    assert found["aflt-sw"].action == "removed" and sorted(netns.removed) == ["aflt-a", "aflt-sw"]
    assert found["aflu-sw"].action == "kept" and found["aflu-sw"].live is True
    assert found["aflv-sw"].action == "removed" and found["aflv-sw"].reason == "stale: none of its namespaces exists"
    assert sorted(os.listdir(state / "labs")) == ["afl-switch.json", "aflu-sw.json"]
    assert changed


def test_a_lab_is_not_taken_down_from_inside(tmp_path, children):
    run_dir = str(tmp_path / "run-netns")
    netns = Netns(run_dir, ["aflt-sw", "aflt-a"])
    lab(tmp_path, "aflt-sw", ["aflt-a"], owner_record("test-killed", 600, pid=dead_pid(children)))
    items, changed, _errors = scanner(tmp_path, netns=netns, iproute=object, netns_run_dir=run_dir,
                                      netns_key="netns-aflt-a").run(remove=True)
    assert not changed and items[0].action == "kept" and items[0].reason.endswith("this task runs inside it (take "
                                                                                  "it down from outside the lab)")
    assert netns.removed == []


# ------------------------------------------------------------------ several namespaces from one task (the netns lab)
class Inside:
    """``in_namespaces`` and ``iproute`` over a TcKernel per namespace: each namespace's work runs with its kernel, its
    answer goes through JSON as a forked child's would; a namespace without a kernel cannot be entered."""

    def __init__(self, kernels):
        self.kernels, self.current, self.entered = kernels, None, []

    def __call__(self, names, work):
        out = []
        for name in names:
            if name not in self.kernels:
                out.append({"status": "failed", "error": "network namespace %s does not exist" % name})
                continue
            self.current = self.kernels[name]
            self.entered.append(name)
            out.append(json.loads(json.dumps(work(name))))
        return out

    def iproute(self):
        return contextlib.nullcontext(self.current)


def test_several_namespaces_from_one_task_each_judged_inside_it(tmp_path, monkeypatch, children):
    """namespaces: each namespace's shapers judged and removed from inside it, named after it; the machine's files
    and the records of gone namespaces once; a namespace that cannot be entered is an error, the others still go."""
    kernels = {"aflt-a": TcKernel(), "aflt-b": TcKernel()}
    run_dir = tmp_path / "run-netns"
    run_dir.mkdir()
    for name, kernel in kernels.items():
        kernel.add_link("eth0")
        (run_dir / name).touch()
        monkeypatch.setattr(_host_state, "netns_key", lambda name=name: "netns-" + name)
        owner = owner_record("exp-killed", 600, pid=dead_pid(children)) if name == "aflt-a" else owner_record(
            "exp-live", 600)
        tc(kernel, tmp_path / "state", owner=owner)
    write(tmp_path / "state" / "shapers" / "netns-aflt-gone" / "eth0.json",
          {"marker": "aifabric.lab", "kind": "shaper", "device": "eth0", "owner": None})
    write(tmp_path / "state" / ("step-%s-worker1.pid" % RUN), {"pid": dead_pid(children), "run": RUN,
                                                               "started_at": 1.0})
    inside = Inside(kernels)
    items, changed, errors = scanner(tmp_path / "state", netns_key="netns-aflt-a", netns_run_dir=str(run_dir),
                                     iproute=inside.iproute, in_namespaces=inside,
                                     namespaces=["aflt-a", "aflt-b", "aflt-c"]).run(remove=True)
    found = {i.name: i for i in items}
    assert inside.entered == ["aflt-a", "aflt-b"]
    assert sorted(found) == ["aflt-a: eth0 htb 2gbit", "aflt-b: eth0 htb 2gbit", "aflt-gone eth0",
                             "step-%s-worker1" % RUN]
    gone, live = found["aflt-a: eth0 htb 2gbit"], found["aflt-b: eth0 htb 2gbit"]
    assert (gone.action, gone.live, gone.scope, gone.extra["netns"]) == ("removed", False, "netns", "aflt-a")
    assert gone.owner["id"] == "exp-killed" and gone.to_dict()["owner"] == "exp-killed"
    assert (live.action, live.live, live.extra["netns"]) == ("kept", True, "aflt-b")
    assert Shaper(kernels["aflt-a"], "eth0").read()["qdisc"] == "noqueue"
    assert Shaper(kernels["aflt-b"], "eth0").read()["rate"] == 2 * 10**9
    assert found["aflt-gone eth0"].action == "removed" and found["step-%s-worker1" % RUN].action == "removed"
    shapers = _host_state.records(str(tmp_path / "state"), "shapers")
    assert [os.path.basename(os.path.dirname(p)) for p, _r in shapers] == ["netns-aflt-b"]
    assert changed and errors == ["netns aflt-c: not looked at: network namespace aflt-c does not exist"]
    # in check mode, inside each namespace too: what would go stays
    kernels["aflt-b"].add_link("eth1")
    tc(kernels["aflt-b"], None, device="eth1")  # marked, no record, no owner
    items, changed, errors = scanner(tmp_path / "state", netns_run_dir=str(run_dir), iproute=inside.iproute,
                                     in_namespaces=inside, namespaces=["aflt-b"], unowned="remove").run(
        remove=True, check_mode=True)
    assert sorted((i.name, i.action) for i in items) == [("aflt-b: eth0 htb 2gbit", "kept"),
                                                         ("aflt-b: eth1 htb 2gbit", "would remove")]
    assert changed and errors == [] and Shaper(kernels["aflt-b"], "eth1").marked()


def test_a_lab_of_one_of_the_namespaces_is_not_taken_down(tmp_path, children):
    run_dir = str(tmp_path / "run-netns")
    netns = Netns(run_dir, ["aflt-sw", "aflt-a"])
    lab(tmp_path, "aflt-sw", ["aflt-a"], owner_record("test-killed", 600, pid=dead_pid(children)))
    inside = Inside({"aflt-a": TcKernel()})
    items, changed, _errors = scanner(tmp_path, netns=netns, iproute=inside.iproute, netns_run_dir=run_dir,
                                      netns_key="host", namespaces=["aflt-a"], in_namespaces=inside).run(remove=True)
    assert not changed and items[0].kind == "lab" and items[0].action == "kept" and netns.removed == []


# ------------------------------------------------------------------ half-written files, the whole of it, the table
def test_half_written_files_of_ended_writers_go(tmp_path):
    write(tmp_path / (".step-%s-worker1.json.k2j4x9" % RUN), {}, age=3600)
    write(tmp_path / (".step-%s-worker2.json.q1w2e3" % RUN), {}, age=1)
    items, _changed, _errors = scanner(tmp_path).run(remove=True)
    assert {i.name: i.action for i in items} == {".step-%s-worker1.json.k2j4x9" % RUN: "removed",
                                                 ".step-%s-worker2.json.q1w2e3" % RUN: "kept"}


def test_a_live_foreign_owner_keeps_everything_it_holds(tmp_path, children):
    """Another experiment, live, on the same hosts: its daemon, its results, its shaper and its lab stay, whatever
    the options."""
    other = owner_record("exp-other", 600)
    daemon = children()
    write(tmp_path / ("step-%s-worker1.pid" % RUN), dict(_proc.identity(daemon.pid), run=RUN, owner=other))
    write(tmp_path / ("step-%s.results" % RUN) / "worker1.json", {"host": "worker1"}, age=7200)
    kernel = TcKernel()
    kernel.add_link("eth0")
    tc(kernel, tmp_path, owner=other)
    run_dir = str(tmp_path / "run-netns")
    netns = Netns(run_dir, ["aflx-sw"])
    lab(tmp_path, "aflx-sw", [], other)
    before = sorted(os.listdir(tmp_path))
    items, changed, _errors = scanner(tmp_path, ipr=kernel, netns=netns, iproute=object, netns_run_dir=run_dir,
                                      owner=owner_record("exp-mine", 600), unowned="remove",
                                      results="delete", min_age=0).run(remove=True)
    assert not changed and {i.action for i in items} == {"kept"} and len(items) == 4
    assert all(i.live is True for i in items)
    assert alive(daemon) and Shaper(kernel, "eth0").read()["rate"] == 2 * 10**9 and netns.removed == []
    assert sorted(os.listdir(tmp_path)) == sorted(before + [".leftovers.lock"])


def test_the_table():
    lines = table([{"kind": "daemon", "name": "step-%s-worker1" % RUN, "owner": "exp-a", "live": False,
                    "action": "ended", "reason": "its controller has ended"},
                   {"kind": "shaper", "name": "eth0 htb 2gbit", "owner": None, "live": None, "action": "kept",
                    "reason": "no owner recorded"}])
    assert lines[0].split() == ["kind", "name", "owner", "live", "action", "why"]
    assert lines[1].split()[:5] == ["daemon", "step-%s-worker1" % RUN, "exp-a", "no", "ended"]
    assert lines[2].split()[:5] == ["shaper", "eth0", "htb", "2gbit", "-"]
    assert lines[1].index("exp-a") == lines[2].index("-  ")
    assert table([]) == ["no leftovers"]


# ------------------------------------------------------------------ the real kernel (the integration tier runs it)
@pytest.mark.needs_root
def test_in_a_real_namespace_a_gone_owners_throttle_goes_and_a_fifo_root_stays(tmp_path, children):
    from pyroute2 import IPRoute, netns

    name = "aflt-leftovers-%d" % os.getpid()
    netns.create(name)
    try:
        with IPRoute(netns=name) as ipr:
            ipr.link("add", ifname="lfa0", kind="veth", peer={"ifname": "lfa1"})
            for dev in ("lfa0", "lfa1"):
                ipr.link("set", index=ipr.link_lookup(ifname=dev)[0], state="up")
            tc(ipr, tmp_path, device="lfa0", owner=owner_record("exp-killed", 600, pid=dead_pid(children)))
            ipr.tc("replace", "pfifo", ipr.link_lookup(ifname="lfa1")[0], 0x80010000, limit=1000)
            key = _host_state.netns_key()  # the records were written under this process's namespace key
            items, changed, errors = scanner(tmp_path, ipr=ipr, netns_key=key).run(remove=True)
            assert changed and errors == [] and [(i.kind, i.action) for i in items] == [("shaper", "removed")]
            assert Shaper(ipr, "lfa0").read()["default"] is True
            assert Shaper(ipr, "lfa1").read()["handle"] == "8001:"
    finally:
        netns.remove(name)


@pytest.mark.needs_root
def test_in_real_namespaces_from_one_task_each_is_looked_at_from_inside_it(tmp_path, monkeypatch, children):
    """namespaces with the default in_each_namespace: a forked child inside each real namespace finds its throttle (a
    gone owner's goes, a live owner's stays); the namespaces' names lead their items'."""
    from pyroute2 import IPRoute, netns

    names = ["aflt-leftovers-%d-%s" % (os.getpid(), x) for x in "ab"]
    for name in names:
        netns.create(name)
    try:
        for name, owner in zip(names, (owner_record("exp-killed", 600, pid=dead_pid(children)),
                                       owner_record("exp-live", 600))):
            with IPRoute(netns=name) as ipr:
                ipr.link("add", ifname="lfa0", kind="veth", peer={"ifname": "lfa1"})
                for dev in ("lfa0", "lfa1"):
                    ipr.link("set", index=ipr.link_lookup(ifname=dev)[0], state="up")
                monkeypatch.setattr(_host_state, "netns_key", lambda name=name: "netns-" + name)
                tc(ipr, tmp_path, device="lfa0", owner=owner)
        monkeypatch.undo()
        items, changed, errors = scanner(tmp_path, iproute=IPRoute, namespaces=names).run(remove=True)
        assert changed and errors == []
        assert sorted((i.name, i.action) for i in items) == [("%s: lfa0 htb 2gbit" % names[0], "removed"),
                                                             ("%s: lfa0 htb 2gbit" % names[1], "kept")]
        with IPRoute(netns=names[0]) as ipr:
            assert Shaper(ipr, "lfa0").read()["default"] is True
        with IPRoute(netns=names[1]) as ipr:
            assert Shaper(ipr, "lfa0").read()["rate"] == 2 * 10**9
    finally:
        for name in names:
            netns.remove(name)


def test_in_a_lab_up_on_purpose_its_shapers_stay_and_an_ownerless_throttle_is_an_experiments(tmp_path, monkeypatch):
    """The netns lab's switch: tc_shape shaped its ports (no owner: the lab is up on purpose); a throttle without
    owner in that namespace is an experiment's leftover, which unowned=remove takes."""
    monkeypatch.setattr(_host_state, "netns_key", lambda: "netns-afl-switch")
    kernel = TcKernel()
    for name in ("p-sink", "p-w1", "eth0"):
        kernel.add_link(name)
    tc(kernel, tmp_path, maker="tc_shape", device="p-sink", rate="8gbit", fair_share_sources=["198.18.0.11"])
    tc(kernel, tmp_path, maker="tc_shape", device="p-w1", direction="ingress", rate="8gbit",
       fair_share_destinations=["198.18.0.1"])
    tc(kernel, tmp_path, device="eth0")  # a throttle, without owner
    lab(tmp_path, "afl-switch", ["afl-worker1"], None)
    items, changed, _errors = netns_scanner(tmp_path, kernel, netns_key="netns-afl-switch", unowned="remove",
                                            netns_run_dir=str(tmp_path)).run(remove=True)
    found = {i.name: i for i in items if i.kind == "shaper"}
    assert sorted(found) == ["eth0 htb 2gbit", "p-sink htb 8gbit", "p-w1 ingress via ifb-p-w1 htb 8gbit"]
    assert found["p-sink htb 8gbit"].action == "kept" and found["p-sink htb 8gbit"].live is True
    assert found["p-sink htb 8gbit"].reason.startswith("part of the lab afl-switch, up on purpose")
    assert found["p-w1 ingress via ifb-p-w1 htb 8gbit"].action == "kept"
    assert found["eth0 htb 2gbit"].action == "removed" and Shaper(kernel, "eth0").read()["default"]
    assert Shaper(kernel, "p-sink").marked() and kernel.link_lookup("ifb-p-w1")
    assert changed


def test_a_namespace_s_shaper_directory_goes_with_its_last_record(tmp_path):
    state = str(tmp_path)
    eth0 = _host_state.shaper_record_path(state, "netns-aflt-x-worker3", "eth0")
    ifb = _host_state.shaper_record_path(state, "netns-aflt-x-worker3", "ifb-eth0")
    for path in (eth0, ifb):
        _host_state.write_record(path, {"device": os.path.basename(path)})
    assert _host_state.remove_record(eth0) is True
    assert os.listdir(os.path.dirname(ifb)) == ["ifb-eth0.json"]   # another record: the directory stays
    assert _host_state.remove_record(ifb) is True
    assert os.listdir(os.path.join(state, "shapers")) == []          # the last one: its directory is gone
    assert _host_state.remove_record(ifb) is False
    # a lab's records sit directly under labs/: that directory stays
    lab = _host_state.lab_record_path(state, "aflt-x-switch")
    _host_state.write_record(lab, {"switch": "aflt-x-switch"})
    assert _host_state.remove_record(lab) is True and os.path.isdir(os.path.join(state, "labs"))
    # a record written after its directory went is written (the directory is made again)
    _host_state.write_record(eth0, {"device": "eth0"})
    assert _host_state.read_record(eth0)["device"] == "eth0"
