# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The history module's glue: its arguments (which its action plugin, ``plugins/action/history.py``, validates and
acts on, on the controller), and ``run_module``, reached only when the action is not (it says so)."""

from __future__ import annotations

__all__ = ["module_args", "run_module"]


def module_args():
    """AnsibleModule's keyword arguments for history (the action validates the same spec)."""
    return dict(
        argument_spec=dict(
            record=dict(type="path"),
            sync=dict(type="bool", default=False),
            rebuild=dict(type="bool", default=False),
            runs_dir=dict(type="path"),
            db=dict(type="path"),
        ),
        mutually_exclusive=[("record", "sync", "rebuild")],
        supports_check_mode=True,
    )


def run_module(module):
    module.fail_json(msg="aifabric.lab.history runs on the controller, through its action plugin; it was run as a "
                         "module (an ansible-core without the collection's action plugins?). Call it as "
                         "aifabric.lab.history in a play.")
