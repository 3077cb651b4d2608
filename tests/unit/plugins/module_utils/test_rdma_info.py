# -*- coding: utf-8 -*-
"""rdma_info's translation of verbs port attributes, on sysfs fixture trees (the pyverbs adapter itself runs in the
VM lab, against a real rxe0, in playbooks/vmlab_proof.yml)."""
from __future__ import annotations

import os

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._rdma_info import gather
from ansible_collections.aifabric.lab.plugins.module_utils._rdma_sysfs import gid_table, link_rate

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "sysfs")


class RecordedVerbs:
    """Port attributes as pyverbs returned them (rxe0: read in the VM lab; mlx5_0: a 200G HDR port)."""

    PORTS = {
        "rxe0": {1: {"state": 4, "phys_state": 5, "link_layer": 2, "active_mtu": 3, "max_mtu": 5, "active_speed": 1,
                     "active_width": 1, "gid_tbl_len": 1024}},
        "mlx5_0": {1: {"state": 4, "phys_state": 5, "link_layer": 2, "active_mtu": 5, "max_mtu": 5,
                       "active_speed": 64, "active_width": 2, "gid_tbl_len": 255}},
    }

    def ports(self, name):
        return self.PORTS[name]


def test_soft_roce_port():
    facts = gather(RecordedVerbs(), os.path.join(FIX, "rxe"))
    assert facts["reason"] is None
    dev = facts["devices"]["rxe0"]
    assert dev["node_guid"] == "5054:00ff:feaf:0001" and dev["fw_ver"] == "0.0.0"
    port = dev["ports"]["1"]
    assert (port["state"], port["phys_state"], port["link_layer"]) == ("ACTIVE", "LINK_UP", "Ethernet")
    assert port["active_mtu"] == 1024 and port["max_mtu"] == 4096
    assert (port["speed"], port["width"], port["signalling_gbps"], port["data_gbps"]) == ("SDR", "1X", 2.5, 2.0)
    assert port["netdevs"] == ["data0"]
    assert {"index": 1, "gid": "::ffff:c612:6401", "ipv4": "198.18.100.1", "type": "RoCE v2",
            "netdev": "data0"} in port["gids"]


def test_connectx6_hdr_port():
    port = gather(RecordedVerbs(), os.path.join(FIX, "cx6"), ["mlx5_0"])["devices"]["mlx5_0"]["ports"]["1"]
    assert (port["speed"], port["width"], port["signalling_gbps"], port["data_gbps"]) == ("HDR", "4X", 212.5, 200.0)
    assert [g["index"] for g in port["gids"]] == [0, 1, 2, 3, 4, 5]  # empty entries 6, 7 left out
    assert port["netdevs"] == ["ens1f0np0"]


@pytest.mark.parametrize("speed, width, data", [(1, 2, 8.0), (4, 2, 32.0), (32, 2, 100.0), (128, 2, 400.0)])
def test_the_seeds_and_todays_links(speed, width, data):
    # 4X SDR: the seed's 8 Gb/s of data (7.94 measured); 4X QDR 32; 4X EDR 100; 4X NDR 400.
    assert link_rate(speed, width)["data_gbps"] == data


def test_a_kernel_without_rdma(tmp_path):
    facts = gather(None, str(tmp_path))
    assert facts["devices"] == {} and "no RDMA device" in facts["reason"] and "rdma_rxe" in facts["reason"]


def test_unknown_device_is_named():
    with pytest.raises(KeyError, match="no RDMA device mlx5_3 here"):
        gather(RecordedVerbs(), os.path.join(FIX, "cx6"), ["mlx5_3"])


def test_gid_table_of_a_missing_port():
    with pytest.raises(KeyError, match="no RDMA device rxe0 with port 2"):
        gid_table("rxe0", 2, os.path.join(FIX, "rxe"))
