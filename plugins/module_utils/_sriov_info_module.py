# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sriov_info module's glue: its arguments, and ``run_module`` (every PF with SR-IOV, or the named ones, with its
VFs and their netlink settings, through ``_sriov``)."""

from __future__ import annotations

import os

from ._pyroute2 import IPRoute, require_pyroute2
from ._sriov import PF, SriovError, describe, read_settings


def module_args():
    """AnsibleModule's keyword arguments for sriov_info."""
    return dict(argument_spec=dict(pfs=dict(type="list", elements="str")), supports_check_mode=True)


def run_module(module, root="/"):
    require_pyroute2(module)
    names = module.params["pfs"]
    if not names:
        names = [n for n in sorted(os.listdir(os.path.join(root, "sys/class/net")))
                 if os.path.exists(os.path.join(root, "sys/class/net", n, "device", "sriov_numvfs"))]
    out = {}
    with IPRoute() as ipr:
        for name in names:
            try:
                pf = PF(name, root)
                _i, _n, settings = read_settings(ipr, pf.netdev) if pf.netdev else (None, None, [])
            except SriovError as exc:
                module.fail_json(msg=str(exc).replace("pf:", "pfs:", 1))
            out[pf.name] = {"netdev": pf.netdev, "address": pf.address, "total_vfs": pf.total_vfs(),
                            "num_vfs": pf.num_vfs(), "vfs": describe(pf, settings)}
    module.exit_json(changed=False, pfs=out)
