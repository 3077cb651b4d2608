# -*- coding: utf-8 -*-
"""The job filters: a sweep's points (nccl-tests' sizes, one job per size and algorithm) and its table, the
measurement and the prediction beside each other."""
from __future__ import annotations

import copy

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.aifabric.lab.plugins.filter.job import job_sweep_points, job_sweep_table
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import plan

GROUPS = {"workers": ["w1", "w2", "w3", "w4"]}
HOSTVARS = {"w%d" % i: {"lab_address": "198.18.0.%d" % i, "ansible_connection": "aifabric.lab.netns"}
            for i in range(1, 5)}


def test_the_points_are_nccl_tests_sizes_one_job_per_algorithm():
    points = job_sweep_points({"minimum": "1M", "maximum": "4M", "algorithms": ["ring", "tree"], "iterations": 5}, 4)
    assert [p["name"] for p in points] == [
        "sweep-allreduce-ring-1048576", "sweep-allreduce-ring-2097152", "sweep-allreduce-ring-4194304",
        "sweep-allreduce-tree-1048576", "sweep-allreduce-tree-2097152", "sweep-allreduce-tree-4194304"]
    assert points[0]["point"]["count"] == 262144 and points[0]["point"]["redop"] == "sum"
    assert points[3]["job"] == {"iterations": 5, "compute_ms": 0, "collectives": [
        {"op": "allreduce", "size": 1048576, "window": 2, "algorithm": "tree", "chunks": 1}]}
    with pytest.raises(AnsibleFilterError, match="sweep.maximum: '1M' is below sweep.minimum"):
        job_sweep_points({"minimum": "4M", "maximum": "1M"}, 4)
    with pytest.raises(AnsibleFilterError, match="unknown: speed"):
        job_sweep_points({"speed": 1}, 4)


def test_the_table_has_the_measured_time_and_the_prediction_per_row():
    """One 4 MB ring AllReduce on 4 workers at 8 Gb/s (goodput factor 1): each of 6 steps moves 1 MB over every
    link at 1 GB/s, 6 ms in all; measured here as 10% slower (6.6 ms), by scaling the prediction's times."""
    points = job_sweep_points({"minimum": "4M", "maximum": "4M"}, 4)
    p = points[0]
    the_plan = plan({"name": p["name"], "job": p["job"]}, GROUPS, HOSTVARS, mtu=None)
    hand = the_plan.job.predict(the_plan)["results"]
    measured = {}
    for h, r in hand.items():
        r = copy.deepcopy(r)
        r["t"] = {k: [[None if x is None else x * 1.1 for x in row] for row in rows] for k, rows in r["t"].items()}
        r["iteration_end"] = [x * 1.1 for x in r["iteration_end"]]
        measured[h] = {"clients": [], "program": r}
    record = {"step": p["name"], "status": "ok", "hosts": measured}
    lines = job_sweep_table(points, [{"plan": the_plan.to_dict(), "record": record}]).splitlines()
    assert lines[0].startswith("# allreduce ring, 4 ranks (a blank time: that size's job failed")
    fields = lines[-1].split()
    # size, count, type, redop, root; time (us), algbw, busbw (x 2(n-1)/n = 1.5), #wrong; in-place alike; ptime, pbusbw
    assert fields[:5] == ["4194304", "1048576", "float", "sum", "-1"]
    # 6 steps of 1,048,576 bytes at 1e9 B/s: 6291.456 us predicted, 6920.6 us measured
    assert float(fields[5]) == pytest.approx(6920.6, rel=1e-3)
    assert fields[8] == "N/A" and fields[12] == "N/A"
    assert float(fields[13]) == pytest.approx(6291.46, rel=1e-3)
    assert float(fields[14]) == pytest.approx(1.0, rel=1e-3)  # busbw: 4194304 B / 6291.456 us x 1.5 = 1.0 GB/s
    assert float(fields[7]) == pytest.approx(1.0 / 1.1, abs=0.005)  # printed with 2 decimals
    # a point that never ran: its row has no figures
    assert job_sweep_table(points, []).splitlines()[-1].split() == ["4194304", "1048576", "float", "sum", "-1",
                                                                    "N/A", "N/A"]
