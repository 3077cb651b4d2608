# -*- coding: utf-8 -*-
"""The flow_step action's progress display: the line it prints, and when it asks (the queries themselves run against
real step processes in tests/unit/plugins/module_utils/_flow/test_flow_step.py and the barrier_e2e integration
target)."""
from __future__ import annotations

from ansible_collections.aifabric.lab.plugins.action import flow_step as action


def test_the_progress_line_names_each_flow_its_bytes_rate_and_the_time_left():
    prog = {"elapsed_s": 3.04, "remaining_s": 1.52, "flows": [
        {"host": "worker1", "flow_id": "worker1", "done": True},
        {"host": "worker3", "flow_id": "worker3", "done": False, "bytes": 743_000_000, "gbps": 1.98, "share": 0.3715},
        {"host": "worker4", "flow_id": "worker4->sink2", "done": False, "bytes": 10, "gbps": None, "share": None},
        {"host": "w5", "flow_id": "w5", "done": False}]}
    assert action.progress_line("barrier", prog) == (
        "[barrier   3.0 s] worker1 done | worker3 743.00 MB 1.98 Gb/s 37% | worker4->sink2 10 B - | "
        "w5 running (no interval samples); ~1.5 s left at these rates")


class Scripted(action.ActionModule):
    """The action with the coordinating host's answers scripted, to check when it asks and what it prints."""

    def __init__(self, answers):  # noqa: D107  (no Ansible task machinery needed for the loop)
        self.answers = list(answers)
        self.queries = []

    def _execute_module(self, module_args=None, task_vars=None, **kw):
        self.queries.append(dict(module_args))
        return self.answers.pop(0)


def test_the_first_query_watches_then_lines_are_printed_once_a_second_until_done(monkeypatch):
    printed = []
    monkeypatch.setattr(action.display, "display", printed.append)
    monkeypatch.setattr(action.time, "sleep", lambda s: None)
    running = {"phase": "running", "done": False, "flows": [], "remaining_s": None}
    act = Scripted([dict(running, elapsed_s=0.3), dict(running, elapsed_s=1.3), dict(running, elapsed_s=2.3),
                    {"done": True, "phase": "ended"}])
    act._show_progress({"state": "collected", "step": "barrier", "progress": True, "timeout": 10}, {})
    assert [q["watch"] for q in act.queries] == [True, False, False, False]
    assert all(q["state"] == "progress" for q in act.queries)
    # nothing for the first second (a short step prints nothing), then a line per answer
    assert printed == ["[barrier   1.3 s] no flow sample yet", "[barrier   2.3 s] no flow sample yet"]


def test_a_failed_query_ends_the_display_not_the_step(monkeypatch):
    monkeypatch.setattr(action.time, "sleep", lambda s: None)
    act = Scripted([{"failed": True, "msg": "unreachable"}])
    act._show_progress({"state": "collected", "step": "s", "timeout": 10}, {})
    assert len(act.queries) == 1


def test_trouble_in_the_display_is_a_warning_and_the_step_is_still_collected(monkeypatch):
    warned = []
    monkeypatch.setattr(action.display, "warning", warned.append)

    class Broken(Scripted):
        def _execute_module(self, module_args=None, task_vars=None, **kw):
            raise ConnectionError("the coordinating host went away")

    Broken([])._show_progress({"state": "collected", "step": "s", "timeout": 10}, {})
    assert warned == ["flow_step: the progress display stopped (ConnectionError: the coordinating host went away); "
                      "collecting the step"]


def test_a_step_with_hosts_that_never_arm_is_collected_at_once_without_a_display(monkeypatch):
    """``missing`` hosts: the collect aborts the step at once; watching it first would wait for the arm timeout."""

    class Run(action.ActionModule):
        def __init__(self, args):  # noqa: D107
            self._task = type("Task", (), {"args": args, "check_mode": False, "async_val": 0})()
            self._connection = type("Conn", (), {"has_native_async": False,
                                                 "_shell": type("Shell", (), {"tmpdir": None})()})()
            self.calls = []

        def _execute_module(self, module_args=None, task_vars=None, **kw):
            self.calls.append(module_args["state"])
            return {"step": {"status": "aborted"}}

        def _remove_tmp_path(self, path):
            pass

    monkeypatch.setattr(action.ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    act = Run({"state": "collected", "step": "s", "progress": True, "missing": ["worker3"]})
    assert act.run(task_vars={}) == {"step": {"status": "aborted"}}
    assert act.calls == ["collected"]
    act = Run({"state": "collected", "step": "s", "progress": True, "missing": []})
    monkeypatch.setattr(act, "_show_progress", lambda args, task_vars: act.calls.append("progress"))
    act.run(task_vars={})
    assert act.calls == ["progress", "collected"]
