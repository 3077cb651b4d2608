# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The mice module's glue: its arguments, and ``run_module`` (a server that answers, or a client that asks, through
``_mice``)."""

from __future__ import annotations

from ._mice import MiceError, generate, serve
from ._units import UnitError, parse_size


def module_args():
    """AnsibleModule's keyword arguments for mice."""
    return dict(
        argument_spec=dict(
            role=dict(type="str", required=True, choices=["client", "server"]),
            address=dict(type="str", required=True),
            port=dict(type="int", default=18700),
            duration=dict(type="float", default=10.0),
            rate=dict(type="float", default=200.0),
            size_min=dict(type="str", default="1KB"),
            size_max=dict(type="str", default="1MB"),
            alpha=dict(type="float", default=1.2),
            seed=dict(type="int", default=0),
            workers=dict(type="int", default=8),
            source=dict(type="str"),
        ),
        supports_check_mode=False,
    )


def run_module(module):
    p = module.params
    try:
        if p["role"] == "server":
            result = serve(p["address"], p["port"], p["duration"])
        else:
            result = generate(p["address"], p["port"], p["rate"], p["duration"],
                              size_min=parse_size(p["size_min"], "size_min"),
                              size_max=parse_size(p["size_max"], "size_max"), alpha=p["alpha"], seed=p["seed"],
                              workers=p["workers"], source=p["source"])
    except (MiceError, UnitError) as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=True, **result)
