# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nic_dcqcn module's glue: its arguments, and ``run_module`` (read the port's ecn/ files, plan, write, read back,
through ``_dcqcn``)."""

from __future__ import annotations

from . import _dcqcn


def _point_options(point):
    return {name: dict(type="bool" if high == 1 and name.startswith("clamp") else "int")
            for name, (_low, high) in _dcqcn.PARAMETERS[point].items()}


def module_args():
    """AnsibleModule's keyword arguments for nic_dcqcn."""
    return dict(
        argument_spec=dict(
            interface=dict(type="str", required=True),
            rp_priorities=dict(type="list", elements="int"),
            np_priorities=dict(type="list", elements="int"),
            rp=dict(type="dict", options=_point_options("rp")),
            np=dict(type="dict", options=_point_options("np")),
        ),
        supports_check_mode=True,
    )


def run_module(module, root="/", write=_dcqcn.write_int):
    p = module.params
    name = p["interface"]
    try:
        before = _dcqcn.read(name, root)
        changes = _dcqcn.plan(p, before, name)
    except _dcqcn.DcqcnError as exc:
        module.fail_json(msg=str(exc))
    result = dict(changed=bool(changes), before=before,
                  changes=[{"file": "ecn/%s" % rel, "before": b, "after": a} for rel, b, a, _p in changes])
    after = _dcqcn.predicted(before, changes)
    if changes and not module.check_mode:
        try:
            _dcqcn.apply(name, changes, root, write)
            after = _dcqcn.read(name, root)
        except _dcqcn.DcqcnError as exc:
            module.fail_json(msg=str(exc), **result)
        left = _dcqcn.plan(p, after, name)
        if left:
            module.fail_json(msg="%s: written, but the driver reports otherwise: %s" % (name, ", ".join(
                "ecn/%s is %s, not %s" % (rel, b, a) for rel, b, a, _p in left)), **dict(result, after=after))
    result["after"] = after
    if module._diff:
        result["diff"] = {"before": _dcqcn.text(before), "after": _dcqcn.text(after), "before_header": name,
                          "after_header": name}
    module.exit_json(**result)
