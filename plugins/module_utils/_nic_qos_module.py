# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nic_qos module's glue: its arguments, and ``run_module`` (read the NIC's DCB settings, plan the changes, send
them and read them back, through ``_dcb``)."""

from __future__ import annotations

from . import _dcb
from ._pyroute2 import IPRoute, require_pyroute2

ETS_OPTIONS = dict(
    tsa=dict(type="list", elements="str", choices=list(_dcb.SETTABLE_TSA)),
    bandwidth=dict(type="list", elements="int"),
    prio_tc=dict(type="list", elements="int"),
)


def module_args():
    """AnsibleModule's keyword arguments for nic_qos."""
    return dict(
        argument_spec=dict(
            interface=dict(type="str", required=True),
            pfc_priorities=dict(type="list", elements="int"),
            ets=dict(type="dict", options=ETS_OPTIONS),
            trust=dict(type="str", choices=["pcp", "dscp"]),
            dscp_map=dict(type="dict"),
            dcbx=dict(type="str", choices=["host", "firmware"]),
        ),
        supports_check_mode=True,
    )


def run_module(module, ipr_factory=None):
    p = module.params
    if ipr_factory is None:
        require_pyroute2(module)
        ipr_factory = IPRoute
    name = p["interface"]
    # a socket of its own: the message classes dcbnl needs are registered on it (as preflight_info does)
    with ipr_factory() as ipr:
        try:
            raw = _dcb.query(ipr, name)
            before = _dcb.view(raw)
            changes = _dcb.plan(p, raw, name)
        except _dcb.DcbError as exc:
            module.fail_json(msg=str(exc))
        result = dict(changed=bool(changes), changes=_dcb.changes_text(changes), before=before)
        after = before
        if changes and not module.check_mode:
            try:
                _dcb.apply(ipr, name, changes)
                raw = _dcb.query(ipr, name)
            except _dcb.DcbError as exc:
                module.fail_json(msg=str(exc), **result)
            after = _dcb.view(raw)
            left = _dcb.mismatch(p, raw, name)
            if left:
                module.fail_json(msg="%s: the driver took the settings but reports otherwise (%s); with DCBX in the "
                                     "firmware a willing port takes its peer's settings: set dcbx: host"
                                     % (name, left), **dict(result, after=after))
        elif changes:
            after = _predicted(before, changes)
    result["after"] = after
    if module._diff:
        result["diff"] = {"before": _dcb.text(before), "after": _dcb.text(after), "before_header": name,
                          "after_header": name}
    module.exit_json(**result)


def _predicted(before, changes):
    """The view check mode predicts: the raw settings with the planned changes applied."""
    raw = {"pfc": None, "ets": None, "apps": [], "dcbx": None, "ieee": True}
    view = dict(before)
    for what, old, new in changes:
        if what == "pfc":
            view["pfc_priorities"] = [p for p in range(8) if new["pfc_en"] >> p & 1]
        elif what == "ets":
            raw["ets"] = new
            view["ets"] = _dcb.view(raw)["ets"]
        elif what == "dcbx":
            view["dcbx"] = _dcb.dcbx_name(new)
        elif what == "app_add":
            dscp = dict(view["dscp_map"])
            dscp.update({protocol: priority for _sel, priority, protocol in new})
            view["dscp_map"] = dscp
        else:
            dscp = dict(view["dscp_map"])
            for _sel, priority, protocol in old:
                if dscp.get(protocol) == priority:
                    del dscp[protocol]
            view["dscp_map"] = dscp
    view["trust"] = "dscp" if view["dscp_map"] else "pcp"
    return view
