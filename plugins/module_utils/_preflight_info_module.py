# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight_info module's glue: its arguments, and ``run_module`` (``_preflight.gather`` with netlink, the
perftest tools run for their version, the leftovers listed by ``_leftovers.Scanner``)."""

from __future__ import annotations

from . import _dcb, _pyroute2
from ._flow.state import DEFAULT_STATE_DIR
from ._leftovers import Scanner
from ._preflight import PreflightError, gather


def module_args():
    """AnsibleModule's keyword arguments for preflight_info."""
    return dict(
        argument_spec=dict(
            interface=dict(type="str", required=True),
            address=dict(type="str"),
            rdma_device=dict(type="str"),
            peers=dict(type="list", elements="str", default=[]),
            perftest_tools=dict(type="list", elements="str", default=["ib_write_bw"]),
            leftovers=dict(type="bool", default=True),
            state_dir=dict(type="path", default=DEFAULT_STATE_DIR),
        ),
        supports_check_mode=True,
    )


def run_module(module):
    _pyroute2.require_pyroute2(module)
    params = module.params

    def version(tool):
        path = module.get_bin_path(tool)
        if path is None:
            return 127, "", "%s: not found" % tool
        return module.run_command([path, "--version"])

    try:
        # dcbnl on a socket of its own (the message class it registers stays there)
        with _pyroute2.IPRoute() as ipr, _pyroute2.IPRoute() as dcb_ipr:
            scanner = None
            if params["leftovers"]:
                scanner = Scanner(params["state_dir"], ipr=ipr, netns=_pyroute2.netns, iproute=_pyroute2.IPRoute)
            facts = gather(params, ipr, version=version, scanner=scanner, dcb=lambda name: _dcb.read(name, dcb_ipr))
    except PreflightError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, **facts)
