# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A NIC's IEEE DCB settings through dcbnl (rtnetlink's RTM_GETDCB, DCB_CMD_IEEE_GET), read only: which priorities
PFC pauses, and whether the NIC trusts DSCP (its APP table maps DSCP values to priorities, as mlx5 fills it under
``trust dscp``) or the VLAN priority (PCP). Netdevs without DCB (veth, virtio, most software devices) answer
EOPNOTSUPP: ``reported`` false. The message layout is linux/dcbnl.h's."""

from __future__ import annotations

import errno
import struct

try:
    from pyroute2.netlink import NLM_F_REQUEST, nla, nlmsg
except ImportError:  # the glue fails with missing_required_lib before anything here runs
    nla = nlmsg = object
    NLM_F_REQUEST = 1

RTM_GETDCB = 78
DCB_CMD_IEEE_GET = 21
APP_SEL_DSCP = 5  # IEEE_8021QAZ_APP_SEL_DSCP
# struct ieee_pfc: pfc_cap, pfc_en, mbc (u8), delay (u16, after one pad byte), requests[8], indications[8] (u64,
# 8-aligned): 136 bytes
_IEEE_PFC = struct.Struct("=BBBxH2x8Q8Q")
_DCB_APP = struct.Struct("=BBH")  # struct dcb_app: selector, priority, protocol


class dcbmsg(nlmsg):
    """struct dcbmsg and the attributes the IEEE query returns (linux/dcbnl.h: enum dcbnl_attrs, ieee_attrs)."""

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


def decode(msg):
    """``{reported, pfc_cap, pfc_priorities, trust, dscp_entries}`` from a decoded RTM_GETDCB reply."""
    ieee = msg.get_attr("DCB_ATTR_IEEE")
    if ieee is None:
        return {"reported": False, "reason": "the NIC's DCB reply carries no IEEE settings"}
    out = {"reported": True, "pfc_cap": None, "pfc_priorities": None, "trust": None, "dscp_entries": 0}
    pfc = ieee.get_attr("DCB_ATTR_IEEE_PFC")
    if pfc is not None and len(pfc) >= _IEEE_PFC.size:
        fields = _IEEE_PFC.unpack_from(pfc)
        out["pfc_cap"] = fields[0]
        out["pfc_priorities"] = [p for p in range(8) if fields[1] >> p & 1]
    table = ieee.get_attr("DCB_ATTR_IEEE_APP_TABLE")
    apps = [_DCB_APP.unpack_from(a) for a in (table.get_attrs("DCB_ATTR_IEEE_APP") if table is not None else [])
            if len(a) >= _DCB_APP.size]
    out["dscp_entries"] = len([a for a in apps if a[0] == APP_SEL_DSCP])
    out["trust"] = "dscp" if out["dscp_entries"] else "pcp"
    return out


def read(ifname, ipr):
    """The IEEE DCB settings of ``ifname``, or ``{reported: false, reason}`` where the netdev has none."""
    ipr.register_policy(RTM_GETDCB, dcbmsg)
    # pyroute2 0.9.7's synchronous nlm_request reads this status key, which only some of its sockets set (ipset)
    ipr.status.setdefault("nlm_generator", False)
    msg = dcbmsg()
    msg["family"] = 0
    msg["cmd"] = DCB_CMD_IEEE_GET
    msg["attrs"] = [("DCB_ATTR_IFNAME", ifname)]
    try:
        replies = ipr.nlm_request(msg, msg_type=RTM_GETDCB, msg_flags=NLM_F_REQUEST)
    except Exception as exc:  # pyroute2's NetlinkError
        code = getattr(exc, "code", None)
        if code in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENODEV):
            return {"reported": False, "reason": "%s has no DCB (%s)" % (ifname, errno.errorcode.get(code, code))}
        raise
    for reply in replies:
        if reply.get("header", {}).get("type") == RTM_GETDCB:
            return decode(reply)
    return {"reported": False, "reason": "no DCB reply for %s" % ifname}
