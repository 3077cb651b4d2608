# -*- coding: utf-8 -*-
"""dcbnl as the kernel answers it for an mlx5 port (ConnectX-4 and later), in bytes.

A request arrives as the bytes pyroute2 encodes (struct nlmsghdr, struct dcbmsg, attributes); it is parsed the way
net/dcb/dcbnl.c parses it (nla_parse_nested_deprecated: no NLA_F_NESTED needed) and the reply is built the way
dcbnl builds it, then decoded by the message class the caller registered for the reply's type:

* ``dcbnl_ieee_fill`` (DCB_CMD_IEEE_GET): DCB_ATTR_IFNAME, DCB_ATTR_IEEE nested without NLA_F_NESTED
  (nla_nest_start_noflag) holding ETS (struct ieee_ets, 59 bytes), MAXRATE (64), PFC (struct ieee_pfc, 136),
  DCB_BUFFER (struct dcbnl_buffer, 44: mlx5 has dcbnl_getbuffer) and the APP table, then DCB_ATTR_DCBX (u8);
* ``dcbnl_ieee_set``/``dcbnl_ieee_del``/``dcbnl_setdcbx``: an RTM_SETDCB reply whose DCB_ATTR_IEEE/DCB_ATTR_DCBX is a
  u8, the driver's answer (a negative errno as a u8);
* no dcbnl_ops (veth, virtio): ``dcb_doit`` fails with EOPNOTSUPP; a set without CAP_NET_ADMIN fails with EPERM.

The driver's behaviour is mlx5's, from drivers/net/ethernet/mellanox/mlx5/core/en_dcbnl.c: ``mlx5e_ets_init`` (every
TC vendor, 100%, prio_tc 1,0,2,...,7), ``mlx5e_dbcnl_validate_ets`` (prio_tc below 8, the ETS TCs' shares sum to 100,
else -EINVAL), ``mlx5e_build_tc_tx_bw`` (a strict or vendor TC reads back 100%), ``mlx5e_dcbnl_ieee_getpfc``
(pfc_cap 8), ``mlx5e_dcbnl_ieee_setapp``/``_delapp`` (DSCP selector only, else -EINVAL; the first DSCP entry
switches trust to DSCP, the last one removed back to PCP; an entry for a DSCP value replaces the old one; removing
an entry that is not there is -ENOENT) and ``mlx5e_dcbnl_setdcbx`` (0: firmware DCBX; HOST bit: host mode;
LLD_MANAGED or no HOST bit: refused, 1)."""
from __future__ import annotations

import errno
import struct

from pyroute2.netlink.exceptions import NetlinkError

RTM_GETDCB, RTM_SETDCB = 78, 79


def nlattr(kind, payload):
    length = 4 + len(payload)
    return struct.pack("=HH", length, kind) + payload + b"\0" * ((4 - length % 4) % 4)


def attrs(data):
    """{type: [payload, ...]} of the attributes in ``data`` (flags masked off, as nla_type does)."""
    out, at = {}, 0
    while at + 4 <= len(data):
        length, kind = struct.unpack_from("=HH", data, at)
        out.setdefault(kind & 0x3FFF, []).append(data[at + 4:at + length])
        at += (length + 3) & ~3
    return out


class Mlx5Dcbnl:
    """One mlx5 port behind dcbnl; stands in for pyroute2's IPRoute (register_policy, status, nlm_request)."""

    def __init__(self, ifname="ens1f0np0", dcbx_host=False, dcb_ops=True, admin=True, ets=True):
        self.ifname, self.dcb_ops, self.admin, self.has_ets = ifname, dcb_ops, admin, ets
        self.tc_tsa = [255] * 8
        self.tc_bw = [100] * 8
        self.prio_tc = [1, 0, 2, 3, 4, 5, 6, 7]
        self.pfc_en = 0
        self.apps = []  # the kernel's dcb_app_list for this port: (selector, priority, protocol)
        self.trust = "pcp"
        self.dcbx = 0x0D if dcbx_host else 0x0C  # mlx5e_dcbnl_initialize: CEE|IEEE, HOST in host mode
        self.policy, self.status, self.requests, self.seq = {}, {}, [], 0
        self.refuse_pfc = False  # a firmware that fails PFC changes (-EIO), for the rollback path
        self.core_apps = False  # True: a driver that leaves the APP table to dcbnl (no ieee_setapp/ieee_delapp)

    # pyroute2's side
    def register_policy(self, kind, cls):
        self.policy[kind] = cls

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def close(self):
        pass

    def nlm_request(self, msg, msg_type, msg_flags):
        # what pyroute2's nlm_request does before it writes the message to the socket
        msg["header"]["type"], msg["header"]["flags"] = msg_type, msg_flags
        msg.encode()
        data = bytes(msg.data)
        length, kind, _flags, _seq, _pid = struct.unpack_from("=IHHII", data)
        assert kind == msg_type and length == len(data)
        _family, cmd, _pad = struct.unpack_from("=BBH", data, 16)
        tb = attrs(data[20:])
        self.requests.append((kind, cmd))
        if tb.get(1, [b""])[0].rstrip(b"\0").decode() != self.ifname:
            raise NetlinkError(errno.ENODEV)
        if not self.dcb_ops:
            raise NetlinkError(errno.EOPNOTSUPP)
        if kind == RTM_SETDCB and not self.admin:
            raise NetlinkError(errno.EPERM)
        handler = {21: self._get, 20: self._set, 27: self._del, 23: self._setdcbx}[cmd]
        return [self._reply(kind, cmd, handler(tb))]

    def _reply(self, kind, cmd, body):
        self.seq += 1
        payload = struct.pack("=BBH", 0, cmd, 0) + body
        raw = struct.pack("=IHHII", 16 + len(payload), kind, 0, self.seq, 0) + payload
        reply = self.policy[kind](raw)
        reply.decode()
        return reply

    # the kernel's side
    def _get(self, tb):
        ieee = b""
        if self.has_ets:
            ets = struct.pack("=BBB", 0, 8, 0) + bytes(self.tc_bw) + bytes(8) + bytes(self.tc_tsa) + \
                bytes(self.prio_tc) + bytes(24)
            ieee += nlattr(1, ets)
        ieee += nlattr(7, bytes(64))  # ieee_maxrate: no limit
        pfc = struct.pack("=BBBxH2x8Q8Q", 8, self.pfc_en, 0, 0, *([0] * 3 + [1204] + [0] * 4 + [0] * 8))
        ieee += nlattr(2, pfc)
        buffers = [130944, 130944] + [0] * 6 + [261888]
        ieee += nlattr(10, bytes([0, 0, 0, 1, 0, 0, 0, 0]) + struct.pack("=8II", *buffers))
        ieee += nlattr(3, b"".join(nlattr(1, struct.pack("=BBH", *a)) for a in self.apps))
        return nlattr(1, self.ifname.encode() + b"\0") + nlattr(13, ieee) + nlattr(14, bytes([self.dcbx]))

    def _answer(self, err):
        return nlattr(1, self.ifname.encode() + b"\0") + nlattr(13, struct.pack("=b", err))

    def _set(self, tb):
        ieee = attrs(tb[13][0])
        if 1 in ieee and self.has_ets:
            ets = ieee[1][0]
            bw, tsa, prio_tc = list(ets[3:11]), list(ets[19:27]), list(ets[27:35])
            if any(p >= 8 for p in prio_tc):
                return self._answer(-errno.EINVAL)
            ets_bw = [bw[i] for i in range(8) if tsa[i] == 2]
            if ets_bw and sum(ets_bw) != 100:
                return self._answer(-errno.EINVAL)
            self.tc_tsa, self.prio_tc = tsa, prio_tc
            self.tc_bw = [bw[i] if tsa[i] == 2 else 100 for i in range(8)]
        if 2 in ieee:
            if self.refuse_pfc:
                return self._answer(-errno.EIO)
            self.pfc_en = ieee[2][0][1]
        for app in attrs(ieee[3][0]).get(1, []) if 3 in ieee else []:
            selector, priority, protocol = struct.unpack_from("=BBH", app)
            if self.core_apps:  # no ieee_setapp op: dcbnl's dcb_ieee_setapp keeps every priority of a protocol
                if (selector, priority, protocol) in self.apps:
                    return self._answer(-errno.EEXIST)
                self.apps.append((selector, priority, protocol))
                continue
            if selector != 5 or protocol >= 64:
                return self._answer(-errno.EINVAL)
            if not [a for a in self.apps if a[0] == 5]:
                self.trust = "dscp"
            self.apps = [a for a in self.apps if not (a[0] == 5 and a[2] == protocol)] + [(5, priority, protocol)]
        return self._answer(0)

    def _del(self, tb):
        ieee = attrs(tb[13][0])
        for app in attrs(ieee[3][0]).get(1, []) if 3 in ieee else []:
            entry = struct.unpack_from("=BBH", app)
            if entry[0] != 5 and not self.core_apps or entry[2] >= 64:
                return self._answer(-errno.EINVAL)
            if entry not in self.apps:
                return self._answer(-errno.ENOENT)
            self.apps.remove(entry)
            if not [a for a in self.apps if a[0] == 5]:
                self.trust = "pcp"
        return self._answer(0)

    def _setdcbx(self, tb):
        mode = tb[14][0][0]
        if mode & 0x02:
            answer = 1
        elif not mode:
            self.dcbx &= ~0x01
            answer = 0
        elif not mode & 0x01:
            answer = 1
        else:
            self.dcbx, answer = mode, 0
        return nlattr(1, self.ifname.encode() + b"\0") + nlattr(14, bytes([answer]))

    @property
    def sets(self):
        return [r for r in self.requests if r[0] == RTM_SETDCB]
