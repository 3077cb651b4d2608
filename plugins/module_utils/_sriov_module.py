# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sriov module's glue: its arguments, and ``run_module`` (validate everything first, then the count, then the
settings with rollback, through ``_sriov``)."""

from __future__ import annotations

import os

from ._atomic import write_text
from ._pyroute2 import IPRoute, require_pyroute2
from ._sriov import (
    PF,
    SriovError,
    SriovState,
    check_count,
    describe,
    errno_reason,
    in_use,
    netlink_request,
    persistence,
    plan_settings,
    read_settings,
    validate_vfs,
    wait_for,
)
from ._vfio import net_use

VF_OPTIONS = dict(
    index=dict(type="int", required=True),
    mac=dict(type="str"),
    vlan=dict(type="int"),
    qos=dict(type="int"),
    spoofchk=dict(type="bool"),
    trust=dict(type="bool"),
    link_state=dict(type="str", choices=["auto", "enable", "disable"]),
    min_tx_rate=dict(type="int"),
    max_tx_rate=dict(type="int"),
    node_guid=dict(type="str"),
    port_guid=dict(type="str"),
)


def module_args():
    """AnsibleModule's keyword arguments for sriov."""
    return dict(
        argument_spec=dict(
            pf=dict(type="str", required=True),
            num_vfs=dict(type="int"),
            vfs=dict(type="list", elements="dict", default=[], options=VF_OPTIONS),
            force=dict(type="bool", default=False),
            persistent=dict(type="bool", default=False),
            timeout=dict(type="float", default=60.0),
        ),
        supports_check_mode=True,
    )


def _text(count, settings):
    lines = ["num_vfs: %s" % count]
    for vf in settings:
        lines += ["vf %d %s: %s" % (vf["index"], k, vf[k]) for k in sorted(vf) if k != "index"]
    return "\n".join(lines) + "\n"


def run_module(module, root="/"):
    p = module.params
    require_pyroute2(module)
    try:
        pf = PF(p["pf"], root)
        current = pf.num_vfs()
        total = pf.total_vfs()
        count = current if p["num_vfs"] is None else p["num_vfs"]
        check_count(pf, count)
        vfs = validate_vfs(p["vfs"], count)
        if vfs and not pf.netdev:
            raise SriovError("pf: %s has no netdev; VF settings go through the PF's netdev (is its driver loaded?)"
                             % pf.name)
    except SriovError as exc:
        module.fail_json(msg=str(exc))
    state = SriovState(root, pf.key)
    saved = state.load()
    result = dict(changed=False)
    with IPRoute() as ipr:
        try:
            ifindex, _num, before = read_settings(ipr, pf.netdev) if pf.netdev else (None, current, [])
            count_change = count != current
            if count_change and current and not p["force"]:
                reasons = in_use(pf, current, net_use(ipr, root=root))
                if reasons:
                    raise SriovError("num_vfs: refusing to change %s from %d to %d VFs while they are in use (set "
                                     "force: true to go ahead): %s" % (pf.name, current, count, "; ".join(reasons)))
            remembered = {} if count_change else saved.get("vfs", {})
            changes = plan_settings(vfs, [] if count_change else before, remembered)
            files = {}
            if p["persistent"]:
                wanted = persistence(pf, count, vfs, root) if count else {}
                paths = set(wanted) | set(persistence(pf, count, vfs, root))
                for path in paths:
                    try:
                        with open(path) as handle:
                            have = handle.read()
                    except OSError:
                        have = None
                    if have != wanted.get(path):
                        files[path] = wanted.get(path)
        except SriovError as exc:
            module.fail_json(msg=str(exc))
        changed = count_change or bool(changes) or bool(files)
        result.update(changed=changed, changes=[{"vf": i, "setting": k, "before": o, "after": n}
                                                for i, k, o, n in changes])
        if module._diff:
            after = {vf["index"]: dict(vf) for vf in ([] if count_change else before)}
            for index, key, _old, new in changes:
                after.setdefault(index, {"index": index})[key] = new
            result["diff"] = {"before": _text(current, before), "after": _text(count, sorted(
                after.values(), key=lambda v: v["index"])), "before_header": pf.name, "after_header": pf.name}
        if changed and not module.check_mode:
            _apply(module, pf, ipr, count, count_change, changes, files, state, saved, vfs, result)
        ifindex, num, now = read_settings(ipr, pf.netdev) if pf.netdev else (None, pf.num_vfs(), [])
    result["pf"] = {"name": pf.name, "netdev": pf.netdev, "address": pf.address, "total_vfs": total,
                    "num_vfs": pf.num_vfs()}
    result["vfs"] = describe(pf, now)
    module.exit_json(**result)


def _apply(module, pf, ipr, count, count_change, changes, files, state, saved, vfs, result):
    p = module.params
    try:
        if count_change:
            pf.set_count(count, p["timeout"])
            if pf.netdev:
                wait_for(lambda: _netlink_count(ipr, pf, count), p["timeout"], "every VF to appear in netlink")
            if pf.address:
                wait_for(lambda: _pci_count(pf, count), p["timeout"], "every VF's PCI function")
    except SriovError as exc:
        module.fail_json(msg=str(exc), **result)
    applied = []
    if changes:
        ifindex, _num, current = read_settings(ipr, pf.netdev)
        by_index = {vf["index"]: vf for vf in current}
        for index, key, old, new in changes:
            have = by_index.setdefault(index, {"index": index})
            try:
                ipr.link("set", index=ifindex, vf=netlink_request(index, key, new, have))
            except Exception as exc:  # pyroute2's NetlinkError carries the errno
                undone = _undo(ipr, ifindex, applied, by_index)
                module.fail_json(msg="vfs: VF %d %s = %r on %s: %s%s" % (
                    index, key, new, pf.name, errno_reason(exc),
                    "; the settings applied before it were undone (%s)" % ", ".join(undone) if undone else ""),
                    **result)
            have[key] = new
            applied.append((index, key, old, new))
        # read back what the kernel applied
        _i, _n, after = read_settings(ipr, pf.netdev)
        got = {vf["index"]: vf for vf in after}
        for index, key, _old, new in changes:
            if key in got.get(index, {}) and got[index][key] != new:
                module.fail_json(msg="vfs: VF %d %s: set %r but the kernel reports %r"
                                 % (index, key, new, got[index][key]), **result)
    remembered = {} if count_change else dict(saved.get("vfs", {}))
    for vf in vfs:
        remembered.setdefault(str(vf["index"]), {}).update({k: v for k, v in vf.items() if k != "index"})
    state.save({"pf": pf.key, "num_vfs": count, "vfs": remembered})
    for path, text in files.items():
        if text is None:
            os.unlink(path)
            continue
        write_text(path, text, mode=0o755 if "/sbin/" in path else 0o644)
    if files:
        udevadm = module.get_bin_path("udevadm")
        if udevadm:
            module.run_command([udevadm, "control", "--reload"])


def _netlink_count(ipr, pf, count):
    have = read_settings(ipr, pf.netdev)[1] or 0
    return True if have == count else "%d of %d VFs so far" % (have, count)


def _pci_count(pf, count):
    have = len(pf.vf_addresses())
    return True if have == count else "%d of %d PCI functions so far" % (have, count)


def _undo(ipr, ifindex, applied, by_index):
    undone = []
    for index, key, old, _new in reversed(applied):
        if old is None:
            continue
        try:
            ipr.link("set", index=ifindex, vf=netlink_request(index, key, old, by_index.get(index, {})))
            by_index.setdefault(index, {})[key] = old
            undone.append("VF %d %s" % (index, key))
        except Exception:  # best effort; the failure that matters is reported by the caller
            continue
    return undone
