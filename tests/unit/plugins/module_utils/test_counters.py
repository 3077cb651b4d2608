# -*- coding: utf-8 -*-
from __future__ import annotations

import os

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils import _rdma_sysfs
from ansible_collections.aifabric.lab.plugins.module_utils._counters import (
    read_netdevs,
    read_rdma,
    snapshot,
)

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "sysfs")


def test_connectx6_port_counters_with_bytes_from_words():
    port = read_rdma(os.path.join(FIX, "cx6"))["mlx5_0"]["1"]
    assert port["state"] == "4: ACTIVE" and port["rate"] == "200 Gb/sec (4X HDR)"
    assert port["counters"]["port_xmit_data"] == 2500000000
    assert port["counters"]["port_xmit_bytes"] == 10_000_000_000  # 4-byte words
    assert port["counters"]["port_rcv_bytes"] == 4_000_000
    assert port["counters"]["symbol_error"] == 0 and "port_xmit_wait" in port["counters"]
    assert "out_of_buffer" in port["hw_counters"] and "lifespan" not in port["hw_counters"]


def test_soft_roce_has_hw_counters_only():
    port = read_rdma(os.path.join(FIX, "rxe"), ["rxe0"])["rxe0"]["1"]
    assert port["counters"] == {}
    assert port["hw_counters"]["sent_pkts"] == 123 and len(port["hw_counters"]) == 15
    assert "lifespan" not in port["hw_counters"]


def test_unknown_device_is_named():
    with pytest.raises(KeyError, match="no RDMA device mlx5_9 here .present: mlx5_0"):
        read_rdma(os.path.join(FIX, "cx6"), ["mlx5_9"])


def test_a_kernel_without_rdma_gives_an_empty_result(tmp_path):
    assert _rdma_sysfs.devices(str(tmp_path)) == []
    assert read_rdma(str(tmp_path)) == {}


def test_real_netdev_statistics_of_this_kernel_count_what_was_sent():
    """100 UDP datagrams of 1000 bytes to 127.0.0.1: lo receives each as an IPv4 packet of 1000 + 8 (UDP) + 20 (IPv4)
    bytes at least (the kernel also counts the link header), so its rx counters grow by 100 x 1028 bytes and 100
    packets at least (other traffic on lo only adds)."""
    import socket

    before = read_netdevs("/", ["lo"])["lo"]
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        receiver.bind(("127.0.0.1", 0))
        for _n in range(100):
            sender.sendto(b"\0" * 1000, receiver.getsockname())
    finally:
        sender.close()
        receiver.close()
    after = read_netdevs("/", ["lo"])["lo"]
    assert after["rx_bytes"] - before["rx_bytes"] >= 100 * 1028
    assert after["rx_packets"] - before["rx_packets"] >= 100
    assert "tx_dropped" in after
    with pytest.raises(KeyError, match="no interface nope0"):
        read_netdevs("/", ["nope0"])


def test_snapshot_is_timed_on_the_host(tmp_path):
    snap = snapshot(str(tmp_path), rdma=[], netdevs=[], clock=lambda: 42.0)
    assert snap == {"taken_at": 42.0, "rdma": {}, "netdev": {}, "qdisc": {}}
