# -*- coding: utf-8 -*-
"""The ``ecn/`` sysfs tree of MLNX_OFED's mlx5_core on a fixture host, and the driver's answers to writes.

The layout is ``mlx5e_sysfs_create`` and ``mlx5e_fill_attributes`` (drivers/net/ethernet/mellanox/mlx5/core/en_sysfs.c
in MLNX_OFED; the copy read is oracle/linux-uek's, which carries it): under the netdev's directory, ``ecn/roce_rp``
and ``ecn/roce_np``, each with ``enable/0`` .. ``enable/7`` and the point's parameter files, every one holding
``"%d\\n"``; mode 0644 on a PF and 0444 on a VF (``set_kobj_mode``). The values are the defaults NVIDIA's DCQCN
parameters page gives (DCQCN on every priority: the firmware's ROCE_CC_PRIO_MASK 0xff).

The host is pci_tree.cx6_host's: the ConnectX-5 (15b3:1017) at 0000:5f:00.0 with netdev ens2f0np0, here given one VF
(15b3:1018, 0000:5f:00.2, netdev ens2f0v0) as the PF's virtfn0."""
from __future__ import annotations

import errno
import os

from pci_tree import add_device, cx6_host, link_vf

RP = {"clamp_tgt_rate": 0, "clamp_tgt_rate_after_time_inc": 1, "rpg_time_reset": 300, "rpg_byte_reset": 32767,
      "rpg_threshold": 1, "rpg_max_rate": 0, "rpg_ai_rate": 5, "rpg_hai_rate": 50, "rpg_gd": 11,
      "rpg_min_dec_fac": 50, "rpg_min_rate": 1, "rate_to_set_on_first_cnp": 0, "dce_tcp_g": 1019, "dce_tcp_rtt": 1,
      "rate_reduce_monitor_period": 4, "initial_alpha_value": 1023}
NP = {"min_time_between_cnps": 4, "cnp_dscp": 48, "cnp_802p_prio": 6}


def _file(path, value, mode):
    with open(path, "w") as handle:
        handle.write("%d\n" % value)
    os.chmod(path, mode)


def ecn(netdev_dir, mode=0o644, rp=None, np=None):
    for directory, params in (("roce_rp", dict(RP, **(rp or {}))), ("roce_np", dict(NP, **(np or {})))):
        base = os.path.join(netdev_dir, "ecn", directory)
        os.makedirs(os.path.join(base, "enable"))
        for prio in range(8):
            _file(os.path.join(base, "enable", str(prio)), 1, mode)
        for name, value in params.items():
            _file(os.path.join(base, name), value, mode)


def mlx5_ofed_host(root, **values):
    """cx6_host with MLNX_OFED's ecn tree on ens2f0np0 (PF) and on its VF ens2f0v0 (read-only)."""
    root = cx6_host(root)
    add_device(root, "0000:5f:00.2", "pci0000:5d/0000:5e:00.0", "0x15b3", "0x1018", "0x020000", "mlx5_core", 53,
               numa=1, netdevs=["ens2f0v0"])
    link_vf(root, "0000:5f:00.0", "0000:5f:00.2", 0)
    ecn(os.path.realpath(os.path.join(root, "sys/class/net/ens2f0np0")), **values)
    ecn(os.path.realpath(os.path.join(root, "sys/class/net/ens2f0v0")), mode=0o444)
    return root


class Mlx5EcnWrites:
    """Stands in for ``_dcqcn.write_int`` and answers as mlx5e_store_* do: a 0444 file is refused (EACCES, as sysfs
    refuses it even to root); writing 1 to an ``enable/N`` that reads 1 fails with EPERM (mlx5e_store_ecn_enable);
    ``refuse`` maps a path relative to ``ecn/`` to the errno the firmware's MODIFY_CONG_PARAMS fails with. Every
    write is logged as (path relative to ecn/, value)."""

    def __init__(self, refuse=None):
        self.refuse, self.log = dict(refuse or {}), []

    def __call__(self, path, value):
        rel = path.split("/ecn/", 1)[1]
        self.log.append((rel, value))
        if not os.stat(path).st_mode & 0o200:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
        if rel in self.refuse:
            raise OSError(self.refuse[rel], os.strerror(self.refuse[rel]), path)
        with open(path) as handle:
            current = int(handle.read())
        if "/enable/" in rel and value and current:
            raise PermissionError(errno.EPERM, os.strerror(errno.EPERM), path)
        with open(path, "w") as handle:
            handle.write("%d\n" % value)
