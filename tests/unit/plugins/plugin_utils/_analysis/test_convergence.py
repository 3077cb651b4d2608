# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The convergence test (draft-calabria-bmwg-ai-fabric-training-bench 7.3) against hand arithmetic."""

from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.convergence import (
    ConvergenceError,
    convergence,
    intervals,
)


def flow(start, *points):
    """A flow from ``start`` with one sample ``(t, rate)`` per point."""
    return {"start": start, "samples": [{"t": t, "rate": r} for t, r in points]}


# "a" runs alone at 200 before T0 = 0, "b" starts at T0; fair share 100, tolerance 10% (90..110)
A = flow(-2, (-1, 200), (0, 200), (1, 150), (2, 105), (3, 100), (4, 95))
B = flow(0, (1, 50), (2, 80), (3, 92), (4, 108))


@pytest.mark.parametrize("flows, kwargs, want_at, want_per_flow, want_never", [
    # a: (0,1] 150 is off, from 1 on within -> 1; b: (1,2] 80 is its last interval off -> 2; all: max = 2
    ({"a": A, "b": B}, {}, 2.0, {"a": 1.0, "b": 2.0}, []),
    # b's last interval (3,4] at 80: it never settled; reported as such, not as a number
    ({"a": A, "b": flow(0, (1, 50), (2, 95), (3, 100), (4, 80))}, {}, None, {"a": 1.0, "b": None}, ["b"]),
    # a touches its share in (0,1] then leaves it in (1,2]: it has converged only from 2 on ("stays within")
    ({"a": flow(-1, (0, 200), (1, 100), (2, 130), (3, 100)), "b": flow(0, (1, 100), (2, 70), (3, 100))}, {},
     2.0, {"a": 2.0, "b": 2.0}, []),
    # both within from their first interval after T0: 0
    ({"a": flow(-1, (0, 200), (1, 110), (2, 90)), "b": flow(0, (1, 90), (2, 110))}, {}, 0.0, {"a": 0.0, "b": 0.0},
     []),
    # the window cut at 3 (explicit end): b's (3,4] does not count, it converged at 2 and held 1 s
    ({"a": A, "b": B}, {"end": 3}, 2.0, {"a": 1.0, "b": 2.0}, []),
    # the same held 2 s, less than hold=3: not converged
    ({"a": A, "b": B}, {"hold": 3}, None, {"a": 1.0, "b": 2.0}, ["held 2.0 s, less than hold=3.0 s"]),
    # a wider tolerance (25%: 75..125): b's 80 is within, a's 150 is not -> 1
    ({"a": A, "b": B}, {"tolerance": 0.25}, 1.0, {"a": 1.0, "b": 1.0}, []),
])
def test_convergence_time(flows, kwargs, want_at, want_per_flow, want_never):
    out = convergence(flows, 0, 100, **kwargs)
    assert out["convergence_s"] == want_at
    assert out["converged"] is (want_at is not None)
    assert out["per_flow_s"] == want_per_flow
    assert out["never"] == want_never


def test_jfi_over_time():
    # the grid: every 1 s (the shortest interval) after T0; each flow's rate is that of its interval holding the
    # instant. 1: 150, 50 -> 200^2 / (2 (22500 + 2500)) = 0.8; 2: 105, 80 -> 34225 / 34850; 3: 100, 92 ->
    # 36864 / 36928; 4: 95, 108 -> 41209 / 41378
    out = convergence({"a": A, "b": B}, 0, 100)
    assert out["jfi"] == [(1.0, 0.8), (2.0, round(34225 / 34850, 6)), (3.0, round(36864 / 36928, 6)),
                          (4.0, round(41209 / 41378, 6))]
    assert out["jfi_end"] == round(41209 / 41378, 6)
    assert out["window_s"] == 4.0 and out["held_s"] == 2.0


def test_jfi_counts_a_flow_not_started_as_zero():
    # b starts 1 s late: at 1 it has no interval, so 100, 0 -> 100^2 / (2 * 100^2) = 0.5
    out = convergence({"a": flow(-1, (0, 200), (1, 100), (2, 100)), "b": flow(1, (2, 100))}, 0, 100)
    assert out["jfi"] == [(1.0, 0.5), (2.0, 1.0)]


def test_jfi_grid_is_the_median_interval():
    # b's first interval is 0.1 s long (it started at 0.9): the grid stays at the 1 s sampling interval, not 0.1 s.
    # 1: 100, 100 -> 1; 2: 100, 50 -> 150^2 / (2 * 12500) = 0.9
    out = convergence({"a": flow(-1, (0, 200), (1, 100), (2, 100)), "b": flow(0.9, (1, 100), (2, 50))}, 0, 100)
    assert out["jfi"] == [(1.0, 1.0), (2.0, 0.9)]


def test_bytes_samples_give_bits_per_second():
    # cumulative bytes: a 25 MB in its first second (200 Mb/s), then 12.5 MB a second (100 Mb/s); b 100 Mb/s
    a = {"start": -1, "samples": [{"t": 0, "bytes": 25e6}, {"t": 1, "bytes": 37.5e6}, {"t": 2, "bytes": 50e6}]}
    b = {"start": 0, "samples": [{"t": 1, "bytes": 12.5e6}, {"t": 2, "bytes": 25e6}]}
    assert intervals("a", a) == [(-1.0, 0.0, 2e8), (0.0, 1.0, 1e8), (1.0, 2.0, 1e8)]
    out = convergence({"a": a, "b": b}, 0, 1e8)
    assert out["convergence_s"] == 0.0 and out["jfi_end"] == 1.0


@pytest.mark.parametrize("flows, kwargs, match", [
    ({"a": A}, {}, "at least two flows"),
    ([A, B], {}, "at least two flows"),
    ({"a": A, "b": B}, {"fair_share": 0}, "fair_share: 0"),
    ({"a": A, "b": B}, {"fair_share": "1gbit"}, "fair_share: '1gbit' is not a number"),
    ({"a": A, "b": B}, {"tolerance": 1.5}, "tolerance: 1.5"),
    ({"a": A, "b": B}, {"tolerance": True}, "tolerance: True is not a number"),
    ({"a": A, "b": B}, {"hold": -1}, "hold: -1"),
    ({"a": A, "b": B}, {"step": 0}, "step: 0"),
    ({"a": A, "b": {"start": 0, "samples": []}}, {}, "flow b: no samples"),
    ({"a": A, "b": {"samples": []}}, {}, "flow b: give {start"),
    ({"a": A, "b": flow(0, (1, 50), (1, 80))}, {}, "flow b: sample 1's t 1.0 is not after 1.0"),
    ({"a": A, "b": {"start": 0, "samples": [{"t": 1}]}}, {}, "flow b: sample 0 is"),
    ({"a": A, "b": flow(0, (1, -5))}, {}, "flow b: sample 0's rate -5.0 is negative"),
    ({"a": A, "b": {"start": 0, "samples": [{"t": 1, "bytes": 10}, {"t": 2, "bytes": 5}]}}, {},
     "flow b: sample 1's bytes 5 fell below the previous 10"),
    # a flow that ended before T0: no window to judge
    ({"a": flow(-2, (-1, 100)), "b": B}, {}, "window ends at -1.0, not after T0"),
    # a flow with no sample inside the window
    ({"a": A, "b": flow(0, (5, 100))}, {"end": 4}, "flow b: no sample ends between T0"),
])
def test_bad_input(flows, kwargs, match):
    args = {"fair_share": 100}
    args.update(kwargs)
    with pytest.raises(ConvergenceError, match=match):
        convergence(flows, 0, **args)


def _measured(host, offset, rates, common=1000.0, every=0.5):
    """A tcp-engine flow record started ``offset`` s after the common instant: ``rates`` (Gb/s) per ``every`` s."""
    from ansible_collections.aifabric.lab.plugins.plugin_utils._run.model import Flow

    samples, total = [], 0
    for k, gbps in enumerate(rates, 1):
        total += int(gbps * 1e9 * every / 8)
        samples.append({"t": k * every, "bytes": total})
    return Flow(host=host, flow_id=host, status="ok", bytes=total, volume_bytes=total, completion_s=offset + len(
        rates) * every, late_s=0.0, start=common + offset, start_at=common + offset, samples=samples)


def _convergence_step(flows, offsets):
    from ansible_collections.aifabric.lab.plugins.plugin_utils._plan.experiment import plan
    from ansible_collections.aifabric.lab.plugins.plugin_utils._run.model import Step, step_plans

    groups = {"workers": ["w1", "w2", "w3", "w4"], "sinks": ["sink"], "switches": ["switch"]}
    hostvars = {h: {"lab_address": "198.18.0.%d" % (i + 1)} for i, h in enumerate(["sink", "w1", "w2", "w3", "w4"])}
    the_plan = plan({"name": "c", "volume": "1GB", "start_offsets": offsets}, groups, hostvars, line_rate="1gbit",
                    mtu=None)
    return Step(name="c", plan=step_plans(the_plan)["c"], flows=flows)


def test_a_step_with_late_flows_reports_their_convergence():
    """Section 7.3 by hand: w1, w2 from 0 s at 0.5 Gb/s (1 Gb/s into the sink, two ways), w3 and w4 join at T0 = 1 s
    and the fair share is 0.25 Gb/s each. w3's first half second runs at 0.4 (60% over), then 0.25; everyone else
    is at 0.25 from T0. So w3 converges at T0 + 0.5 s, the others at T0, and the step at T0 + 0.5 s. The window ends
    where the first flow's last full sample ends: w1's and w2's at 4.5 s (their last, at 5.0 s, is a tail): 3.5 s
    after T0, held 3.0 s."""
    from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.barrier import analyze_step

    early = [0.5, 0.5] + [0.25] * 8  # to 5.0 s
    flows = [_measured("w1", 0.0, early), _measured("w2", 0.0, early),
             _measured("w3", 1.0, [0.4] + [0.25] * 9), _measured("w4", 1.0, [0.25] * 10)]
    report = analyze_step(_convergence_step(flows, {"w3": 1, "w4": 1}))
    conv = report["convergence"]
    assert conv["t0_s"] == 1.0 and conv["joined"] == ["w3", "w4"]
    assert conv["fair_share_gbps"] == {"w1": 0.25, "w2": 0.25, "w3": 0.25, "w4": 0.25}
    assert conv["converged"] and conv["convergence_s"] == pytest.approx(0.5)
    assert conv["per_flow_s"] == pytest.approx({"w1": 0.0, "w2": 0.0, "w3": 0.5, "w4": 0.0})
    assert conv["window_s"] == pytest.approx(3.5) and conv["held_s"] == pytest.approx(3.0)
    assert conv["jfi_end"] == pytest.approx(1.0)
    assert conv["verdict"] == ("2 of 4 flows joined at T0 = 1.00 s: every flow within 10% of its fair share "
                               "(0.250 Gb/s) from T0 + 0.50 s, held 3.00 s; JFI at the window's end 1.000")
    # the prediction knows the late start (each flow's volume is what it sent: w1, w2 1.5 Gbit, w3 1.325, w4 1.25):
    # w1, w2 alone at 0.5 for 1 s, then four at 0.25 until w1 and w2 end at 5 s (1.0 Gbit more each); w3 and w4 have
    # 0.325 and 0.25 left: 0.5 each, w4 ends at 5.5 s; w3's last 0.075 Gbit alone at 1 Gb/s: 5.575 s
    assert report["predicted_step_s"] == pytest.approx(5.575)
    assert [w["predicted_s"] for w in report["workers"]] == pytest.approx([5.0, 5.0, 5.575, 5.5])


def test_a_late_flow_that_never_holds_its_share_is_named():
    from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.barrier import analyze_step

    early = [0.5, 0.5] + [0.3] * 8
    flows = [_measured("w1", 0.0, early), _measured("w2", 0.0, early),
             _measured("w3", 1.0, [0.2] * 10), _measured("w4", 1.0, [0.2] * 10)]
    conv = analyze_step(_convergence_step(flows, {"w3": 1, "w4": 1}))["convergence"]
    assert not conv["converged"] and conv["convergence_s"] is None
    assert sorted(conv["never"]) == ["w1", "w2", "w3", "w4"]
    assert conv["verdict"].startswith("2 of 4 flows joined at T0 = 1.00 s: not converged within the 3.50 s window")


def test_without_late_flows_there_is_no_convergence_and_a_failed_flow_makes_it_unavailable():
    from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.barrier import analyze_step

    flows = [_measured(h, 0.0, [0.25] * 4) for h in ("w1", "w2", "w3", "w4")]
    assert "convergence" not in analyze_step(_convergence_step(flows, {}))
    flows[3].status, flows[3].completion_s = "timeout", None
    conv = analyze_step(_convergence_step(flows, {"w4": 1}))["convergence"]
    assert conv["unavailable"] == "flow(s) w4 did not complete: the test needs every flow's samples"


def test_each_flow_may_have_its_own_fair_share():
    flows = {"a": flow(0, (1, 1.0), (2, 1.0)), "b": flow(0, (1, 3.0), (2, 3.0))}
    out = convergence(flows, 0.5, {"a": 1.0, "b": 3.0}, end=2)
    assert out["converged"] and out["per_flow_s"] == {"a": 0.0, "b": 0.0} and out["fair_share"] == {"a": 1.0,
                                                                                                    "b": 3.0}
    with pytest.raises(ConvergenceError, match="fair_share: no share for flow"):
        convergence(flows, 0.5, {"a": 1.0}, end=2)
