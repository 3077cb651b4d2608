# -*- coding: utf-8 -*-
"""vfio_pci's planning, refusals, memory and persistence on fixture trees (pci_tree.py). The bind itself needs a real
kernel and is proven in the VM lab (tests/vmlab/vfio.yml): here only its bounded waits are exercised."""
from __future__ import annotations

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
)
from pci_tree import bind_driver, cx6_host, vm_guest


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
    with pytest.raises(PciError, match="timed out after 2 s waiting for 0000:00:04.0 to bind to vfio-pci"):
        b.bind(entry)
    # it polled (slept between checks, never spun) at one fixed interval...
    assert clock.sleeps and len(set(clock.sleeps)) == 1 and clock.sleeps[0] > 0
    interval = clock.sleeps[0]
    # ...and gave up at the first check past its deadline: not before the timeout, and not a poll later
    assert clock.now - interval <= timeout < clock.now
    with open(os.path.join(root, "sys/bus/pci/devices/0000:00:04.0/driver_override")) as handle:
        assert handle.read() == "vfio-pci"


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
