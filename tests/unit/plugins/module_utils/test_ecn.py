# -*- coding: utf-8 -*-
"""The ECN marker's pure parts: the virtual queue's arithmetic (hand-computed, the program's integer rules), the
configuration checked, the map entry decoded from a packed fixture, the relocation of the map's descriptor, and the
shipped program against its source (rebuilt with clang-14 when the machine has it)."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils import _bpf, _ecn_program
from ansible_collections.aifabric.lab.plugins.module_utils._ecn import (
    EcnError,
    VirtualQueue,
    config_of,
    counters,
    decode,
    describe,
    desired_marker,
    encode,
    map_id_of,
    same_config,
)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
SEC = 1_000_000_000


def params(**kw):
    base = {"mode": "step", "buffer": "10000", "threshold": "4000", "min_threshold": None, "max_threshold": None,
            "max_probability": None, "non_ect": "drop"}
    base.update(kw)
    return base


def test_step_marks_at_k_drops_above_the_buffer_and_drains_at_the_rate():
    # 8 Mbit/s = 1,000,000 B/s: 1,000 bytes per millisecond. K 4,000 B, buffer 10,000 B, frames of 1,500 B.
    q = VirtualQueue(desired_marker(params(), 8_000_000))
    t = SEC  # the first arrival: the queue has drained since time 0, it is empty
    assert [q.arrive(t, 1500, ecn=2) for _i in range(3)] == ["pass", "pass", "pass"]  # found 0, 1500, 3000
    assert q.values["backlog"] == 4500
    assert q.arrive(t, 1500, ecn=2) == "mark"  # found 4500 >= K
    t += 1_000_000  # 1 ms: 1,000 bytes drained, 6,000 -> 5,000
    assert q.arrive(t, 1500, ecn=1) == "mark" and q.values["backlog"] == 6500
    assert q.arrive(t, 1500, ecn=2) == "mark" and q.values["backlog"] == 8000
    assert q.arrive(t, 1500, ecn=2) == "mark" and q.values["backlog"] == 9500
    assert q.arrive(t, 1500, ecn=2) == "drop" and q.values["backlog"] == 9500  # 11,000 > 10,000
    assert q.arrive(t, 400, ecn=0) == "early_drop"  # not-ECT at the threshold: RED's drop
    assert q.arrive(t, 400, ecn=3) == "pass" and q.values["backlog"] == 9900  # CE already: nothing to mark
    t += 5 * SEC
    assert q.arrive(t, 1500, ecn=2) == "pass" and q.values["backlog"] == 1500
    v = q.values
    assert (v["packets"], v["ect"], v["not_ect"], v["ce_in"]) == (11, 9, 1, 1)
    assert (v["marked"], v["dropped"], v["early_dropped"], v["dropped_bytes"]) == (4, 1, 1, 1900)
    assert v["max_backlog"] == 9900 and v["bytes"] == 9 * 1500 + 800
    assert (v["segs"], v["ect_segs"], v["marked_segs"], v["dropped_segs"]) == (11, 9, 4, 2)
    # the admitted ECT packets by the queue they found, in 16ths of the buffer (q * 16 // 10,001): 0 and 0 (the
    # first and the last), 1,500 -> 2, 3,000 -> 4, 4,500 and 5,000 -> 7, 6,500 -> 10, 8,000 -> 12
    assert counters(v)["marking_by_queue"] == [
        {"from_bytes": 0, "to_bytes": 625, "ect": 2, "marked": 0, "ratio": 0.0},
        {"from_bytes": 1251, "to_bytes": 1875, "ect": 1, "marked": 0, "ratio": 0.0},
        {"from_bytes": 2501, "to_bytes": 3125, "ect": 1, "marked": 0, "ratio": 0.0},
        {"from_bytes": 4376, "to_bytes": 5000, "ect": 2, "marked": 2, "ratio": 1.0},
        {"from_bytes": 6251, "to_bytes": 6875, "ect": 1, "marked": 1, "ratio": 1.0},
        {"from_bytes": 7501, "to_bytes": 8125, "ect": 1, "marked": 1, "ratio": 1.0}]


def test_a_gso_packet_counts_its_segments():
    # one 9,000-byte GSO packet of 6 segments finds the queue at K: marked, 6 wire packets marked
    q = VirtualQueue(desired_marker(params(buffer="20000"), 8_000_000))
    assert q.arrive(SEC, 4000, ecn=2) == "pass"
    assert q.arrive(SEC, 9000, ecn=2, segs=6) == "mark"
    assert q.arrive(SEC, 9000, ecn=2, segs=6) == "drop"  # 13,000 + 9,000 > 20,000
    assert (q.values["marked"], q.values["marked_segs"], q.values["dropped_segs"], q.values["segs"]) == (1, 6, 6, 13)


def test_taildrop_marks_nothing_and_drops_only_a_full_buffer():
    q = VirtualQueue(desired_marker(params(mode="taildrop", threshold=None), 8_000_000))
    out = [q.arrive(SEC, 1500, ecn=e) for e in (2, 0, 2, 0, 2, 0, 2)]
    assert out == ["pass"] * 6 + ["drop"]  # 6 x 1,500 = 9,000; the seventh would make 10,500


def test_red_marks_with_the_ramp_probability():
    # min 2,000, max 6,000, max_p 0.5 (2^31): a queue of 4,000 marks below 2^31 * 2,000 / 4,000 = 2^30
    config = desired_marker(params(mode="red", threshold=None, min_threshold="2000", max_threshold="6000",
                                   max_probability=0.5), 8_000_000)
    assert config["max_p"] == 2**31
    q = VirtualQueue(config)
    q.arrive(SEC, 4000, ecn=2)
    assert q.arrive(SEC, 100, ecn=2, rand32=2**30 - 1) == "mark"
    q2 = VirtualQueue(config)
    q2.arrive(SEC, 4000, ecn=2)
    assert q2.arrive(SEC, 100, ecn=2, rand32=2**30) == "pass"
    q3 = VirtualQueue(config)
    q3.arrive(SEC, 2000, ecn=2)
    assert q3.arrive(SEC, 100, ecn=2, rand32=0) == "pass"  # at min: not above it
    q4 = VirtualQueue(config)
    q4.arrive(SEC, 6000, ecn=2)
    assert q4.arrive(SEC, 100, ecn=2, rand32=2**32 - 1) == "mark"  # at max: always


def test_the_drain_splits_whole_seconds_so_100gbit_does_not_overflow():
    # 100 Gbit/s = 12.5e9 B/s for 2.5 s: 2 x 12.5e9 + 0.5e9 x 12.5e9 / 1e9 = 31.25e9 bytes
    q = VirtualQueue(desired_marker(params(buffer="1GiB", threshold="1MB"), 100_000_000_000))
    q.values["backlog"] = 40_000_000_000
    assert q.drain(2_500_000_000) == 40_000_000_000 - 31_250_000_000


@pytest.mark.parametrize("kw,rate,message", [
    ({"threshold": "20000"}, 8_000_000, "threshold: 20KB is above the buffer (10KB)"),
    ({"buffer": "2000"}, 8_000_000, "buffer: '2000' is outside the supported range 3.03KB to 1.07GB"),
    ({"mode": "red", "threshold": None, "min_threshold": "6000", "max_threshold": "2000"}, 8_000_000,
     "min_threshold, max_threshold: 6KB is not below 2KB"),
    ({"mode": "red", "threshold": None, "min_threshold": "1000", "max_threshold": "2000", "max_probability": 1.5},
     8_000_000, "max_probability: 1.5"),
    ({"mode": "red"}, 8_000_000, "threshold: mode: red takes min_threshold and max_threshold"),
    ({"mode": "taildrop"}, 8_000_000, "threshold: not with mode: taildrop"),
    ({"threshold": None}, 8_000_000, "threshold: required with mode: step"),
    ({"non_ect": "mark"}, 8_000_000, "non_ect: 'mark'"),
    ({}, 200_000_000_000, "rate: 200gbit is above the 100gbit"),
])
def test_bad_configurations_name_the_parameter(kw, rate, message):
    with pytest.raises(EcnError) as err:
        desired_marker(params(**kw), rate)
    assert message in str(err.value)


def test_a_map_entry_decodes_from_its_packed_bytes():
    # 54 little-endian u64 in the program's enum order (bpf/ecn_marker.bpf.c): written out field by field
    fixture = b"".join(n.to_bytes(8, "little") for n in (
        1_000_000_000, 100_000, 30_000, 30_000, 1 << 32, 3,  # 8gbit, 100KB, K 30KB twice, p = 1, mark | drop not-ECT
        123_456_789, 4_242,                                   # the last arrival, the backlog
        1000, 1_442_000, 900, 60, 40, 300, 25, 10, 50_470, 99_982,
        4000, 3600, 1200, 140,                                # segments: all, ECT, marked, dropped
        500, 100, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 300,  # ECT admitted by 16ths of the buffer found
        0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 280))     # ... and marked
    values = decode(fixture)
    assert values["rate"] == 1_000_000_000 and values["ce_in"] == 40 and values["max_backlog"] == 99_982
    assert config_of(values) == {"rate": 1_000_000_000, "limit": 100_000, "min_threshold": 30_000,
                                 "max_threshold": 30_000, "max_p": 1 << 32, "flags": 3, "mode": "step",
                                 "non_ect": "drop"}
    assert describe(config_of(values)) == {"mode": "step", "rate": "8gbit", "buffer": "100KB",
                                           "threshold": "30KB", "non_ect": "drop"}
    c = counters(values)
    assert c["marked"] == 300 and c["marking_ratio"] == round(1200 / 3600, 6)  # per wire packet, as receivers count
    assert c["marked_segs"] == 1200 and c["dropped_segs"] == 140
    # buckets of 100,001 / 16 bytes: 0 .. 6,250, 6,251 .. 12,500, and the last 93,751 .. 100,000
    assert c["marking_by_queue"] == [
        {"from_bytes": 0, "to_bytes": 6250, "ect": 500, "marked": 0, "ratio": 0.0},
        {"from_bytes": 6251, "to_bytes": 12500, "ect": 100, "marked": 20, "ratio": 0.2},
        {"from_bytes": 93751, "to_bytes": 100000, "ect": 300, "marked": 280, "ratio": 0.933333}]
    assert c["drop_ratio"] == 0.035 and c["backlog_bytes"] == 4_242 and c["max_backlog_bytes"] == 99_982
    assert encode(config_of(values), values) == fixture
    with pytest.raises(EcnError, match="is 16 bytes, not 432"):
        decode(fixture[:16])


def test_the_configuration_compares_without_the_counters():
    desired = desired_marker(params(), 8_000_000)
    held = decode(encode(desired, {"marked": 5, "packets": 9}))
    assert same_config(config_of(held), desired)
    assert not same_config(config_of(held), desired_marker(params(threshold="5000"), 8_000_000))
    assert not same_config(None, desired)


def test_the_filter_name_carries_the_map_id():
    assert map_id_of("aifabric.lab ecn map=1234") == 1234
    assert map_id_of("aifabric.lab ecn map=") is None and map_id_of("cilium") is None and map_id_of(None) is None


def test_relocate_puts_the_map_fd_in_the_ld_imm64():
    # r1 = 0 ll (opcode 0x18, dst r1), then exit (0x95): as clang emits a map's address before its relocation
    insns = bytes.fromhex("1801000000000000" + "0000000000000000" + "9500000000000000")
    out = _bpf.relocate(insns, (0,), 7)
    assert out[:8] == bytes.fromhex("1811000007000000") and out[8:] == insns[8:]
    with pytest.raises(ValueError, match="instruction 2 is not an ld_imm64"):
        _bpf.relocate(insns, (2,), 7)


def test_the_shipped_program_is_built_from_the_source_in_the_repo():
    with open(os.path.join(ROOT, "bpf", "ecn_marker.bpf.c"), "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == _ecn_program.SOURCE_SHA256, "run `make bpf`"
    insns = _ecn_program.instructions()
    assert len(insns) % 8 == 0 and _ecn_program.LICENSE == "GPL"
    assert all(insns[8 * i] == 0x18 for i in _ecn_program.MAP_RELOCATIONS)
    assert insns[-8] == 0x95  # the last instruction is exit


@pytest.mark.skipif(not shutil.which("clang-14"), reason="clang-14 is not installed (make bpf's apt packages)")
def test_clang_14_builds_the_same_instructions(tmp_path):
    obj, out = tmp_path / "m.o", tmp_path / "gen.py"
    subprocess.run(["clang-14", "-O2", "-g0", "-target", "bpf", "-mcpu=v3", "-Wall", "-Werror", "-c",
                    os.path.join(ROOT, "bpf", "ecn_marker.bpf.c"), "-o", str(obj)], check=True)
    subprocess.run([sys.executable, os.path.join(ROOT, "bpf", "embed.py"), str(obj),
                    os.path.join(ROOT, "bpf", "ecn_marker.bpf.c"), str(out)], check=True)
    with open(os.path.join(ROOT, "plugins", "module_utils", "_ecn_program.py")) as f:
        assert out.read_text() == f.read()
