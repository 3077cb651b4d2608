# -*- coding: utf-8 -*-
"""dcbnl's IEEE reply decoded from bytes laid out as linux/dcbnl.h defines them (struct dcbmsg, nested DCB_ATTR_IEEE
with struct ieee_pfc and the APP table of struct dcb_app), and this kernel's answer for a netdev without DCB."""
from __future__ import annotations

import struct

import pytest

pyroute2 = pytest.importorskip("pyroute2")

from ansible_collections.aifabric.lab.plugins.module_utils import _dcb  # noqa: E402


def nlattr(kind, payload):
    """One netlink attribute: u16 length (header included), u16 type, payload padded to 4 bytes."""
    length = 4 + len(payload)
    return struct.pack("=HH", length, kind) + payload + b"\0" * ((4 - length % 4) % 4)


def reply(ifname, pfc_en=None, apps=()):
    """An RTM_GETDCB reply to DCB_CMD_IEEE_GET as the kernel builds it (dcbnl_ieee_fill)."""
    ieee = b""
    if pfc_en is not None:
        # ieee_pfc: pfc_cap 8, pfc_en, mbc 0, a pad byte, delay 0, 2 pad bytes, requests[8], indications[8]
        ieee += nlattr(2, bytes([8, pfc_en, 0, 0, 0, 0, 0, 0]) + bytes(128))
    if apps:
        ieee += nlattr(3, b"".join(nlattr(1, struct.pack("=BBH", sel, prio, proto)) for sel, prio, proto in apps))
    body = struct.pack("=BBH", 0, 21, 0) + nlattr(1, ifname.encode() + b"\0") + nlattr(13 | 0x8000, ieee)
    msg = _dcb.dcbmsg(struct.pack("=IHHII", 16 + len(body), 78, 0, 1, 0) + body)
    msg.decode()
    return msg


def test_pfc_on_priority_3_trusting_dscp():
    # mlx5 under "mlnx_qos --pfc 0,0,0,1,0,0,0,0 --trust dscp": pfc_en bit 3, DSCP 26 (AF31) and 0 in the APP table
    got = _dcb.decode(reply("ens1f0np0", pfc_en=0b00001000, apps=[(5, 3, 26), (5, 0, 0)]))
    assert got == {"reported": True, "pfc_cap": 8, "pfc_priorities": [3], "trust": "dscp", "dscp_entries": 2}


def test_pfc_off_trusting_pcp():
    # an ethertype entry (RoCE v1, 0x8915) is no DSCP mapping: the NIC trusts the VLAN priority
    got = _dcb.decode(reply("ens1f0np0", pfc_en=0, apps=[(1, 3, 0x8915)]))
    assert got == {"reported": True, "pfc_cap": 8, "pfc_priorities": [], "trust": "pcp", "dscp_entries": 0}


def test_two_priorities():
    assert _dcb.decode(reply("eth0", pfc_en=0b10001000))["pfc_priorities"] == [3, 7]


def test_this_kernels_loopback_has_no_dcb():
    with pyroute2.IPRoute() as ipr:
        got = _dcb.read("lo", ipr)
        # the socket still serves ordinary requests afterwards
        assert ipr.link("get", index=1)[0].get_attr("IFLA_IFNAME") == "lo"
    assert got["reported"] is False and got["reason"].startswith("lo has no DCB (")
