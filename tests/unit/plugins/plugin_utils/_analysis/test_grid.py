# -*- coding: utf-8 -*-
"""The incast sweep's grid: cells by buffer and mode, rows by N, each column's goodput cliff
(plugin_utils/_analysis/grid.py); and the experiment summaries' goodput and efficiency it reads (_report/build.py)."""
from __future__ import annotations

from types import SimpleNamespace

from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.grid import incast_grid
from ansible_collections.aifabric.lab.plugins.plugin_utils._report.build import summarize_experiment


def books(eff, rtos=0, drops=0, marks=0, step=1.0):
    return {"steps": 2, "total": {"segs": 100, "ect_segs": 100, "marked_segs": marks, "dropped_segs": drops},
            "retransmits": drops, "rto_timeouts": rtos, "lossless": drops == 0,
            "step_s": {"p50": step}, "efficiency": {"p50": eff}, "goodput_gbps": {"p50": 0.9 * eff},
            "fct_s": {"p99": step}}


def cell(n, buffer, mode, eff, **kw):
    return {"name": "incast-n%d-%s-%s" % (n, buffer, mode), "steps": 2, "failed_steps": [],
            "labels": {"n": n, "buffer": buffer, "mode": mode}, "ecn": books(eff, **kw)}


def test_the_cells_are_laid_out_by_buffer_then_mode_and_the_cliff_is_the_first_n_below_0_8():
    """50KB tail drop: N=2 0.95, N=4 0.90, N=8 0.60 (< 0.8) with 12 RTO expiries: the cliff is N=8, the last good
    N=4. 50KB marked: 0.95, 0.94, 0.93: no cliff. 200KB tail drop: 0.95 and 0.81: no cliff either."""
    experiments = [
        cell(8, "50KB", "taildrop", 0.60, rtos=12, drops=300), cell(2, "50KB", "taildrop", 0.95),
        cell(4, "50KB", "taildrop", 0.90, drops=20), cell(2, "200KB", "taildrop", 0.95),
        cell(8, "200KB", "taildrop", 0.81, drops=50), cell(2, "50KB", "ecn", 0.95, marks=40),
        cell(4, "50KB", "ecn", 0.94, marks=80), cell(8, "50KB", "ecn", 0.93, marks=90),
        {"name": "unlabelled", "steps": 1, "ecn": books(0.1)},
    ]
    grid = incast_grid(experiments)
    assert [(c["buffer"], c["mode"]) for c in grid["columns"]] == [
        ("50KB", "taildrop"), ("50KB", "ecn"), ("200KB", "taildrop")]
    first = grid["columns"][0]
    assert [r["n"] for r in first["rows"]] == [2, 4, 8]
    assert first["best_efficiency"] == 0.95
    assert first["cliff"] == {"n": 8, "efficiency": 0.60, "rto_timeouts": 12, "dropped_segs": 300, "failed_steps": 0,
                              "last_good_n": 4}
    assert grid["columns"][1]["cliff"] is None and grid["columns"][2]["cliff"] is None
    assert first["rows"][2]["goodput_gbps"] == 0.54 and first["rows"][2]["buffer_bytes"] == 50_000


def test_a_cell_whose_steps_failed_is_off_the_cliff_and_keeps_its_row():
    """N=8's steps timed out: no books, so no figures, but the row stays and the column's cliff names it."""
    failed = {"name": "incast-n8-50KB-taildrop", "steps": 2, "failed_steps": [{"step": "a"}, {"step": "b"}],
              "labels": {"n": 8, "buffer": "50KB", "mode": "taildrop"}}
    grid = incast_grid([cell(2, "50KB", "taildrop", 0.95), failed])
    row = grid["columns"][0]["rows"][1]
    assert (row["efficiency"], row["failed_steps"], row["lossless"]) == (None, 2, None)
    assert grid["columns"][0]["cliff"]["n"] == 8 and grid["columns"][0]["cliff"]["failed_steps"] == 2


def test_one_labelled_cell_is_no_grid():
    assert incast_grid([cell(2, "50KB", "taildrop", 0.95), {"name": "x", "steps": 1}]) is None


def test_the_summary_gives_goodput_over_the_step_and_the_fair_shares_step_over_the_measured():
    """Two ok steps of 4 workers x 50 MB: 1.6 Gb in 2.0 s is 0.8 Gb/s, in 1.6 s 1.0 Gb/s; the fair share's step
    (1.6 s predicted) over the measured: 0.8 and 1.0."""
    def step(name, step_s):
        return {"step": name, "status": "ok", "step_s": step_s, "predicted_step_s": 1.6,
                "straggler": {"host": "w1"},
                "workers": [{"host": "w%d" % i, "bytes": 50_000_000, "completion_s": step_s, "idle_s": 0.0}
                            for i in range(1, 5)],
                "ecn": {"total": {"segs": 10, "ect_segs": 10, "marked_segs": 5, "dropped_segs": 0},
                        "peak_queue_bytes": 1, "retransmits": 0, "rto_timeouts": 0, "lossless": True, "checks": []}}
    experiment = SimpleNamespace(name="incast-n4-50KB-ecn", pattern="incast", steps=["s1", "s2"], collective=None,
                                 job=None, labels={"n": 4, "buffer": "50KB", "mode": "ecn"})
    out = summarize_experiment(experiment, [step("s1", 2.0), step("s2", 1.6)])
    assert out["labels"] == {"n": 4, "buffer": "50KB", "mode": "ecn"}
    assert (out["ecn"]["goodput_gbps"]["min"], out["ecn"]["goodput_gbps"]["max"]) == (0.8, 1.0)
    assert (out["ecn"]["efficiency"]["min"], out["ecn"]["efficiency"]["max"]) == (0.8, 1.0)


def test_the_text_report_lays_the_grid_out_and_names_the_cliff():
    from ansible_collections.aifabric.lab.plugins.plugin_utils._report.text import render_text

    failed = {"name": "incast-n8-50KB-taildrop", "steps": 2, "failed_steps": [{"step": "a"}, {"step": "b"}],
              "labels": {"n": 8, "buffer": "50KB", "mode": "taildrop"}}
    experiments = [cell(2, "50KB", "taildrop", 0.95), cell(4, "50KB", "taildrop", 0.60, rtos=12, drops=300),
                   failed, cell(2, "50KB", "ecn", 0.95, marks=40), cell(4, "50KB", "ecn", 0.94, marks=80)]
    text = render_text({"steps": [], "experiments": [], "incast_grid": incast_grid(experiments)})
    assert "=== incast grid" in text
    assert "  buffer 50KB, taildrop: cliff at N=4 (efficiency 0.600, 12 RTO expiries, 300 drops; last good N=2)" \
        in text
    assert "  buffer 50KB, ecn: no cliff up to N=4" in text
    lines = text.splitlines()
    assert any(line.split()[:3] == ["4", "1.000", "s"] and line.split()[3:5] == ["0.600", "0.540"] for line in lines)
    assert any(line.split()[0] == "8" and line.rstrip().endswith("2 of 2 steps failed") for line in lines)


def test_a_column_below_the_cliff_at_its_smallest_n_says_so():
    """50KB: 0.06 at N=2 and 0.10 at N=4 - the whole column is below 0.8; the cliff is its first row, with no last
    good N, and the text says the column starts below it."""
    from ansible_collections.aifabric.lab.plugins.plugin_utils._report.text import render_text

    grid = incast_grid([cell(2, "50KB", "taildrop", 0.062, rtos=90, drops=3648),
                        cell(4, "50KB", "taildrop", 0.096, rtos=310, drops=7905)])
    assert grid["columns"][0]["cliff"]["n"] == 2 and grid["columns"][0]["cliff"]["last_good_n"] is None
    text = render_text({"steps": [], "experiments": [], "incast_grid": grid})
    assert "  buffer 50KB, taildrop: below the cliff from the smallest N=2 (efficiency 0.062, 90 RTO expiries, 3648 " \
        "drops)" in text
