# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The perftest engine's options as a module argument spec, in one place: the ``flow`` module takes them at its top
level, ``flow_step`` under its ``perftest`` option. The defaults are ``PerftestOptions``' (``perftest_cli``), so the
modules, the command line and the plan cannot disagree."""

from __future__ import annotations

from .perftest_cli import TOOLS, PerftestOptions

__all__ = ["perftest_argument_spec"]


def perftest_argument_spec():
    """A fresh dict of the perftest options (each call a new one: a caller may extend or change its copy)."""
    defaults = PerftestOptions()
    return dict(
        tool=dict(type="str", default=defaults.tool, choices=list(TOOLS)),
        device=dict(type="str"),
        ib_port=dict(type="int", default=defaults.ib_port),
        gid_index=dict(type="int"),
        msg_size=dict(type="int", default=defaults.msg_size),
        qps=dict(type="int", default=defaults.qps),
        rdma_cm=dict(type="bool", default=defaults.rdma_cm),
        qp_timeout=dict(type="int"),
    )
