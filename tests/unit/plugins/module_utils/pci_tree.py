# -*- coding: utf-8 -*-
"""Fixture sysfs trees shaped like real hosts' PCI views: the same directories, files and relative symlinks.

The layouts are copied from real machines:
  * ``vm_guest``: the VM lab's q35 guest, read there with ls -l (virtio NICs whose netdevs sit under ``virtioN/net``,
    an e1000e alone in IOMMU group 4, and group 6 holding three endpoints: ISA bridge on lpc_ich, SATA on ahci,
    SMBus on i801_smbus);
  * ``cx6_host``: a dual-socket server with a ConnectX-6 (15b3:101b, InfiniBand class 0x0207) PF behind root port
    0000:3a:00.0, on mlx5_core with ib0/mlx5_0, sriov_totalvfs 8, two VFs (15b3:101c) linked by virtfnN/physfn, the
    first VF already on vfio-pci; and a two-port card whose functions share group 52 (no ACS).
"""
from __future__ import annotations

import errno
import os

from ansible_collections.aifabric.lab.plugins.module_utils._pci import PciError


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text + "\n")


def _link(path, target):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.symlink(target, path)


def _rel(frm_dir, to):
    return os.path.relpath(to, frm_dir)


def add_device(root, bdf, parent, vendor, device, klass, driver=None, group=None, numa=-1, netdevs=(), rdma=(),
               virtio_netdev=None, totalvfs=None, numvfs=None, override="(null)"):
    """One PCI function at sys/devices/<parent>/<bdf>, with the bus, driver and group links the kernel makes."""
    sysd = os.path.join(root, "sys")
    dev = os.path.join(sysd, "devices", parent, bdf)
    os.makedirs(dev)
    for name, value in (("vendor", vendor), ("device", device), ("class", klass), ("numa_node", str(numa)),
                        ("driver_override", override), ("subsystem_vendor", vendor), ("enable", "1")):
        _write(os.path.join(dev, name), value)
    bus_dev = os.path.join(sysd, "bus/pci/devices", bdf)
    _link(bus_dev, _rel(os.path.dirname(bus_dev), dev))
    if driver:
        bind_driver(root, bdf, driver)
    if group is not None:
        gdir = os.path.join(sysd, "kernel/iommu_groups", str(group), "devices")
        _link(os.path.join(dev, "iommu_group"), _rel(dev, os.path.dirname(gdir)))
        _link(os.path.join(gdir, bdf), _rel(gdir, dev))
    for name in netdevs:
        _netdev(root, os.path.join(dev, "net", name), name)
    if virtio_netdev:
        _netdev(root, os.path.join(dev, "virtio0", "net", virtio_netdev), virtio_netdev)
    for name in rdma:
        ib = os.path.join(dev, "infiniband", name)
        os.makedirs(ib)
        _link(os.path.join(ib, "device"), _rel(ib, dev))
        cls = os.path.join(sysd, "class/infiniband", name)
        _link(cls, _rel(os.path.dirname(cls), ib))
    if totalvfs is not None:
        _write(os.path.join(dev, "sriov_totalvfs"), str(totalvfs))
    if numvfs is not None:
        _write(os.path.join(dev, "sriov_numvfs"), str(numvfs))
        _write(os.path.join(dev, "sriov_drivers_autoprobe"), "1")
    return dev


def _netdev(root, path, name):
    os.makedirs(path)
    # net/<name>/device -> ../../../<device>, as the kernel links it
    _link(os.path.join(path, "device"), _rel(path, os.path.dirname(os.path.dirname(path))))
    _write(os.path.join(path, "address"), "52:54:00:00:00:01")
    link = os.path.join(root, "sys/class/net", name)
    _link(link, _rel(os.path.dirname(link), path))


def bind_driver(root, bdf, driver):
    """What the kernel does on a bind: the device's driver link and the driver's link back."""
    sysd = os.path.join(root, "sys")
    dev = os.path.realpath(os.path.join(sysd, "bus/pci/devices", bdf))
    ddir = os.path.join(sysd, "bus/pci/drivers", driver)
    for name in ("bind", "unbind", "new_id", "remove_id"):
        if not os.path.exists(os.path.join(ddir, name)):
            _write(os.path.join(ddir, name), "")
    if os.path.lexists(os.path.join(dev, "driver")):
        os.unlink(os.path.join(dev, "driver"))
    _link(os.path.join(dev, "driver"), _rel(dev, ddir))
    _link(os.path.join(ddir, bdf), _rel(ddir, dev))


def link_vf(root, pf, vf, index):
    sysd = os.path.join(root, "sys")
    pf_dev = os.path.realpath(os.path.join(sysd, "bus/pci/devices", pf))
    vf_dev = os.path.realpath(os.path.join(sysd, "bus/pci/devices", vf))
    _link(os.path.join(pf_dev, "virtfn%d" % index), _rel(pf_dev, vf_dev))
    _link(os.path.join(vf_dev, "physfn"), _rel(vf_dev, pf_dev))


def iommu(root, on=True, tables=("DMAR",), cmdline="BOOT_IMAGE=/vmlinuz root=/dev/vda rw intel_iommu=on iommu=pt"):
    for table in tables:
        _write(os.path.join(root, "sys/firmware/acpi/tables", table), "")
    if on:
        os.makedirs(os.path.join(root, "sys/class/iommu/dmar0"), exist_ok=True)
    _write(os.path.join(root, "proc/cmdline"), cmdline)
    os.makedirs(os.path.join(root, "sys/kernel/iommu_groups"), exist_ok=True)
    os.makedirs(os.path.join(root, "dev/vfio"), exist_ok=True)


def soft_roce(root, name="rxe0"):
    """A soft-RoCE device as rdma_rxe makes it: a virtual device, no PCI parent, no device link."""
    virt = os.path.join(root, "sys/devices/virtual/infiniband", name)
    os.makedirs(virt)
    cls = os.path.join(root, "sys/class/infiniband", name)
    _link(cls, _rel(os.path.dirname(cls), virt))


def vm_guest(root):
    root = str(root)
    iommu(root)
    p = "pci0000:00"
    add_device(root, "0000:00:00.0", p, "0x8086", "0x29c0", "0x060000", group=0)
    add_device(root, "0000:00:02.0", p, "0x1af4", "0x1000", "0x020000", "virtio-pci", 2, virtio_netdev="mgmt0")
    add_device(root, "0000:00:03.0", p, "0x1af4", "0x1000", "0x020000", "virtio-pci", 3, virtio_netdev="data0")
    add_device(root, "0000:00:04.0", p, "0x8086", "0x10d3", "0x020000", "e1000e", 4, netdevs=["pass0"])
    add_device(root, "0000:00:1f.0", p, "0x8086", "0x2918", "0x060100", "lpc_ich", 6)
    add_device(root, "0000:00:1f.2", p, "0x8086", "0x2922", "0x010601", "ahci", 6)
    add_device(root, "0000:00:1f.3", p, "0x8086", "0x2930", "0x0c0500", "i801_smbus", 6)
    _link(os.path.join(root, "sys/class/net/lo"), "../../devices/virtual/net/lo")
    os.makedirs(os.path.join(root, "sys/devices/virtual/net/lo"))
    return root


def cx6_host(root, iommu_on=True):
    root = str(root)
    iommu(root, on=iommu_on, cmdline="BOOT_IMAGE=/vmlinuz root=UUID=1 ro quiet" + (
        " intel_iommu=on iommu=pt" if iommu_on else ""))
    g = (lambda n: n) if iommu_on else (lambda n: None)
    add_device(root, "0000:3a:00.0", "pci0000:3a", "0x8086", "0x2030", "0x060400", "pcieport", g(37))
    port = "pci0000:3a/0000:3a:00.0"
    add_device(root, "0000:3b:00.0", port, "0x15b3", "0x101b", "0x020700", "mlx5_core", g(38), numa=0,
               netdevs=["ib0"], rdma=["mlx5_0"], totalvfs=8, numvfs=2)
    add_device(root, "0000:3b:00.1", port, "0x15b3", "0x101c", "0x020700", "vfio-pci", g(39), numa=0,
               override="vfio-pci")
    add_device(root, "0000:3b:00.2", port, "0x15b3", "0x101c", "0x020700", "mlx5_core", g(40), numa=0,
               netdevs=["ib1"], rdma=["mlx5_1"])
    link_vf(root, "0000:3b:00.0", "0000:3b:00.1", 0)
    link_vf(root, "0000:3b:00.0", "0000:3b:00.2", 1)
    if iommu_on:
        os.makedirs(os.path.join(root, "dev/vfio"), exist_ok=True)
        _write(os.path.join(root, "dev/vfio/39"), "")
    # A two-port 25G card without ACS: both functions in group 52, behind a root port (also in 52) on pcieport.
    add_device(root, "0000:5e:00.0", "pci0000:5d", "0x8086", "0x2032", "0x060400", "pcieport", g(52))
    add_device(root, "0000:5f:00.0", "pci0000:5d/0000:5e:00.0", "0x15b3", "0x1017", "0x020000", "mlx5_core", g(52),
               numa=1, netdevs=["ens2f0np0"], rdma=["mlx5_2"])
    add_device(root, "0000:5f:00.1", "pci0000:5d/0000:5e:00.0", "0x15b3", "0x1017", "0x020000", "mlx5_core", g(52),
               numa=1, netdevs=["ens2f1np1"], rdma=["mlx5_3"])
    return root


# ----------------------------------------------------------------------------------------------- stacked netdevs
# What the kernel makes when a device is stacked on another (netdev_adjacent_sysfs_add): the upper device gets
# lower_<dev> -> the lower's directory, the lower gets upper_<dev> (and, for a master, master -> the upper); a bond
# lists its slaves in bonding/slaves, a bridge its ports in brif/<port> -> ../../<port>/brport. Virtual netdevs
# live under sys/devices/virtual/net and are linked from sys/class/net, as on a real host.
def _netdev_dir(root, name):
    return os.path.realpath(os.path.join(root, "sys/class/net", name))


def virtual_netdev(root, name):
    path = os.path.join(root, "sys/devices/virtual/net", name)
    os.makedirs(path)
    _write(os.path.join(path, "address"), "52:54:00:00:01:01")
    link = os.path.join(root, "sys/class/net", name)
    _link(link, _rel(os.path.dirname(link), path))
    return path


def stack(root, upper, lower, master=False):
    up, low = _netdev_dir(root, upper), _netdev_dir(root, lower)
    _link(os.path.join(up, "lower_" + lower), _rel(up, low))
    _link(os.path.join(low, "upper_" + upper), _rel(low, up))
    if master:
        _link(os.path.join(low, "master"), _rel(low, up))


def vlan(root, lower, vid):
    name = "%s.%d" % (lower, vid)
    virtual_netdev(root, name)
    stack(root, name, lower)
    return name


def macvlan(root, name, lower):
    virtual_netdev(root, name)
    stack(root, name, lower)
    return name


def bond(root, name, slaves):
    path = virtual_netdev(root, name)
    _write(os.path.join(path, "bonding", "slaves"), " ".join(slaves))
    for slave in slaves:
        stack(root, name, slave, master=True)
        os.makedirs(os.path.join(_netdev_dir(root, slave), "bonding_slave"))
    return name


def bridge(root, name, ports):
    path = virtual_netdev(root, name)
    os.makedirs(os.path.join(path, "bridge"))
    for port in ports:
        stack(root, name, port, master=True)
        brport = os.path.join(_netdev_dir(root, port), "brport")
        os.makedirs(brport)
        _link(os.path.join(path, "brif", port), _rel(os.path.join(path, "brif"), brport))
    return name


# ----------------------------------------------------------------------------------------------- kernel writes
class KernelWrites:
    """Stands in for ``write_attr`` on a fixture tree and answers as the kernel does: ``driver_override`` holds the
    name (a lone newline clears it to ``(null)``); ``driver/unbind`` takes the device off its driver (both links
    go); ``drivers/<d>/bind`` binds it, refused (ENODEV) when driver_override names another driver;
    ``drivers_probe`` binds it to driver_override's driver, or else back to its host driver (``native``);
    ``sriov_numvfs`` refuses N on a PF that has VFs (EBUSY) and holds the count. ``refuse`` maps ``(path relative to
    the root, through any of its links, text)`` to an errno the write fails with, the way a driver's probe or
    sriov_configure fails;
    ``silent`` lists drivers whose probe fails without the write failing (the device stays unbound). Every write is
    logged as ``(relative path, text)``."""

    def __init__(self, root, native=None, refuse=None, silent=()):
        self.root = str(root)
        self.native = dict(native or {})
        self.refuse = dict(refuse or {})
        self.silent = set(silent)
        self.log = []

    def _fail(self, path, text, code):
        raise PciError("writing %r to %s failed: %s" % (text.strip(), path, os.strerror(code)))

    def _dev(self, bdf):
        return os.path.realpath(os.path.join(self.root, "sys/bus/pci/devices", bdf))

    def _driver(self, bdf):
        link = os.path.join(self._dev(bdf), "driver")
        return os.path.basename(os.readlink(link)) if os.path.islink(link) else None

    def _override(self, bdf):
        with open(os.path.join(self._dev(bdf), "driver_override")) as handle:
            value = handle.read().strip()
        return None if value in ("", "(null)") else value

    def _unbind(self, bdf):
        driver = self._driver(bdf)
        if driver:
            os.unlink(os.path.join(self._dev(bdf), "driver"))
            os.unlink(os.path.join(self.root, "sys/bus/pci/drivers", driver, bdf))

    def _bind(self, path, text, bdf, driver):
        if driver in self.silent:
            return
        if not os.path.isdir(os.path.join(self.root, "sys/bus/pci/drivers", driver)):
            self._fail(path, text, errno.ENODEV)
        bind_driver(self.root, bdf, driver)
        if driver == "vfio-pci":
            group = os.path.basename(os.readlink(os.path.join(self._dev(bdf), "iommu_group")))
            _write(os.path.join(self.root, "dev/vfio", group), "")

    def __call__(self, path, text, timeout=30.0):
        rel = os.path.relpath(path, self.root)
        self.log.append((rel, text))
        real = os.path.realpath(path)
        for (where, value), code in self.refuse.items():
            if value == text.strip() and os.path.realpath(os.path.join(self.root, where)) == real:
                self._fail(path, text, code)
        bdf = text.strip()
        if rel == "sys/bus/pci/drivers_probe":
            if self._driver(bdf) is None:
                driver = self._override(bdf) or self.native.get(bdf)
                if driver:
                    self._bind(path, text, bdf, driver)
            return
        parts = rel.split(os.sep)
        if parts[:4] == ["sys", "bus", "pci", "drivers"] and parts[-1] == "bind":
            override = self._override(bdf)
            if self._driver(bdf) is not None:
                self._fail(path, text, errno.EBUSY)
            if override and override != parts[4]:
                self._fail(path, text, errno.ENODEV)
            self._bind(path, text, bdf, parts[4])
            return
        if parts[-2:] == ["driver", "unbind"]:
            self._unbind(bdf)
            return
        if parts[-1] == "driver_override":
            with open(path, "w") as handle:
                handle.write("(null)\n" if text == "\n" else text + "\n")
            return
        if parts[-1] == "sriov_numvfs":
            with open(path) as handle:
                current = int(handle.read().strip() or 0)
            if int(text) and current:
                self._fail(path, text, errno.EBUSY)
        with open(path, "w") as handle:
            handle.write(text)
