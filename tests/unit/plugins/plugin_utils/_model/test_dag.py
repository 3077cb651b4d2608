# -*- coding: utf-8 -*-
"""The job simulator against small cases computed by hand.

Every switch port at 8 Gb/s (1 GB/s) unless said; a path is src->sw, sw->dst, plus ``<src> egress`` for a throttled
sender. Goodput factor 1 and latency 0 unless said: the arithmetic is the model's (times in ms in the comments).
"""
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._job.program import build_programs
from ansible_collections.aifabric.lab.plugins.plugin_utils._job.spec import parse_job
from ansible_collections.aifabric.lab.plugins.plugin_utils._model.dag import ModelError, predict

LINE = 8e9
MS = 1e-3


def star(throttles=None):
    throttles = throttles or {}

    def paths(src, dst):
        p = [(src + "->sw", LINE), ("sw->" + dst, LINE)]
        if src in throttles:
            p.append((src + " egress", throttles[src]))
        return p
    return paths


def sender(peer, *sizes, window=1, deps=None):
    ops = [{"id": k, "kind": "send", "peer": peer, "bytes": b} for k, b in enumerate(sizes)]
    if deps:
        for k, d in deps.items():
            ops[k]["deps"] = d
    return {"version": 1, "iterations": 1, "peers": {peer: {"address": "x", "port": 1}}, "window": window,
            "ops": ops}


def receiver(*peers_sizes):
    return {"version": 1, "iterations": 1, "listen": {"address": "y", "port": 1}, "peers": {}, "window": 1,
            "ops": [{"id": k, "kind": "recv", "peer": p, "bytes": b} for k, (p, b) in enumerate(peers_sizes)]}


def times(result, host, key, i=0):
    return [None if x is None else pytest.approx(x, abs=1e-9) for x in result["results"][host]["t"][key][i]]


def ms(*values):
    return [None if v is None else pytest.approx(v * MS, abs=1e-9) for v in values]


# --- fair sharing ---------------------------------------------------------------------------------------------------

def test_two_flows_share_a_link():
    # A and B send 1 MB (8 Mbit) each to C: sw->C is shared, 4 Gb/s each: both done at 2 ms.
    r = predict({"A": sender("C", 1_000_000), "B": sender("C", 1_000_000),
                 "C": receiver(("A", 1_000_000), ("B", 1_000_000))}, star())
    assert times(r, "A", "end") == ms(2) and times(r, "B", "end") == ms(2)
    assert times(r, "C", "end") == ms(2, 2) and times(r, "C", "first") == ms(0, 0)


def test_the_shorter_flow_leaves_its_share_to_the_other():
    # B sends 2 MB: at 4 Gb/s until A is done (2 ms, B has sent 1 MB), then alone at 8 Gb/s: 1 MB in 1 ms: 3 ms.
    r = predict({"A": sender("C", 1_000_000), "B": sender("C", 2_000_000),
                 "C": receiver(("A", 1_000_000), ("B", 2_000_000))}, star())
    assert times(r, "A", "end") == ms(2) and times(r, "B", "end") == ms(3)
    assert r["results"]["C"]["bytes_received"] == 3_000_000 and r["results"]["B"]["bytes_sent"] == 2_000_000


def test_max_min_gives_a_throttled_flow_its_throttle_and_the_rest_to_the_other():
    # A is throttled to 2 Gb/s, B gets the other 6 Gb/s of sw->C: A's 1 MB in 4 ms; B's 6 MB: 24 Mbit in those 4 ms,
    # the other 24 Mbit alone at 8 Gb/s in 3 ms: 7 ms.
    r = predict({"A": sender("C", 1_000_000), "B": sender("C", 6_000_000),
                 "C": receiver(("A", 1_000_000), ("B", 6_000_000))}, star({"A": 2e9}))
    assert times(r, "A", "end") == ms(4) and times(r, "B", "end") == ms(7)


def test_goodput_factor_slows_the_payload():
    # half the wire rate is payload: the 2 ms of the shared case become 4 ms
    r = predict({"A": sender("C", 1_000_000), "B": sender("C", 1_000_000),
                 "C": receiver(("A", 1_000_000), ("B", 1_000_000))}, star(), factor=0.5)
    assert times(r, "A", "end") == ms(4) and times(r, "C", "end") == ms(4, 4)


# --- one connection: FIFO, window, latency ----------------------------------------------------------------------

@pytest.mark.parametrize("window,send_start,send_first,send_end,recv_first,recv_end", [
    # latency 0.5 ms, 1 MB at 8 Gb/s = 1 ms on the wire. Window 2: both start at 0; the second's first byte leaves
    # when the first's last has (1 ms); arrivals 0.5 ms later, acks 1 ms (a round trip) after the last byte left.
    (2, (0, 0), (0, 1), (2, 3), (0.5, 1.5), (1.5, 2.5)),
    # window 1: the second may start only when the first is acknowledged (2 ms): a round trip lost.
    (1, (0, 2), (0, 2), (2, 4), (0.5, 2.5), (1.5, 3.5)),
])
def test_window_with_latency(window, send_start, send_first, send_end, recv_first, recv_end):
    r = predict({"A": sender("B", 1_000_000, 1_000_000, window=window),
                 "B": receiver(("A", 1_000_000), ("A", 1_000_000))}, star(), latency=0.5 * MS)
    assert times(r, "A", "start") == ms(*send_start)
    assert times(r, "A", "first") == ms(*send_first)
    assert times(r, "A", "end") == ms(*send_end)
    assert times(r, "B", "start") == ms(0, 0)
    assert times(r, "B", "first") == ms(*recv_first)
    assert times(r, "B", "end") == ms(*recv_end)


@pytest.mark.parametrize("window", [1, 2])
def test_without_latency_the_window_changes_nothing(window):
    r = predict({"A": sender("B", 1_000_000, 1_000_000, window=window),
                 "B": receiver(("A", 1_000_000), ("A", 1_000_000))}, star())
    assert times(r, "A", "end") == ms(1, 2) and times(r, "B", "end") == ms(1, 2)


def test_a_receive_posted_late_ends_when_posted():
    # B's receive waits for a 5 ms compute; the 1 MB arrived at 1 ms (drained): the receive ends at its posting.
    b = receiver(("A", 1_000_000))
    b["ops"] = [{"id": 0, "kind": "compute", "ms": 5}, dict(b["ops"][0], id=1, deps=[0])]
    r = predict({"A": sender("B", 1_000_000), "B": b}, star())
    assert times(r, "B", "start") == ms(0, 5) and times(r, "B", "first") == [None, pytest.approx(0)]
    assert times(r, "B", "end") == ms(5, 5) and times(r, "A", "end") == ms(1)


# --- a 3-rank ring with one slow link, step by step (docs/jobs.md, the worked example) -------------------------

def ring3(**job):
    hosts = ["w1", "w2", "w3"]
    spec = parse_job(dict({"iterations": 2, "compute_ms": 10,
                           "collectives": [{"op": "allreduce", "size": 30_000_000}]}, **job), hosts)
    return build_programs(spec, {h: ("198.18.0.%d" % (i + 1), 18700) for i, h in enumerate(hosts)})


def test_ring_with_a_slow_link_step_by_step():
    # 30 MB over 3 ranks: 10 MB segments, 10 ms at 8 Gb/s, 20 ms on w3->w1 (w3 throttled to 4 Gb/s). Ops: w1 sends to
    # w2 and receives from w3 (compute, then per step send, recv, then the join); w2 and w3 receive, then send.
    # Iteration 0: compute 0-10. w3's sends take 20 ms each, back to back from 10 (its data from w2 is always there
    # earlier): 10-30, 30-50, 50-70, 70-90; w1 forwards each 10 ms after it arrives (30-40, 50-60, 70-80); w2
    # forwards w1's 10 ms after (s1 20-30, s2 40-50, s3 60-70). Iteration 1 starts on each host at its own end of
    # iteration 0 (w2 at 80, w1 and w3 at 90) and repeats the pattern 90 ms later.
    r = predict(ring3(), star({"w3": 4e9}))
    res = r["results"]
    assert times(r, "w1", "end") == ms(10, 20, 30, 40, 50, 60, 70, 80, 90, 90)
    assert times(r, "w2", "end") == ms(10, 20, 20, 40, 30, 60, 50, 80, 70, 80)
    assert times(r, "w3", "end") == ms(10, 20, 30, 30, 50, 50, 70, 70, 90, 90)
    # w3's step-1 send may start at 20 (its data arrived, one message unacknowledged < window 2) but its first byte
    # waits for the step-0 message to leave (30)
    assert times(r, "w3", "start")[4] == pytest.approx(20 * MS) and times(r, "w3", "first")[4] == pytest.approx(30 * MS)
    assert times(r, "w1", "end", 1) == ms(100, 110, 120, 130, 140, 150, 160, 170, 180, 180)
    assert times(r, "w2", "end", 1) == ms(90, 110, 100, 130, 120, 150, 140, 170, 160, 170)
    assert times(r, "w3", "end", 1) == ms(100, 100, 120, 120, 140, 140, 160, 160, 180, 180)
    assert [res[h]["iteration_end"] for h in ("w1", "w2", "w3")] == [ms(90, 180), ms(80, 170), ms(90, 180)]


def test_the_same_ring_unthrottled_is_the_line_rate():
    # every step 10 ms on every link: 4 steps after a 10 ms compute: 50 ms per iteration
    r = predict(ring3(), star())
    assert [r["results"][h]["iteration_end"] for h in ("w1", "w2", "w3")] == [ms(50, 100)] * 3


# --- compute and overlap ----------------------------------------------------------------------------------------

def pair(compute_ms, size, overlap, iterations=3):
    spec = parse_job({"iterations": iterations, "compute_ms": compute_ms, "overlap": overlap,
                      "collectives": [{"op": "allreduce", "size": size}]}, ["a", "b"])
    return build_programs(spec, {"a": ("198.18.0.1", 18700), "b": ("198.18.0.2", 18700)})


@pytest.mark.parametrize("compute_ms,size,overlap,ends", [
    # two ranks, 2 MB: two steps of 1 MB each way (1 ms each). Sequential: 10 + 2 ms per iteration.
    (10, 2_000_000, False, (12, 24, 36)),
    # overlapped: computes back to back (0-10, 10-20, 20-30), each iteration's collective right after its compute
    # (10-12, 20-22, 30-32): an iteration ends with its collective.
    (10, 2_000_000, True, (12, 22, 32)),
    # communication longer than compute (1 ms compute, 20 MB: 10 ms steps): sequential 21 ms per iteration ...
    (1, 20_000_000, False, (21, 42, 63)),
    # ... overlapped: the collective of iteration i+1 waits for that of iteration i (1-21, 21-41, 41-61).
    (1, 20_000_000, True, (21, 41, 61)),
])
def test_compute_and_overlap(compute_ms, size, overlap, ends):
    r = predict(pair(compute_ms, size, overlap), star())
    assert r["results"]["a"]["iteration_end"] == ms(*ends) and r["results"]["b"]["iteration_end"] == ms(*ends)


def test_overlap_runs_the_next_compute_under_the_collective():
    r = predict(pair(1, 20_000_000, True), star())
    a = r["results"]["a"]["t"]
    assert [a["start"][i][0] for i in range(3)] == ms(0, 1, 2)  # computes back to back
    assert [a["end"][i][1] for i in range(3)] == ms(1, 21, 41)  # the start op: after the previous join


# --- the result's shape and the refusals ------------------------------------------------------------------------

def test_the_contract_shape():
    res = predict(pair(10, 2_000_000, False), star())["results"]["a"]
    assert set(res) == {"status", "error", "at", "iterations", "ops", "detail", "sampled", "t", "iteration_end",
                        "bytes_sent", "bytes_received", "cpu_s"}
    assert (res["status"], res["error"], res["at"], res["iterations"], res["ops"], res["detail"]) == \
        ("ok", None, 0.0, 3, 6, "full")
    assert res["sampled"] == [0, 1, 2] and [len(res["t"][k]) for k in ("start", "first", "end")] == [3, 3, 3]
    assert res["t"]["first"][0][0] is None  # a compute has no first byte
    assert res["bytes_sent"] == 3 * 2_000_000 and res["bytes_received"] == 3 * 2_000_000


def test_sampled_detail_keeps_first_last_and_slowest():
    res = predict(pair(10, 2_000_000, False, iterations=20), star(), detail_limit=10)["results"]["a"]
    assert res["detail"] == "sampled" and len(res["iteration_end"]) == 20
    assert {0, 1, 2, 17, 18, 19} <= set(res["sampled"]) and len(res["sampled"]) <= 16
    assert len(res["t"]["end"]) == len(res["sampled"])


def test_a_deadlock_is_named():
    def each(peer):
        return {"version": 1, "iterations": 1, "listen": {"address": "x", "port": 1},
                "peers": {peer: {"address": "x", "port": 1}}, "window": 1,
                "ops": [{"id": 0, "kind": "recv", "peer": peer, "bytes": 10},
                        {"id": 1, "kind": "send", "peer": peer, "bytes": 10, "deps": [0], "tag": "after"}]}
    with pytest.raises(ModelError, match=r"^the programs cannot finish: A iteration 0 op 0 \(\) started but never "
                                         r"ended"):
        predict({"A": each("B"), "B": each("A")}, star())


@pytest.mark.parametrize("paths,message", [
    ({}, r"^paths: no path for A -> C; give every sending pair its links"),
    ({("A", "C"): []}, r"^paths: A -> C has no link"),
    ({("A", "C"): [("l", 0)]}, r"^paths: link 'l' of A -> C has capacity 0"),
    ({("A", "C"): [("l", 8e9), ("l", 8e9)]}, r"^paths: A -> C names a link twice"),
    ({("A", "C"): [{"link": "l", "rate": "8gbps"}]}, r"ambiguous: tc reads 'bps' as bytes"),
])
def test_paths_are_checked(paths, message):
    with pytest.raises(ModelError, match=message):
        predict({"A": sender("C", 10), "C": receiver(("A", 10))}, paths)


def test_a_link_has_one_capacity():
    with pytest.raises(ModelError, match=r"^paths: link 'sw->C' has capacity 4000000000\.0 on B -> C and "
                                         r"8000000000\.0 elsewhere"):
        predict({"A": sender("C", 10), "B": sender("C", 10), "C": receiver(("A", 10), ("B", 10))},
                lambda s, d: [(s + "->sw", LINE), ("sw->" + d, LINE if s == "A" else 4e9)])


def test_plan_style_hops_are_read():
    r = predict({"A": sender("C", 1_000_000), "C": receiver(("A", 1_000_000))},
                lambda s, d: [{"link": s + "->sw", "rate": "8gbit"}, {"link": "sw->" + d, "rate": "4gbit"}])
    assert times(r, "A", "end") == ms(2)


def test_mismatched_programs_are_refused():
    with pytest.raises(ModelError, match=r"^programs: A op 0 \(\) sends 10 bytes to C, whose matching op 0 \(\) "
                                         r"receives 11"):
        predict({"A": sender("C", 10), "C": receiver(("A", 11))}, star())


def test_factor_and_latency_are_checked():
    progs = {"A": sender("C", 10), "C": receiver(("A", 10))}
    with pytest.raises(ModelError, match=r"^factor: 0\.0 for A -> C; give a finite number > 0"):
        predict(progs, star(), factor=0.0)
    with pytest.raises(ModelError, match=r"^latency: -1 for A -> C; give a finite number >= 0"):
        predict(progs, star(), latency={("A", "C"): -1})
