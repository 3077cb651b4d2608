# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The throttle module's glue: its arguments, and ``run_module``: choose (``_throttle.choose``), then apply through
tc, the VF's rate, or nothing."""

from __future__ import annotations

from ._owner import OWNER_OPTIONS, OwnerError
from ._owner import validate as validate_owner
from ._pyroute2 import IPRoute, require_pyroute2
from ._sriov import PF, SriovError, netlink_request, parse_vfinfo
from ._tc import ShapeError, shape
from ._throttle import ThrottleError, choose, vf_rate_mbps
from ._units import UnitError, format_rate, parse_rate


def module_args():
    """AnsibleModule's keyword arguments for throttle."""
    return dict(
        argument_spec=dict(
            rate=dict(type="str"),
            engine=dict(type="str", default="tcp", choices=["tcp", "perftest"]),
            rdma_device=dict(type="str"),
            interface=dict(type="str", default="eth0"),
            peers=dict(type="list", elements="str", default=[]),
            mechanism=dict(type="str", default="auto", choices=["auto", "tc", "vf_rate", "perftest_sw"]),
            state=dict(type="str", default="present", choices=["present", "absent"]),
            state_dir=dict(type="path", default="/run/aifabric-lab"),
            owner=dict(type="dict", options=OWNER_OPTIONS),
        ),
        required_if=[("state", "present", ("rate",))],
        supports_check_mode=True,
    )


def run_module(module):
    p = module.params
    try:
        rate_bps = parse_rate(p["rate"], "rate") if p["state"] == "present" else None
        mechanism, reason, warnings, rdma = choose(p["engine"], p["mechanism"], p["rdma_device"])
        owner = validate_owner(p.get("owner"))
    except (ThrottleError, UnitError, OwnerError) as exc:
        module.fail_json(msg=str(exc))
    for warning in warnings:
        module.warn(warning)
    result = dict(changed=False, mechanism=mechanism, reason=reason, flow_args={})
    rate = format_rate(rate_bps) if rate_bps else None
    if mechanism == "perftest_sw":
        if rate:
            result["flow_args"] = {"rate_limit": rate}
        result["description"] = "perftest's software rate limiter on %s" % p["rdma_device"]
        module.exit_json(**result)
    require_pyroute2(module)
    with IPRoute() as ipr:
        if mechanism == "tc":
            # ack_priority: the throttle slows what the host sends, not the flows it receives (their ACKs go first)
            params = dict(device=p["interface"], direction="egress", qdisc="htb", rate=rate, burst=None, latency=0.05,
                          fair_share_sources=[], fair_share_destinations=p.get("peers") or [], ifb_device=None,
                          state=p["state"], ack_priority=True, state_dir=p.get("state_dir"), owner=owner)
            try:
                shaper = shape(ipr, params, check_mode=module.check_mode, warn=module.warn, maker="throttle")
            except ShapeError as exc:
                module.fail_json(msg=str(exc), **result)
            result.update(changed=shaper["changed"], shaper=shaper, diff=shaper["diff"],
                          description="tc htb on %s's egress" % p["interface"])
            module.exit_json(**result)
        # vf_rate: the VF's max_tx_rate, set through its PF's netdev
        try:
            pf = PF(rdma["pf_address"])
            index = ipr.link_lookup(ifname=pf.netdev)[0]
            current = {vf["index"]: vf for vf in parse_vfinfo(ipr.get_links(index, ext_mask=1)[0])}
            have = current.get(rdma["vf_index"], {})
            want = vf_rate_mbps(rate_bps) if rate_bps else 0
        except (SriovError, ThrottleError, IndexError) as exc:
            module.fail_json(msg="rdma_device: cannot reach the VF's rate through its PF: %s" % exc, **result)
        changed = have.get("max_tx_rate") != want
        if changed and not module.check_mode:
            try:
                ipr.link("set", index=index, vf=netlink_request(rdma["vf_index"], "max_tx_rate", want, have))
            except Exception as exc:  # NetlinkError: the driver's refusal, reported as such
                module.fail_json(msg="max_tx_rate %d Mb/s on VF %d of %s refused: %s"
                                 % (want, rdma["vf_index"], pf.netdev, exc), **result)
        result.update(changed=changed, vf={"pf": pf.netdev, "index": rdma["vf_index"], "max_tx_rate": want},
                      diff={"before": "max_tx_rate: %s\n" % have.get("max_tx_rate"),
                            "after": "max_tx_rate: %s\n" % want},
                      description="max_tx_rate %d Mb/s of VF %d of %s" % (want, rdma["vf_index"], pf.netdev))
    module.exit_json(**result)
