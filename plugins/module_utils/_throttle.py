# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One throttle for experiments: the mechanism that actually slows the step's traffic, and why it was chosen.

* ``tc`` (htb on the interface's egress): kernel-stack traffic, which includes the built-in tcp engine and soft-RoCE
  (rxe sends UDP through the stack); on a hardware RDMA NIC it would shape nothing of the verbs traffic.
* ``vf_rate`` (the VF's ``max_tx_rate`` through the PF, netlink): an RDMA device that is an SR-IOV VF of a real NIC;
  the NIC enforces it in hardware, so it bites verbs traffic.
* ``perftest_sw`` (perftest's ``--rate_limit --rate_limit_type=SW``): any perftest flow, including a hardware PF with
  no VF; nothing on the host changes, the flow module gets the rate.
"""

from __future__ import annotations

import os

from . import _rdma_sysfs as _rdma
from ._pci import BDF_IN_PATH, PciSysfs

MECHANISMS = ("auto", "tc", "vf_rate", "perftest_sw")


class ThrottleError(ValueError):
    pass


def rdma_kind(device, root="/"):
    """``{"kind": soft|vf|pf, "address", "pf_address", "vf_index"}`` of an RDMA device."""
    try:
        _rdma.require([device], root, parameter="rdma_device")
    except KeyError as exc:
        raise ThrottleError(exc.args[0]) from None
    base = _rdma.device_dir(device, root)
    link = os.path.join(base, "device")
    real = os.path.realpath(link) if os.path.exists(link) else ""
    address = os.path.basename(real) if BDF_IN_PATH.match(os.path.basename(real)) else None
    if address is None:
        return {"kind": "soft", "address": None, "pf_address": None, "vf_index": None}
    pci = PciSysfs(root)
    pf = pci.physfn(address)
    if pf is None:
        return {"kind": "pf", "address": address, "pf_address": None, "vf_index": None}
    index = pci.virtfns(pf).index(address) if address in pci.virtfns(pf) else None
    return {"kind": "vf", "address": address, "pf_address": pf, "vf_index": index}


def choose(engine, mechanism="auto", rdma_device=None, root="/"):
    """``(mechanism, reason, warnings, rdma)``: what slows this host's flows, for the engine and device it uses."""
    if mechanism not in MECHANISMS:
        raise ThrottleError("mechanism: %r; use one of %s" % (mechanism, ", ".join(MECHANISMS)))
    warnings = []
    rdma = rdma_kind(rdma_device, root) if (engine == "perftest" and rdma_device) else None
    if engine == "perftest" and not rdma_device:
        raise ThrottleError("rdma_device: the perftest engine's throttle depends on the RDMA device; name it "
                            "(e.g. mlx5_2 or rxe0)")
    if mechanism == "auto":
        if engine != "perftest" or rdma["kind"] == "soft":
            mechanism = "tc"
            reason = ("tc shapes kernel-stack traffic" if engine != "perftest" else
                      "%s is soft-RoCE: its packets go through the kernel stack, where tc shapes them" % rdma_device)
        elif rdma["kind"] == "vf":
            mechanism = "vf_rate"
            reason = ("%s is SR-IOV VF %d of %s: the NIC enforces the VF's max_tx_rate on verbs traffic"
                      % (rdma_device, rdma["vf_index"], rdma["pf_address"]))
        else:
            mechanism = "perftest_sw"
            reason = ("%s is a hardware PF: tc never sees its verbs traffic and it has no VF rate, so perftest's "
                      "software rate limiter paces the flow" % rdma_device)
        return mechanism, reason, warnings, rdma
    if mechanism == "tc":
        reason = "tc, as asked"
        if rdma and rdma["kind"] != "soft":
            warnings.append("tc on %s's netdev will not shape its verbs traffic (a hardware RDMA device bypasses the "
                            "kernel); the step will not be throttled" % rdma_device)
    elif mechanism == "vf_rate":
        if not rdma or rdma["kind"] != "vf":
            raise ThrottleError("mechanism: vf_rate needs the perftest engine on an RDMA device that is an SR-IOV VF; "
                                "%s is %s" % (rdma_device, rdma["kind"] if rdma else "not an RDMA flow"))
        reason = "the VF's max_tx_rate, as asked"
    else:
        if engine != "perftest":
            raise ThrottleError("mechanism: perftest_sw paces perftest flows only; the %s engine needs tc" % engine)
        reason = "perftest's software rate limiter, as asked"
    return mechanism, reason, warnings, rdma


def vf_rate_mbps(rate_bps):
    """max_tx_rate is whole Mb/s; refuse rates that round to nothing."""
    mbps = int(round(rate_bps / 1e6))
    if mbps < 1:
        raise ThrottleError("rate: %d bit/s is below 1 Mb/s, the smallest VF max_tx_rate" % rate_bps)
    return mbps
