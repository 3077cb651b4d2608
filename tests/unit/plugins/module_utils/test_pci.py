# -*- coding: utf-8 -*-
"""pci_info's reading of sysfs: fixture trees copied from a real VM guest and a ConnectX-6 host (pci_tree.py)."""
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._pci import (
    PciError,
    PciSysfs,
    cmdline_args,
    hostdev_xml,
    iommu_state,
    normalize_bdf,
)
from pci_tree import cx6_host, vm_guest


@pytest.mark.parametrize("text,want", [("3b:00.0", "0000:3b:00.0"), ("0000:3B:00.7", "0000:3b:00.7"),
                                       (" 0001:00:1f.2 ", "0001:00:1f.2")])
def test_normalize_bdf(text, want):
    assert normalize_bdf(text) == want


@pytest.mark.parametrize("text", ["3b:00.8", "3b:00", "0000:3b:000.0", "eth0", "15b3:101b"])
def test_normalize_bdf_refuses(text):
    with pytest.raises(PciError, match="devices: .* is not a PCI address; write it as 0000:3b:00.0"):
        normalize_bdf(text)


def test_cx6_pf_with_vfs(tmp_path):
    sysfs = PciSysfs(cx6_host(tmp_path))
    pf = sysfs.device("0000:3b:00.0")
    assert pf["id"] == "15b3:101b" and pf["class"] == "0x0207" and pf["class_name"] == "Infiniband controller"
    assert pf["driver"] == "mlx5_core" and pf["driver_override"] is None
    assert pf["iommu_group"] == 38 and pf["iommu_group_members"] == ["0000:3b:00.0"]
    assert pf["numa_node"] == 0
    assert pf["sriov"] == {"total_vfs": 8, "num_vfs": 2, "vfs": ["0000:3b:00.1", "0000:3b:00.2"]}
    assert pf["netdevs"] == ["ib0"] and pf["rdma_devices"] == ["mlx5_0"]
    vf = sysfs.device("0000:3b:00.1")
    assert vf["physfn"] == "0000:3b:00.0" and vf["driver"] == "vfio-pci" and vf["driver_override"] == "vfio-pci"
    assert vf["sriov"] is None
    shared = sysfs.device("0000:5f:00.1")
    assert shared["iommu_group_members"] == ["0000:5e:00.0", "0000:5f:00.0", "0000:5f:00.1"]
    assert shared["numa_node"] == 1


def test_vm_guest_devices(tmp_path):
    sysfs = PciSysfs(vm_guest(tmp_path))
    assert sysfs.device("0000:00:02.0")["netdevs"] == ["mgmt0"]  # under virtio0/net
    assert sysfs.device("0000:00:00.0")["driver"] is None
    assert sysfs.device("0000:00:00.0")["numa_node"] is None  # -1 in sysfs
    assert sysfs.device("0000:00:1f.3")["class_name"] == "SMBus"


def test_resolve_every_way(tmp_path):
    sysfs = PciSysfs(cx6_host(tmp_path))
    assert sysfs.resolve(["3b:00.0"]) == ["0000:3b:00.0"]
    assert sysfs.resolve(["15b3:101C"]) == ["0000:3b:00.1", "0000:3b:00.2"]
    assert sysfs.resolve(["ib1", "0000:3b:00.2"]) == ["0000:3b:00.2"]  # no duplicates
    assert sysfs.resolve(["ib7"], remembered={"ib7": "0000:3b:00.1"}) == ["0000:3b:00.1"]


def test_resolve_virtio_netdev_walks_up(tmp_path):
    assert PciSysfs(vm_guest(tmp_path)).resolve(["data0"]) == ["0000:00:03.0"]


@pytest.mark.parametrize("name,message", [
    ("0000:99:00.0", "devices: no PCI device 0000:99:00.0 on this host"),
    ("15b3:1021", "devices: no PCI device with id 15b3:1021"),
    ("lo", "devices: netdev lo is not on a PCI device"),
    ("nosuch0", "devices: 'nosuch0' is neither a PCI address"),
])
def test_resolve_errors(tmp_path, name, message):
    with pytest.raises(PciError, match=message):
        PciSysfs(vm_guest(tmp_path)).resolve([name])


def test_iommu_on(tmp_path):
    state = iommu_state(vm_guest(tmp_path))
    assert state["enabled"] and state["units"] == ["dmar0"] and state["groups"] == 5
    assert state["cmdline"] == {"intel_iommu": "on", "iommu": "pt"}


def test_iommu_off_kernel_args_missing(tmp_path):
    state = iommu_state(cx6_host(tmp_path, iommu_on=False))
    assert not state["enabled"]
    assert "DMAR table but the kernel runs without intel_iommu=on" in state["reason"]


def test_iommu_off_in_firmware(tmp_path):
    from pci_tree import iommu
    iommu(str(tmp_path), on=False, tables=(), cmdline="root=/dev/sda1 intel_iommu=on")
    assert "no DMAR or IVRS ACPI table: VT-d/AMD-Vi is off in the firmware" in iommu_state(str(tmp_path))["reason"]


def test_iommu_turned_off_on_cmdline(tmp_path):
    from pci_tree import iommu
    iommu(str(tmp_path), on=False, cmdline="root=/dev/sda1 intel_iommu=off")
    assert "turns the IOMMU off (intel_iommu=off)" in iommu_state(str(tmp_path))["reason"]


def test_cmdline_args():
    assert cmdline_args("ro quiet iommu=pt vfio-pci.ids=15b3:101c") == {
        "ro": None, "quiet": None, "iommu": "pt", "vfio-pci.ids": "15b3:101c"}


def test_hostdev_xml():
    assert hostdev_xml("0000:3b:00.1") == (
        "<hostdev mode='subsystem' type='pci' managed='no'><source><address domain='0x0000' bus='0x3b' slot='0x00' "
        "function='0x1'/></source></hostdev>")
