# -*- coding: utf-8 -*-
"""A synchronized step on real loopback sockets and real background processes: arm, rendezvous, fire, collect.

Every host's part runs as the daemon the flow_step module starts. Nothing here asserts a duration or a skew (those
are benchmarks/start_skew.py's); the tests assert what must hold on any machine: every flow starts at or after the
instant and says how late, a host that never arms fails the step by name before a byte is sent, nothing is left."""
from __future__ import annotations

import errno
import json
import math
import os
import socket
import time

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._flow import step as _step
from ansible_collections.aifabric.lab.plugins.module_utils._flow import step_module
from ansible_collections.aifabric.lab.plugins.module_utils._flow.engine import FlowError
from ansible_collections.aifabric.lab.plugins.module_utils._flow.rendezvous import control_abort, first_line
from ansible_collections.aifabric.lab.plugins.module_utils._flow.server import alive
from ansible_collections.aifabric.lab.plugins.module_utils._flow.state import step_paths

ADDR = "127.0.0.1"


def free_port():
    with socket.socket() as s:
        s.bind((ADDR, 0))
        return s.getsockname()[1]


class Lab:
    """Parts of one step on loopback: every party is a daemon of this machine, as in the netns lab."""

    def __init__(self, state_dir, parties, token="tok", coordinator="sink", **rendezvous):
        self.state_dir = str(state_dir)
        self.token = token
        self.port = free_port()
        self.flow_port = free_port()
        self.rendezvous = dict({"host": coordinator, "address": ADDR, "port": self.port, "parties": parties,
                                "expected_flows": {}, "annotations": {}, "start_at": None}, **rendezvous)
        self.pids = []

    def params(self, party, **kw):
        p = {key: spec.get("default") for key, spec in step_module.module_args()["argument_spec"].items()}
        p.update(party=party, token=self.token, step="s1", rendezvous=dict(self.rendezvous), state_dir=self.state_dir,
                 perftest={}, counters=None, arm_timeout=20.0, timeout=20.0)
        p.update(kw)
        return p

    def client(self, flow_id, volume="20MB", **kw):
        c = {"flow_id": flow_id, "address": ADDR, "port": self.flow_port, "volume": volume, "duration": None,
             "streams": 1, "source": None, "rate_limit": None, "annotations": {"step": "s1"}}
        c.update(kw)
        return c

    def server(self, expected, **kw):
        s = {"address": ADDR, "port": self.flow_port, "expected_clients": expected, "max_bytes": None, "volume": None,
             "duration": None}
        s.update(kw)
        return s

    def part(self, party, **kw):
        return step_module.build_part(self.params(party, **kw))

    def start(self, party, **kw):
        started = _step.start(self.part(party, **kw), self.state_dir)
        self.pids.append(started["pid"])
        return started

    def collect(self, wait=60, missing=()):
        return _step.collect(self.part(self.rendezvous["host"], state="collected"), self.state_dir, wait,
                             missing=missing)

    def cleanup(self):
        for pid in self.pids:
            if alive(pid):
                os.kill(pid, 9)


@pytest.fixture
def lab_factory(tmp_path):
    labs = []

    def make(parties, **kw):
        lab = Lab(tmp_path, parties, **kw)
        labs.append(lab)
        return lab

    yield make
    for lab in labs:
        lab.cleanup()


def wait_gone(pids, timeout=10):
    end = time.time() + timeout
    while any(alive(p) for p in pids) and time.time() < end:
        time.sleep(0.05)
    return not any(alive(p) for p in pids)


def test_every_flow_fires_at_the_instant_and_the_record_says_how(lab_factory):
    lab = lab_factory(["sink", "w1", "w2", "w3"])
    # started in any order: the workers before their server and the coordinator; nothing fires until all armed
    lab.start("w1", clients=[lab.client("w1")])
    lab.start("w3", clients=[lab.client("w3a"), lab.client("w3b", volume="10MB")])
    lab.start("w2", clients=[lab.client("w2", streams=2)])
    lab.start("sink", servers=[lab.server(5)])
    record = lab.collect()
    assert record["status"] == "ok", record.get("error")
    fire = record["fire"]
    # the margin was measured (three probe rounds; its formula is checked against fan-outs set by hand in
    # test_flow_rendezvous.py), and the instant it gave lies after every host armed
    assert len(fire["probe_fanout_s"]) == 3 and all(f > 0 for f in fire["probe_fanout_s"])
    assert fire["at"] > fire["decided_at"] and fire["at"] > fire["armed_last_at"]
    assert set(record["hosts"]) == {"sink", "w1", "w2", "w3"}
    flows = {c["flow_id"]: c for h in ("w1", "w2", "w3") for c in record["hosts"][h]["clients"]}
    assert sorted(flows) == ["w1", "w2", "w3a", "w3b"]
    for flow in flows.values():
        assert flow["status"] == "ok", flow["error"]
        assert flow["start"] >= flow["start_at"]
        assert flow["completion_s"] >= flow["duration_s"] > 0  # from the instant, which is not after the start
        assert flow["fire_ahead_s"] is not None
    assert flows["w2"]["streams"] == 2 and flows["w3b"]["bytes"] == 10**7
    server = record["hosts"]["sink"]["servers"][0]
    assert server["status"] == "ok" and len(server["flows"]) == 5 and server["bytes"] == 7 * 10**7
    for party in ("sink", "w1", "w2", "w3"):
        info = record["parties"][party]
        assert info["armed_at"] <= fire["at"] and "offset_s" in info and "rtt_s" in info
    assert wait_gone(lab.pids)
    assert os.listdir(lab.state_dir) == []  # every host's result reached the coordinator; nothing is left


def test_a_host_that_never_arms_fails_the_step_by_name_before_a_byte_is_sent(lab_factory):
    lab = lab_factory(["sink", "w1", "w2"], expected_flows={"w1": ["w1"], "w2": ["w2"]})
    lab.start("sink", servers=[lab.server(2)], arm_timeout=2.0)
    lab.start("w1", clients=[lab.client("w1")], arm_timeout=2.0)
    record = lab.collect()
    assert record["status"] == "aborted"
    assert "w2 did not arm within the arm timeout" in record["error"]
    assert "w2 never reached the rendezvous" in record["error"] and "1 of 2" not in record["error"]
    assert record["parties"]["w2"]["not_armed"] is True and record["parties"]["w2"]["lost"]
    (w1,) = record["hosts"]["w1"]["clients"]
    assert w1["status"] == "not_started" and "w2 did not arm" in w1["error"]
    assert w1["bytes"] == 0 and "start" not in w1
    assert record["expected_flows"] == {"w1": ["w1"], "w2": ["w2"]}
    assert wait_gone(lab.pids)


def test_a_flow_that_cannot_arm_aborts_the_step_at_once_with_the_cause(lab_factory):
    lab = lab_factory(["sink", "w1", "w2"])
    lab.start("sink", servers=[lab.server(2, max_bytes="1MB")])
    lab.start("w1", clients=[lab.client("w1", volume="500KB")])
    lab.start("w2", clients=[lab.client("w2", volume="5MB")])  # more than the server's max_bytes: refused
    record = lab.collect()
    assert record["status"] == "aborted"
    assert "w2 could not arm: flow w2: the server at" in record["error"]
    assert "exceeds the server's max_bytes" in record["error"]
    assert record["hosts"]["w1"]["clients"][0]["status"] == "not_started"
    assert wait_gone(lab.pids)


def test_the_controller_aborts_a_step_whose_host_failed_to_start(lab_factory):
    lab = lab_factory(["sink", "w1", "w2"])
    lab.start("sink", servers=[lab.server(2)])
    # start() returns before the daemon has connected: on a loaded machine w1's daemon may reach the rendezvous
    # only after the abort ended the step, and then retries it (and its flow's server) until its own arm_timeout,
    # kept short here so that both ways end soon: told to abort, or out of time
    lab.start("w1", clients=[lab.client("w1")], arm_timeout=3.0)
    record = lab.collect(missing=["w2"])
    assert record["status"] == "aborted"
    assert "w2 failed before arming (not in the play any more: failed, unreachable" in record["error"]
    assert wait_gone(lab.pids, timeout=30)


def test_stop_ends_a_part_waiting_for_its_rendezvous_and_returns_what_it_has(lab_factory):
    lab = lab_factory(["sink", "w1"])
    started = lab.start("w1", clients=[lab.client("w1")])  # its coordinator (sink) never starts
    time.sleep(0.3)
    assert alive(started["pid"])
    out = _step.stop(lab.part("w1"), lab.state_dir)
    assert out["signal"] == "SIGTERM" and not alive(started["pid"])
    assert out["part"]["status"] == "error"
    assert "stopped by the controller (SIGTERM)" in out["part"]["error"]
    assert out["part"]["clients"][0]["status"] == "not_started"
    assert os.listdir(lab.state_dir) == []


def test_collect_without_a_running_coordinator_says_so_at_once(lab_factory):
    lab = lab_factory(["sink", "w1"])
    record = lab.collect(wait=120)
    assert record["status"] == "error"
    assert "the rendezvous on sink is not running" in record["error"]


def test_a_fixed_start_instant_is_given_to_every_host_as_it_is(lab_factory):
    at = time.time() + 3.0
    lab = lab_factory(["sink", "w1"], start_at=at)
    lab.start("sink", servers=[lab.server(1)])
    lab.start("w1", clients=[lab.client("w1")])
    record = lab.collect()
    assert record["status"] == "ok", record.get("error")
    assert record["mode"] == "fixed" and record["fire"]["at"] == pytest.approx(at)
    assert record["fire"]["margin_s"] is None
    (flow,) = record["hosts"]["w1"]["clients"]
    assert flow["start_at"] == pytest.approx(at) and flow["start"] >= at


def test_the_port_of_the_rendezvous_taken_fails_the_start_with_the_reason(lab_factory):
    lab = lab_factory(["sink", "w1"])
    with socket.socket() as taken:
        taken.bind((ADDR, lab.port))
        taken.listen(1)
        with pytest.raises(OSError):
            lab.start("sink", servers=[lab.server(1)])
    assert os.listdir(lab.state_dir) == []


@pytest.mark.parametrize("change, message", [
    ({"party": "w9"}, "party: w9 is not one of rendezvous.parties"),
    ({"rendezvous": {"host": "nobody"}}, "rendezvous.host: nobody coordinates the step"),
    ({"rendezvous": {"address": "0.0.0.0"}}, "rendezvous.address: 0.0.0.0 would listen on every interface"),
    ({"rendezvous": {"port": 70000}}, "rendezvous.port: 70000 is not a TCP port"),
    ({"party": "sink", "rendezvous": {"parties": []}}, "rendezvous.parties: the coordinating host"),
    ({"rendezvous": {"start_at": "tomorrow"}}, "rendezvous.start_at: 'tomorrow' is not an instant"),
    ({"arm_timeout": 0}, "arm_timeout: 0 must be more than 0 seconds"),
    ({"token": ""}, "token: must not be empty"),
    ({"clients": [{"volume": None}]}, r"clients\[0\]: give exactly one of volume"),
    ({"clients": [{"streams": 0}]}, r"clients\[0\].streams: 0 must be 1 or more"),
    ({"clients": [{"volume": "lots"}]}, r"clients\[0\].volume"),
    ({"clients": [{"rate_limit": "2gbit"}]}, r"clients\[0\].rate_limit: only the perftest engine"),
    ({"clients": [{}, {}]}, r"clients\[1\].flow_id: 'w1' is used twice"),
    ({"servers": [{"expected_clients": 0}]}, r"servers\[0\].expected_clients: 0 must be 1 or more"),
    ({"engine": "perftest"}, "perftest.device: the perftest engine needs the RDMA device"),
    ({"clients": [{"start_offset": 20.0}]}, r"clients\[0\].start_offset: 20.0; give seconds from 0 to less than "
                                            r"timeout \(20.0\)"),
    ({"clients": [{"start_offset": -1.0}]}, r"clients\[0\].start_offset: -1.0"),
])
def test_bad_input_names_the_parameter(lab_factory, change, message):
    lab = lab_factory(["sink", "w1"])
    params = lab.params("w1", clients=[lab.client("w1")], servers=[lab.server(1)])
    for key, value in change.items():
        if key == "rendezvous":
            params["rendezvous"].update(value)
        elif key == "clients":
            params["clients"] = [dict(lab.client("w1"), **c) for c in value]
        elif key == "servers":
            params["servers"] = [dict(lab.server(1), **c) for c in value]
        else:
            params[key] = value
    with pytest.raises(FlowError, match=message):
        step_module.build_part(params)


def test_a_watched_step_reports_its_flows_progress_while_they_run(lab_factory):
    """The controller's progress queries (what the flow_step action shows once a second): the first one lets the step
    fire and is answered once the flows run; later ones carry each flow's latest interval sample; the step ends done,
    and its record is collected as usual."""
    lab = lab_factory(["sink", "w1", "w2"])
    lab.start("sink", servers=[lab.server(2, volume=None)])
    lab.start("w1", clients=[lab.client("w1", volume=None, duration=2.5)], interval=0.5)
    lab.start("w2", clients=[lab.client("w2", volume=None, duration=2.5)], interval=0.5)
    part = lab.part("sink")
    first = _step.progress(part, lab.state_dir, watch=True)
    assert first["phase"] == "running" and first["done"] is False and first["elapsed_s"] >= 0.3
    answers, end = [], time.time() + 60
    while time.time() < end:
        answer = _step.progress(part, lab.state_dir)
        if answer["done"]:
            break
        answers.append(answer)
        time.sleep(0.3)
    assert answers, "the step ended before a second query"
    sampled = [f for a in answers for f in a["flows"] if f.get("bytes")]
    # each flow's interval samples reached the controller while it ran (the first at 0.5 s of a 2.5 s flow)
    assert {f["flow_id"] for f in sampled} == {"w1", "w2"}
    assert all(f["gbps"] > 0 and f["volume"] is None and f["share"] is None for f in sampled)
    assert answers[-1]["hosts"] == 3
    record = lab.collect()
    assert record["status"] == "ok", record.get("error")
    assert _step.progress(part, lab.state_dir)["done"] is True  # nobody listens any more: done
    assert wait_gone(lab.pids)


def test_progress_says_how_long_the_slowest_flow_needs_at_its_rate():
    answer = {"phase": "running", "now": 103.0, "fire_at": 100.0, "expected": ["sink", "w1", "w2", "w3"],
              "done": ["w1"],
              "parties": {"w1": {"t": 2.0, "flows": {"w1": {"t": 2.0, "bytes": 10**9, "gbps": 4.0, "volume": 10**9}}},
                          "w2": {"t": 2.5, "flows": {"w2": {"t": 2.5, "bytes": 5 * 10**8, "gbps": 2.0,
                                                            "volume": 10**9}}},
                          "w3": {"t": 2.5, "flows": {"w3": None}}}}
    out = _step.summarize_progress(answer)
    flows = {f["flow_id"]: f for f in out["flows"]}
    assert flows["w1"]["done"] and flows["w1"]["remaining_s"] == 0.0
    # 500 MB left at 2 Gb/s = 2 s from its sample, taken 0.5 s ago
    assert flows["w2"]["share"] == 0.5 and flows["w2"]["remaining_s"] == 1.5
    assert "bytes" not in flows["w3"] and out["remaining_s"] is None  # a flow without samples: no estimate
    assert out["elapsed_s"] == 3.0 and out["hosts_done"] == 1 and out["hosts"] == 4
    del answer["parties"]["w3"]
    assert _step.summarize_progress(answer)["remaining_s"] == 1.5


# -- a lab network that is not friendly ------------------------------------------------------------------------------
def _closed(sock, timeout=10.0):
    sock.settimeout(timeout)
    try:
        while sock.recv(65536):
            pass
        return True
    except socket.timeout:
        return False
    except OSError:
        return True


@pytest.mark.parametrize("attack, reason", [
    (b"[" * 100_000 + b"\n", "a line longer than 1024 bytes"),  # the line, from a host without the token
    (first_line("tok") + b'{"control":true,"op":"hello"}\n' + b"[" * 100_000 + b"\n",
     "not a rendezvous message (RecursionError)"),  # the same line from a peer that has it
])
def test_one_line_from_the_lab_network_no_longer_kills_a_step(lab_factory, attack, reason):
    lab = lab_factory(["sink", "w1", "w2"])
    lab.start("sink", servers=[lab.server(2)])
    with socket.create_connection((ADDR, lab.port)) as stray:
        try:
            stray.sendall(attack)
        except OSError:
            pass
        assert _closed(stray)
    lab.start("w1", clients=[lab.client("w1")])
    lab.start("w2", clients=[lab.client("w2")])
    record = lab.collect()
    assert record["status"] == "ok", record.get("error")
    assert [(r["peer"], r["reason"], r["count"]) for r in record["rejected"]] == [(ADDR, reason, 1)]
    assert all(c["status"] == "ok" for h in ("w1", "w2") for c in record["hosts"][h]["clients"])
    assert wait_gone(lab.pids)
    assert os.listdir(lab.state_dir) == []


def test_an_abort_after_the_fire_stops_every_host_and_keeps_what_they_measured(lab_factory):
    lab = lab_factory(["sink", "w1", "w2"])
    lab.start("sink", servers=[lab.server(2, volume=None)])
    lab.start("w1", clients=[lab.client("w1", volume=None, duration=60)], interval=0.2)
    lab.start("w2", clients=[lab.client("w2", volume=None, duration=60)], interval=0.2)
    part = lab.part("sink", state="progress")
    first = _step.progress(part, lab.state_dir, watch=True)  # lets the step fire; answered once the flows run
    assert first["phase"] == "running", first
    assert control_abort(ADDR, lab.port, lab.token, "the operator pressed stop") is True
    record = lab.collect()
    assert record["status"] == "failed" and "the operator pressed stop" in record["error"]
    flows = [c for h in ("w1", "w2") for c in record["hosts"][h]["clients"]]
    # both 60-second flows ended at the abort (not at their duration), each with what it had sent
    assert [f["status"] for f in flows] == ["aborted", "aborted"], [f.get("error") for f in flows]
    assert all("the operator pressed stop" in f["error"] for f in flows)
    assert record["hosts"]["sink"]["servers"][0]["bytes"] > 0
    assert wait_gone(lab.pids)


def test_a_full_disk_on_a_host_still_reports_over_the_network(lab_factory, monkeypatch):
    """w1's disk refuses its result file (ENOSPC): the result still reaches the coordinator, with the write error
    in it, and the daemon does not crash. (The daemons are forked from this process: they inherit the patch.)"""
    lab = lab_factory(["sink", "w1"])
    w1_result, _pid = step_paths(lab.state_dir, _step.run_id(lab.token), "w1")
    real = _step.write_json_atomic

    def full_disk(path, data, **kw):
        if path == w1_result:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        return real(path, data, **kw)

    monkeypatch.setattr(_step, "write_json_atomic", full_disk)
    lab.start("sink", servers=[lab.server(1)])
    lab.start("w1", clients=[lab.client("w1")])
    record = lab.collect()
    assert record["status"] == "ok", record.get("error")
    w1 = record["hosts"]["w1"]
    assert w1["status"] == "ok" and w1["clients"][0]["bytes"] == 20 * 10**6
    assert "No space left on device" in w1["result_file_error"] and w1_result in w1["result_file_error"]
    assert "result_file_error" not in record["hosts"]["sink"]
    assert wait_gone(lab.pids)
    assert os.listdir(lab.state_dir) == []


NOW = time.time()


@pytest.mark.parametrize("start_at, message", [
    (math.inf, r"rendezvous.start_at: inf is not an instant \(not a finite number\)"),
    ("nan", r"rendezvous.start_at: 'nan' is not an instant \(not a finite number\)"),
    ("-inf", r"rendezvous.start_at: '-inf' is not an instant"),
    (1_795_941_057_770, r"rendezvous.start_at: 1795941057770 looks like epoch milliseconds .* seconds: 1795941057.770"),
    (1_795_941_057_770_000, r"rendezvous.start_at: 1795941057770000 looks like epoch microseconds"),
    (("now", -30), r"rendezvous.start_at: .* is (29\.9|30\.\d) s in the past \(more than 1 s\)"),
    (("now", 3600), r"rendezvous.start_at: .* is 3\d{3}\.\d s ahead, more than arm_timeout=20.0 s allows"),
])
def test_a_start_instant_that_cannot_be_is_refused(lab_factory, start_at, message):
    lab = lab_factory(["sink", "w1"])
    params = lab.params("w1", clients=[lab.client("w1")])
    if isinstance(start_at, tuple):  # an instant relative to now (a test may start long after its collection)
        start_at = time.time() + start_at[1]
    params["rendezvous"]["start_at"] = start_at
    with pytest.raises(FlowError, match=message):
        step_module.build_part(params)


def test_a_passed_instant_is_fine_once_the_step_is_started(lab_factory):
    """Collecting (or stopping, or watching) a fixed-instant step happens after its instant: not refused then."""
    lab = lab_factory(["sink", "w1"])
    for state in ("collected", "stopped", "progress"):
        params = lab.params("sink", state=state)
        params["rendezvous"]["start_at"] = NOW - 600
        assert step_module.build_part(params).rendezvous["start_at"] == NOW - 600


@pytest.mark.parametrize("change, message", [
    ({"clients": [{"flow_id": "x/../../../tmp/evil"}]}, r"clients\[0\].flow_id: 'x/../../../tmp/evil' cannot name a "
                                                        r"file on the host: it contains '/'"),
    ({"clients": [{"flow_id": "w1\x00"}]}, r"clients\[0\].flow_id: .* control character"),
    ({"clients": [{"flow_id": "x" * 129}]}, r"clients\[0\].flow_id: .* 129 characters long \(at most 128\)"),
    ({"party": "..", "rendezvous": {"parties": ["sink", ".."]}}, r"party: '..' cannot name a file on the host"),
    ({"rendezvous": {"parties": ["sink", "w1", "a/b"]}}, r"rendezvous.parties\[2\]: 'a/b' cannot name a file"),
])
def test_a_name_that_would_reach_a_path_is_refused(lab_factory, change, message):
    lab = lab_factory(["sink", "w1"])
    params = lab.params("w1", clients=[lab.client("w1")])
    for key, value in change.items():
        if key == "rendezvous":
            params["rendezvous"].update(value)
        elif key == "clients":
            params["clients"] = [dict(lab.client("w1"), **c) for c in value]
        else:
            params[key] = value
    with pytest.raises(FlowError, match=message):
        step_module.build_part(params)


def test_the_token_is_never_logged():
    assert step_module.module_args()["argument_spec"]["token"]["no_log"] is True


def _pid_file(lab, party, info):
    _result, pid_path = step_paths(lab.state_dir, _step.run_id(lab.token), party)
    os.makedirs(lab.state_dir, exist_ok=True)
    with open(pid_path, "w") as handle:
        json.dump(dict(info, run=_step.run_id(lab.token)), handle)


def test_stop_never_signals_a_reused_pid_nor_one_it_cannot_verify(lab_factory):
    """The PID in the file runs (it is this test's own process), but it is not the step's part: a start time that
    differs (a reused PID) is never signalled; a PID file without one (an older version's) is reported instead."""
    lab = lab_factory(["sink", "w1"])
    signals = []

    def kill(pid, sig):
        signals.append((pid, sig))

    from ansible_collections.aifabric.lab.plugins.module_utils import _proc

    mine = _proc.identity()
    _pid_file(lab, "w1", dict(mine, start_ticks=mine["start_ticks"] + 12345))
    out = _step.stop(lab.part("w1", state="stopped"), lab.state_dir, wait=0.2, kill=kill)
    assert signals == [] and out["signal"] is None and "not_signalled" not in out
    _pid_file(lab, "w1", {"pid": os.getpid(), "started_at": 1.0})
    out = _step.stop(lab.part("w1", state="stopped"), lab.state_dir, wait=0.2, kill=kill)
    assert signals == [] and out["signal"] is None
    assert out["not_signalled"].startswith("process %d still runs, but its PID file" % os.getpid())
    assert os.listdir(lab.state_dir) == []


def test_a_pid_file_holds_the_process_identity(lab_factory):
    lab = lab_factory(["sink", "w1"])
    started = lab.start("w1", clients=[lab.client("w1")], arm_timeout=5.0)
    _result, pid_path = step_paths(lab.state_dir, _step.run_id(lab.token), "w1")
    with open(pid_path) as handle:
        info = json.load(handle)
    from ansible_collections.aifabric.lab.plugins.module_utils import _proc

    assert info["pid"] == started["pid"] and _proc.same_process(info)
    assert info["start_ticks"] == _proc.start_ticks(started["pid"]) and info["run"] == _step.run_id(lab.token)
    out = _step.stop(lab.part("w1", state="stopped"), lab.state_dir)
    assert out["signal"] == "SIGTERM" and wait_gone([started["pid"]])


def test_the_owner_of_a_part_is_kept_in_its_pid_file_for_lab_leftovers(lab_factory):
    from ansible_collections.aifabric.lab.plugins.module_utils import _owner

    lab = lab_factory(["sink", "w1"])
    owner = {"id": "exp-1", "controller": {"host": "ctl", "pid": 4242, "start_ticks": 7, "boot_id": "b"},
             "lease_until": 1795941057.0}
    started = lab.start("w1", clients=[lab.client("w1")], arm_timeout=5.0, owner=owner)
    _result, pid_path = step_paths(lab.state_dir, _step.run_id(lab.token), "w1")
    with open(pid_path) as handle:
        info = json.load(handle)
    assert info["owner"] == owner and _owner.describe(info["owner"]) == "experiment exp-1 (controller ctl pid 4242)"
    _step.stop(lab.part("w1", state="stopped"), lab.state_dir)
    assert wait_gone([started["pid"]])
    with pytest.raises(FlowError, match=r"owner.lease_until: 1795941057000.0 looks like epoch milliseconds"):
        lab.part("w1", owner=dict(owner, lease_until=1795941057000.0))


# ------------------------------------------------------------------------------------------------- a job program
def ring_programs(lab, parties, iterations=3, size="3MB", chunks=2):
    """A ring AllReduce's per-host programs (built as the controller builds them), each host's program server on a
    port of its own on loopback."""
    from ansible_collections.aifabric.lab.plugins.plugin_utils._job.program import build_programs
    from ansible_collections.aifabric.lab.plugins.plugin_utils._job.spec import parse_job

    job = parse_job({"iterations": iterations, "compute_ms": 1, "collectives": [
        {"op": "allreduce", "algorithm": "ring", "size": size, "chunks": chunks, "window": 2}]}, parties)
    return build_programs(job, {p: {"address": ADDR, "port": free_port()} for p in parties})


def test_a_ring_allreduce_program_runs_from_one_instant_and_every_op_is_timed(lab_factory):
    parties = ["a", "b", "c"]
    lab = lab_factory(parties, coordinator="a")
    programs = ring_programs(lab, parties)
    for p in ("c", "b", "a"):  # any order: nothing fires until every host's program has armed
        started = lab.start(p, program=programs[p])
        assert started["program"]["iterations"] == 3 and started["program"]["listen"]["address"] == ADDR
    record = lab.collect()
    assert record["status"] == "ok", record.get("error")
    for p in parties:
        host = record["hosts"][p]
        assert host["status"] == "ok" and host["clients"] == []
        prog = host["program"]
        assert prog["status"] == "ok", prog["error"]
        ops = programs[p]["ops"]
        assert prog["iterations"] == 3 and prog["ops"] == len(ops) and prog["sampled"] == [0, 1, 2]
        # every op of every iteration has a start and an end, in order; a transfer has its first byte
        for i in range(3):
            for j, op in enumerate(ops):
                start, end = prog["t"]["start"][i][j], prog["t"]["end"][i][j]
                assert start is not None and end is not None and 0 <= start <= end, (p, i, j)
                assert (prog["t"]["first"][i][j] is None) == (op["kind"] == "compute")
        ends = prog["iteration_end"]
        assert len(ends) == 3 and all(e is not None for e in ends) and ends == sorted(ends)
        # a ring AllReduce: every host sends 2(n-1) segments of S/n per iteration (3 iterations x 4 x 1 MB), and
        # receives as much
        assert prog["bytes_sent"] == prog["bytes_received"] == 12 * 10**6
        assert {c["peer"] for c in prog["connections"]} == set(parties) - {p}
    assert wait_gone(lab.pids)
    assert os.listdir(lab.state_dir) == []


def test_a_program_that_cannot_arm_fails_the_step_naming_the_peer(lab_factory):
    parties = ["a", "b", "c"]
    lab = lab_factory(parties, coordinator="a")
    programs = ring_programs(lab, parties, iterations=1)
    lab.start("a", program=programs["a"], arm_timeout=3.0)
    lab.start("b", program=programs["b"], arm_timeout=3.0)  # c never starts: b's sends to it cannot connect
    record = lab.collect(wait=30)
    assert record["status"] != "ok"
    assert "c" in record["error"]
    for p in ("a", "b"):
        prog = record["hosts"][p]["program"]
        assert prog["status"] != "ok" and prog["t"] == {"start": [], "first": [], "end": []}
    assert wait_gone(lab.pids)


def test_a_taken_program_port_fails_the_start_naming_the_port(lab_factory):
    lab = lab_factory(["a", "b"], coordinator="a")
    programs = ring_programs(lab, ["a", "b"], iterations=1)
    port = programs["a"]["listen"]["port"]
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind((ADDR, port))
        taken.listen(1)
        with pytest.raises(OSError, match="cannot start the program server: port %d on %s is taken" % (port, ADDR)):
            _step.start(lab.part("a", program=programs["a"]), lab.state_dir)


@pytest.mark.parametrize("change, message", [
    (lambda p: p.update(version=2), "program.version: 2 is not a version this host runs"),
    (lambda p: p["ops"][1].update(deps=[5]), r"program.ops\[1\].deps: 5 is not an earlier op"),
    (lambda p: p["ops"][1].update(bytes=0), r"program.ops\[1\].bytes: 0 is out of range"),
    (lambda p: p.pop("listen"), "program.listen: missing, but ops"),
    (lambda p: p["listen"].update(address="0.0.0.0"), "program.listen.address: 0.0.0.0 would listen on every"),
    (lambda p: p["ops"][2].update(peer="w1"), r"program.ops\[2\].peer: w1 is this host"),
    (lambda p: p["ops"][2].update(peer="nobody"), r"program.ops\[2\].peer: nobody is not one of rendezvous.parties"),
    (lambda p: p.update(ops=[]), "program.ops: \\[\\] is not a non-empty list"),
])
def test_a_bad_program_is_refused_naming_the_field(lab_factory, change, message):
    lab = lab_factory(["sink", "w1"])
    program = {"version": 1, "iterations": 2, "listen": {"address": ADDR, "port": 18700},
               "peers": {"sink": {"address": ADDR, "port": 18701}},
               "ops": [{"id": 0, "kind": "compute", "ms": 1}, {"id": 1, "kind": "send", "peer": "sink", "bytes": 10,
                                                               "deps": [0]},
                       {"id": 2, "kind": "recv", "peer": "sink", "bytes": 10, "deps": [0]}]}
    change(program)
    with pytest.raises(FlowError, match=message):
        step_module.build_part(lab.params("w1", program=program))


def test_a_program_over_perftest_is_refused_saying_why(lab_factory):
    lab = lab_factory(["sink", "w1"])
    programs = ring_programs(lab, ["sink", "w1"], iterations=1)
    with pytest.raises(FlowError, match=r"program: a job program runs on the hosts' own executor, over TCP \(engine "
                                        r"tcp\) or RDMA verbs \(engine verbs\), and the perftest engine runs one "
                                        r"transfer per process"):
        step_module.build_part(lab.params("w1", program=programs["w1"], engine="perftest",
                                          perftest={"device": "rxe0"}))


def test_a_bad_program_in_parts_names_the_part(lab_factory):
    lab = lab_factory(["sink", "w1"])
    params = lab.params(None, parts=[{"party": "w1", "netns": "aflt-x", "servers": [], "clients": [],
                                      "counters": None, "program": {"version": 1, "iterations": 0, "ops": []}}])
    with pytest.raises(FlowError, match=r"parts\[0\] \(w1\): program.iterations: 0 is out of range"):
        step_module.build_parts(params)


def test_a_flow_with_a_start_offset_fires_that_long_after_the_common_instant(lab_factory):
    """Convergence's late flows (experiment start_offsets): armed with the others, fired at the instant plus the
    offset; its completion counts from the common instant, its lateness against its own instant."""
    lab = lab_factory(["sink", "w1", "w2"])
    lab.start("sink", servers=[lab.server(2)])
    lab.start("w1", clients=[lab.client("w1", volume="5MB")])
    lab.start("w2", clients=[lab.client("w2", volume="5MB", start_offset=0.5)])
    record = lab.collect()
    assert record["status"] == "ok", record.get("error")

    def instant(party):  # the common instant on the party's clock (the coordinator's plus the party's offset)
        return record["fire"]["at"] + record["parties"][party]["offset_s"]

    w1, w2 = record["hosts"]["w1"]["clients"][0], record["hosts"]["w2"]["clients"][0]
    assert w1["status"] == w2["status"] == "ok"
    assert "start_offset_s" not in w1 and w1["start_at"] == pytest.approx(instant("w1"), abs=1e-6)
    assert w2["start_offset_s"] == 0.5 and w2["start_at"] == pytest.approx(instant("w2") + 0.5, abs=1e-6)
    assert w2["start"] >= w2["start_at"]  # it did not start before its own instant
    # counted from the common instant: at least its offset plus its own duration
    assert w2["completion_s"] >= 0.5 + w2["duration_s"]
    assert wait_gone(lab.pids)


def test_the_verbs_engine_takes_a_program_and_its_device(lab_factory):
    """engine verbs: a job program whose data goes through RC queue pairs (verbs.py); its device options are checked
    when the part is started, and flows or servers are refused (they are the tcp and perftest engines')."""
    lab = lab_factory(["sink", "w1"])
    programs = ring_programs(lab, ["sink", "w1"], iterations=1)
    part = step_module.build_part(lab.params("w1", program=programs["w1"], engine="verbs",
                                             verbs={"device": "rxe0", "ib_port": 1, "gid_index": None,
                                                    "qp_timeout": 18}))
    assert part.engine == "verbs" and part.verbs == {"device": "rxe0", "ib_port": 1, "gid_index": None,
                                                     "qp_timeout": 18}
    with pytest.raises(FlowError, match=r"verbs.device: the verbs engine needs the RDMA device"):
        step_module.build_part(lab.params("w1", program=programs["w1"], engine="verbs", verbs={}))
    with pytest.raises(FlowError, match=r"verbs.qp_timeout: 40; give 0-31"):
        step_module.build_part(lab.params("w1", program=programs["w1"], engine="verbs",
                                          verbs={"device": "rxe0", "qp_timeout": 40}))
    with pytest.raises(FlowError, match=r"engine: verbs runs a job program"):
        step_module.build_part(lab.params("w1", clients=[lab.client("w1")], engine="verbs",
                                          verbs={"device": "rxe0"}))
    with pytest.raises(FlowError, match=r"program: the verbs engine runs a job program; give program"):
        step_module.build_part(lab.params("w1", engine="verbs", verbs={"device": "rxe0"}))
    # collecting a verbs step needs no device
    assert step_module.build_part(lab.params("sink", engine="verbs", state="collected")).verbs == {}


def test_a_verbs_part_on_a_host_without_pyverbs_is_not_started_and_says_how(lab_factory, monkeypatch):
    from ansible_collections.aifabric.lab.plugins.module_utils._flow import verbs

    said = "the verbs engine needs pyverbs in the host's Python (No module named 'pyverbs'); Debian: apt install " \
           "python3-pyverbs"
    monkeypatch.setattr(verbs, "pyverbs_missing", lambda: said)
    lab = lab_factory(["sink", "w1"])
    programs = ring_programs(lab, ["sink", "w1"], iterations=1)
    part = step_module.build_part(lab.params("w1", program=programs["w1"], engine="verbs", verbs={"device": "rxe0"}))
    with pytest.raises(OSError, match=r"the verbs engine needs pyverbs in the host's Python .*apt install "
                                      r"python3-pyverbs"):
        _step.start(part, lab.state_dir)
    assert not os.path.exists(lab.state_dir) or os.listdir(lab.state_dir) == []  # nothing was started
