# -*- coding: utf-8 -*-
"""The throttle's choice of mechanism, on fixture trees: a ConnectX-6 PF (mlx5_0), its VF (mlx5_1, VF 1), soft-RoCE."""
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._throttle import (
    ThrottleError,
    choose,
    rdma_kind,
    vf_rate_mbps,
)
from pci_tree import cx6_host, soft_roce


@pytest.fixture
def host(tmp_path):
    root = cx6_host(tmp_path)
    soft_roce(root)
    return root


def test_kinds(host):
    assert rdma_kind("mlx5_0", host) == {"kind": "pf", "address": "0000:3b:00.0", "pf_address": None,
                                         "vf_index": None}
    assert rdma_kind("mlx5_1", host) == {"kind": "vf", "address": "0000:3b:00.2", "pf_address": "0000:3b:00.0",
                                         "vf_index": 1}
    assert rdma_kind("rxe0", host)["kind"] == "soft"
    with pytest.raises(ThrottleError, match="rdma_device: no RDMA device mlx5_9 here \\(present: mlx5_0"):
        rdma_kind("mlx5_9", host)


@pytest.mark.parametrize("engine,device,mechanism,reason", [
    ("tcp", None, "tc", "tc shapes kernel-stack traffic"),
    ("perftest", "rxe0", "tc", "rxe0 is soft-RoCE"),
    ("perftest", "mlx5_1", "vf_rate", "mlx5_1 is SR-IOV VF 1 of 0000:3b:00.0"),
    ("perftest", "mlx5_0", "perftest_sw", "mlx5_0 is a hardware PF: tc never sees its verbs traffic"),
])
def test_auto_chooses_what_bites(host, engine, device, mechanism, reason):
    chosen, why, warnings, _rdma = choose(engine, "auto", device, host)
    assert chosen == mechanism and why.startswith(reason) and warnings == []


def test_tc_on_hardware_warns(host):
    _m, _r, warnings, _rdma = choose("perftest", "tc", "mlx5_0", host)
    assert warnings == ["tc on mlx5_0's netdev will not shape its verbs traffic (a hardware RDMA device bypasses the "
                        "kernel); the step will not be throttled"]
    assert choose("perftest", "tc", "rxe0", host)[2] == []


@pytest.mark.parametrize("engine,device,mechanism,message", [
    ("perftest", "mlx5_0", "vf_rate", "vf_rate needs .* an RDMA device that is an SR-IOV VF; mlx5_0 is pf"),
    ("tcp", None, "perftest_sw", "perftest_sw paces perftest flows only"),
    ("perftest", None, "auto", "rdma_device: the perftest engine's throttle depends on the RDMA device"),
    ("tcp", None, "netem", "mechanism: 'netem'"),
])
def test_refusals(host, engine, device, mechanism, message):
    with pytest.raises(ThrottleError, match=message):
        choose(engine, mechanism, device, host)


def test_vf_rate_units():
    assert vf_rate_mbps(2e9) == 2000 and vf_rate_mbps(1.4e6) == 1
    with pytest.raises(ThrottleError, match="below 1 Mb/s"):
        vf_rate_mbps(400e3)
