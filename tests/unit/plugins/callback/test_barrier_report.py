# -*- coding: utf-8 -*-
"""The barrier_report callback fed with task results shaped like Ansible's: a collected step record, a failed start,
the clean-up's items; what it writes to the run directory and which cause it keeps."""
from __future__ import annotations

import json
import os

import pytest
from ansible_collections.aifabric.lab.plugins.callback.barrier_report import CallbackModule
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import plan
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.store import load_run


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
    cb._plugin_options = {"runs_dir": str(tmp_path / "runs"), "show_json_path": True, "history": True,
                          "history_db": str(tmp_path / "runs" / "history.sqlite")}
    cb._runs_dir, cb._show_json_path = cb._plugin_options["runs_dir"], True
    cb._history_on, cb._history_db = True, cb._plugin_options["history_db"]
    cb._display = Display()
    return cb


PLAN = plan({"name": "barrier", "throttles": {"w2": "2gbit"}}, {"workers": ["w1", "w2"], "sinks": ["sink"]},
            {"sink": {"lab_address": "198.18.0.1"}, "w1": {"lab_address": "198.18.0.11"},
             "w2": {"lab_address": "198.18.0.12"}}).to_dict()  # the fact the role's set_stats gives, as Ansible does


def plan_result(baseline=None):
    """The experiment role's set_stats task, as Ansible hands it to a callback: the plan and the throttles' results
    (and the baseline run the history gave, when the experiment has a vs_baseline gate)."""
    data = {"aifabric_lab_plan": {"plan": PLAN, "throttles": [
        {"item": "w2", "changed": True, "mechanism": "tc", "description": "tc htb on eth0's egress", "flow_args": {}}],
        "baseline": baseline or {}}}
    return Result("sink", "ansible.builtin.set_stats", {"data": data},
                  {"changed": False, "ansible_stats": {"data": data, "per_host": False, "aggregate": False}})


def flow(flow_id, completion, late=0.0001):
    return {"flow_id": flow_id, "status": "ok", "completion_s": completion, "bytes": 10**9, "volume_bytes": 10**9,
            "gbps": 8 / completion, "late_s": late, "start": 100.0 + late, "start_at": 100.0}


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
                     "w1": {"clients": [flow("w1", 2.0)], "counters": counters(10**9 + 66 * 110936),
                            "kernel": "6.1.0-test"},
                     "w2": {"clients": [flow("w2", 3.0)]}},
           "expected_flows": {"w1": ["w1"], "w2": ["w2"]}}
    rec.update(kw)
    return rec


ACTION = "aifabric.lab.flow_step"


def run_dir(cb):
    return cb._run.path


def test_a_collected_step_becomes_plan_flows_counters_start_and_a_report(callback):
    callback.v2_runner_on_ok(plan_result())
    assert callback._run is None  # a plan alone makes no run directory
    callback.v2_runner_on_ok(Result("sink", ACTION, {"state": "collected", "step": "barrier", "party": "sink"},
                                    {"step": record()}))
    path = run_dir(callback)
    assert sorted(os.listdir(os.path.join(path, "flows", "barrier"))) == ["w1.json", "w2.json"]
    # the flows hold measurements only; what the plan says of them is in plan.json, with what the throttle applied
    w2 = json.load(open(os.path.join(path, "flows", "barrier", "w2.json")))
    assert "annotations" not in w2 and w2["completion_s"] == 3.0
    saved = json.load(open(os.path.join(path, "plan.json")))
    # the plan once: the experiment's, with what its throttle applied; no second copy of each step's
    assert saved["schema_version"] == 2 and sorted(saved) == ["experiments", "lab", "schema_version"]
    (experiment,) = saved["experiments"]
    want = dict(PLAN, hosts=dict(PLAN["hosts"], w2=dict(PLAN["hosts"]["w2"], throttle={
        "rate": "2gbit", "peers": [], "applied": "tc htb on eth0's egress"})))
    assert experiment == {k: v for k, v in want.items() if k not in ("participants", "throttled")}
    # read back, the step's plan is what the report reads: the expected workers, each flow's path and throttle
    (step_plan,) = [s.plan for s in load_run(path).steps]
    assert step_plan.expected_workers == ["w1", "w2"]
    assert step_plan.flows[("w2", "w2")].as_dict() == {
        "mtu": 9000, "throttle": "2gbit", "goodput_factor": None, "throttle_mechanism": "w2: tc htb on eth0's egress",
        "path": [{"link": "w2->switch", "rate": "8gbit"}, {"link": "switch->sink", "rate": "8gbit"},
                 {"link": "w2 egress", "rate": "2gbit", "throttle": True}]}
    assert saved["lab"]["hosts"] == {"w1": {"kernel": "6.1.0-test"}} and saved["lab"]["controller"]["ansible_core"]
    assert os.listdir(os.path.join(path, "counters", "barrier")) == ["w1.json"]
    start = json.load(open(os.path.join(path, "starts", "barrier.json")))
    assert start["margin_s"] == 0.002 and start["armed_after_s"] == pytest.approx(9.9)
    assert start["last_fire_sent_ahead_s"] == pytest.approx(0.001)
    callback.v2_playbook_on_stats(None)
    report = json.load(open(os.path.join(path, "report.json")))
    (step,) = report["steps"]
    assert step["status"] == "ok" and step["step_s"] == 3.0 and step["straggler"]["host"] == "w2"
    assert step["straggler"]["cause"] == "throttled to 2gbit (w2: tc htb on eth0's egress)"
    # by hand: w1 gets 8 - 2 = 6 Gb/s of the 8gbit port, w2 its 2gbit throttle; 1 GB at MTU 9000 (payload share
    # 8948/9014 on the wire as the qdisc counts it) -> w2 takes 8e9 / (2e9 x 8948/9014) = 4.0295 s
    assert step["workers"][1]["predicted_s"] == pytest.approx(8e9 / (2e9 * 8948 / 9014), abs=1e-4)
    assert report["lab"]["hosts"]["w1"]["kernel"] == "6.1.0-test"
    assert step["start"]["mode"] == "rendezvous" and step["late_max_s"] == 0.0001
    assert step["counters"]["hosts"]["w1"]["checks"]
    assert any("start                  every host armed 9.90 s after the rendezvous opened" in line
               for line in callback._display.lines)


def test_a_host_that_never_armed_is_named_and_its_own_account_replaces_the_coordinators(callback):
    callback.v2_runner_on_ok(plan_result())
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
    args = {"state": "started", "step": "barrier", "party": "w2", "clients": [{"flow_id": "w2"}]}
    # (ansible-core 2.19 hands the callback a failed result without its "failed" key)
    callback.v2_runner_on_failed(Result("w2", ACTION, args, {"msg": "w2: cannot start its part"}))
    callback.v2_runner_on_unreachable(Result("w1", ACTION, dict(args, party="w1", clients=[{"flow_id": "w1"}]),
                                             {"unreachable": True, "msg": "Failed to connect"}))
    flows = os.path.join(run_dir(callback), "flows", "barrier")
    assert json.load(open(os.path.join(flows, "w2.json")))["error"] == "w2: cannot start its part"
    assert json.load(open(os.path.join(flows, "w1.json")))["error"] == "unreachable: Failed to connect"


def test_one_task_that_started_every_part_names_the_host_that_could_not_start(callback):
    callback.v2_runner_on_ok(plan_result())
    args = {"state": "started", "step": "barrier",
            "parts": [{"party": "sink", "netns": "afl-sink", "clients": []},
                      {"party": "w1", "netns": "afl-w1", "clients": [{"flow_id": "w1"}]},
                      {"party": "w2", "netns": "afl-w2", "clients": [{"flow_id": "w2"}]}]}
    parts = [{"host": "sink", "status": "started"}, {"host": "w1", "status": "started"},
             {"host": "w2", "status": "failed", "error": "cannot start the tcp server: Address already in use"}]
    callback.v2_runner_on_failed(Result("sink", ACTION, args, {"msg": "1 of 3 hosts ...", "parts": parts}))
    flows = os.path.join(run_dir(callback), "flows", "barrier")
    w2 = json.load(open(os.path.join(flows, "w2.json")))
    assert w2["error"] == "could not start: cannot start the tcp server: Address already in use"
    assert w2["host"] == "w2" and w2["step"] == "barrier"
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
    assert callback._collector.flows == {}


def test_the_callback_the_re_render_and_the_filter_give_the_same_report_byte_for_byte(callback, tmp_path):
    import shutil

    from ansible_collections.aifabric.lab.plugins.filter.report import report_json, run_report
    from ansible_collections.aifabric.lab.plugins.plugin_utils._report.build import render_run

    callback.v2_runner_on_ok(plan_result())
    callback.v2_runner_on_ok(Result("sink", ACTION, {"state": "collected", "step": "barrier", "party": "sink"},
                                    {"step": record()}))
    callback.v2_playbook_on_stats(None)
    path = run_dir(callback)
    written = open(os.path.join(path, "report.json")).read()
    assert json.loads(written)["run_dir"] == os.path.abspath(path)
    assert report_json(run_report(path)) == written  # the filter, read only
    from ansible_collections.aifabric.lab.plugins.filter.report import report_files

    files = report_files(run_report(path))
    assert sorted(files) == ["flows.csv", "junit.xml", "metrics.prom", "report.html", "report.json", "report.md",
                             "report.txt", "steps.csv"]
    for name, text in files.items():  # every file the callback wrote is the filter's, byte for byte
        assert open(os.path.join(path, name)).read() == text, name
    render_run(path)  # the re-render, writing the files again
    assert open(os.path.join(path, "report.json")).read() == written
    # a copy of the directory re-renders to the same report but for where it lives
    copy = str(tmp_path / "copy")
    shutil.copytree(path, copy)
    render_run(copy)
    assert json.loads(open(os.path.join(copy, "report.json")).read()) == dict(json.loads(written), run_dir=copy)


def test_every_run_is_recorded_in_the_history_and_a_broken_history_only_warns(callback, tmp_path):
    from ansible_collections.aifabric.lab.plugins.plugin_utils._history.compare import get_run

    callback.v2_runner_on_ok(plan_result())
    callback.v2_runner_on_ok(Result("sink", ACTION, {"state": "collected", "step": "barrier", "party": "sink"},
                                    {"step": record()}))
    callback.v2_playbook_on_stats(None)
    path = run_dir(callback)
    run = get_run(callback._history_db, "latest")
    assert run["path"] == os.path.abspath(path) and [s["step"] for s in run["steps"]] == ["barrier"]
    assert ["w2 throttle", "2gbit (tc htb on eth0's egress)"] in run["config"]
    printed = "\n".join(str(line) for line in callback._display.lines)
    assert "history: run %s recorded in %s" % (run["id"], callback._history_db) in printed
    # a history that cannot be written (its path is a directory) costs the run nothing: a warning, the report kept
    callback._history_db = str(tmp_path)
    callback._record_history(json.load(open(os.path.join(path, "report.json"))))
    assert "the run was not recorded in the history %s" % tmp_path in str(callback._display.lines[-1])
    assert os.path.exists(os.path.join(path, "report.json"))


def test_the_baseline_run_of_the_plan_is_kept_in_plan_json(callback):
    baseline = {"run": "20261130T110734-demo", "steps": {"barrier": 8.06}, "p50_step_s": 8.06}
    callback.v2_runner_on_ok(plan_result(baseline=baseline))
    callback.v2_runner_on_ok(Result("sink", ACTION, {"state": "collected", "step": "barrier", "party": "sink"},
                                    {"step": record()}))
    saved = json.load(open(os.path.join(run_dir(callback), "plan.json")))
    assert saved["experiments"][0]["baseline"] == baseline


def test_the_in_memory_report_is_the_run_directorys_when_nothing_could_be_written(callback, tmp_path):
    """runs_dir unwritable twice over (no fallback either): the report comes from what the callback holds, and it is
    the one the run directory would have given."""
    from ansible_collections.aifabric.lab.plugins.plugin_utils._report.build import analyze_run

    callback.v2_runner_on_ok(plan_result())
    callback.v2_runner_on_ok(Result("sink", ACTION, {"state": "collected", "step": "barrier", "party": "sink"},
                                    {"step": record()}))
    from_disk = analyze_run(run_dir(callback))
    callback._write_error = "simulated: the disk filled up"
    callback.v2_playbook_on_stats(None)
    printed = "\n".join(str(line) for line in callback._display.lines)
    assert "step time (max)        3.00 s" in printed and "the report above was not saved" in printed
    assert "straggler              w2: throttled to 2gbit (w2: tc htb on eth0's egress)" in printed
    from ansible_collections.aifabric.lab.plugins.plugin_utils._report.text import render_text

    assert render_text(from_disk) in printed


def test_a_plain_flow_task_describes_its_step_with_annotations(callback):
    """A flow outside any experiment plan (the plain flow module) keeps the annotations its task gave it, and the
    report reads its path and throttle from them."""
    ann = {"step": "manual", "mtu": 9000, "bottleneck": "8gbit", "expected_workers": ["a", "b"],
           "path": [{"link": "sw->sink", "rate": "8gbit"}]}
    for host, completion in (("a", 1.0), ("b", 2.0)):
        res = {"flow": dict(flow(host, completion), role="client", annotations=ann)}
        callback.v2_runner_on_ok(Result(host, "aifabric.lab.flow", {"role": "client", "annotations": ann}, res))
    saved = json.load(open(os.path.join(run_dir(callback), "flows", "manual", "a.json")))
    assert saved["annotations"]["path"] == ann["path"]
    callback.v2_playbook_on_stats(None)
    (step,) = json.load(open(os.path.join(run_dir(callback), "report.json")))["steps"]
    assert step["step"] == "manual" and step["step_s"] == 2.0 and step["bottleneck"] == "8gbit"
    # by hand: two 1 GB flows share the 8gbit link, 4 Gb/s each on the wire (payload share 8948/9014), and finish
    # together at 8e9 / (4e9 x 8948/9014) = 2.0148 s
    assert step["predicted_step_s"] == pytest.approx(16e9 / (8e9 * 8948 / 9014), abs=1e-4)


@pytest.mark.parametrize("history_db, expect", [
    (None, "{runs}/history.sqlite"),  # unset: beside the run directories
    ("", "{runs}/history.sqlite"),
    ("{tmp}/elsewhere/h.sqlite", "{tmp}/elsewhere/h.sqlite"),
])
def test_the_history_db_option_as_ansible_resolves_it(tmp_path, monkeypatch, history_db, expect):
    """Through Ansible's own configuration (the options from DOCUMENTATION, the environment as a user sets it): an
    empty history_db is the default beside the runs, never the working directory."""
    import yaml
    from ansible import constants as C
    from ansible_collections.aifabric.lab.plugins.callback import barrier_report

    options = yaml.safe_load(barrier_report.DOCUMENTATION)["options"]
    C.config.initialize_plugin_configuration_definitions("callback", "aifabric_test_barrier_report", options)
    runs = tmp_path / "runs"
    monkeypatch.setenv("AIFABRIC_RUNS_DIR", str(runs))
    monkeypatch.delenv("AIFABRIC_HISTORY_DB", raising=False)
    if history_db is not None:
        monkeypatch.setenv("AIFABRIC_HISTORY_DB", history_db.format(tmp=tmp_path))
    cb = CallbackModule()
    cb._load_name = "aifabric_test_barrier_report"
    cb.set_options()
    assert cb._history_on is True
    assert cb._history_db == expect.format(runs=runs, tmp=tmp_path)


def test_a_jobs_step_has_programs_and_no_flows_and_gets_its_report(callback):
    """A job's step (docs/jobs.md's worked example: 3 workers, w3 throttled to 4 Gb/s, 2 iterations of 10 ms and a
    30 MB ring AllReduce): each host's program result kept under programs/, and the report written at the end."""
    job_plan = plan({"name": "job", "throttles": {"w3": "4gbit"}, "job": {
        "iterations": 2, "compute_ms": 10, "collectives": [{"op": "allreduce", "algorithm": "ring", "size": "30MB"}]}},
        {"workers": ["w1", "w2", "w3"]}, {h: {"lab_address": "198.18.0.%d" % i} for i, h in enumerate(
            ["w1", "w2", "w3"], 1)}, mtu=None)
    data = {"aifabric_lab_plan": {"plan": job_plan.to_dict(), "throttles": [], "baseline": {}}}
    callback.v2_runner_on_ok(Result("w1", "ansible.builtin.set_stats", {"data": data},
                                    {"changed": False, "ansible_stats": {"data": data}}))
    hand = job_plan.job.predict(job_plan)["results"]
    rec = {"step": "job", "status": "ok", "error": None, "fire": {"at": 100.0}, "parties": {},
           "hosts": {h: {"clients": [], "servers": [], "program": hand[h]} for h in hand}, "expected_flows": {}}
    callback.v2_runner_on_ok(Result("w1", ACTION, {"state": "collected", "step": "job", "party": "w1"},
                                    {"step": rec}))
    path = run_dir(callback)
    assert sorted(os.listdir(os.path.join(path, "programs", "job"))) == ["w1.json", "w2.json", "w3.json"]
    assert not os.path.exists(os.path.join(path, "flows"))
    callback.v2_playbook_on_stats(None)
    (step,) = json.load(open(os.path.join(path, "report.json")))["steps"]
    assert step["kind"] == "job" and step["status"] == "ok" and step["step_s"] == pytest.approx(0.180)
    assert any("=== job step 'job': 3/3 workers' programs complete" in line for line in callback._display.lines)


def switch_snapshot(label, segs, marked, dropped):
    """The experiment role's snapshot of the switch's marked ports (port_counters_info, ecn_discover, delegated to
    the switch), as Ansible hands it to a callback."""
    ecn = {"p-sink": {"packets": segs // 10, "bytes": segs * 9000, "ect": segs // 10, "not_ect": 0, "ce_in": 0,
                      "marked": marked // 10, "dropped": dropped // 10, "early_dropped": 0, "dropped_bytes": 0,
                      "segs": segs, "ect_segs": segs, "marked_segs": marked, "dropped_segs": dropped}}
    queue = {"p-sink": {"limit_bytes": 200000, "min_threshold_bytes": 60000, "max_threshold_bytes": 60000,
                        "backlog_bytes": 0, "max_backlog_bytes": 150000 if segs else 0,
                        "hist_ect": [0] * 16, "hist_marked": [0] * 16}}
    counters = {"taken_at": 1.0, "rdma": {}, "netdev": {},
                "qdisc": {"p-sink": {"qdisc": {"drops": dropped // 10}, "classes": {}}}, "ecn": ecn,
                "ecn_queue": queue}
    args = {"ecn_discover": True, "step": "barrier", "label": label}
    result = Result("sink", "aifabric.lab.port_counters_info", args,
                    {"changed": False, "counters": counters, "step": "barrier", "label": label,
                     "_ansible_delegated_vars": {"ansible_delegated_host": "switch"}})
    return result


def test_the_switchs_marked_ports_are_kept_under_the_switch_and_give_the_steps_ecn_books(callback):
    callback.v2_runner_on_ok(plan_result())
    callback.v2_runner_on_ok(switch_snapshot("before", 0, 0, 0))
    rec = record()
    # the sink's namespace counted the CE-marked segments it received: the markers' other end
    rec["hosts"]["sink"]["counters"] = {
        "before": {"taken_at": 1.0, "rdma": {}, "qdisc": {}, "netdev": {}, "ipext": {"InCEPkts": 0}},
        "after": {"taken_at": 4.0, "rdma": {}, "qdisc": {}, "netdev": {}, "ipext": {"InCEPkts": 700}},
        "interface": "eth0", "engine": "tcp"}
    callback.v2_runner_on_ok(Result("sink", ACTION, {"state": "collected", "step": "barrier", "party": "sink"},
                                    {"step": rec}))
    callback.v2_runner_item_on_ok(switch_snapshot("after", 2000, 700, 20))
    path = run_dir(callback)
    assert sorted(os.listdir(os.path.join(path, "counters", "barrier"))) == ["sink.json", "switch.json", "w1.json"]
    callback.v2_playbook_on_stats(None)
    (step,) = json.load(open(os.path.join(path, "report.json")))["steps"]
    books = step["ecn"]
    assert books["total"]["marked_segs"] == 700 and books["total"]["dropped_segs"] == 20
    assert [(c["check"], c["agrees"]) for c in books["checks"]] == [("marks", True), ("drops", True)]
    assert books["lossless"] is False
    # the drops are error counters now: the seed's "all error counters zero" no longer hides them
    assert "switch:ecn/p-sink/dropped_segs +20" in step["counters"]["verdict"]
    text = "\n".join(callback._display.lines)
    assert "  ecn                    lossy: 20 segments dropped (switch p-sink 20); 700 segments marked CE" in text
    assert "books agree: the markers marked 700 segments, the receivers counted 700 CE (InCEPkts)" in text
