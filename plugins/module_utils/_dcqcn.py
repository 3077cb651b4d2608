# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""mlx5 DCQCN (RoCE congestion control) through the sysfs files of MLNX_OFED's mlx5_core: read, diff, write.

The layout is ``mlx5e_sysfs_create``'s (drivers/net/ethernet/mellanox/mlx5/core/en_sysfs.c, MLNX_OFED and the
distribution kernels that carry it): ``/sys/class/net/<if>/ecn/roce_rp`` (the reaction point: the sender that slows
down when CNPs come back) and ``ecn/roce_np`` (the notification point: the receiver that sends CNPs when packets
arrive ECN-marked), each with ``enable/0`` .. ``enable/7`` (DCQCN on or off per priority) and its parameters, which
hold for every priority of the port. Each file reads and takes one decimal number (``mlx5e_show_*``/``mlx5e_store_*``
in en_ecn.c). The files are read-only on a VF (``set_kobj_mode``: writable on the PF only), and writing 1 to a
priority already enabled fails with EPERM (``mlx5e_store_ecn_enable``): so only values that differ are written.

Upstream mlx5 has no such files (there DCQCN is on for the priorities the firmware's ROCE_CC_PRIO_MASK_P1 names,
set with mlxconfig, and its parameters are debugfs' ``mlx5/<pci>/cc_params``): the module says so."""

from __future__ import annotations

import errno
import os

POINTS = ("rp", "np")
DIRS = {"rp": "roce_rp", "np": "roce_np"}
U32 = (0, 2 ** 32 - 1)
# Each point's parameter files (en_sysfs.c, mlx5e_fill_rp_attributes and mlx5e_fill_np_attributes), with the range
# a value must be in: the width of its field in mlx5_ifc.h's cong_control_r_roce_ecn_rp/np, or the unit's own range
# (a percentage, a fixed-point fraction with 10 bits); the firmware refuses what else it does not take.
PARAMETERS = {
    "rp": {
        "clamp_tgt_rate": (0, 1),
        "clamp_tgt_rate_after_time_inc": (0, 1),
        "rpg_time_reset": U32,
        "rpg_byte_reset": U32,
        "rpg_threshold": U32,
        "rpg_max_rate": U32,
        "rpg_ai_rate": U32,
        "rpg_hai_rate": U32,
        "rpg_gd": U32,
        "rpg_min_dec_fac": (0, 100),
        "rpg_min_rate": U32,
        "rate_to_set_on_first_cnp": U32,
        "dce_tcp_g": (0, 1023),
        "dce_tcp_rtt": U32,
        "rate_reduce_monitor_period": U32,
        "initial_alpha_value": (0, 1023),
    },
    "np": {
        "min_time_between_cnps": U32,
        "cnp_dscp": (0, 63),
        "cnp_802p_prio": (0, 7),
    },
}


class DcqcnError(Exception):
    """A file the NIC does not have, a value out of range, or a write the driver refused; names the parameter."""


def ecn_dir(ifname, root="/"):
    return os.path.join(root, "sys/class/net", ifname, "ecn")


def _read_int(path):
    try:
        with open(path) as handle:
            text = handle.read().strip()
    except OSError as exc:
        raise DcqcnError("reading %s failed: %s" % (path, os.strerror(exc.errno))) from None
    if not text:  # mlx5e_show_ecn_enable returns nothing when the firmware query fails
        raise DcqcnError("%s reads empty: the firmware did not answer (is the port up, the firmware healthy?)" % path)
    try:
        return int(text.split()[0])
    except ValueError:
        raise DcqcnError("%s holds %r, not a number" % (path, text)) from None


def read(ifname, root="/"):
    """``{rp: {enabled: [prio...], parameters: {name: value}}, np: {...}, writable}`` of ``ifname``."""
    base = ecn_dir(ifname, root)
    if not os.path.isdir(os.path.join(root, "sys/class/net", ifname)):
        raise DcqcnError("interface: there is no interface %s on this host" % ifname)
    if not os.path.isdir(base):
        raise DcqcnError("interface: %s has no ecn/ directory in sysfs: DCQCN's files come with MLNX_OFED's mlx5_core "
                         "(upstream mlx5 has none: there DCQCN runs on the priorities of the firmware's "
                         "ROCE_CC_PRIO_MASK_P1, set with mlxconfig, and its parameters are debugfs' "
                         "mlx5/<pci>/cc_params)" % ifname)
    out = {"writable": True}
    for point in POINTS:
        pdir = os.path.join(base, DIRS[point])
        enable = os.path.join(pdir, "enable")
        if not os.path.isdir(enable):
            raise DcqcnError("interface: %s has no %s" % (ifname, os.path.relpath(enable, root)))
        enabled = [p for p in range(8) if _read_int(os.path.join(enable, str(p)))]
        params = {name: _read_int(os.path.join(pdir, name)) for name in PARAMETERS[point]
                  if os.path.exists(os.path.join(pdir, name))}
        out[point] = {"enabled": enabled, "parameters": params}
        if not os.stat(os.path.join(enable, "0")).st_mode & 0o200:  # 0444 on a VF, even for root
            out["writable"] = False
    return out


def plan(params, state, ifname):
    """``[(path relative to ecn/, before, after, parameter)]``: the files to write. Raises DcqcnError for a value out of
    range or a file the NIC does not have."""
    changes = []
    for point in POINTS:
        key = "%s_priorities" % point
        wanted = params.get(key)
        if wanted is not None:
            bad = [p for p in wanted if not 0 <= p <= 7]
            if bad:
                raise DcqcnError("%s: %d is no priority (0..7)" % (key, bad[0]))
            have = state[point]["enabled"]
            for prio in range(8):
                on = prio in wanted
                if on != (prio in have):
                    changes.append(("%s/enable/%d" % (DIRS[point], prio), int(not on), int(on), key))
        given = params.get(point) or {}
        for name, value in sorted(given.items()):
            if value is None:
                continue
            if name not in PARAMETERS[point]:
                raise DcqcnError("%s.%s: not a parameter of mlx5's %s (known: %s)" % (
                    point, name, DIRS[point], ", ".join(sorted(PARAMETERS[point]))))
            value = int(value)
            low, high = PARAMETERS[point][name]
            if not low <= value <= high:
                raise DcqcnError("%s.%s: %d is out of range (%d..%d)" % (point, name, value, low, high))
            have = state[point]["parameters"]
            if name not in have:
                raise DcqcnError("%s.%s: %s has no %s/%s (an older driver?); leave it out" % (
                    point, name, ifname, DIRS[point], name))
            if have[name] != value:
                changes.append(("%s/%s" % (DIRS[point], name), have[name], value, "%s.%s" % (point, name)))
    if changes and not state["writable"]:
        raise DcqcnError("interface: %s's ecn files are read-only (a VF: mlx5 makes them writable on the PF only); set "
                         "DCQCN on the PF's netdev" % ifname)
    return changes


def write_int(path, value):
    with open(path, "w") as handle:
        handle.write("%d\n" % value)


def apply(ifname, changes, root="/", write=write_int):
    """Write each change; on a refusal write back those already written (best effort) and raise DcqcnError naming
    the parameter, the file and the driver's answer."""
    base = ecn_dir(ifname, root)
    done = []
    for rel, before, after, param in changes:
        try:
            write(os.path.join(base, rel), after)
        except OSError as exc:
            undone = []
            for r, b, _a, p in reversed(done):
                try:
                    write(os.path.join(base, r), b)
                    undone.append(p)
                except OSError:
                    continue
            hint = {errno.EACCES: " (run as root: become: true)",
                    errno.EPERM: " (the driver refuses to enable a priority that is already on: another tool "
                                 "changed it during the run?)" if rel.split("/")[1:2] == ["enable"] else
                    " (run as root: become: true)"}.get(exc.errno, "")
            raise DcqcnError("%s: writing %d to ecn/%s on %s failed: %s%s%s" % (
                param, after, rel, ifname, errno.errorcode.get(exc.errno, exc.errno), hint,
                "; put back: %s" % ", ".join(undone) if undone else "")) from None
        done.append((rel, before, after, param))


def text(state):
    """The state as lines, for diff mode."""
    lines = []
    for point in POINTS:
        enabled = ",".join(map(str, state[point]["enabled"])) or "none"
        lines.append("%s enabled on priorities: %s" % (DIRS[point], enabled))
        lines += ["%s %s: %s" % (DIRS[point], k, v) for k, v in sorted(state[point]["parameters"].items())]
    return "\n".join(lines) + "\n"


def predicted(state, changes):
    """The state once ``changes`` are written (check mode's ``after``)."""
    out = {"writable": state["writable"]}
    for point in POINTS:
        out[point] = {"enabled": list(state[point]["enabled"]), "parameters": dict(state[point]["parameters"])}
    for rel, _before, after, _param in changes:
        directory, rest = rel.split("/", 1)
        point = "rp" if directory == "roce_rp" else "np"
        if rest.startswith("enable/"):
            prio = int(rest.split("/")[1])
            enabled = set(out[point]["enabled"])
            (enabled.add if after else enabled.discard)(prio)
            out[point]["enabled"] = sorted(enabled)
        else:
            out[point]["parameters"][rest] = after
    return out
