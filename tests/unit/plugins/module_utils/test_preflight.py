# -*- coding: utf-8 -*-
"""The preflight's host-side readers: sysfs on fixture trees laid out as real hosts' (pci_tree: the VM lab's guest and
a ConnectX host, with RDMA ports as the kernel writes them), netlink on this machine's own kernel (lo, unprivileged),
the leftovers listed by the real Scanner without removing anything."""
from __future__ import annotations

import json
import os

import pci_tree  # noqa: E402  (tests/unit/plugins/module_utils is on sys.path: its tests are no package)
import pytest
from ansible_collections.aifabric.lab.plugins.module_utils import _preflight as pf
from ansible_collections.aifabric.lab.plugins.module_utils._leftovers import Scanner

pyroute2 = pytest.importorskip("pyroute2")


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text + "\n")


def add_port(ibdir, port="1", state="4: ACTIVE", phys="5: LinkUp", layer="Ethernet", rate="25 Gb/sec (1X EDR)",
             gids=()):
    """One RDMA port as the kernel lays it out: state, phys_state, link_layer, rate, gids/N and gid_attrs/{types,
    ndevs}/N (an unused entry reads as zeros and its type as EINVAL: written here as the zero GID alone)."""
    pdir = os.path.join(ibdir, "ports", port)
    for name, value in (("state", state), ("phys_state", phys), ("link_layer", layer), ("rate", rate)):
        _write(os.path.join(pdir, name), value)
    for index, gid, kind, ndev in gids:
        _write(os.path.join(pdir, "gids", str(index)), gid)
        if kind:
            _write(os.path.join(pdir, "gid_attrs/types", str(index)), kind)
            _write(os.path.join(pdir, "gid_attrs/ndevs", str(index)), ndev)
    _write(os.path.join(pdir, "gids", "7"), "0000:0000:0000:0000:0000:0000:0000:0000")


# The 25G card's first port (ens2f0np0, mlx5_2, NUMA node 1) carrying 198.18.0.11: the GID table mlx5 fills for an
# IPv4 address (link-local v1 and v2, then the IPv4-mapped v1 and v2), as read on a ConnectX-6 Dx.
CX_GIDS = [(0, "fe80:0000:0000:0000:0e42:a1ff:fe6c:81f0", "IB/RoCE v1", "ens2f0np0"),
           (1, "fe80:0000:0000:0000:0e42:a1ff:fe6c:81f0", "RoCE v2", "ens2f0np0"),
           (2, "0000:0000:0000:0000:0000:ffff:c612:000b", "IB/RoCE v1", "ens2f0np0"),
           (3, "0000:0000:0000:0000:0000:ffff:c612:000b", "RoCE v2", "ens2f0np0")]
# rxe0 on the guest's data0 (198.18.100.1): GID 0 link-local, 1 the IPv4-mapped RoCE v2 (docs/vmlab.md)
RXE_GIDS = [(0, "fe80:0000:0000:0000:5054:00ff:feaf:0001", "RoCE v2", "data0"),
            (1, "0000:0000:0000:0000:0000:ffff:c612:6401", "RoCE v2", "data0")]


@pytest.fixture
def cx_host(tmp_path):
    root = pci_tree.cx6_host(tmp_path)
    add_port(os.path.join(root, "sys/class/infiniband/mlx5_2"), gids=CX_GIDS)
    add_port(os.path.join(root, "sys/class/infiniband/mlx5_0"), layer="InfiniBand", rate="200 Gb/sec (4X HDR)")
    _write(os.path.join(root, "sys/class/net/ens2f0np0/speed"), "25000")
    return root


@pytest.fixture
def guest(tmp_path):
    root = pci_tree.vm_guest(tmp_path)
    pci_tree.soft_roce(root)
    add_port(os.path.join(root, "sys/class/infiniband/rxe0"), rate="10 Gb/sec (1X QDR)", gids=RXE_GIDS)
    _write(os.path.join(root, "sys/class/net/data0/speed"), "-1")  # virtio_net without a speed: the kernel's -1
    return root


class Links:
    """Netlink's answers for the fixture hosts' links (the readers' only netlink calls: link_lookup, link get)."""

    def __init__(self, links):
        self.links = links  # {name: (index, mtu, operstate)}

    def link_lookup(self, ifname):
        return [self.links[ifname][0]] if ifname in self.links else []

    def link(self, _cmd, index):
        name, (i, mtu, state) = next((n, v) for n, v in self.links.items() if v[0] == index)
        return [{"attrs": [("IFLA_IFNAME", name), ("IFLA_MTU", mtu), ("IFLA_OPERSTATE", state)]}]


@pytest.mark.parametrize("netdev_mtu, roce", [(1500, 1024), (1400, 1024), (1100, 512), (4200, 4096), (4150, 2048),
                                              (9000, 4096), (300, None), (None, None)])
def test_the_roce_mtu_a_netdev_mtu_gives(netdev_mtu, roce):
    # by hand: the MTU less 96 bytes of RoCE headers (40+8+12+4+28+4), rounded down to an IB MTU
    assert pf.roce_mtu(netdev_mtu) == roce


def test_a_connectx_port_its_numa_node_speed_and_roce_v2_gid(cx_host):
    iface = pf.interface("ens2f0np0", Links({"ens2f0np0": (7, 9000, "UP")}), cx_host)
    assert iface == {"name": "ens2f0np0", "present": True, "mtu": 9000, "operstate": "UP", "speed_mbps": 25000,
                     "numa_node": 1, "driver": "mlx5_core", "device": "0000:5f:00.0"}
    assert pf.rdma_devices_on("ens2f0np0", cx_host) == ["mlx5_2"]
    port = pf.rdma_port("mlx5_2", "198.18.0.11", "ens2f0np0", cx_host)["ports"]["1"]
    assert port == {"state": "ACTIVE", "phys_state": "LinkUp", "link_layer": "Ethernet", "rate": "25 Gb/sec (1X EDR)",
                    "roce_v2_gid_index": 3, "roce_v2_gid": "::ffff:c612:b", "netdevs": ["ens2f0np0"]}
    # another address: no RoCE v2 GID carries it
    assert pf.rdma_port("mlx5_2", "198.18.0.12", "ens2f0np0", cx_host)["ports"]["1"]["roce_v2_gid_index"] is None
    assert pf.rdma_port("mlx5_9", None, None, cx_host) == {"device": "mlx5_9", "present": False,
                                                           "devices": ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]}


def test_an_infiniband_port_has_no_roce_gid(cx_host):
    port = pf.rdma_port("mlx5_0", "10.10.0.1", "ib0", cx_host)["ports"]["1"]
    assert port["link_layer"] == "InfiniBand" and port["roce_v2_gid_index"] is None


def test_a_guest_soft_roce_on_virtio_without_speed_or_numa(guest):
    iface = pf.interface("data0", Links({"data0": (3, 1500, "UP")}), guest)
    assert iface["speed_mbps"] is None and iface["numa_node"] is None and iface["driver"] is None
    # soft-RoCE has no PCI parent: found by its GIDs' netdev
    assert pf.rdma_devices_on("data0", guest) == ["rxe0"]
    assert pf.rdma_devices_on("mgmt0", guest) == []
    port = pf.rdma_port("rxe0", "198.18.100.1", "data0", guest)["ports"]["1"]
    assert port["roce_v2_gid_index"] == 1 and port["rate"] == "10 Gb/sec (1X QDR)"


def test_a_missing_interface(guest):
    assert pf.interface("data9", Links({}), guest) == {"name": "data9", "present": False}


def test_this_kernels_loopback_through_netlink():
    with pyroute2.IPRoute() as ipr:
        iface = pf.interface("lo", ipr)
        route = pf.path("127.0.0.1", ipr)
    with open("/sys/class/net/lo/mtu") as handle:
        mtu = int(handle.read())
    assert iface["present"] and iface["mtu"] == mtu and iface["operstate"] == "UNKNOWN"
    assert route["interface"] == "lo" and route["interface_mtu"] == mtu and route["mtu"] == mtu


def test_no_route_is_an_error_entry_not_an_exception():
    with pyroute2.IPRoute() as ipr:
        entry = pf.path("not-an-address", ipr)
    assert entry["peer"] == "not-an-address" and "no route" in entry["error"]


@pytest.mark.parametrize("text, version", [
    # ib_write_bw --version of Debian 12's perftest 4.5+0.17 (the VM lab's guests)
    ("Version: 6.06\n", "6.06"),
    (" Version: 6.21\n", "6.21"),
    ("ib_write_bw: unrecognized option '--version'\n", None),
])
def test_perftest_versions(text, version):
    assert pf.perftest_version(text) == version


def test_gather_lists_leftovers_and_removes_nothing(guest, tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    # a step daemon's PID file whose process is long gone (pid 2^22 - 1: above the default pid_max)
    (state / "step-r1-vm2.pid").write_text(json.dumps({"pid": 4194303, "run": "r1", "started_at": 1.0}))
    calls = []

    def version(tool):
        calls.append(tool)
        return (0, "Version: 6.06\n", "") if tool == "ib_write_bw" else (127, "", "not found")

    facts = pf.gather({"interface": "data0", "address": "198.18.100.1", "rdma_device": None, "peers": [],
                       "perftest_tools": ["ib_write_bw", "ib_read_lat"]},
                      Links({"data0": (3, 1500, "UP")}), version=version, scanner=Scanner(str(state)),
                      dcb=lambda name: {"reported": False, "reason": "%s has no DCB" % name}, root=guest)
    assert facts["dcb"] == {"reported": False, "reason": "data0 has no DCB"}
    assert facts["perftest"] == {"ib_write_bw": "6.06", "ib_read_lat": None}
    assert calls == ["ib_write_bw", "ib_read_lat"]
    listed = [(i["kind"], i["name"], i["action"]) for i in facts["leftovers"]]
    assert listed == [("pidfile", "step-r1-vm2", "would remove")]
    assert (state / "step-r1-vm2.pid").exists()
    assert facts["rdma"][0]["ports"]["1"]["roce_v2_gid_index"] == 1


def test_gather_needs_the_interface():
    with pytest.raises(pf.PreflightError, match="interface: give the host's data interface"):
        pf.gather({"interface": ""}, Links({}))
