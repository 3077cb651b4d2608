# -*- coding: utf-8 -*-
"""The size sweep: nccl-tests' -b/-e/-f sizes, its counts for a float buffer, and its table layout (nccl-tests'
src/util.cu: writeResultHeader's three lines, one row per size written with its printf formats)."""
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._job.spec import parse_job
from ansible_collections.aifabric.lab.plugins.plugin_utils._job.sweep import (
    SweepError,
    float_str,
    job_for,
    parse_nccl_size,
    point,
    row,
    sizes,
    table,
)


def test_sizes_like_nccl_tests():
    # all_reduce_perf -b 8 -e 128M -f 2: 8, 16, ..., 2^27 (25 sizes)
    got = sizes("8", "128M", 2)
    assert got[:3] == [8, 16, 32] and got[-1] == 134_217_728 and len(got) == 25
    assert sizes(1000, "1MB", 10) == [1000, 10_000, 100_000, 1_000_000]
    assert sizes("1K", "5K", 3) == [1024, 3072]  # 9216 is past 5K


@pytest.mark.parametrize("value,expected", [("64K", 65536), ("1G", 1 << 30), ("128m", 128 << 20), (8, 8),
                                            ("64KB", 64_000), ("64KiB", 65_536), ("0.5M", 524_288)])
def test_parse_nccl_size(value, expected):
    assert parse_nccl_size(value, "sweep.minimum") == expected


@pytest.mark.parametrize("args,message", [
    (("8", "4"), r"sweep\.maximum: '4' is below sweep\.minimum '8'"),
    (("8", "1M", 1), r"sweep\.factor: 1; give a whole number, 2 or more"),
    ((0, "1M"), r"sweep\.minimum: 0; give 1 byte or more"),
    (("8", "1T"), r"sweep\.maximum: unknown size unit"),
    ((1, 1 << 70, 2), r"sweep: 71 sizes from 1 to 1180591620717411303424 bytes \(factor 2\); at most 64"),
])
def test_sizes_refusals(args, message):
    with pytest.raises(SweepError, match=message):
        sizes(*args)


@pytest.mark.parametrize("op,size,n,expected", [
    # allreduce: count = size / 4
    ("allreduce", 134_217_728, 8, {"size": 134_217_728, "count": 33_554_432, "redop": "sum", "root": -1}),
    # allgather: per-rank count 33554432 / 8 = 4194304 (a multiple of 4), size = 4194304 x 8 x 4
    ("allgather", 134_217_728, 8, {"size": 134_217_728, "count": 4_194_304, "redop": "none", "root": -1}),
    ("reducescatter", 1024, 8, {"size": 1024, "count": 32, "redop": "sum", "root": -1}),
    # alltoall of 1000 bytes over 3: 250 floats, 83 per rank, rounded down to 80: 960 bytes
    ("alltoall", 1000, 3, {"size": 960, "count": 80, "redop": "none", "root": -1}),
    # small sizes vanish for the per-rank ops (nccl-tests prints 0 0 too)
    ("allgather", 8, 8, {"size": 0, "count": 0, "redop": "none", "root": -1}),
    ("broadcast", 10, 4, {"size": 8, "count": 2, "redop": "none", "root": 0}),
])
def test_point(op, size, n, expected):
    got = point(op, size, n)
    assert {k: got[k] for k in expected} == expected and got["type"] == "float" and got["ranks"] == n


def test_float_str_is_get_float_str():
    assert float_str(1211.2, 7) == "1211.20"
    assert float_str(12345.6, 7) == "12345.6"
    assert float_str(123456.7, 7) == " 123457"
    assert float_str(1234567.0, 7) == "1234567"
    assert float_str(12345678.0, 7) == "1.2e+07"
    assert float_str(110.8138, 6) == "110.81"
    assert float_str(0.004, 6) == "  0.00"
    assert float_str(1234.5, 6) == "1234.5"


def test_header_is_nccl_tests():
    lines = table([], prediction=False)
    assert lines == [
        "#",
        "#                                                              out-of-place                       "
        "in-place          ",
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw"
        "   busbw  #wrong ",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)"
        "  (GB/s)         ",
    ]


def test_a_row_by_hand():
    # allreduce of 128 MiB over 8 ranks in 1211.2 us: algbw = 134217728 / 1211.2e-6 / 1e9 = 110.81 GB/s, busbw =
    # x 7/4 = 193.92; predicted 1100 us: busbw 134217728 / 1100e-6 / 1e9 x 7/4 = 213.53.
    r = row(point("allreduce", 134_217_728, 8), 1211.2e-6, 1100e-6)
    assert r["algbw"] == pytest.approx(110.8138, abs=1e-4) and r["busbw"] == pytest.approx(193.9242, abs=1e-4)
    header, line = table([r])[2], table([r])[4]
    assert header.endswith("  #wrong     ptime  pbusbw")
    assert line == ("   134217728      33554432     float     sum      -1  1211.20  110.81  193.92    N/A"
                    "  1211.20  110.81  193.92    N/A  1100.00  213.53")
    # a row not measured (a failed size) keeps its place
    assert table([row(point("allreduce", 1024, 8), None)])[4] == (
        "        1024           256     float     sum      -1                             N/A"
        "                             N/A                 ")


def test_job_for_a_point_parses():
    p = point("broadcast", 4096, 4, root_rank=2)
    job = job_for(p, algorithm="tree", iterations=5, chunks=2, root="w3")
    assert job == {"iterations": 5, "compute_ms": 0, "collectives": [
        {"op": "broadcast", "size": 4096, "window": 2, "algorithm": "tree", "chunks": 2, "root": "w3"}]}
    assert parse_job(job, ["w1", "w2", "w3", "w4"]).collectives[0].size == 4096
    assert table([row(p, 1e-3)])[4].split()[4] == "2"
