# -*- coding: utf-8 -*-
"""What a step's hosts saw beside its flows, as the report shows it (sentences written by hand)."""
from __future__ import annotations

from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.events import report_events


def test_nothing_to_say_adds_nothing():
    assert report_events(None) == {}
    assert report_events({}) == {}


def test_refusals_are_listed_and_counted_with_those_past_the_list():
    out = report_events({"refused": [{"peer": "198.18.8.11", "reason": "bad token", "count": 3, "by": "the rendezvous"},
                                     {"peer": "198.18.8.11", "reason": "silent", "count": 1, "by": "the flow server"}],
                         "refused_unlisted": {"the rendezvous": 40, "the flow server": 2}})
    assert [r["reason"] for r in out["refused"]] == ["bad token", "silent"]
    assert out["refused_total"] == 3 + 1 + 40 + 2
    assert "anomalies" not in out


def test_a_dead_coordinator_names_the_survivors_and_the_lost_and_a_host_that_kept_no_copy_is_an_anomaly():
    out = report_events({"results": {"survived": ["worker1", "worker2"], "lost": ["worker3"]},
                         "result_file_errors": {"worker2": "OSError: [Errno 28] No space left on device"},
                         "store_errors": {"step": "OSError: EROFS"}})
    assert out["results"] == {
        "survived": ["worker1", "worker2"], "lost": ["worker3"],
        "sentence": "the coordinator died: the results of worker1, worker2 survived (stored before they were "
                    "acknowledged); lost: worker3 (never stored; a host not acknowledged keeps its own copy)"}
    assert out["anomalies"] == [
        "worker2 could not keep its own copy of its result (OSError: [Errno 28] No space left on device); it "
        "reached the coordinator over the network",
        "the coordinator could not store the step's header durably (OSError: EROFS)"]
    assert report_events({"results": {"survived": [], "lost": ["w1"]}})["results"]["sentence"].startswith(
        "the coordinator died: no host's result survived; lost: w1")
