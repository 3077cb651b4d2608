# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tc_shape module's glue: its arguments, and ``run_module`` (the owner checked, one shaper read, compared and
applied by ``_tc.shape``)."""

from __future__ import annotations

from ._owner import OWNER_OPTIONS, OwnerError
from ._owner import validate as validate_owner
from ._pyroute2 import IPRoute, require_pyroute2
from ._tc import ShapeError, shape


def module_args():
    """AnsibleModule's keyword arguments for tc_shape."""
    return dict(
        argument_spec=dict(
            device=dict(type="str", required=True),
            direction=dict(type="str", default="egress", choices=["egress", "ingress"]),
            qdisc=dict(type="str", default="htb", choices=["htb", "tbf"]),
            rate=dict(type="str"),
            burst=dict(type="str"),
            latency=dict(type="float", default=0.05),
            fair_share_sources=dict(type="list", elements="str", default=[]),
            fair_share_destinations=dict(type="list", elements="str", default=[]),
            ack_priority=dict(type="bool", default=False),
            fair_share_ports=dict(type="int"),
            ifb_device=dict(type="str"),
            state=dict(type="str", default="present", choices=["present", "absent"]),
            state_dir=dict(type="path", default="/run/aifabric-lab"),
            owner=dict(type="dict", options=OWNER_OPTIONS),
        ),
        required_if=[("state", "present", ("rate",))],
        mutually_exclusive=[("fair_share_sources", "fair_share_destinations")],
        supports_check_mode=True,
    )


def run_module(module, iproute=IPRoute):
    require_pyroute2(module)
    with iproute() as ipr:
        try:
            params = dict(module.params)
            params["owner"] = validate_owner(params.get("owner"))
            result = shape(ipr, params, check_mode=module.check_mode, warn=module.warn)
        except (ShapeError, OwnerError) as exc:
            module.fail_json(msg=str(exc))
    module.exit_json(**result)
