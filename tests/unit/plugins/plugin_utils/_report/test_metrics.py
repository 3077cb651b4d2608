# -*- coding: utf-8 -*-
"""metrics.prom: read back by prometheus_client's parsers (OpenMetrics, and the Prometheus text format node_exporter's
textfile collector reads), its figures those of report.json (the golden copies, written apart), and the Grafana
dashboard in docs/grafana/ queries only the families it writes."""
from __future__ import annotations

import json
import os
import re
import shutil

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.build import analyze_run
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.metrics import METRICS, metrics_text

# prometheus_client is pinned in requirements-test.txt (and installed in every matrix venv): missing, it is an error
from prometheus_client import parser as text_parser
from prometheus_client.openmetrics import parser

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".."))
FIXTURES = os.path.join(ROOT, "tests", "unit", "plugins", "plugin_utils", "fixtures")
GOLDEN = os.path.join(FIXTURES, "golden")
RUNS = ("history/20261130T180103-demo", "history/20261130T185009-demo", "run-v1-demo")
DASHBOARD = os.path.join(ROOT, "docs", "grafana", "aifabric-lab.json")


def _metrics(tmp_path, name):
    run = str(tmp_path / os.path.basename(name))
    shutil.copytree(os.path.join(FIXTURES, name), run)
    return metrics_text(analyze_run(run))


def _samples(text):
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in parser.text_string_to_metric_families(text) for s in family.samples}


@pytest.mark.parametrize("name", RUNS)
def test_every_run_parses_as_openmetrics_and_as_the_prometheus_text_format(tmp_path, name):
    text = _metrics(tmp_path, name)
    assert text.endswith("\n# EOF\n")
    families = list(parser.text_string_to_metric_families(text))
    assert families and all(f.type == "gauge" and f.name in METRICS for f in families)
    # node_exporter's textfile collector and a Pushgateway read the Prometheus text format: the same samples
    older = {(s.name, tuple(sorted(s.labels.items()))): s.value
             for f in text_parser.text_string_to_metric_families(text) for s in f.samples}
    assert older == _samples(text)


@pytest.mark.parametrize("name", RUNS)
def test_the_figures_are_report_jsons(tmp_path, name):
    samples = _samples(_metrics(tmp_path, name))
    with open(os.path.join(GOLDEN, os.path.basename(name), "report.json")) as handle:
        report = json.load(handle)
    by_step = {}
    for (metric, labels), value in samples.items():
        labels = dict(labels)
        if metric == "aifabric_step_seconds":
            by_step[labels["step"]] = value
        if metric == "aifabric_worker_completion_seconds":
            step = next(s for s in report["steps"] if s["step"] == labels["step"])
            worker = next(w for w in step["workers"] if w["host"] == labels["host"])
            assert value == pytest.approx(worker["completion_s"])
    assert by_step == {s["step"]: pytest.approx(s["step_s"]) for s in report["steps"] if s["step_s"] is not None}
    assert by_step, "no step time in metrics.prom"
    ok = [v for (m, _labels), v in samples.items() if m == "aifabric_run_ok"]
    assert ok == [1.0 if report["status"] == "ok" else 0.0]


def test_a_label_value_with_quotes_backslashes_and_a_newline_reads_back_as_it_was(tmp_path):
    report = {"run_dir": str(tmp_path / "20261201T120000-x"), "status": "ok", "steps": [
        {"step": 'say "hi"\\\nthere', "kind": "barrier", "status": "ok", "step_s": 1.5, "workers": []}]}
    samples = _samples(metrics_text(report))
    ((labels, value),) = [(dict(k[1]), v) for k, v in samples.items() if k[0] == "aifabric_step_seconds"]
    assert labels["step"] == 'say "hi"\\\nthere' and value == 1.5


def test_the_dashboard_loads_and_queries_only_what_metrics_prom_writes(tmp_path):
    with open(DASHBOARD) as handle:
        dashboard = json.load(handle)
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets") or []]
    exprs += [v["definition"] for v in dashboard["templating"]["list"]]
    queried = {name for e in exprs for name in re.findall(r"\baifabric_[a-z_]+", e)}
    assert queried and queried <= set(METRICS), sorted(queried - set(METRICS))
    written = {f.name for f in parser.text_string_to_metric_families(metrics_text(FULL))}
    assert queried <= written


# A report with every figure metrics.prom writes (its shape that of report.json: docs/report-schema.md)
FULL = {
    "run_dir": "/runs/20261201T120000-demo", "status": "failed",
    "gates": {"status": "broken", "broken": ["step allreduce.1: gate healthy_idle_share 33.7% > 5.0%"]},
    "steps": [{"step": "allreduce.1", "kind": "barrier", "status": "ok", "step_s": 4.0, "predicted_step_s": 4.1,
               "fair_step_s": 3.0, "mean_completion_s": 3.0, "unthrottled_idle_share": 0.33,
               "throttled_idle_share": 0.1, "idle_worker_seconds": 2.0, "aggregate_gbps": 6.0, "start_skew_s": 0.0002,
               "straggler": {"host": "w3", "completion_s": 4.0, "behind_next_s": 1.0},
               "refused": [{"peer": "198.18.0.99", "reason": "bad token", "count": 2, "by": "the rendezvous"}],
               "refused_total": 2,
               "counters": {"verdict": "error counters zero", "disagreements": [],
                            "hosts": {"w3": {"errors": {}, "congestion": {"qdisc/eth0/overlimits": 7}}}},
               "workers": [{"host": "w3", "completion_s": 4.0, "idle_share": 0.0, "gbps": 2.0}],
               # leaf1's uplinks carried 3 and 1 elephants (3 GB and 1 GB): MMR 3 / 2 = 1.5, JFI 16 / (2 * 10) = 0.8
               "fabric": {"load_balance": {"sets": [
                   {"set": "leaf1->*", "tier": "uplink", "links": ["leaf1->spine1", "leaf1->spine2"], "flows": [3, 1],
                    "bytes": [3000000000, 1000000000], "flows_mmr": 1.5, "flows_jfi": 0.8, "bytes_mmr": 1.5,
                    "bytes_jfi": 0.8}]}}},
              {"step": "job", "kind": "job", "status": "ok", "step_s": 2.0, "predicted_step_s": 1.98,
               "straggler": {"host": "w3", "cause": "its path throttled"},
               "workers": [{"host": "w3", "completion_s": 2.0, "idle_share": 0.0}],
               "job": {"jct_s": 2.0, "predicted_jct_s": 1.98, "cv": 0.01, "max_deviation": -0.015,
                       "iterations": {"n": 20, "min": 0.09, "mean": 0.1, "p50": 0.1, "p90": 0.104, "p99": 0.11,
                                      "max": 0.11},
                       "roofline": {"jct_ratio": 1.25},
                       "collectives": [{"index": 0, "op": "allreduce", "algorithm": "ring", "busbw_GBps": 0.5}]}}],
    "experiments": [{"name": "allreduce", "pattern": "ring", "steps": 2,
                     "series": [{"step": "allreduce.1"}, {"step": "allreduce.2"}],
                     "step_s": {"p50": 4.0, "p90": 4.0, "p99": 4.0, "min": 4.0, "max": 4.0, "mean": 4.0},
                     "collective": {"name": "allreduce", "repetitions": [
                         {"repetition": 1, "status": "ok", "time_s": 8.0, "algbw_GBps": 0.125, "busbw_GBps": 0.25}]}}],
    "test_report": {"repeatability": [{"experiment": "allreduce", "cv": 0.02}]},
}


def test_every_family_is_written_when_its_figure_exists():
    text = metrics_text(FULL)
    assert {f.name for f in parser.text_string_to_metric_families(text)} == set(METRICS)
    samples = _samples(text)
    rep = (("collective", "allreduce"), ("experiment", "allreduce"), ("pattern", "ring"), ("repetition", "1"),
           ("run", "20261201T120000-demo"))
    assert samples[("aifabric_collective_busbw_bytes_per_second", rep)] == 0.25e9
    assert samples[("aifabric_run_ok", (("run", "20261201T120000-demo"),))] == 0.0
    job = (("experiment", "job"), ("kind", "job"), ("pattern", ""), ("run", "20261201T120000-demo"), ("step", "job"))
    assert samples[("aifabric_job_jct_seconds", job)] == 2.0
    assert samples[("aifabric_job_iteration_seconds", tuple(sorted(job + (("stat", "p99"),))))] == 0.11
    assert samples[("aifabric_job_jct_ratio", job)] == 1.25
    assert samples[("aifabric_job_collective_busbw_bytes_per_second",
                    tuple(sorted(job + (("algorithm", "ring"), ("collective", "0"), ("op", "allreduce")))))] == 0.5e9
    lb = (("by", "bytes"), ("experiment", "allreduce"), ("kind", "barrier"), ("pattern", "ring"),
          ("run", "20261201T120000-demo"), ("set", "leaf1->*"), ("step", "allreduce.1"))
    assert samples[("aifabric_step_fabric_mmr_ratio", lb)] == 1.5
    assert samples[("aifabric_step_fabric_jfi_ratio", lb)] == 0.8
    # a job's straggler names who was waited for, not a completion: no straggler seconds for it
    assert not [k for k in samples if k[0] == "aifabric_step_straggler_seconds" and ("step", "job") in k[1]]
