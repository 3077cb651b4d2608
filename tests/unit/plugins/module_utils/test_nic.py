# -*- coding: utf-8 -*-
"""The step's NIC identified for the test report: sysfs read from a fixture tree copied from a ConnectX-6 host
(pci_tree.py), and the kernel's own ethtool driver information of a real interface."""
from __future__ import annotations

import os

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._nic import drvinfo, identify
from pci_tree import cx6_host


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text + "\n")


def test_a_connectx6_port_is_named_by_its_pci_device_driver_and_rdma_firmware(tmp_path):
    root = cx6_host(tmp_path)
    _write(os.path.join(root, "sys/class/net/ib0/mtu"), "4092")
    _write(os.path.join(root, "sys/class/net/ib0/speed"), "200000")
    for name, value in (("fw_ver", "20.39.1002"), ("hca_type", "MT4123"), ("board_id", "MT_0000000223")):
        _write(os.path.join(root, "sys/class/infiniband/mlx5_0", name), value)
    nic = identify("ib0", "mlx5_0", root=root, ask_kernel=False)
    assert nic == {"interface": "ib0", "driver": "mlx5_core", "speed_mbps": 200000, "mtu": 4092,
                   "pci": {"address": "0000:3b:00.0", "id": "15b3:101b", "numa_node": 0},
                   "rdma": {"device": "mlx5_0", "fw_ver": "20.39.1002", "hca_type": "MT4123",
                            "board_id": "MT_0000000223"}}


def test_what_cannot_be_read_is_left_out(tmp_path):
    # a virtual interface (no device link, no speed) and no RDMA device: only its name
    assert identify("veth9", root=str(tmp_path), ask_kernel=False) == {"interface": "veth9"}


def test_the_kernels_driver_information_agrees_with_sysfs_on_this_machine():
    """ETHTOOL_GDRVINFO's driver is the one sysfs links the interface's device to (read apart, from /sys)."""
    checked = 0
    for name in sorted(os.listdir("/sys/class/net")):
        link = os.path.join("/sys/class/net", name, "device", "driver")
        if os.path.exists(link):
            info = drvinfo(name)
            assert info is not None and info["driver"] == os.path.basename(os.path.realpath(link)), (name, info)
            checked += 1
    if not checked:
        pytest.skip("no interface on this machine has a device with a driver (all virtual)")
    assert drvinfo("no-such-if0") is None
    assert drvinfo("x" * 16) is None  # longer than IFNAMSIZ - 1
