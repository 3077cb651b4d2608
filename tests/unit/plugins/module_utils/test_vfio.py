# -*- coding: utf-8 -*-
"""vfio_pci's planning, refusals, memory and persistence on fixture trees (pci_tree.py). The bind itself needs a real
kernel and is proven in the VM lab (tests/vmlab/vfio.yml): here only its bounded waits are exercised."""
from __future__ import annotations

import errno
import json
import os

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils import _vfio
from ansible_collections.aifabric.lab.plugins.module_utils._pci import PciError, PciSysfs, write_attr
from ansible_collections.aifabric.lab.plugins.module_utils._vfio import (
    NetUse,
    VfioBinder,
    group_openers,
    rules_text,
    sysfs_lowers,
)
from pci_tree import KernelWrites, bind_driver, bond, bridge, cx6_host, macvlan, vlan, vm_guest


def binder(root, timeout=0.3):
    return VfioBinder(PciSysfs(root), root=root, timeout=timeout)


def test_single_device_group_binds(tmp_path):
    root = vm_guest(tmp_path)
    plan = binder(root).plan(["0000:00:04.0"], "bound")
    (entry,) = plan["devices"]
    assert plan["changes"] == ["0000:00:04.0"]
    assert entry["action"] == "bind" and entry["original_driver"] == "e1000e" and entry["netdevs"] == ["pass0"]
    assert entry["iommu_group"] == 4 and entry["persist_changes"] == []


def test_multi_device_group_refused_with_members(tmp_path):
    root = vm_guest(tmp_path)
    with pytest.raises(PciError) as err:
        binder(root).plan(["0000:00:1f.3"], "bound")
    msg = str(err.value)
    assert "IOMMU group 6 of 0000:00:1f.3 is not viable" in msg
    assert ("0000:00:1f.0 (8086:2918, lpc_ich), 0000:00:1f.2 (8086:2922, ahci), "
            "0000:00:1f.3 (8086:2930, i801_smbus)") in msg
    assert "set group: bind_all" in msg


def test_bind_all_takes_the_group_but_not_bridges(tmp_path):
    root = cx6_host(tmp_path)
    plan = binder(root).plan(["0000:5f:00.0"], "bound", group_policy="bind_all")
    assert [d["address"] for d in plan["devices"]] == ["0000:5f:00.0", "0000:5f:00.1"]
    # the root port 0000:5e:00.0 in the same group stays on pcieport


def test_naming_every_endpoint_is_enough(tmp_path):
    root = cx6_host(tmp_path)
    plan = binder(root).plan(["0000:5f:00.0", "0000:5f:00.1"], "bound")
    assert plan["changes"] == ["0000:5f:00.0", "0000:5f:00.1"]


def test_no_iommu_group_says_why(tmp_path):
    root = cx6_host(tmp_path, iommu_on=False)
    with pytest.raises(PciError, match="0000:3b:00.2 has no IOMMU group.*without intel_iommu=on.*vfio_host"):
        binder(root).plan(["0000:3b:00.2"], "bound")


def test_already_bound_is_unchanged(tmp_path):
    plan = binder(cx6_host(tmp_path)).plan(["0000:3b:00.1"], "bound")
    assert plan["changes"] == [] and plan["devices"][0]["action"] == "none"


@pytest.mark.parametrize("net,reason", [
    (NetUse(default_route=["pass0"]), "pass0 carries the default route"),
    (NetUse(ssh=["pass0"]), "pass0 holds the address this Ansible session is connected through"),
    (NetUse(active={"pass0": "up with address 10.0.0.1"}), "pass0 is in use (up with address 10.0.0.1)"),
])
def test_refuses_a_nic_in_use(tmp_path, net, reason):
    root = vm_guest(tmp_path)
    with pytest.raises(PciError, match="refusing to take devices.*force: true.*0000:00:04.0: " + reason.replace(
            "(", r"\(").replace(")", r"\)")):
        binder(root).plan(["0000:00:04.0"], "bound", net=net)
    assert binder(root).plan(["0000:00:04.0"], "bound", net=net, force=True)["changes"] == ["0000:00:04.0"]


def test_persistence_files_and_idempotence(tmp_path):
    root = vm_guest(tmp_path)
    b = binder(root)
    plan = b.plan(["0000:00:04.0"], "bound", persist=True)
    (entry,) = plan["devices"]
    rules = os.path.join(root, "etc/udev/rules.d/70-aifabric-vfio-0000:00:04.0.rules")
    modprobe = os.path.join(root, "etc/modprobe.d/aifabric-vfio-0000:00:04.0.conf")
    assert entry["persist_changes"] == sorted([rules, modprobe])
    b.write_persistence(entry)
    with open(modprobe) as handle:
        assert "softdep e1000e pre: vfio-pci" in handle.read()
    # once the device is on vfio-pci and the files are there, nothing is left to do
    bind_driver(root, "0000:00:04.0", "vfio-pci")
    with open(os.path.join(root, "sys/bus/pci/devices/0000:00:04.0/driver_override"), "w") as handle:
        handle.write("vfio-pci\n")
    b._remember(dict(entry, original_driver="e1000e"))
    again = b.plan(["0000:00:04.0"], "bound", persist=True)
    assert again["changes"] == [] and again["devices"][0]["original_driver"] == "e1000e"
    # unbound gives it back to the remembered driver and removes the files
    back = b.plan(["0000:00:04.0"], "unbound")
    assert back["devices"][0]["action"] == "unbind" and back["devices"][0]["original_driver"] == "e1000e"
    assert back["devices"][0]["persist_changes"] == sorted([rules, modprobe])
    b.write_persistence(back["devices"][0])
    assert not os.path.exists(rules) and not os.path.exists(modprobe)


def test_rule_is_keyed_by_address():
    text = rules_text("0000:3b:00.1", "15b3:101c", "mlx5_core")
    assert 'KERNEL=="0000:3b:00.1"' in text and 'ATTR{driver_override}="vfio-pci"' in text
    assert "echo %k > /sys/bus/pci/drivers_probe" in text and "iommu_group" not in text


def test_remembered_netdev_finds_a_bound_device(tmp_path):
    root = vm_guest(tmp_path)
    b = binder(root)
    b._remember({"address": "0000:00:04.0", "id": "8086:10d3", "original_driver": "e1000e", "netdevs": ["pass0"]})
    assert b.remembered_netdevs() == {"pass0": "0000:00:04.0"}
    with open(os.path.join(root, "var/lib/aifabric-lab/vfio/0000:00:04.0.json")) as handle:
        assert json.load(handle)["original_driver"] == "e1000e"


def test_release_refused_while_a_vm_holds_the_group(tmp_path):
    root = cx6_host(tmp_path)
    fd_dir = os.path.join(root, "proc/4242/fd")
    os.makedirs(fd_dir)
    os.symlink("/dev/vfio/39", os.path.join(fd_dir, "17"))
    with open(os.path.join(root, "proc/4242/comm"), "w") as handle:
        handle.write("qemu-system-x86\n")
    assert group_openers(39, root) == ["pid 4242 (qemu-system-x86)"]
    with pytest.raises(PciError, match=r"0000:3b:00.1: /dev/vfio/39 is open by pid 4242 \(qemu-system-x86\)"):
        binder(root).plan(["0000:3b:00.1"], "unbound")
    assert binder(root).plan(["0000:3b:00.1"], "unbound", force=True)["changes"] == ["0000:3b:00.1"]


def test_unbound_is_unchanged_on_a_host_driver(tmp_path):
    assert binder(vm_guest(tmp_path)).plan(["pass0"], "unbound")["changes"] == []


class FakeTime:
    """Stands in for ``_vfio``'s ``time``: ``sleep`` only moves ``monotonic`` on, and is recorded."""

    def __init__(self):
        self.now = 0.0
        self.sleeps = []

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def test_bind_that_never_settles_times_out(tmp_path, monkeypatch):
    """On a fixture nothing answers the writes: the wait for vfio-pci must poll until its timeout, then give up
    naming the device. The clock is a fake one, so how long the machine takes plays no part."""
    root = vm_guest(tmp_path)
    with open(os.path.join(root, "sys/bus/pci/drivers_probe"), "w"):
        pass
    clock = FakeTime()
    monkeypatch.setattr(_vfio, "time", clock)
    timeout = 2.02  # not a multiple of the poll interval: the first poll past the deadline is unambiguous
    b = binder(root, timeout=timeout)
    entry = b.plan(["0000:00:04.0"], "bound")["devices"][0]
    with pytest.raises(PciError, match="timed out after 2 s waiting for 0000:00:04.0 to bind to vfio-pci") as err:
        b.bind(entry)
    # it polled (slept between checks, never spun) at one fixed interval...
    assert clock.sleeps and len(set(clock.sleeps)) == 1 and clock.sleeps[0] > 0
    interval = clock.sleeps[0]
    # ...and gave up at the first check past its deadline: not before the timeout, and not a poll later
    assert clock.now - interval <= timeout < clock.now
    # the device is not left with driver_override=vfio-pci: a plain fixture never took it off e1000e, so clearing the
    # override is the whole restore
    with open(os.path.join(root, "sys/bus/pci/devices/0000:00:04.0/driver_override")) as handle:
        assert handle.read() == "\n"
    assert str(err.value).endswith("; driver_override cleared; it is still on e1000e")


def test_a_blocking_sysfs_write_is_bounded(tmp_path):
    """A FIFO with no reader blocks open() the way a driver blocks in remove(): the write must give up."""
    fifo = str(tmp_path / "unbind")
    os.mkfifo(fifo)
    with pytest.raises(PciError, match="did not return within 0 s"):
        write_attr(fifo, "0000:00:04.0", timeout=0.3)
    with open(fifo, "rb", buffering=0) as reader:  # release the blocked writer thread
        reader.read()


def test_a_failing_sysfs_write_says_where(tmp_path):
    with pytest.raises(PciError, match="writing 'x' to .*nosuchdir/unbind failed"):
        write_attr(str(tmp_path / "nosuchdir" / "unbind"), "x", timeout=1)


# ------------------------------------------------------------------ the management NIC, under what is stacked on it
def test_the_parent_of_a_vlan_that_carries_the_ssh_address_is_protected(tmp_path):
    root = vm_guest(tmp_path)
    vlan(root, "pass0", 100)
    lowers = sysfs_lowers(root)
    assert lowers == {"pass0.100": {"pass0"}}
    net = NetUse(ssh=["pass0.100"], lowers=lowers)
    with pytest.raises(PciError) as err:
        binder(root).plan(["0000:00:04.0"], "bound", net=net)
    assert ("0000:00:04.0: pass0 is under pass0.100 (pass0 -> pass0.100), and pass0.100 holds the address this "
            "Ansible session is connected through") in str(err.value)
    assert binder(root).plan(["0000:00:04.0"], "bound", net=net, force=True)["changes"] == ["0000:00:04.0"]


def test_a_macvlan_on_a_vlan_on_a_bond_carrying_the_default_route_protects_every_slave(tmp_path):
    root = cx6_host(tmp_path)
    bond(root, "bond0", ["ens2f0np0", "ens2f1np1"])
    vlan(root, "bond0", 10)
    macvlan(root, "mgmt0", "bond0.10")
    lowers = sysfs_lowers(root)
    assert lowers == {"bond0": {"ens2f0np0", "ens2f1np1"}, "bond0.10": {"bond0"}, "mgmt0": {"bond0.10"}}
    net = NetUse(default_route=["mgmt0"], lowers=lowers)
    assert net.reasons("ens2f1np1") == [
        "ens2f1np1 is under mgmt0 (ens2f1np1 -> bond0 -> bond0.10 -> mgmt0), and mgmt0 carries the default route"]
    with pytest.raises(PciError, match="0000:5f:00.0: ens2f0np0 is under mgmt0 .* carries the default route"):
        binder(root).plan(["0000:5f:00.0", "0000:5f:00.1"], "bound", net=net)
    # a device nothing is stacked on is not held back by its neighbours
    assert net.reasons("ib0") == []


def test_a_bridge_port_under_a_bridge_with_the_ssh_address(tmp_path):
    root = vm_guest(tmp_path)
    bridge(root, "br0", ["pass0"])
    lowers = sysfs_lowers(root)
    assert lowers == {"br0": {"pass0"}}
    assert NetUse(ssh=["br0"], lowers=lowers).reasons("pass0") == [
        "pass0 is under br0 (pass0 -> br0), and br0 holds the address this Ansible session is connected through"]


def _link(index, name, kind=None, link=None, master=None, netnsid=None):
    """An RTM_NEWLINK message as pyroute2 decodes a dump: encoded, then decoded."""
    from pyroute2.netlink.rtnl.ifinfmsg import ifinfmsg

    msg = ifinfmsg()
    msg["index"], msg["family"], msg["flags"] = index, 0, 0x1043
    attrs = [["IFLA_IFNAME", name], ["IFLA_MTU", 1500]]
    if link is not None:
        attrs.append(["IFLA_LINK", link])
    if master is not None:
        attrs.append(["IFLA_MASTER", master])
    if netnsid is not None:
        attrs.append(["IFLA_LINK_NETNSID", netnsid])
    if kind:
        attrs.append(["IFLA_LINKINFO", {"attrs": [["IFLA_INFO_KIND", kind]]}])
    msg["attrs"] = attrs
    msg.encode()
    out = ifinfmsg(msg.data)
    out.decode()
    return out


class Links:
    """The three dumps net_use reads, as an IPRoute gives them."""

    def __init__(self, links, routes=(), addrs=()):
        self.links, self.routes, self.addrs = links, list(routes), list(addrs)

    def get_links(self):
        return self.links

    def get_default_routes(self, family):
        return [r for r in self.routes if r["family"] == family]

    def get_addr(self):
        return self.addrs


def test_net_use_walks_ifla_link_and_ifla_master_but_not_a_veth_peer(tmp_path):
    import socket

    from ansible_collections.aifabric.lab.plugins.module_utils._vfio import net_use, netlink_lowers

    links = [_link(1, "lo"), _link(2, "pass0"), _link(3, "bond0", "bond"), _link(4, "eth1", master=3),
             _link(5, "bond0.7", "vlan", link=3), _link(6, "ipvl0", "ipvlan", link=5),
             _link(7, "veth0", "veth", link=8), _link(8, "veth1", "veth", link=7),
             _link(9, "mv1", "macvlan", link=2, netnsid=0)]
    assert netlink_lowers(links) == {"bond0": {"eth1"}, "bond0.7": {"bond0"}, "ipvl0": {"bond0.7"}}
    routes = [{"family": socket.AF_INET, "attrs": [("RTA_OIF", 6)]}]
    net = net_use(Links(links, routes), environ={}, root=str(tmp_path))
    assert net.default_route == {"ipvl0"}
    assert "eth1 is under ipvl0 (eth1 -> bond0 -> bond0.7 -> ipvl0), and ipvl0 carries the default route" in (
        net.reasons("eth1"))
    assert not any("veth" in r for r in net.reasons("veth1"))
    # a macvlan whose lower sits in another namespace (IFLA_LINK_NETNSID) says nothing about pass0 here
    assert net.reasons("pass0") == []


# ------------------------------------------------------------------ a device that fails mid-bind is given back
def _vfio_driver(root):
    os.makedirs(os.path.join(root, "sys/bus/pci/drivers/vfio-pci"))
    for name in ("bind", "unbind", "new_id", "remove_id"):
        with open(os.path.join(root, "sys/bus/pci/drivers/vfio-pci", name), "w"):
            pass


def _override(root, bdf):
    with open(os.path.join(root, "sys/bus/pci/devices", bdf, "driver_override")) as handle:
        return handle.read().strip()


def test_a_bind_that_the_kernel_refuses_puts_the_device_back_on_its_driver(tmp_path, monkeypatch):
    root = vm_guest(tmp_path)
    _vfio_driver(root)
    kernel = KernelWrites(root, native={"0000:00:04.0": "e1000e"},
                          refuse={("sys/bus/pci/drivers_probe", "0000:00:04.0"): errno.ENODEV})
    monkeypatch.setattr(_vfio, "write_attr", kernel)
    b = binder(root)
    entry = b.plan(["0000:00:04.0"], "bound")["devices"][0]
    with pytest.raises(PciError) as err:
        b.bind(entry)
    msg = str(err.value)
    assert msg.startswith("devices: 0000:00:04.0: binding to vfio-pci failed while binding it to vfio-pci "
                          "(drivers_probe): writing '0000:00:04.0' to ")
    assert "No such device; restored: driver_override cleared, back on e1000e (through e1000e's bind file)" in msg
    assert PciSysfs(root).driver("0000:00:04.0") == "e1000e" and _override(root, "0000:00:04.0") == "(null)"
    assert kernel.log == [
        ("sys/bus/pci/devices/0000:00:04.0/driver_override", "vfio-pci"),
        ("sys/bus/pci/devices/0000:00:04.0/driver/unbind", "0000:00:04.0"),
        ("sys/bus/pci/drivers_probe", "0000:00:04.0"),
        ("sys/bus/pci/devices/0000:00:04.0/driver_override", "\n"),
        ("sys/bus/pci/drivers/e1000e/bind", "0000:00:04.0")]
    # nothing was remembered for a device that is not on vfio-pci
    assert b.remembered() == {}


def test_a_probe_that_fails_silently_times_out_and_is_given_back_through_drivers_probe(tmp_path, monkeypatch):
    """vfio-pci's probe fails without the write failing: the device sits with no driver until the wait gives up; the
    old driver's bind file refuses too (its module is gone), so drivers_probe matches it again."""
    root = vm_guest(tmp_path)
    _vfio_driver(root)
    kernel = KernelWrites(root, native={"0000:00:04.0": "e1000e"}, silent=["vfio-pci"],
                          refuse={("sys/bus/pci/drivers/e1000e/bind", "0000:00:04.0"): errno.EINVAL})
    monkeypatch.setattr(_vfio, "write_attr", kernel)
    monkeypatch.setattr(_vfio, "time", FakeTime())
    b = binder(root, timeout=1.0)
    entry = b.plan(["0000:00:04.0"], "bound")["devices"][0]
    with pytest.raises(PciError) as err:
        b.bind(entry)
    msg = str(err.value)
    assert "failed while waiting for vfio-pci to take it: timed out after 1 s waiting for 0000:00:04.0" in msg
    assert "back on e1000e (through drivers_probe (e1000e's bind file refused: writing '0000:00:04.0'" in msg
    assert PciSysfs(root).driver("0000:00:04.0") == "e1000e" and _override(root, "0000:00:04.0") == "(null)"


def test_a_restore_that_fails_says_what_to_do(tmp_path, monkeypatch):
    root = vm_guest(tmp_path)
    _vfio_driver(root)
    kernel = KernelWrites(root, refuse={("sys/bus/pci/drivers_probe", "0000:00:04.0"): errno.ENODEV,
                                        ("sys/bus/pci/drivers/e1000e/bind", "0000:00:04.0"): errno.EIO})
    monkeypatch.setattr(_vfio, "write_attr", kernel)
    b = binder(root)
    entry = b.plan(["0000:00:04.0"], "bound")["devices"][0]
    with pytest.raises(PciError) as err:
        b.bind(entry)
    assert ("driver_override cleared, but giving it back to e1000e failed: writing '0000:00:04.0' to "
            in str(err.value))
    assert str(err.value).endswith("it is on no driver now: give it back with state: unbound driver: e1000e")
    assert _override(root, "0000:00:04.0") == "(null)"


def test_a_bind_that_succeeds_on_the_emulated_kernel(tmp_path, monkeypatch):
    root = vm_guest(tmp_path)
    _vfio_driver(root)
    kernel = KernelWrites(root, native={"0000:00:04.0": "e1000e"})
    monkeypatch.setattr(_vfio, "write_attr", kernel)
    b = binder(root)
    entry = b.plan(["0000:00:04.0"], "bound")["devices"][0]
    b.bind(entry)
    assert PciSysfs(root).driver("0000:00:04.0") == "vfio-pci" and os.path.exists(os.path.join(root, "dev/vfio/4"))
    assert b.remembered()["0000:00:04.0"]["original_driver"] == "e1000e"
    b.unbind(dict(entry, original_driver="e1000e"))
    assert PciSysfs(root).driver("0000:00:04.0") == "e1000e" and _override(root, "0000:00:04.0") == "(null)"
