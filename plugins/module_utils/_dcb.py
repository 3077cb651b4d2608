# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A NIC's IEEE DCB settings through dcbnl (rtnetlink's RTM_GETDCB/RTM_SETDCB), read and set: which priorities PFC
pauses, ETS (each traffic class's transmission selection algorithm and bandwidth share, the priority-to-TC map), the
DCBX mode, and the APP table's DSCP entries, which are both the DSCP-to-priority map and, on mlx5, the trust mode (the
driver trusts DSCP while the table holds a DSCP entry and the VLAN priority, PCP, when it holds none:
``mlx5e_dcbnl_ieee_setapp``/``_delapp`` in drivers/net/ethernet/mellanox/mlx5/core/en_dcbnl.c switch it). Netdevs
without DCB (veth, virtio, most software devices) answer EOPNOTSUPP.

The layouts are linux/dcbnl.h's (struct dcbmsg, struct ieee_ets, struct ieee_pfc, struct dcb_app; enum
dcbnl_commands, dcbnl_attrs, ieee_attrs, ieee_attrs_app) and the replies are shaped as net/dcb/dcbnl.c builds them:
the GET reply (``dcbnl_ieee_fill``) nests DCB_ATTR_IEEE (ETS, PFC, the APP table) and adds DCB_ATTR_DCBX; the replies
to DCB_CMD_IEEE_SET, DCB_CMD_IEEE_DEL and DCB_CMD_SDCBX are RTM_SETDCB messages whose DCB_ATTR_IEEE or DCB_ATTR_DCBX
is a u8 holding the driver's answer (0, or a negative errno as a u8), not a netlink error. A driver that lacks an op
(``ieee_setets``, say) is skipped by dcbnl without an error: so what the NIC offers is read from what the GET reply
carries, and every change is read back.

``read`` (preflight_info) reports; ``query``, ``plan`` and ``apply`` are the nic_qos module's read, diff and act."""

from __future__ import annotations

import errno
import struct

try:
    from pyroute2.netlink import NLM_F_REQUEST, nla, nlmsg
except ImportError:  # the glue fails with missing_required_lib before anything here runs
    nla = nlmsg = object
    NLM_F_REQUEST = 1

RTM_GETDCB = 78
RTM_SETDCB = 79
DCB_CMD_IEEE_SET = 20
DCB_CMD_IEEE_GET = 21
DCB_CMD_SDCBX = 23
DCB_CMD_IEEE_DEL = 27
APP_SEL_DSCP = 5  # IEEE_8021QAZ_APP_SEL_DSCP
MAX_TCS = 8  # IEEE_8021QAZ_MAX_TCS
# DCBX capability bits (DCB_CAP_DCBX_*)
DCBX_HOST, DCBX_LLD_MANAGED, DCBX_VER_CEE, DCBX_VER_IEEE = 0x01, 0x02, 0x04, 0x08
# transmission selection algorithms (IEEE_8021QAZ_TSA_*); the module sets the three that mlx5 programs
TSA_NAMES = {0: "strict", 1: "cb_shaper", 2: "ets", 255: "vendor"}
TSA_VALUES = {name: value for value, name in TSA_NAMES.items()}
SETTABLE_TSA = ("strict", "ets", "vendor")
# struct ieee_pfc: pfc_cap, pfc_en, mbc (u8), delay (u16, after one pad byte), requests[8], indications[8] (u64,
# 8-aligned): 136 bytes
_IEEE_PFC = struct.Struct("=BBBxH2x8Q8Q")
# struct ieee_ets: willing, ets_cap, cbs, then tc_tx_bw, tc_rx_bw, tc_tsa, prio_tc, tc_reco_bw, tc_reco_tsa,
# reco_prio_tc (u8[8] each): 59 bytes
_IEEE_ETS = struct.Struct("=BBB56B")
_ETS_ARRAYS = ("tc_tx_bw", "tc_rx_bw", "tc_tsa", "prio_tc", "tc_reco_bw", "tc_reco_tsa", "reco_prio_tc")
_DCB_APP = struct.Struct("=BBH")  # struct dcb_app: selector, priority, protocol


class DcbError(Exception):
    """A setting the NIC does not offer or refused; the message names the parameter and the interface."""


class dcbmsg(nlmsg):
    """struct dcbmsg as requests and RTM_GETDCB replies carry it (linux/dcbnl.h: enum dcbnl_attrs, ieee_attrs)."""

    fields = (("family", "B"), ("cmd", "B"), ("pad", "H"))
    nla_map = ((0, "DCB_ATTR_UNDEFINED", "none"),
               (1, "DCB_ATTR_IFNAME", "asciiz"),
               (13, "DCB_ATTR_IEEE", "ieee"),
               (14, "DCB_ATTR_DCBX", "uint8"))

    class ieee(nla):
        nla_map = ((0, "DCB_ATTR_IEEE_UNSPEC", "none"),
                   (1, "DCB_ATTR_IEEE_ETS", "cdata"),
                   (2, "DCB_ATTR_IEEE_PFC", "cdata"),
                   (3, "DCB_ATTR_IEEE_APP_TABLE", "app_table"))

        class app_table(nla):
            nla_map = ((0, "DCB_ATTR_IEEE_APP_UNSPEC", "none"),
                       (1, "DCB_ATTR_IEEE_APP", "cdata"))


class dcbsetmsg(nlmsg):
    """An RTM_SETDCB reply: DCB_ATTR_IEEE (IEEE_SET, IEEE_DEL) or DCB_ATTR_DCBX (SDCBX) is a u8, the driver's answer."""

    fields = (("family", "B"), ("cmd", "B"), ("pad", "H"))
    nla_map = ((0, "DCB_ATTR_UNDEFINED", "none"),
               (1, "DCB_ATTR_IFNAME", "asciiz"),
               (13, "DCB_ATTR_IEEE", "uint8"),
               (14, "DCB_ATTR_DCBX", "uint8"))


def unpack_pfc(data):
    f = _IEEE_PFC.unpack_from(data)
    return {"pfc_cap": f[0], "pfc_en": f[1], "mbc": f[2], "delay": f[3], "requests": list(f[4:12]),
            "indications": list(f[12:20])}


def pack_pfc(pfc):
    counts = pfc["requests"] + pfc["indications"]
    return _IEEE_PFC.pack(pfc["pfc_cap"], pfc["pfc_en"], pfc["mbc"], pfc["delay"], *counts)


def unpack_ets(data):
    f = _IEEE_ETS.unpack_from(data)
    out = {"willing": f[0], "ets_cap": f[1], "cbs": f[2]}
    for i, name in enumerate(_ETS_ARRAYS):
        out[name] = list(f[3 + i * MAX_TCS:3 + (i + 1) * MAX_TCS])
    return out


def pack_ets(ets):
    return _IEEE_ETS.pack(ets["willing"], ets["ets_cap"], ets["cbs"], *[v for name in _ETS_ARRAYS for v in ets[name]])


def parse(msg):
    """The raw settings in a decoded RTM_GETDCB reply: ``{ets, pfc, apps, dcbx}`` (None where the NIC has no such op;
    ``apps`` a list of (selector, priority, protocol))."""
    ieee = msg.get_attr("DCB_ATTR_IEEE")
    out = {"ieee": ieee is not None, "ets": None, "pfc": None, "apps": [], "dcbx": msg.get_attr("DCB_ATTR_DCBX")}
    if ieee is None:
        return out
    ets = ieee.get_attr("DCB_ATTR_IEEE_ETS")
    if ets is not None and len(ets) >= _IEEE_ETS.size:
        out["ets"] = unpack_ets(ets)
    pfc = ieee.get_attr("DCB_ATTR_IEEE_PFC")
    if pfc is not None and len(pfc) >= _IEEE_PFC.size:
        out["pfc"] = unpack_pfc(pfc)
    table = ieee.get_attr("DCB_ATTR_IEEE_APP_TABLE")
    out["apps"] = [_DCB_APP.unpack_from(a) for a in (table.get_attrs("DCB_ATTR_IEEE_APP") if table is not None else [])
                   if len(a) >= _DCB_APP.size]
    return out


def decode(msg):
    """``{reported, pfc_cap, pfc_priorities, trust, dscp_entries}`` from a decoded RTM_GETDCB reply (the preflight)."""
    raw = parse(msg)
    if not raw["ieee"]:
        return {"reported": False, "reason": "the NIC's DCB reply carries no IEEE settings"}
    out = {"reported": True, "pfc_cap": None, "pfc_priorities": None, "trust": None, "dscp_entries": 0}
    if raw["pfc"] is not None:
        out["pfc_cap"] = raw["pfc"]["pfc_cap"]
        out["pfc_priorities"] = _bits(raw["pfc"]["pfc_en"])
    out["dscp_entries"] = len([a for a in raw["apps"] if a[0] == APP_SEL_DSCP])
    out["trust"] = "dscp" if out["dscp_entries"] else "pcp"
    return out


def _errname(code):
    """EOPNOTSUPP by its name (Python's errorcode calls 95 ENOTSUP, Linux's alias)."""
    return "EOPNOTSUPP" if code == errno.EOPNOTSUPP else errno.errorcode.get(code, code)


def _bits(mask):
    return [p for p in range(8) if mask >> p & 1]


def _request(ipr, cmd, msg_type, attrs):
    """One dcbnl request; the replies of its type. Raises pyroute2's NetlinkError as it comes."""
    ipr.register_policy(RTM_GETDCB, dcbmsg)
    ipr.register_policy(RTM_SETDCB, dcbsetmsg)
    # pyroute2 0.9.7's synchronous nlm_request reads this status key, which only some of its sockets set (ipset)
    ipr.status.setdefault("nlm_generator", False)
    msg = dcbmsg()
    msg["family"] = 0
    msg["cmd"] = cmd
    msg["attrs"] = attrs
    replies = ipr.nlm_request(msg, msg_type=msg_type, msg_flags=NLM_F_REQUEST)
    return [r for r in replies if r.get("header", {}).get("type") == msg_type]


def _no_dcb(exc):
    code = getattr(exc, "code", None)
    return code in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENODEV), code


def read(ifname, ipr):
    """The IEEE DCB settings of ``ifname``, or ``{reported: false, reason}`` where the netdev has none."""
    try:
        replies = _request(ipr, DCB_CMD_IEEE_GET, RTM_GETDCB, [("DCB_ATTR_IFNAME", ifname)])
    except Exception as exc:  # pyroute2's NetlinkError
        absent, code = _no_dcb(exc)
        if absent:
            return {"reported": False, "reason": "%s has no DCB (%s)" % (ifname, _errname(code))}
        raise
    for reply in replies:
        return decode(reply)
    return {"reported": False, "reason": "no DCB reply for %s" % ifname}


def query(ipr, ifname):
    """The raw settings of ``ifname`` (``parse``), or DcbError saying why the NIC has none."""
    try:
        replies = _request(ipr, DCB_CMD_IEEE_GET, RTM_GETDCB, [("DCB_ATTR_IFNAME", ifname)])
    except Exception as exc:  # pyroute2's NetlinkError
        absent, code = _no_dcb(exc)
        if code == errno.ENODEV:
            raise DcbError("interface: there is no interface %s on this host" % ifname) from None
        if absent:
            raise DcbError("interface: %s has no DCB (dcbnl answered %s): its driver has no dcbnl operations (veth, "
                           "virtio and most software devices have none; on mlx5 the kernel must be built with "
                           "CONFIG_MLX5_CORE_EN_DCB)" % (ifname, _errname(code))) from None
        raise DcbError("interface: reading %s's DCB settings failed: %s" % (ifname, exc)) from None
    if not replies:
        raise DcbError("interface: dcbnl sent no reply for %s" % ifname)
    raw = parse(replies[0])
    if not raw["ieee"]:
        raise DcbError("interface: %s's driver reports no IEEE DCB settings (CEE only?); nic_qos sets IEEE DCB"
                       % ifname)
    return raw


# ------------------------------------------------------------------------------------------------ the user's view


def dcbx_name(value):
    if value is None:
        return None
    if value & DCBX_HOST:
        return "host"
    if value & DCBX_LLD_MANAGED:
        return "lld_managed"
    return "firmware"


def view(raw):
    """The settings as the module returns and diffs them."""
    dscp = {}
    for selector, priority, protocol in raw["apps"]:
        if selector == APP_SEL_DSCP:
            dscp.setdefault(protocol, []).append(priority)
    out = {"pfc_priorities": _bits(raw["pfc"]["pfc_en"]) if raw["pfc"] else None,
           "pfc_cap": raw["pfc"]["pfc_cap"] if raw["pfc"] else None,
           "ets": None, "trust": "dscp" if dscp else "pcp",
           "dscp_map": {d: (p[0] if len(p) == 1 else sorted(p)) for d, p in sorted(dscp.items())},
           "dcbx": dcbx_name(raw["dcbx"])}
    if raw["ets"]:
        ets = raw["ets"]
        out["ets"] = {"ets_cap": ets["ets_cap"], "tsa": [TSA_NAMES.get(t, str(t)) for t in ets["tc_tsa"]],
                      "bandwidth": list(ets["tc_tx_bw"]), "prio_tc": list(ets["prio_tc"])}
    return out


def text(v):
    """The view as lines, for diff mode."""
    lines = ["dcbx: %s" % (v["dcbx"] or "-"), "pfc priorities: %s" % (
        "-" if v["pfc_priorities"] is None else ",".join(map(str, v["pfc_priorities"])) or "none")]
    if v["ets"]:
        for tc in range(MAX_TCS):
            prios = [p for p in range(MAX_TCS) if v["ets"]["prio_tc"][p] == tc]
            lines.append("tc %d: %s %s%% priorities %s" % (tc, v["ets"]["tsa"][tc], v["ets"]["bandwidth"][tc],
                                                           ",".join(map(str, prios)) or "none"))
    lines.append("trust: %s" % v["trust"])
    lines += ["dscp %d: priority %s" % (d, p) for d, p in sorted(v["dscp_map"].items())]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------------- validate and plan


def _int_list(name, values, low, high, length=MAX_TCS):
    if len(values) != length:
        raise DcbError("%s: give %d values, one per %s, not %d" % (
            name, length, "traffic class" if "prio_tc" not in name else "priority", len(values)))
    for v in values:
        if not isinstance(v, int) or isinstance(v, bool) or not low <= v <= high:
            raise DcbError("%s: %r is not a whole number from %d to %d" % (name, v, low, high))
    return list(values)


def _dscp_map(given):
    out = {}
    for key, prio in (given or {}).items():
        try:
            dscp = int(key)
        except (TypeError, ValueError):
            raise DcbError("dscp_map: the key %r is no DSCP value (0..63)" % (key,)) from None
        try:
            prio = int(prio)
        except (TypeError, ValueError):
            raise DcbError("dscp_map: DSCP %d maps to %r, not a priority (0..7)" % (dscp, prio)) from None
        if not 0 <= dscp <= 63:
            raise DcbError("dscp_map: DSCP %d is out of range (0..63)" % dscp)
        if not 0 <= prio <= 7:
            raise DcbError("dscp_map: DSCP %d maps to priority %d, out of range (0..7)" % (dscp, prio))
        out[dscp] = prio
    return out


def plan(params, raw, ifname):
    """The changes the parameters ask of the NIC whose raw settings are ``raw``: a list of
    ``(what, before, after)`` with ``what`` one of dcbx, ets, pfc (after: the struct to send), app_add (after: the
    entries to set; before: those they replace), app_del (before: the entries to remove). Raises DcbError for what
    the NIC does not offer or the values do not allow."""
    changes = []
    if params.get("dcbx") is not None:
        if raw["dcbx"] is None:
            raise DcbError("dcbx: %s's driver reports no DCBX mode (no getdcbx op); leave dcbx out" % ifname)
        if dcbx_name(raw["dcbx"]) != params["dcbx"]:
            changes.append(("dcbx", raw["dcbx"], DCBX_HOST | DCBX_VER_IEEE if params["dcbx"] == "host" else 0))
    ets = params.get("ets")
    if ets and any(ets.get(k) is not None for k in ("tsa", "bandwidth", "prio_tc")):
        if raw["ets"] is None:
            raise DcbError("ets: %s offers no ETS (its driver has no ieee_getets op); leave ets out" % ifname)
        have = raw["ets"]
        cap = have["ets_cap"] or MAX_TCS
        if ets.get("tsa") is not None:
            if len(ets["tsa"]) != MAX_TCS:
                raise DcbError("ets.tsa: give 8 values, one per traffic class, not %d" % len(ets["tsa"]))
            bad = [t for t in ets["tsa"] if t not in SETTABLE_TSA]
            if bad:
                raise DcbError("ets.tsa: %s is not one of %s" % (bad[0], ", ".join(SETTABLE_TSA)))
        tsa = [TSA_VALUES[t] for t in ets["tsa"]] if ets.get("tsa") is not None else list(have["tc_tsa"])
        bw = _int_list("ets.bandwidth", ets["bandwidth"], 0, 100) if ets.get("bandwidth") is not None \
            else list(have["tc_tx_bw"])
        prio_tc = _int_list("ets.prio_tc", ets["prio_tc"], 0, cap - 1) if ets.get("prio_tc") is not None \
            else list(have["prio_tc"])
        used = sorted(set(prio_tc))
        if used and used[-1] >= cap:
            raise DcbError("ets.prio_tc: %s has %d traffic classes (ets_cap), so a priority maps to TC 0..%d"
                           % (ifname, cap, cap - 1))
        ets_tcs = [tc for tc in range(MAX_TCS) if tsa[tc] == TSA_VALUES["ets"]]
        total = sum(bw[tc] for tc in ets_tcs)
        if ets_tcs and total != 100:
            raise DcbError("ets.bandwidth: the shares of the ETS traffic classes (%s) sum to %d%%; they must sum to "
                           "100%% (the other classes' shares are not used)" % (
                               ", ".join("TC%d %d%%" % (tc, bw[tc]) for tc in ets_tcs), total))
        differs = tsa != have["tc_tsa"] or prio_tc != have["prio_tc"] or \
            any(bw[tc] != have["tc_tx_bw"][tc] for tc in ets_tcs)
        if differs:
            after = dict(have, tc_tsa=tsa, prio_tc=prio_tc, tc_tx_bw=bw)
            changes.append(("ets", have, after))
    if params.get("pfc_priorities") is not None:
        if raw["pfc"] is None:
            raise DcbError("pfc_priorities: %s offers no PFC (its driver has no ieee_getpfc op); leave "
                           "pfc_priorities out" % ifname)
        prios = params["pfc_priorities"]
        for p in prios:
            if not 0 <= p <= 7:
                raise DcbError("pfc_priorities: %d is no priority (0..7)" % p)
        cap = raw["pfc"]["pfc_cap"]
        if cap and len(set(prios)) > cap:
            raise DcbError("pfc_priorities: %s can pause at most %d priorities at once (pfc_cap), not %d"
                           % (ifname, cap, len(set(prios))))
        mask = sum(1 << p for p in set(prios))
        if mask != raw["pfc"]["pfc_en"]:
            changes.append(("pfc", raw["pfc"], dict(raw["pfc"], pfc_en=mask)))
    changes += _plan_apps(params, raw)
    return changes


def _plan_apps(params, raw):
    wanted = _dscp_map(params.get("dscp_map"))
    trust = params.get("trust")
    if wanted and trust == "pcp":
        raise DcbError("dscp_map: a DSCP map needs trust: dscp (the NIC trusts DSCP while its APP table holds DSCP "
                       "entries); drop dscp_map or set trust: dscp")
    if wanted:
        trust = "dscp"
    have = [a for a in raw["apps"] if a[0] == APP_SEL_DSCP]
    if trust == "pcp":
        return [("app_del", have, [])] if have else []
    if trust == "dscp" and not wanted and not have:
        # the default map, as mlx5 fills its table when the firmware starts in DSCP trust (mlx5e_dcbnl_dscp_app)
        wanted = {d: d >> 3 for d in range(64)}
    add = [(APP_SEL_DSCP, p, d) for d, p in sorted(wanted.items()) if (APP_SEL_DSCP, p, d) not in have]
    # the entries the new ones replace: mlx5 drops them itself, a driver without ieee_setapp keeps both (apply
    # removes what is left of them)
    replaced = [a for a in have if a[2] in wanted and a[1] != wanted[a[2]]]
    return [("app_add", replaced, add)] if add else []


def changes_text(changes):
    """Each change as one line, for the module's ``changes`` and its errors."""
    out = []
    for what, before, after in changes:
        if what == "dcbx":
            out.append("dcbx %s -> %s" % (dcbx_name(before), dcbx_name(after)))
        elif what == "pfc":
            out.append("pfc priorities %s -> %s" % (_bits(before["pfc_en"]) or "none", _bits(after["pfc_en"])
                                                    or "none"))
        elif what == "ets":
            out.append("ets tsa %s bandwidth %s prio_tc %s" % (
                [TSA_NAMES.get(t, t) for t in after["tc_tsa"]], after["tc_tx_bw"], after["prio_tc"]))
        elif what == "app_add":
            out.append("dscp map set: %s" % ", ".join("%d:%d" % (a[2], a[1]) for a in after))
        else:
            out.append("dscp entries removed: %s" % ", ".join("%d:%d" % (a[2], a[1]) for a in before))
    return out


# ------------------------------------------------------------------------------------------------------------ act


def _answer(replies, attr):
    for reply in replies:
        value = reply.get_attr(attr)
        if value is not None:
            return value - 256 if value > 127 else value
    return 0   # no status attribute: the request was taken


def _send(ipr, ifname, what, before, after):
    name = [("DCB_ATTR_IFNAME", ifname)]
    try:
        if what == "dcbx":
            answer = _answer(_request(ipr, DCB_CMD_SDCBX, RTM_SETDCB, name + [("DCB_ATTR_DCBX", after)]),
                             "DCB_ATTR_DCBX")
            if answer:
                return "the driver refused DCBX mode %s (mlx5 takes host, or firmware where the firmware runs " \
                    "DCBX)" % dcbx_name(after)
            return None
        if what == "ets":
            ieee = [("DCB_ATTR_IEEE_ETS", pack_ets(after))]
        elif what == "pfc":
            ieee = [("DCB_ATTR_IEEE_PFC", pack_pfc(after))]
        else:
            entries = after if what == "app_add" else before
            ieee = [("DCB_ATTR_IEEE_APP_TABLE", {"attrs": [("DCB_ATTR_IEEE_APP", _DCB_APP.pack(*a)) for a in entries]})]
        cmd = DCB_CMD_IEEE_DEL if what == "app_del" else DCB_CMD_IEEE_SET
        answer = _answer(_request(ipr, cmd, RTM_SETDCB, name + [("DCB_ATTR_IEEE", {"attrs": ieee})]), "DCB_ATTR_IEEE")
    except Exception as exc:  # pyroute2's NetlinkError: EPERM without CAP_NET_ADMIN, EOPNOTSUPP
        code = getattr(exc, "code", None)
        return "dcbnl answered %s%s" % (_errname(code), " (run as root: become: true)"
                                        if code == errno.EPERM else "")
    if answer:
        return "the driver answered %s" % _errname(-answer)
    if what == "app_add" and before:
        left = [a for a in query(ipr, ifname)["apps"] if a in before]
        if left:
            return _send(ipr, ifname, "app_del", left, [])
    return None


def apply(ipr, ifname, changes):
    """Send each change, in order (DCBX mode, ETS, PFC, the APP table); on a refusal put back the ones already sent
    (best effort) and raise DcbError naming the setting, the driver's answer and what was put back."""
    done = []
    for change in changes:
        what, before, after = change
        refused = _send(ipr, ifname, what, before, after)
        if refused:
            undone = []
            for w, b, a in reversed(done):
                if w == "app_add":  # remove what was added, then the entries it replaced
                    back = [("app_del", a, [])] + ([("app_add", [], b)] if b else [])
                elif w == "app_del":
                    back = [("app_add", [], b)]
                else:
                    back = [(w, a, b)]
                refusals = [_send(ipr, ifname, *step) for step in back]  # every step tried, even after a refusal
                if not any(refusals):
                    undone.append(_PARAM[w])
            raise DcbError("%s: %s on %s: %s%s" % (_PARAM[what], changes_text([change])[0], ifname, refused,
                                                   "; put back: %s" % ", ".join(undone) if undone else ""))
        done.append(change)


_PARAM = {"dcbx": "dcbx", "ets": "ets", "pfc": "pfc_priorities", "app_add": "dscp_map", "app_del": "trust"}


def mismatch(params, raw, ifname):
    """After apply: what the NIC reports that differs from what was asked (the firmware may hold its own view, as
    mlx5 does when DCBX runs in the firmware and the switch is willing), or None."""
    try:
        left = plan(params, raw, ifname)
    except DcbError as exc:
        return str(exc)
    return "; ".join(changes_text(left)) if left else None
