# -*- coding: utf-8 -*-
"""The job description: what runs is read as written, what cannot run is refused naming the field, value and fix."""
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._job.spec import JobError, parse_job

W4 = ["w1", "w2", "w3", "w4"]
W6 = ["w%d" % i for i in range(1, 7)]


def job(**collective):
    c = {"op": "allreduce", "size": "64MB"}
    c.update(collective)
    return {"iterations": 20, "compute_ms": 5, "collectives": [c]}


def test_a_job_as_written():
    spec = parse_job({"iterations": 20, "compute_ms": 5, "overlap": True, "channels": 2, "collectives": [
        {"op": "allreduce", "algorithm": "ring", "size": "64MB", "chunks": 4, "window": 2},
        {"op": "broadcast", "algorithm": "tree", "size": "1MiB", "chunk_size": "64KiB", "root": "w3"}]}, W4)
    assert (spec.iterations, spec.compute_ms, spec.overlap, spec.channels, spec.ranks) == (20, 5.0, True, 2, tuple(W4))
    ar, bc = spec.collectives
    assert (ar.index, ar.op, ar.algorithm, ar.size, ar.chunks, ar.chunk_size, ar.window, ar.root) == \
        (0, "allreduce", "ring", 64_000_000, 4, None, 2, None)
    assert (bc.index, bc.op, bc.algorithm, bc.size, bc.chunks, bc.chunk_size, bc.window, bc.root) == \
        (1, "broadcast", "tree", 1_048_576, None, 65_536, 2, "w3")
    assert [s.describe() for s in spec.schedules()] == [
        "allreduce ring, 4 chunks per message, window 2, 2 channels",
        "broadcast tree, chunks of 65536 bytes, window 2, 2 channels, root w3"]


def test_defaults():
    spec = parse_job({"collectives": [{"op": "alltoall", "size": 4000}]}, W4)
    assert (spec.iterations, spec.compute_ms, spec.overlap, spec.channels) == (1, 0.0, False, 1)
    c = spec.collectives[0]
    assert (c.algorithm, c.chunks, c.window, c.root) == ("direct", 1, 2, None)
    # a field given as null takes its default
    assert parse_job({"collectives": [{"op": "allgather", "size": 4000, "window": None}], "overlap": None},
                     W4).collectives[0].window == 2


@pytest.mark.parametrize("given,ranks,message", [
    (job(algorithm="halving_doubling"), W6,
     r"^job\.collectives\[0\]\.algorithm: halving_doubling needs a power-of-two number of ranks \(got 6\); use ring "
     r"or tree, or run on 4 or 8 workers$"),
    (job(size=8, chunks=4), W4,
     r"^job\.collectives\[0\]\.chunks: 4 chunks of a 2-byte message .* use at most 2 chunks, or a larger size$"),
    (job(size=0), W4, r"^job\.collectives\[0\]\.size: 0 is 0 bytes: a collective of nothing moves nothing"),
    (job(size="0MB"), W4, r"^job\.collectives\[0\]\.size: '0MB' is 0 bytes"),
    (job(size="64mbit"), W4, r"^job\.collectives\[0\]\.size: unknown size unit 'mbit'"),
    (job(size=3), W4, r"^job\.collectives\[0\]\.size: 3 bytes gives an empty message .* give at least 4 bytes$"),
    (job(chunk_size=0), W4, r"^job\.collectives\[0\]\.chunk_size: 0 is 0 bytes"),
    (job(chunks=2, chunk_size="1MB"), W4, r"^job\.collectives\[0\]: chunks \(2\) and chunk_size \('1MB'\) both"),
    (job(chunks=0), W4, r"^job\.collectives\[0\]\.chunks: 0; give a whole number 1 or more \(pieces per message\)$"),
    (job(window=0), W4, r"^job\.collectives\[0\]\.window: 0; give a whole number 1 or more"),
    (job(window=True), W4, r"^job\.collectives\[0\]\.window: True"),
    (job(op="allreduce_ring"), W4, r"^job\.collectives\[0\]\.op: 'allreduce_ring'; use one of allreduce, allgather"),
    (job(algorithm="tree", op="alltoall"), W4,
     r"^job\.collectives\[0\]\.algorithm: 'tree' is not an algorithm of alltoall; use direct or pairwise$"),
    (job(root="w2"), W4, r"^job\.collectives\[0\]\.root: only a broadcast has a root \(this is allreduce\)"),
    (job(op="broadcast", root="w9"), W4, r"^job\.collectives\[0\]\.root: 'w9' is not one of the job's workers"),
    (job(bytes=1), W4, r"^job\.collectives\[0\]: unknown field\(s\) bytes; known: op, algorithm, size"),
    ({"collectives": [{"op": "allreduce"}]}, W4, r"^job\.collectives\[0\]\.size: missing"),
    ({"collectives": ["allreduce"]}, W4, r"^job\.collectives\[0\]: expected a dict"),
    ({"collectives": []}, W4, r"^job\.collectives: \[\]; give a list of one collective or more"),
    ({}, W4, r"^job\.collectives: None"),
    (dict(job(), iterations=0), W4, r"^job\.iterations: 0; give a whole number 1 or more$"),
    (dict(job(), iterations=2.5), W4, r"^job\.iterations: 2\.5"),
    (dict(job(), compute_ms=-1), W4, r"^job\.compute_ms: -1; give milliseconds, 0 or more"),
    (dict(job(), compute_ms="5ms"), W4, r"^job\.compute_ms: '5ms'"),
    (dict(job(), overlap="yes"), W4, r"^job\.overlap: 'yes'; give true or false$"),
    (dict(job(), channels=0), W4, r"^job\.channels: 0; give a whole number from 1 to 16"),
    (dict(job(), steps=3), W4, r"^job: unknown field\(s\) steps; known: iterations, compute_ms, collectives"),
    ("allreduce", W4, r"^job: expected a dict"),
    (job(), ["w1"], r"^job: a job needs 2 workers or more \(got 1: w1\)"),
    (job(), ["w1", "w1"], r"^job: a worker is listed twice"),
])
def test_refusals(given, ranks, message):
    with pytest.raises(JobError, match=message):
        parse_job(given, ranks)


def test_too_many_operations_per_iteration():
    # 64 ranks' ring: 126 steps, a send and a receive per host each: 252 pieces x 80 chunks = 20,160 per host,
    # refused before anything is built
    ranks = ["h%d" % i for i in range(64)]
    with pytest.raises(JobError, match=r"^job\.collectives\[0\]: 20160 sends and receives per host and iteration "
                                       r"\(more than 20000\); use fewer chunks"):
        parse_job({"collectives": [{"op": "allreduce", "size": "1GB", "chunks": 80}]}, ranks)
    # two collectives that fit one by one but not together (with the compute op and a join each): 2 x 10,080 + 3
    with pytest.raises(JobError, match=r"^job\.collectives: 20163 operations per host and iteration"):
        parse_job({"collectives": [{"op": "allreduce", "size": "1GB", "chunks": 40}] * 2}, ranks)
