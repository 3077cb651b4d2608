# -*- coding: utf-8 -*-
"""A variant's switch-port books from the ecn_marker loop's results before and after it (hand-made results in the
module's RETURN shape), and the side-by-side table."""
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._congestion import (
    CongestionError,
    incast_cells,
    port_deltas,
    side_by_side,
)


def result(device, **counts):
    base = {"packets": 0, "segs": 0, "ect_segs": 0, "marked_segs": 0, "dropped_segs": 0, "marked": 0, "dropped": 0,
            "early_dropped": 0, "max_backlog_bytes": 0}
    base.update(counts)
    return {"device": device, "changed": False, "counters": base}


def test_the_books_are_after_minus_before_and_summed_over_the_ports():
    before = [result("p-sink1", segs=100, ect_segs=90, marked_segs=10, packets=50),
              result("p-worker1", segs=7, packets=7)]
    after = [result("p-sink1", segs=1100, ect_segs=1090, marked_segs=210, dropped_segs=4, packets=350,
                    max_backlog_bytes=61_000),
             result("p-worker1", segs=27, packets=27, max_backlog_bytes=180)]
    books = port_deltas(before, after)
    assert books["ports"]["p-sink1"]["segs"] == 1000 and books["ports"]["p-sink1"]["marked_segs"] == 200
    assert books["total"]["segs"] == 1020 and books["total"]["dropped_segs"] == 4
    assert books["marking_ratio"] == 0.2 and books["max_backlog_bytes"] == 61_000


def test_a_marker_attached_anew_counts_from_zero():
    books = port_deltas([result("p-sink1", segs=900, packets=900)], [result("p-sink1", segs=40, packets=40)])
    assert books["total"]["segs"] == 40 and books["marking_ratio"] is None


def test_not_a_result_is_named():
    with pytest.raises(CongestionError, match="before: 'x' is not an ecn_marker result"):
        port_deltas(["x"], [])


def test_the_table_puts_the_variants_side_by_side():
    tail = port_deltas([], [result("p-sink1", segs=5000, ect_segs=0, dropped_segs=120, max_backlog_bytes=199_000)])
    ecn = port_deltas([], [result("p-sink1", segs=5000, ect_segs=4990, marked_segs=499, max_backlog_bytes=70_000)])
    assert side_by_side([{"name": "taildrop", "books": tail}, {"name": "ecn", "books": ecn}]).splitlines() == [
        "          segments   ECT  marked  dropped  marking ratio  peak queue",
        "taildrop      5000     0       0      120              -    199000 B",
        "ecn           5000  4990     499        0         0.1000     70000 B",
    ]


def test_the_grid_gives_a_variant_per_cell_n_first_then_buffer_tail_drop_before_marking():
    """K is 60KB, or 30% of a buffer smaller than 200KB: 50KB gets K = 15KB."""
    cells = incast_cells({"workers": [8, 2], "buffers": ["200KB", "50KB"]}, "60KB", 8)
    assert [c["name"] for c in cells] == ["n2-50KB-taildrop", "n2-50KB-ecn", "n2-200KB-taildrop", "n2-200KB-ecn",
                                          "n8-50KB-taildrop", "n8-50KB-ecn", "n8-200KB-taildrop", "n8-200KB-ecn"]
    assert cells[1] == {"name": "n2-50KB-ecn", "workers": 2, "ecn": "on",
                        "marker": {"mode": "step", "buffer": "50KB", "threshold": "15KB"},
                        "labels": {"n": 2, "buffer": "50KB", "mode": "ecn"}}
    assert cells[0]["marker"] == {"mode": "taildrop", "buffer": "50KB"} and cells[0]["ecn"] == "off"
    assert cells[3]["marker"]["threshold"] == "60KB"
    assert [c["name"] for c in incast_cells({"workers": [2], "buffers": ["50KB"], "modes": ["ecn"]})] == [
        "n2-50KB-ecn"]


@pytest.mark.parametrize("grid, workers, words", [
    ({"workers": [2, 16], "buffers": ["50KB"]}, 8, "N=16, but the lab has 8 workers"),
    ({"workers": [2]}, None, "give {workers"),
    ({"workers": [2], "buffers": ["fifty"]}, None, "incast_grid.buffers"),
    ({"workers": [2], "buffers": ["50KB"], "modes": ["red"]}, None, "incast_grid.modes"),
    ({"workers": [0], "buffers": ["50KB"]}, None, "incast_grid.workers"),
])
def test_a_grid_that_cannot_run_is_named(grid, workers, words):
    with pytest.raises(CongestionError, match=words.replace("{", "\\{")):
        incast_cells(grid, "60KB", workers)
