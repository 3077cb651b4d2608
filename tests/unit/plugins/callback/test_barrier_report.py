# -*- coding: utf-8 -*-
"""The barrier_report callback fed with task results shaped like Ansible's: a collected step record, a failed start,
the clean-up's items; what it writes to the run directory and which cause it keeps."""
from __future__ import annotations

import json
import os

import pytest
from ansible_collections.aifabric.lab.plugins.callback.barrier_report import CallbackModule


class Task:
    def __init__(self, action, args, name="task"):
        self.action, self.args, self._name = action, args, name

    def get_name(self):
        return self._name


class Host:
    def __init__(self, name):
        self.name = name

    def get_name(self):
        return self.name


class Result:
    def __init__(self, host, action, args, result):
        self._host, self._task, self._result = Host(host), Task(action, args), dict(result)
        self._result.setdefault("invocation", {"module_args": args})


class Display:
    def __init__(self):
        self.lines = []

    def display(self, msg, *args, **kw):
        self.lines.append(msg)

    banner = warning = error = display


@pytest.fixture
def callback(tmp_path):
    cb = CallbackModule()
    # the options as Ansible's config would resolve them (the plugin loader is not involved in a unit test)
    cb._plugin_options = {"runs_dir": str(tmp_path / "runs"), "show_json_path": True}
    cb._runs_dir, cb._show_json_path = cb._plugin_options["runs_dir"], True
    cb._display = Display()
    return cb


ANN = {"step": "barrier", "kind": "barrier", "mtu": 9000, "bottleneck": "8gbit", "expected_workers": ["w1", "w2"],
       "path": [{"link": "sw->sink", "rate": "8gbit"}]}


def flow(flow_id, completion, late=0.0001):
    return {"flow_id": flow_id, "status": "ok", "completion_s": completion, "bytes": 10**9, "volume_bytes": 10**9,
            "gbps": 8 / completion, "late_s": late, "start": 100.0 + late, "start_at": 100.0, "annotations": ANN}


def counters(tx):
    snap = {"taken_at": 1.0, "rdma": {}, "qdisc": {}, "netdev": {"eth0": {"tx_bytes": 0, "tx_packets": 0}}}
    after = json.loads(json.dumps(snap))
    after["netdev"]["eth0"].update(tx_bytes=tx, tx_packets=tx // 9014)
    return {"before": snap, "after": after, "interface": "eth0", "engine": "tcp"}


def record(**kw):
    rec = {"step": "barrier", "status": "ok", "error": None, "mode": "rendezvous", "started_at": 90.0,
           "fire": {"at": 100.0, "margin_s": 0.002, "probe_fanout_s": [0.0003, 0.0002, 0.0002],
                    "decided_at": 99.998, "armed_last_at": 99.9},
           "parties": {"sink": {"armed_at": 99.5, "offset_s": 0.0, "rtt_s": 0.0001, "fire_sent_at": 99.998},
                       "w1": {"armed_at": 99.8, "offset_s": 0.0, "rtt_s": 0.0001, "fire_sent_at": 99.998},
                       "w2": {"armed_at": 99.9, "offset_s": 0.0, "rtt_s": 0.0001, "fire_sent_at": 99.999}},
           "hosts": {"sink": {"clients": [], "servers": []},
                     "w1": {"clients": [flow("w1", 2.0)], "counters": counters(10**9 + 66 * 110936)},
                     "w2": {"clients": [flow("w2", 3.0)]}},
           "expected_flows": {"w1": ["w1"], "w2": ["w2"]}, "annotations": ANN}
    rec.update(kw)
    return rec


ACTION = "aifabric.lab.flow_step"


def run_dir(cb):
    return cb._run.path


def test_a_collected_step_becomes_flows_counters_start_and_a_report(callback):
    callback.v2_runner_on_ok(Result("sink", ACTION, {"state": "collected", "step": "barrier", "party": "sink"},
                                    {"step": record()}))
    path = run_dir(callback)
    assert sorted(os.listdir(os.path.join(path, "flows", "barrier"))) == ["w1.json", "w2.json"]
    assert os.listdir(os.path.join(path, "counters", "barrier")) == ["w1.json"]
    start = json.load(open(os.path.join(path, "starts", "barrier.json")))
    assert start["margin_s"] == 0.002 and start["armed_after_s"] == pytest.approx(9.9)
    assert start["last_fire_sent_ahead_s"] == pytest.approx(0.001)
    callback.v2_playbook_on_stats(None)
    report = json.load(open(os.path.join(path, "report.json")))
    (step,) = report["steps"]
    assert step["status"] == "ok" and step["step_s"] == 3.0 and step["straggler"]["host"] == "w2"
    assert step["start"]["mode"] == "rendezvous" and step["late_max_s"] == 0.0001
    assert step["counters"]["hosts"]["w1"]["checks"]
    assert any("start                  every host armed 9.90 s after the rendezvous opened" in line
               for line in callback._display.lines)


def test_a_host_that_never_armed_is_named_and_its_own_account_replaces_the_coordinators(callback):
    aborted = record(status="aborted", error="the step was not started: w2 did not arm within the arm timeout",
                     fire=None)
    aborted["hosts"] = {"sink": {"clients": []},
                        "w1": {"clients": [dict(flow("w1", 1.0), status="not_started", completion_s=None,
                                                error="not started: the step was not started: w2 did not arm")]}}
    aborted["parties"]["w2"] = {"lost": "never reached the rendezvous"}
    callback.v2_runner_on_ok(Result("sink", ACTION, {"state": "collected", "step": "barrier", "party": "sink"},
                                    {"step": aborted}))
    w2 = json.load(open(os.path.join(run_dir(callback), "flows", "barrier", "w2.json")))
    assert w2["status"] == "error" and w2["error"].startswith("did not arm: the step was not started: w2 did not")
    assert w2["annotations"]["kind"] == "barrier"
    # the clean-up collects w2's own account from its host: it is more precise, and it replaces the coordinator's
    own = {"clients": [{"flow_id": "w2", "status": "not_started", "error": "not started: no rendezvous answered at "
                        "198.18.0.1:18599 before the arm deadline ([Errno 101] Network is unreachable)"}]}
    callback.v2_runner_item_on_ok(Result("sink", ACTION, {"state": "stopped", "step": "barrier", "party": "w2"},
                                         {"part": own, "item": "w2"}))
    w2 = json.load(open(os.path.join(run_dir(callback), "flows", "barrier", "w2.json")))
    assert "Network is unreachable" in w2["error"]
    # ... but an account that only says the clean-up stopped it does not
    stopped = {"clients": [{"flow_id": "w1", "status": "not_started", "cause_from": "stop",
                            "error": "not started: stopped by the controller (SIGTERM)"}]}
    callback.v2_runner_item_on_ok(Result("sink", ACTION, {"state": "stopped", "step": "barrier", "party": "w1"},
                                         {"part": stopped, "item": "w1"}))
    w1 = json.load(open(os.path.join(run_dir(callback), "flows", "barrier", "w1.json")))
    assert w1["error"] == "not started: the step was not started: w2 did not arm"
    callback.v2_playbook_on_stats(None)
    (step,) = json.load(open(os.path.join(run_dir(callback), "report.json")))["steps"]
    assert step["status"] == "failed" and step["kind"] == "barrier"
    assert {f["host"] for f in step["failed"]} == {"w1", "w2"}


def test_a_failed_start_names_every_flow_of_the_host_with_ansibles_message(callback):
    args = {"state": "started", "step": "barrier", "party": "w2",
            "clients": [{"flow_id": "w2", "annotations": ANN}]}
    # (ansible-core 2.19 hands the callback a failed result without its "failed" key)
    callback.v2_runner_on_failed(Result("w2", ACTION, args, {"msg": "w2: cannot start its part"}))
    callback.v2_runner_on_unreachable(Result("w1", ACTION, dict(args, party="w1", clients=[{"flow_id": "w1"}]),
                                             {"unreachable": True, "msg": "Failed to connect"}))
    flows = os.path.join(run_dir(callback), "flows", "barrier")
    assert json.load(open(os.path.join(flows, "w2.json")))["error"] == "w2: cannot start its part"
    assert json.load(open(os.path.join(flows, "w1.json")))["error"] == "unreachable: Failed to connect"


def test_one_task_that_started_every_part_names_the_host_that_could_not_start(callback):
    args = {"state": "started", "step": "barrier",
            "parts": [{"party": "sink", "netns": "afl-sink", "clients": []},
                      {"party": "w1", "netns": "afl-w1", "clients": [{"flow_id": "w1", "annotations": ANN}]},
                      {"party": "w2", "netns": "afl-w2", "clients": [{"flow_id": "w2", "annotations": ANN}]}]}
    parts = [{"host": "sink", "status": "started"}, {"host": "w1", "status": "started"},
             {"host": "w2", "status": "failed", "error": "cannot start the tcp server: Address already in use"}]
    callback.v2_runner_on_failed(Result("sink", ACTION, args, {"msg": "1 of 3 hosts ...", "parts": parts}))
    flows = os.path.join(run_dir(callback), "flows", "barrier")
    w2 = json.load(open(os.path.join(flows, "w2.json")))
    assert w2["error"] == "could not start: cannot start the tcp server: Address already in use"
    assert w2["host"] == "w2" and w2["annotations"]["kind"] == "barrier"
    # w1 started, and was stopped because of w2: it says so, and the clean-up's "stopped" does not replace it
    w1 = json.load(open(os.path.join(flows, "w1.json")))
    assert w1["error"] == "not started: w2 could not start its part: cannot start the tcp server: Address already " \
                          "in use"
    stopped = {"clients": [{"flow_id": "w1", "status": "not_started", "cause_from": "stop",
                            "error": "not started: stopped by the controller (SIGTERM)"}]}
    callback.v2_runner_item_on_ok(Result("sink", ACTION, {"state": "stopped", "step": "barrier", "party": "w1"},
                                         {"part": stopped, "item": "w1"}))
    assert json.load(open(os.path.join(flows, "w1.json")))["error"] == w1["error"]
    # a task that failed before starting anything (its arguments) names every flow with Ansible's message
    callback.v2_runner_on_failed(Result("sink", ACTION, dict(args, step="other"),
                                        {"msg": "parts[1].netns: 'x/y' is not a network namespace"}))
    other = os.path.join(run_dir(callback), "flows", "other")
    assert sorted(os.listdir(other)) == ["w1.json", "w2.json"]
    assert "is not a network namespace" in json.load(open(os.path.join(other, "w1.json")))["error"]


def test_a_loops_summary_result_is_not_counted_twice(callback):
    callback.v2_runner_on_ok(Result("sink", ACTION, {"state": "stopped", "party": "sink"}, {"results": [{}]}))
    assert callback._steps == {}


def test_the_callback_the_re_render_and_the_filter_give_the_same_report_byte_for_byte(callback, tmp_path):
    import shutil

    from ansible_collections.aifabric.lab.plugins.filter.barrier import report_json, run_report
    from ansible_collections.aifabric.lab.plugins.plugin_utils._report import render_run

    callback.v2_runner_on_ok(Result("sink", ACTION, {"state": "collected", "step": "barrier", "party": "sink"},
                                    {"step": record()}))
    callback.v2_playbook_on_stats(None)
    path = run_dir(callback)
    written = open(os.path.join(path, "report.json")).read()
    assert json.loads(written)["run_dir"] == os.path.abspath(path)
    assert report_json(run_report(path)) == written  # the filter, read only
    render_run(path)  # the re-render, writing the files again
    assert open(os.path.join(path, "report.json")).read() == written
    # a copy of the directory re-renders to the same report but for where it lives
    copy = str(tmp_path / "copy")
    shutil.copytree(path, copy)
    render_run(copy)
    assert json.loads(open(os.path.join(copy, "report.json")).read()) == dict(json.loads(written), run_dir=copy)
