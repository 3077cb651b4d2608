# -*- coding: utf-8 -*-
"""The test report in the BMWG draft's section-13 order: the DUT and hosts identified, topology, QoS and load
balancing, host configuration, anomalies, and the repeatability statement (CV computed by hand)."""
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import plan
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.bmwg import SECTIONS, cv
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.build import build_report
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.formats import report_markdown
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.html import report_html
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.text import render_text
from ansible_collections.aifabric.lab.plugins.plugin_utils._run.model import build_run, step_plans

PLAN = plan({"name": "barrier", "steps": 3, "throttles": {"w2": "2gbit"}},
            {"workers": ["w1", "w2"], "sinks": ["sink"]},
            {"sink": {"lab_address": "198.18.0.1"}, "w1": {"lab_address": "198.18.0.11"},
             "w2": {"lab_address": "198.18.0.12"}})
NIC = {"interface": "eth0", "driver": "mlx5_core", "driver_version": "24.10", "firmware": "22.41.1000",
       "pci": {"address": "0000:3b:00.0", "id": "15b3:101d", "numa_node": 0}, "speed_mbps": 100000, "mtu": 9000}
LAB = {"controller": {"kernel": "6.1.0-28-amd64", "python": "3.13.0", "ansible_core": "2.21.5", "collection": "0.6.0"},
       "hosts": {"w1": {"kernel": "6.1.0-28-amd64", "nic": NIC}, "w2": {"kernel": "6.1.0-28-amd64"}}}


def test_cv_is_the_sample_standard_deviation_over_the_mean():
    # 4.0, 4.2, 4.4: mean 4.2; deviations -0.2, 0, 0.2 -> sum of squares 0.08 / (3 - 1) = 0.04 -> sigma 0.2
    assert cv([4.0, 4.2, 4.4]) == {"iterations": 3, "mean": 4.2, "stdev": 0.2, "cv": pytest.approx(0.047619)}
    assert cv([4.0]) is None and cv([]) is None


def _run(times, w2_status="ok"):
    records = {}
    for k, (step, t) in enumerate(zip(PLAN.steps, times)):
        records[step] = [{"host": "w1", "flow_id": "w1", "status": "ok", "completion_s": 2.0, "bytes": 10 ** 9,
                          "gbps": 4.0, "start": 100.0 + k},
                         {"host": "w2", "flow_id": "w2", "status": w2_status if k == 2 else "ok",
                          "error": None if k < 2 or w2_status == "ok" else "connection reset",
                          "completion_s": t, "bytes": 10 ** 9, "gbps": 8.0 / t if t else None, "start": 100.0 + k}]
    return build_run(records, step_plans(PLAN.with_applied({"w2": "tc htb on eth0's egress"})),
                     experiments=[PLAN], lab=LAB,
                     events={PLAN.steps[0]: {"refused": [{"peer": "198.18.0.99", "reason": "bad token", "count": 2,
                                                          "by": "the rendezvous on sink"}]}})


def test_every_section_in_the_drafts_order_with_what_the_run_recorded():
    report = build_report(_run([4.0, 4.2, 4.4]))
    tr = report["test_report"]
    assert tr["order"] == list(SECTIONS) == ["dut", "topology", "configuration", "hosts", "anomalies",
                                             "repeatability"]
    assert tr["dut"]["controller"]["ansible_core"] == "2.21.5"
    assert tr["dut"]["hosts"]["w1"]["nic"]["firmware"] == "22.41.1000"
    assert tr["dut"]["hosts"]["w2"] == {"kernel": "6.1.0-28-amd64", "nic": None}
    assert tr["dut"]["hosts"]["sink"] == {"kernel": None, "nic": None}
    (topology,) = tr["topology"]
    assert topology["pattern"] == "incast" and topology["hosts"] == ["sink", "w1", "w2"]
    (config,) = tr["configuration"]
    assert config["qos"]["throttles"] == {"w2": {"rate": "2gbit", "applied": "tc htb on eth0's egress"}}
    assert config["load_balancing"]["hash"] is None and config["load_balancing"]["streams_per_flow"] == 1
    assert tr["hosts"]["w2"]["address"] == "198.18.0.12"
    assert tr["anomalies"] == ["step barrier-1: 2 connections refused from peers that are not the step's "
                               "(198.18.0.99)"]
    (rep,) = tr["repeatability"]
    assert rep["iterations"] == 3 and rep["mean"] == 4.2 and rep["stdev"] == 0.2
    assert rep["statement"] == "step_s over 3 iterations: mean 4.200000 s, standard deviation 0.200000 s, CV 4.76%"
    text = render_text(report)
    block = text[text.index("=== test report"):]
    labels = [line[2:24].strip() for line in block.splitlines()[1:] if line[2:24].strip()]
    assert labels == ["DUT and hosts", "switches", "topology", "QoS", "load balancing", "host configuration",
                      "anomalies", "repeatability"]
    assert "w1: kernel 6.1.0-28-amd64; NIC eth0: driver mlx5_core 24.10, firmware 22.41.1000, PCI 0000:3b:00.0 " \
           "(15b3:101d), NUMA node 0, 100000 Mb/s, MTU 9000" in block
    assert "| repeatability | barrier: step_s over 3 iterations" in report_markdown(report)
    assert '<section class="test-report" id="test-report">' in report_html(report)


def test_a_failed_iteration_is_an_anomaly_and_left_out_of_the_repeatability():
    tr = build_report(_run([4.0, 4.2, None], w2_status="error"))["test_report"]
    assert "step barrier-3: w2 error: connection reset" in tr["anomalies"]
    (rep,) = tr["repeatability"]
    assert rep["planned"] == 3 and rep["ok"] == 2 and rep["iterations"] == 2
    assert rep["cv"] == pytest.approx(0.034493, abs=1e-6)  # 4.0, 4.2: sigma 0.141421 / mean 4.1
