# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ecn_marker module's glue: its arguments, and ``run_module`` (one port's marker read, compared and applied by
``_ecn.mark``)."""

from __future__ import annotations

from ._ecn import MODES, EcnError, mark
from ._pyroute2 import IPRoute, require_pyroute2


def module_args():
    """AnsibleModule's keyword arguments for ecn_marker."""
    return dict(
        argument_spec=dict(
            device=dict(type="str", required=True),
            mode=dict(type="str", default="step", choices=list(MODES)),
            buffer=dict(type="str"),
            threshold=dict(type="str"),
            min_threshold=dict(type="str"),
            max_threshold=dict(type="str"),
            max_probability=dict(type="float"),
            non_ect=dict(type="str", default="drop", choices=["drop", "pass"]),
            rate=dict(type="str"),
            state=dict(type="str", default="present", choices=["present", "absent"]),
        ),
        required_if=[("state", "present", ("buffer",))],
        supports_check_mode=True,
    )


def run_module(module, iproute=IPRoute):
    require_pyroute2(module)
    with iproute() as ipr:
        try:
            result = mark(ipr, dict(module.params), check_mode=module.check_mode)
        except EcnError as exc:
            module.fail_json(msg=str(exc))
    module.exit_json(**result)
