# -*- coding: utf-8 -*-
"""The coordinator's record read into flows, counters and starts, in one place: which cause is kept, what is written,
how the step started; the gates read the same records the same way."""
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import plan
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.records import (
    Collector,
    applied_throttles,
    run_from_records,
    start_summary,
)

PLAN = plan({"name": "barrier", "throttles": {"w2": "2gbit"}}, {"workers": ["w1", "w2"], "sinks": ["sink"]},
            {"sink": {"lab_address": "198.18.0.1"}, "w1": {"lab_address": "198.18.0.11"},
             "w2": {"lab_address": "198.18.0.12"}})


class Writer:
    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda *args: self.calls.append((name,) + args)


def record(**kw):
    out = {"step": "barrier", "status": "ok", "mode": "rendezvous", "started_at": 90.0,
           "fire": {"at": 100.0, "margin_s": 0.002, "probe_fanout_s": [0.0003], "armed_last_at": 99.9},
           "parties": {"sink": {"armed_at": 99.5, "offset_s": 0.0, "rtt_s": 0.0001, "fire_sent_at": 99.997},
                       "w1": {"armed_at": 99.8, "offset_s": 2e-5, "rtt_s": 0.0002, "fire_sent_at": 99.998},
                       "w2": {"armed_at": 99.9, "fire_sent_at": 99.999}},
           "hosts": {"sink": {"clients": []},
                     "w1": {"clients": [{"flow_id": "w1", "status": "ok", "completion_s": 2.0}],
                            "counters": {"before": {"netdev": {}}, "after": {"netdev": {}}, "interface": "eth0"},
                            "kernel": "6.1.0-28"}},
           "expected_flows": {"w1": ["w1"], "w2": ["w2"]}}
    out.update(kw)
    return out


def test_a_step_record_becomes_flows_counters_a_kernel_and_a_start():
    writer = Writer()
    collected = Collector(writer, planned=lambda step: True, clock=lambda: 5.0)
    collected.add_step_record(record(parties=dict(record()["parties"], w2={"lost": "SIGKILL"})))
    w1, w2 = collected.flows["barrier"][("w1", "w1")], collected.flows["barrier"][("w2", "w2")]
    assert w1 == {"flow_id": "w1", "status": "ok", "completion_s": 2.0, "host": "w1", "step": "barrier",
                  "received_at": 5.0}
    # w2 never reported: the coordinator's view of why, said to come from the rendezvous
    assert w2["status"] == "error" and w2["cause_from"] == "rendezvous"
    assert w2["error"] == "its step process ended without a result (SIGKILL): killed, crashed or cut off"
    assert collected.counters["barrier"]["w1"] == {"step": "barrier", "host": "w1", "before": {"netdev": {}},
                                                   "after": {"netdev": {}}, "interface": "eth0"}
    assert [c[0] for c in writer.calls] == ["add_flow", "add_counters", "set_kernel", "add_flow", "add_start"]
    assert ("set_kernel", "w1", "6.1.0-28") in writer.calls
    # by hand (w2 lost: it never armed): armed 99.5 .. 99.8 (spread 0.3 s), 9.8 s after the rendezvous opened at
    # 90.0; the last fire message left 100.0 - 99.998 = 0.002 s ahead of the instant, 0.1 s after the last arm
    start = collected.starts["barrier"]
    assert start["arm_spread_s"] == pytest.approx(0.3) and start["armed_after_s"] == pytest.approx(9.8)
    assert start["last_fire_sent_ahead_s"] == pytest.approx(0.002)
    assert start["fire_after_armed_s"] == pytest.approx(0.1)
    assert start["hosts"] == {"sink": {"offset_s": 0.0, "rtt_s": 0.0001}, "w1": {"offset_s": 2e-5, "rtt_s": 0.0002},
                              "w2": {}}


def test_the_hosts_own_account_replaces_the_coordinators_but_not_the_cleanups():
    collected = Collector()
    collected.add_step_record(record(status="aborted", error="w2 did not arm", fire=None))
    assert collected.flows["barrier"][("w2", "w2")]["error"] == "did not arm: w2 did not arm"
    own = {"clients": [{"flow_id": "w2", "status": "not_started", "error": "no rendezvous answered"}]}
    collected.add_part("barrier", "w2", own, fill_only=True)
    assert collected.flows["barrier"][("w2", "w2")]["error"] == "no rendezvous answered"
    # a later failure of a flow that already failed: the first cause stays
    collected.add_part("barrier", "w2", {"clients": [{"flow_id": "w2", "status": "error", "error": "later"}]})
    assert collected.flows["barrier"][("w2", "w2")]["error"] == "no rendezvous answered"
    # the cleanup's "stopped" does not replace a host's cause
    stopped = {"clients": [{"flow_id": "w1", "status": "not_started", "cause_from": "stop", "error": "stopped"}]}
    collected.add_part("barrier", "w1", stopped, fill_only=True)
    assert collected.flows["barrier"][("w1", "w1")]["status"] == "ok"


def test_annotations_are_kept_only_for_a_step_no_plan_describes():
    collected = Collector(planned=lambda step: step == "barrier")
    ann = {"path": [{"link": "a->b", "rate": "8gbit"}]}
    collected.add_flow("barrier", "w1", {"flow_id": "w1", "status": "ok", "annotations": ann})
    collected.add_flow("manual", "w1", {"flow_id": "w1", "status": "ok", "annotations": ann})
    assert "annotations" not in collected.flows["barrier"][("w1", "w1")]
    assert collected.flows["manual"][("w1", "w1")]["annotations"] == ann


def test_the_fabrics_snapshots_pair_before_with_after():
    collected = Collector()
    collected.add_fabric_counters({"step": "s", "label": "before", "switches": {"leaf1": {"netdev": {"s1": 1}}}})
    assert collected.counters == {}
    after = {"leaf1": {"netdev": {"s1": 9}}, "leaf2": {"netdev": {}}}
    collected.add_fabric_counters({"step": "s", "label": "after", "switches": after})
    assert collected.counters == {"s": {"leaf1": {"step": "s", "host": "leaf1", "before": {"netdev": {"s1": 1}},
                                                  "after": {"netdev": {"s1": 9}}}}}


def test_the_gates_read_the_records_as_the_callback_does():
    run = run_from_records([record(), "not a record"], PLAN, applied_throttles(
        [{"item": "w2", "description": "tc htb on eth0's egress"}, {"item": "w1", "failed": True, "description": "x"}]))
    (step,) = run.steps
    assert [(f.host, f.status, f.cause_from) for f in step.flows] == [("w1", "ok", None), ("w2", "error", "rendezvous")]
    assert step.plan.flow("w2").throttle_mechanism == "w2: tc htb on eth0's egress"
    assert step.start == start_summary(record()) and run.experiments == [PLAN]


def test_the_peers_refused_and_the_results_that_survived_are_kept_with_the_step():
    """What the hosts saw beside the flows reaches the run record: the rendezvous' refusals (named by the host that
    coordinates), each flow server's, a host that could not keep its own copy, and which results survived a
    coordinator that died (its record assembled from the results it had stored)."""
    writer = Writer()
    collected = Collector(writer)
    stray = {"peer": "198.18.0.11", "reason": "bad token", "count": 3, "first_at": 1.0, "last_at": 2.0}
    sink = {"clients": [], "servers": [{"address": "198.18.0.1", "port": 18600, "rejected_unlisted": 2, "rejected": [
        {"peer": "198.18.0.11", "reason": "no hello within 5 s", "count": 1}]}]}
    hosts = dict(record()["hosts"], sink=sink)
    hosts["w1"] = dict(hosts["w1"], result_file_error="OSError: [Errno 28] No space left on device")
    collected.add_step_record(record(hosts=hosts, rejected=[stray], rejected_unlisted=0), coordinator="sink")
    events = collected.events["barrier"]
    assert events["refused"] == [
        {"peer": "198.18.0.11", "reason": "no hello within 5 s", "count": 1,
         "by": "the flow server at 198.18.0.1:18600 on sink"},
        {"peer": "198.18.0.11", "reason": "bad token", "count": 3, "by": "the rendezvous on sink"}]
    assert events["refused_unlisted"] == {"the flow server at 198.18.0.1:18600 on sink": 2}
    assert events["result_file_errors"] == {"w1": "OSError: [Errno 28] No space left on device"}
    assert "results" not in events
    # the same record again (another host's clean-up returns it): nothing new, nothing written twice
    calls = [c for c in writer.calls if c[0] == "add_events"]
    collected.add_step_record(record(hosts=hosts, rejected=[stray]), fill_only=True)
    assert [c for c in writer.calls if c[0] == "add_events"] == calls
    # the coordinator died: the record the clean-up assembled says whose results survived
    collected.add_step_record({"step": "barrier", "status": "failed", "recovered": True, "survived": ["w1"],
                               "lost": ["w2"], "hosts": {}, "parties": {}, "rejected": [],
                               "store_errors": {"w2": "OSError: EIO"}}, fill_only=True)
    events = collected.events["barrier"]
    assert events["results"] == {"survived": ["w1"], "lost": ["w2"]}
    assert events["store_errors"] == {"w2": "OSError: EIO"}
    assert writer.calls[-1] == ("add_events", "barrier", events)
