# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pyroute2, imported once for every module that talks netlink, and the clear failure when it is missing."""

from __future__ import annotations

import traceback

from ansible.module_utils.basic import missing_required_lib

__all__ = ["IPRoute", "netns", "PYROUTE2_IMPORT_ERROR", "require_pyroute2", "nla"]

try:
    from pyroute2 import IPRoute, netns
except ImportError:
    IPRoute = netns = None
    PYROUTE2_IMPORT_ERROR = traceback.format_exc()
else:
    PYROUTE2_IMPORT_ERROR = None


def require_pyroute2(module):
    """Fail the module with missing_required_lib (and the import traceback) when pyroute2 is not installed."""
    if IPRoute is None:
        module.fail_json(msg=missing_required_lib("pyroute2"), exception=PYROUTE2_IMPORT_ERROR)


def nla(msg, name):
    """One attribute of a netlink message, decoded by pyroute2 or given as a plain ``{"attrs": [(name, value)]}``."""
    for key, value in msg.get("attrs", []):
        if key == name:
            return value
    return None
