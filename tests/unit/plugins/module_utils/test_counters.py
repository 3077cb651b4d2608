# -*- coding: utf-8 -*-
from __future__ import annotations

import errno
import os

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils import _rdma_sysfs
from ansible_collections.aifabric.lab.plugins.module_utils._counters import (
    EthtoolError,
    read_ethtool,
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


# What pyroute2's IoctlEthtool.get_statistics() returns for an mlx5 port with PFC on priority 3 (a part of the
# ETH_SS_STATS string set in the order mlx5's en_stats.c fills it: the software counters, per channel, vport, PHY, the
# per-priority traffic groups, then pport_per_prio_pfc, which holds only the priorities with PFC on, and the
# pause-storm counters).
MLX5_STATS = [
    ("rx_packets", 91_000_000), ("tx_packets", 88_000_000), ("rx_vport_rdma_unicast_packets", 420_000_000),
    ("rx_discards_phy", 0), ("rx_pause_ctrl_phy", 1204), ("tx_pause_ctrl_phy", 17),
    ("rx_prio3_bytes", 1_700_000_000_000), ("rx_prio3_packets", 410_000_000), ("rx_prio3_discards", 0),
    ("tx_prio3_bytes", 1_600_000_000_000), ("tx_prio3_packets", 400_000_000),
    ("rx_prio3_buf_discard", 0), ("rx_prio3_cong_discard", 0), ("rx_prio3_marked", 9410),
    ("rx_prio3_pause", 1204), ("rx_prio3_pause_duration", 38112), ("tx_prio3_pause", 17),
    ("tx_prio3_pause_duration", 2104), ("rx_prio3_pause_transition", 1190),
    ("tx_pause_storm_warning_events", 0), ("tx_pause_storm_error_events", 0), ("ch0_events", 5_000_000),
]


class Mlx5Ethtool:
    """IoctlEthtool's two calls, answering for one mlx5 port; anything else is ENODEV as the ioctl answers it."""

    closed = 0

    def __init__(self, name):
        self.name = name

    def get_statistics(self):
        if self.name != "ens1f0np0":
            raise OSError(errno.ENODEV, os.strerror(errno.ENODEV))
        return list(MLX5_STATS)

    def close(self):
        Mlx5Ethtool.closed += 1


def test_the_qos_statistics_of_an_mlx5_port():
    got = read_ethtool(["ens1f0np0"], Mlx5Ethtool)["ens1f0np0"]
    assert got["rx_prio3_pause"] == 1204 and got["rx_prio3_pause_duration"] == 38112
    assert got["tx_prio3_pause"] == 17 and got["rx_prio3_marked"] == 9410
    assert {"rx_pause_ctrl_phy", "tx_pause_storm_error_events", "rx_prio3_cong_discard"} <= set(got)
    # the traffic counters are left out (hundreds on mlx5: per channel, per queue)
    assert not {"rx_packets", "rx_prio3_bytes", "ch0_events", "rx_vport_rdma_unicast_packets"} & set(got)
    # rx_discards_phy and the two pause_ctrl_phy; rx_prio3_discards, _buf_discard, _cong_discard, _marked; the five
    # PFC counters; the two storm counters
    assert len(got) == 3 + 4 + 5 + 2


def test_an_unknown_port_is_named_and_the_socket_closed():
    before = Mlx5Ethtool.closed
    with pytest.raises(EthtoolError, match="ethtool: ens9: there is no such interface here"):
        read_ethtool(["ens9"], Mlx5Ethtool)
    assert Mlx5Ethtool.closed == before + 1


def test_snapshot_carries_ethtool_only_when_asked(tmp_path):
    snap = snapshot(str(tmp_path), rdma=[], netdevs=[], clock=lambda: 1.0, ethtool=["ens1f0np0"],
                    ethtool_reader=Mlx5Ethtool)
    assert snap["ethtool"]["ens1f0np0"]["rx_prio3_pause"] == 1204
    assert "ethtool" not in snapshot(str(tmp_path), rdma=[], netdevs=[], clock=lambda: 1.0)


def test_this_kernels_loopback_has_no_ethtool_statistics():
    pytest.importorskip("pyroute2")
    with pytest.raises(EthtoolError, match="ethtool: lo: its driver has no ethtool statistics"):
        read_ethtool(["lo"])


def test_port_counters_info_reads_the_ports_given(monkeypatch):
    pytest.importorskip("pyroute2")
    from ansible_collections.aifabric.lab.plugins.module_utils._port_counters_info_module import module_args, run_module
    from module_like import Done, ModuleLike

    assert module_args()["argument_spec"]["ethtool"] == {"type": "list", "elements": "str", "default": []}
    params = dict(rdma_devices=[], netdevs=[], qdiscs=[], ethtool=["ens1f0np0"], label=None, interface=None,
                  engine=None, ecn=[], ecn_discover=False, step=None)
    module = ModuleLike(params)
    with pytest.raises(Done):
        run_module(module, ethtool_reader=Mlx5Ethtool)
    assert module.result["counters"]["ethtool"]["ens1f0np0"]["rx_prio3_pause_duration"] == 38112
    module = ModuleLike(dict(params, ethtool=["ens9"]))
    with pytest.raises(Done):
        run_module(module, ethtool_reader=Mlx5Ethtool)
    assert module.result == {"msg": "ethtool: ens9: there is no such interface here", "failed": True}


def test_the_namespaces_ecn_codepoints_come_from_ipext(tmp_path):
    """/proc/net/netstat's IpExt pair of lines (header, values), as Linux 6.x writes it; the four codepoint counters
    kept, the rest left."""
    from ansible_collections.aifabric.lab.plugins.module_utils._counters import read_ipext, snapshot

    (tmp_path / "proc/net").mkdir(parents=True)
    (tmp_path / "sys/class/net").mkdir(parents=True)
    (tmp_path / "proc/net/netstat").write_text(
        "TcpExt: SyncookiesSent SyncookiesRecv\nTcpExt: 0 0\n"
        "IpExt: InNoRoutes InTruncatedPkts InMcastPkts OutMcastPkts InBcastPkts OutBcastPkts InOctets OutOctets "
        "InMcastOctets OutMcastOctets InBcastOctets OutBcastOctets InCsumErrors InNoECTPkts InECT1Pkts InECT0Pkts "
        "InCEPkts ReasmOverlaps\n"
        "IpExt: 0 0 0 0 0 0 9000 8000 0 0 0 0 0 90081 0 164 44517 0\n")
    assert read_ipext(str(tmp_path)) == {"InNoECTPkts": 90081, "InECT1Pkts": 0, "InECT0Pkts": 164, "InCEPkts": 44517}
    assert snapshot(root=str(tmp_path), rdma=[], netdevs=[], ipext=True)["ipext"]["InCEPkts"] == 44517
    assert "ipext" not in snapshot(root=str(tmp_path), rdma=[], netdevs=[])
    (tmp_path / "proc/net/netstat").write_text("TcpExt: A\nTcpExt: 1\n")
    assert read_ipext(str(tmp_path)) == {}


def test_this_kernels_ipext_counts_codepoints():
    from ansible_collections.aifabric.lab.plugins.module_utils._counters import read_ipext

    assert set(read_ipext()) == {"InNoECTPkts", "InECT1Pkts", "InECT0Pkts", "InCEPkts"}


def test_a_steps_ethtool_snapshot_never_fails_on_a_driver_without_statistics():
    """A perftest step reads its interface's QoS statistics (PFC pauses); lo has none: {} instead of a failure, so
    the step's counters are never lost to a driver."""
    from ansible_collections.aifabric.lab.plugins.module_utils._counters import EthtoolError, snapshot

    def reader(name):
        raise OSError(95, "Operation not supported")

    snap = snapshot(rdma=[], netdevs=["lo"], ethtool=["lo"], ethtool_reader=reader, ethtool_optional=True)
    assert snap["ethtool"] == {"lo": {}}
    with pytest.raises(EthtoolError):
        snapshot(rdma=[], netdevs=["lo"], ethtool=["lo"], ethtool_reader=reader)
