# -*- coding: utf-8 -*-
"""sriov on fixture trees (a ConnectX-6 host, a netdevsim device) and on netlink messages recorded from netdevsim in
the VM lab; the writes themselves run there, on a real kernel (tests/vmlab/sriov.yml)."""
from __future__ import annotations

import errno
import os

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils import _sriov
from ansible_collections.aifabric.lab.plugins.module_utils._sriov import (
    PF,
    SriovError,
    check_count,
    in_use,
    ip_link_args,
    netlink_request,
    parse_vfinfo,
    persistence,
    plan_settings,
    validate_vfs,
)
from ansible_collections.aifabric.lab.plugins.module_utils._vfio import NetUse
from pci_tree import KernelWrites, cx6_host


def netdevsim(root):
    """/sys/devices/netdevsim7 with port netdev eni7np1: sriov_numvfs, no sriov_totalvfs, no virtfn links."""
    root = str(root)
    dev = os.path.join(root, "sys/devices/netdevsim7")
    os.makedirs(os.path.join(dev, "net/eni7np1"))
    with open(os.path.join(dev, "sriov_numvfs"), "w") as handle:
        handle.write("0\n")
    os.makedirs(os.path.join(root, "sys/bus/netdevsim/devices"))
    os.symlink("../../../devices/netdevsim7", os.path.join(root, "sys/bus/netdevsim/devices/netdevsim7"))
    os.symlink("../../../netdevsim7", os.path.join(dev, "net/eni7np1/device"))
    os.makedirs(os.path.join(root, "sys/class/net"))
    os.symlink("../../devices/netdevsim7/net/eni7np1", os.path.join(root, "sys/class/net/eni7np1"))
    return root


# One VF of netdevsim as pyroute2 0.9.7 decoded it in the VM lab (ip link set eni7np1 vf 1 mac ... trust on ...).
RECORDED_VF1 = {"attrs": [
    ("IFLA_VF_MAC", {"vf": 1, "mac": "02:00:00:00:00:11"}),
    ("IFLA_VF_VLAN", {"vf": 1, "vlan": 10, "qos": 3}),
    ("IFLA_VF_RATE", {"vf": 1, "min_tx_rate": 0, "max_tx_rate": 100}),
    ("IFLA_VF_TX_RATE", {"vf": 1, "tx_rate": 100}),
    ("IFLA_VF_SPOOFCHK", {"vf": 1, "spoofchk": 0}),
    ("IFLA_VF_LINK_STATE", {"vf": 1, "link_state": 2}),
    ("IFLA_VF_RSS_QUERY_EN", {"vf": 1, "rss_query_en": 0}),
    ("IFLA_VF_TRUST", {"vf": 1, "trust": 1}),
]}
# An mlx5 IB VF on a kernel that reports GUIDs (5.9+): the same plus IFLA_VF_IB_NODE_GUID/PORT_GUID.
RECORDED_IB_VF0 = {"attrs": [
    ("IFLA_VF_MAC", {"vf": 0, "mac": "00:00:00:00:00:00"}),
    ("IFLA_VF_IB_NODE_GUID", {"vf": 0, "ib_node_guid": "00:11:22:33:44:55:00:01"}),
    ("IFLA_VF_IB_PORT_GUID", {"vf": 0, "ib_port_guid": "00:11:22:33:44:55:01:01"}),
    ("IFLA_VF_LINK_STATE", {"vf": 0, "link_state": 0}),
]}


def link(*vfs):
    return {"attrs": [("IFLA_IFNAME", "eni7np1"), ("IFLA_VFINFO_LIST", {"attrs": [("IFLA_VF_INFO", v) for v in vfs]})]}


def test_parse_recorded_netlink():
    (vf1,) = parse_vfinfo(link(RECORDED_VF1))
    assert vf1 == {"index": 1, "mac": "02:00:00:00:00:11", "vlan": 10, "qos": 3, "spoofchk": False, "trust": True,
                   "link_state": "disable", "min_tx_rate": 0, "max_tx_rate": 100}
    (ib,) = parse_vfinfo(link(RECORDED_IB_VF0))
    assert ib["node_guid"] == "00:11:22:33:44:55:00:01" and ib["port_guid"] == "00:11:22:33:44:55:01:01"
    assert ib["link_state"] == "auto"
    assert parse_vfinfo({"attrs": [("IFLA_IFNAME", "eth0")]}) == []


def test_pf_by_netdev_and_address_on_a_cx6(tmp_path):
    root = cx6_host(tmp_path)
    pf = PF("ib0", root)
    assert (pf.address, pf.num_vfs(), pf.total_vfs()) == ("0000:3b:00.0", 2, 8)
    assert pf.vf_addresses() == ["0000:3b:00.1", "0000:3b:00.2"]
    assert pf.vf_device(1) == {"address": "0000:3b:00.2", "driver": "mlx5_core", "netdevs": ["ib1"]}
    assert PF("3b:00.0", root).netdev == "ib0"


def test_pf_on_netdevsim_has_no_total_and_no_vf_devices(tmp_path):
    pf = PF("eni7np1", netdevsim(tmp_path))
    assert pf.address is None and pf.total_vfs() is None and pf.num_vfs() == 0
    assert pf.vf_device(0) == {"address": None, "driver": None, "netdevs": []}
    check_count(pf, 64)  # no limit known: the kernel decides


@pytest.mark.parametrize("name,message", [
    ("0000:3b:00.1", "pf: 0000:3b:00.1 is itself a VF \\(of 0000:3b:00.0\\); name the PF"),
    ("ens2f0np0", "pf: ens2f0np0 has no SR-IOV capability \\(no sriov_numvfs\\)"),
    ("nosuch0", "pf: 'nosuch0' is neither a PCI address"),
    ("0000:aa:00.0", "pf: no PCI device 0000:aa:00.0"),
])
def test_pf_errors(tmp_path, name, message):
    with pytest.raises(SriovError, match=message):
        PF(name, cx6_host(tmp_path))


def test_count_above_total_names_the_firmware(tmp_path):
    pf = PF("ib0", cx6_host(tmp_path))
    with pytest.raises(SriovError, match=r"num_vfs: 9 is above sriov_totalvfs \(8\) of ib0.*mlxconfig -d 0000:3b:00.0"):
        check_count(pf, 9)
    with pytest.raises(SriovError, match="num_vfs: -1 is negative"):
        check_count(pf, -1)


def test_in_use_vfs_block_a_count_change(tmp_path):
    pf = PF("ib0", cx6_host(tmp_path))
    reasons = in_use(pf, 2, NetUse(active={"ib1": "up with address 10.1.0.2"}))
    assert reasons == ["VF 0 (0000:3b:00.1) is bound to vfio-pci (a VM may hold it)",
                       "VF 1: ib1 is in use (up with address 10.1.0.2)"]


@pytest.mark.parametrize("vf,message", [
    ({"index": 4}, r"vfs\[0\].index: VF 4 is out of range: the PF has 4 VFs \(indexes 0..3\)"),
    ({"index": 0, "mac": "02:00:00:00:00"}, r"vfs\[0\].mac: '02:00:00:00:00' is not a MAC address"),
    ({"index": 0, "mac": "03:00:00:00:00:01"}, r"vfs\[0\].mac: 03:00:00:00:00:01 is a multicast address"),
    ({"index": 0, "node_guid": "0011:2233:4455:6677"}, r"vfs\[0\].node_guid: .* is not a GUID"),
    ({"index": 0, "vlan": 4096}, r"vfs\[0\].vlan: 4096 is not a VLAN id"),
    ({"index": 0, "qos": 8, "vlan": 5}, r"vfs\[0\].qos: 8 is not an 802.1p priority"),
    ({"index": 0, "qos": 3}, r"vfs\[0\].qos: a priority needs a VLAN"),
    ({"index": 0, "min_tx_rate": 300, "max_tx_rate": 200}, r"vfs\[0\].min_tx_rate: 300 Mb/s is above max_tx_rate"),
    ({"index": 0, "max_tx_rate": -1}, r"vfs\[0\].max_tx_rate: rates are Mb/s, 0 or more"),
])
def test_bad_vf_settings(vf, message):
    with pytest.raises(SriovError, match=message):
        validate_vfs([vf], 4)


def test_duplicate_index_and_normalisation():
    with pytest.raises(SriovError, match=r"vfs\[1\].index: VF 0 is listed twice"):
        validate_vfs([{"index": 0}, {"index": 0}], 2)
    assert validate_vfs([{"index": 1, "mac": "02:AA:00:00:00:01", "trust": None}], 2) == [
        {"index": 1, "mac": "02:aa:00:00:00:01"}]


def test_plan_compares_with_the_kernel_and_with_memory_for_unreported_guids():
    current = parse_vfinfo(link(RECORDED_VF1))
    wanted = [{"index": 1, "mac": "02:00:00:00:00:11", "trust": True, "max_tx_rate": 200,
               "node_guid": "00:00:00:00:00:00:00:01"}]
    assert plan_settings(wanted, current, {}) == [(1, "max_tx_rate", 100, 200),
                                                  (1, "node_guid", None, "00:00:00:00:00:00:00:01")]
    assert plan_settings(wanted, current, {"1": {"node_guid": "00:00:00:00:00:00:00:01"}}) == [
        (1, "max_tx_rate", 100, 200)]


def test_netlink_requests_keep_the_other_half():
    have = {"vlan": 10, "qos": 3, "min_tx_rate": 10, "max_tx_rate": 100}
    assert netlink_request(1, "qos", 5, have) == {"vf": 1, "vlan": {"vlan": 10, "qos": 5}}
    assert netlink_request(1, "max_tx_rate", 50, have) == {"vf": 1, "rate": {"min_tx_rate": 10, "max_tx_rate": 50}}
    assert netlink_request(0, "trust", True, {}) == {"vf": 0, "trust": 1}
    assert netlink_request(0, "link_state", "disable", {}) == {"vf": 0, "link_state": 2}
    assert netlink_request(0, "node_guid", "00:11:22:33:44:55:66:77", {}) == {
        "vf": 0, "ib_node_guid": "00:11:22:33:44:55:66:77"}


def test_persistence_is_keyed_by_device_not_name(tmp_path):
    root = cx6_host(tmp_path)
    files = persistence(PF("ib0", root), 2, [{"index": 0, "mac": "02:00:00:00:00:01", "trust": True,
                                              "max_tx_rate": 2000}], root)
    rule = files[os.path.join(root, "etc/udev/rules.d/70-aifabric-sriov-0000:3b:00.0.rules")]
    assert 'KERNELS=="0000:3b:00.0"' in rule and "KERNEL==" not in rule
    script = files[os.path.join(root, "usr/local/sbin/aifabric-sriov-0000:3b:00.0")]
    assert 'echo 2 > "$f"' in script and '[ "$(cat "$f")" = 0 ] || echo 0 > "$f"' in script
    assert 'ip link set dev "$pf" vf 0 mac 02:00:00:00:00:01 max_tx_rate 2000 trust on' in script
    nsim = netdevsim(tmp_path / "nsim")
    rules = os.path.join(nsim, "etc/udev/rules.d/70-aifabric-sriov-eni7np1.rules")
    rule = persistence(PF("eni7np1", nsim), 4, [], nsim)[rules]
    assert 'KERNELS=="netdevsim7"' in rule


def test_ip_link_args_for_ib():
    assert ip_link_args({"index": 3, "node_guid": "00:11:22:33:44:55:00:01", "link_state": "auto", "vlan": 7,
                         "qos": 2}) == ["vf", "3", "vlan", "7", "qos", "2", "state", "auto", "node_guid",
                                        "00:11:22:33:44:55:00:01"]


def _numvfs(root):
    with open(os.path.join(root, "sys/bus/pci/devices/0000:3b:00.0/sriov_numvfs")) as handle:
        return handle.read().strip()


def test_a_refused_count_restores_the_old_one_and_says_both(tmp_path, monkeypatch):
    root = cx6_host(tmp_path)
    numvfs = "sys/bus/pci/devices/0000:3b:00.0/sriov_numvfs"
    kernel = KernelWrites(root, refuse={(numvfs, "6"): errno.ENOMEM})
    monkeypatch.setattr(_sriov, "write_attr", kernel)
    pf = PF("ib0", root)
    with pytest.raises(SriovError) as err:
        pf.set_count(6, timeout=1)
    msg = str(err.value)
    assert msg.startswith("num_vfs: the kernel refused 6 VFs on ib0: writing '6' to ")
    assert ("Cannot allocate memory; its 2 VFs were created again (with the driver's default MAC, VLAN and rates). "
            "For ConnectX (mlx5) the firmware sets the limit: check 'mlxconfig -d 0000:3b:00.0") in msg
    assert [text for _path, text in kernel.log] == ["0", "6", "2"] and _numvfs(root) == "2"


def test_a_restore_that_fails_too_says_the_pf_has_none(tmp_path, monkeypatch):
    root = cx6_host(tmp_path)
    numvfs = "sys/bus/pci/devices/0000:3b:00.0/sriov_numvfs"
    kernel = KernelWrites(root, refuse={(numvfs, "6"): errno.ENOMEM, (numvfs, "2"): errno.EIO})
    monkeypatch.setattr(_sriov, "write_attr", kernel)
    with pytest.raises(SriovError) as err:
        PF("ib0", root).set_count(6, timeout=1)
    assert "; restoring its 2 VFs failed too: writing '2' to " in str(err.value)
    assert "Input/output error; ib0 has 0 VFs now." in str(err.value) and _numvfs(root) == "0"


def test_vfs_that_cannot_be_removed_leave_the_count_alone(tmp_path, monkeypatch):
    root = cx6_host(tmp_path)
    kernel = KernelWrites(root, refuse={("sys/bus/pci/devices/0000:3b:00.0/sriov_numvfs", "0"): errno.EBUSY})
    monkeypatch.setattr(_sriov, "write_attr", kernel)
    with pytest.raises(SriovError, match="num_vfs: could not remove the 2 VFs of ib0 before creating 4 .*Nothing "
                                         "changed"):
        PF("ib0", root).set_count(4, timeout=1)
    assert _numvfs(root) == "2"


def test_counts_go_through_zero_and_a_first_refusal_leaves_none(tmp_path, monkeypatch):
    root = cx6_host(tmp_path)
    kernel = KernelWrites(root)
    monkeypatch.setattr(_sriov, "write_attr", kernel)
    pf = PF("ib0", root)
    pf.set_count(4, timeout=1)
    pf.set_count(4, timeout=1)  # nothing to write
    assert [text for _path, text in kernel.log] == ["0", "4"] and _numvfs(root) == "4"
    pf.set_count(0, timeout=1)
    kernel.refuse[("sys/bus/pci/devices/0000:3b:00.0/sriov_numvfs", "9")] = errno.ERANGE
    with pytest.raises(SriovError, match="refused 9 VFs on ib0: .*Numerical result out of range; ib0 has 0 VFs, as "
                                         "before"):
        pf.set_count(9, timeout=1)
