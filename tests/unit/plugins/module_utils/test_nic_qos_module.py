# -*- coding: utf-8 -*-
"""nic_qos against an mlx5 port's dcbnl, in bytes (dcb_kernel.Mlx5Dcbnl: requests parsed and replies built as
net/dcb/dcbnl.c does, the driver's answers as en_dcbnl.c gives them): check mode, apply, check mode again, apply
again (changed, changed, not changed, not changed), the diff, and each refusal. The one test on this machine's kernel
asks lo, which has no dcbnl operations."""
from __future__ import annotations

import pytest

pyroute2 = pytest.importorskip("pyroute2")

from ansible_collections.aifabric.lab.plugins.module_utils import _dcb  # noqa: E402
from ansible_collections.aifabric.lab.plugins.module_utils._nic_qos_module import run_module  # noqa: E402
from dcb_kernel import Mlx5Dcbnl  # noqa: E402
from module_like import Done, ModuleLike  # noqa: E402

BASE = dict(interface="ens1f0np0", pfc_priorities=None, ets=None, trust=None, dscp_map=None, dcbx=None)


def run(kernel, check_mode=False, diff=True, **params):
    module = ModuleLike(dict(BASE, **params), check_mode=check_mode, diff=diff)
    with pytest.raises(Done):
        run_module(module, ipr_factory=lambda: kernel)
    return module.result


ROCE = dict(dcbx="host", pfc_priorities=[3], trust="dscp", dscp_map={"26": 3, "48": 6})


def test_an_mlx5_port_as_it_comes_up():
    raw = _dcb.query(Mlx5Dcbnl(), "ens1f0np0")
    assert _dcb.view(raw) == {
        "pfc_priorities": [], "pfc_cap": 8, "trust": "pcp", "dscp_map": {}, "dcbx": "firmware",
        "ets": {"ets_cap": 8, "tsa": ["vendor"] * 8, "bandwidth": [100] * 8, "prio_tc": [1, 0, 2, 3, 4, 5, 6, 7]}}
    assert raw["pfc"]["requests"][3] == 1204  # struct ieee_pfc's per-priority PFC frames sent, decoded in place


def test_check_apply_check_apply():
    kernel = Mlx5Dcbnl()
    first = run(kernel, check_mode=True, **ROCE)
    assert first["changed"] and kernel.sets == []
    assert first["changes"] == ["dcbx firmware -> host", "pfc priorities none -> [3]",
                                "dscp map set: 26:3, 48:6"]
    applied = run(kernel, **ROCE)
    assert applied["changed"] and applied["changes"] == first["changes"]
    # what check mode predicted is what the NIC reports after the change
    assert first["after"] == applied["after"]
    assert kernel.pfc_en == 0b1000 and kernel.trust == "dscp" and kernel.dcbx == 0x09
    assert sorted(kernel.apps) == [(5, 3, 26), (5, 6, 48)]
    assert applied["after"]["dscp_map"] == {26: 3, 48: 6} and applied["after"]["trust"] == "dscp"
    sent = len(kernel.sets)
    assert sent == 3  # SDCBX, IEEE_SET pfc, IEEE_SET app
    again = run(kernel, check_mode=True, **ROCE)
    assert not again["changed"] and again["changes"] == []
    last = run(kernel, **ROCE)
    assert not last["changed"] and len(kernel.sets) == sent


def test_diff_shows_each_setting_before_and_after():
    result = run(Mlx5Dcbnl(), check_mode=True, **ROCE)
    before, after = result["diff"]["before"].splitlines(), result["diff"]["after"].splitlines()
    assert before[:3] == ["dcbx: firmware", "pfc priorities: none", "tc 0: vendor 100% priorities 1"]
    assert "tc 1: vendor 100% priorities 0" in before and "trust: pcp" in before
    assert after[:2] == ["dcbx: host", "pfc priorities: 3"]
    assert after[-3:] == ["trust: dscp", "dscp 26: priority 3", "dscp 48: priority 6"]
    assert result["diff"]["before_header"] == "ens1f0np0"
    assert "diff" not in run(Mlx5Dcbnl(), check_mode=True, diff=False, **ROCE)


ETS = {"tsa": ["ets", "strict", "strict", "ets", "strict", "strict", "strict", "strict"],
       "bandwidth": [40, 0, 0, 60, 0, 0, 0, 0], "prio_tc": [0, 0, 0, 3, 0, 0, 0, 0]}


def test_ets_twice_is_one_change_though_strict_classes_read_back_100():
    kernel = Mlx5Dcbnl()
    assert run(kernel, ets=ETS)["changed"]
    assert kernel.tc_tsa == [2, 0, 0, 2, 0, 0, 0, 0] and kernel.tc_bw == [40, 100, 100, 60, 100, 100, 100, 100]
    assert kernel.prio_tc == [0, 0, 0, 3, 0, 0, 0, 0]
    second = run(kernel, ets=ETS)
    assert not second["changed"]
    assert second["after"]["ets"]["tsa"][:4] == ["ets", "strict", "strict", "ets"]
    # only the map: the algorithms and shares stay
    third = run(kernel, ets={"tsa": None, "bandwidth": None, "prio_tc": [0, 0, 0, 3, 3, 0, 0, 0]})
    assert third["changed"] and kernel.prio_tc == [0, 0, 0, 3, 3, 0, 0, 0] and kernel.tc_bw[3] == 60


@pytest.mark.parametrize("ets, message", [
    (dict(ETS, bandwidth=[50, 0, 0, 60, 0, 0, 0, 0]),
     "ets.bandwidth: the shares of the ETS traffic classes (TC0 50%, TC3 60%) sum to 110%"),
    (dict(ETS, prio_tc=[0, 0, 0, 8, 0, 0, 0, 0]), "ets.prio_tc: 8 is not a whole number from 0 to 7"),
    (dict(ETS, prio_tc=[0, 0, 0, 3]), "ets.prio_tc: give 8 values, one per priority, not 4"),
    (dict(ETS, tsa=["ets"] * 7), "ets.tsa: give 8 values"),
    (dict(ETS, tsa=["cb_shaper"] * 8), "ets.tsa: cb_shaper is not one of strict, ets, vendor"),
    ({"tsa": ["ets"] * 8, "bandwidth": None, "prio_tc": None},
     "ets.bandwidth: the shares of the ETS traffic classes (TC0 100%, TC1 100%"),
])
def test_ets_refused_before_anything_is_sent(ets, message):
    kernel = Mlx5Dcbnl()
    result = run(kernel, ets=ets)
    assert result["failed"] and message in result["msg"] and kernel.sets == []


@pytest.mark.parametrize("params, message", [
    (dict(pfc_priorities=[3, 8]), "pfc_priorities: 8 is no priority (0..7)"),
    (dict(trust="pcp", dscp_map={"26": 3}), "dscp_map: a DSCP map needs trust: dscp"),
    (dict(dscp_map={"64": 3}), "dscp_map: DSCP 64 is out of range (0..63)"),
    (dict(dscp_map={"26": 9}), "dscp_map: DSCP 26 maps to priority 9, out of range (0..7)"),
    (dict(dscp_map={"af31": 3}), "dscp_map: the key 'af31' is no DSCP value (0..63)"),
])
def test_values_refused_before_anything_is_sent(params, message):
    kernel = Mlx5Dcbnl()
    result = run(kernel, **params)
    assert result["failed"] and message in result["msg"] and kernel.sets == []


def test_a_netdev_without_dcbnl_ops_is_named():
    result = run(Mlx5Dcbnl(dcb_ops=False), pfc_priorities=[3])
    assert result["failed"]
    assert result["msg"].startswith("interface: ens1f0np0 has no DCB (dcbnl answered EOPNOTSUPP)")


def test_an_unknown_interface_is_named():
    result = run(Mlx5Dcbnl(), interface="ens9", pfc_priorities=[3])
    assert result["msg"] == "interface: there is no interface ens9 on this host"


def test_a_driver_without_ets_refuses_ets_but_sets_pfc():
    kernel = Mlx5Dcbnl(ets=False)
    result = run(kernel, ets=ETS, pfc_priorities=[3])
    assert result["failed"] and result["msg"].startswith("ets: ens1f0np0 offers no ETS") and kernel.sets == []
    assert run(kernel, pfc_priorities=[3])["changed"] and kernel.pfc_en == 8


def test_without_cap_net_admin_the_error_says_become():
    result = run(Mlx5Dcbnl(admin=False), pfc_priorities=[3])
    assert result["failed"] and "dcbnl answered EPERM (run as root: become: true)" in result["msg"]
    assert result["msg"].startswith("pfc_priorities: pfc priorities none -> [3] on ens1f0np0")


def test_a_refusal_puts_back_what_was_sent_before_it():
    kernel = Mlx5Dcbnl()
    kernel.refuse_pfc = True
    result = run(kernel, ets=ETS, pfc_priorities=[3])
    assert result["failed"]
    assert "the driver answered EIO; put back: ets" in result["msg"]
    assert kernel.tc_tsa == [255] * 8 and kernel.prio_tc == [1, 0, 2, 3, 4, 5, 6, 7]


def test_trust_dscp_alone_loads_the_default_map_and_pcp_removes_it():
    kernel = Mlx5Dcbnl()
    result = run(kernel, trust="dscp")
    assert result["changed"] and kernel.trust == "dscp" and len(kernel.apps) == 64
    assert (5, 3, 26) in kernel.apps and (5, 6, 48) in kernel.apps and (5, 0, 7) in kernel.apps
    assert not run(kernel, trust="dscp")["changed"]
    # one value moved: mlx5 replaces the entry, nothing stale is left
    moved = run(kernel, dscp_map={"10": 3})
    assert moved["changes"] == ["dscp map set: 10:3"] and (5, 3, 10) in kernel.apps and len(kernel.apps) == 64
    back = run(kernel, trust="pcp")
    assert back["changed"] and kernel.apps == [] and kernel.trust == "pcp"
    assert back["after"]["trust"] == "pcp" and not run(kernel, trust="pcp")["changed"]


def test_a_driver_that_keeps_both_priorities_of_a_dscp_value_is_left_with_the_new_one():
    kernel = Mlx5Dcbnl()
    kernel.core_apps = True
    kernel.apps = [(5, 1, 10), (5, 3, 26)]
    result = run(kernel, dscp_map={"10": 3})
    assert result["changes"] == ["dscp map set: 10:3"]
    assert sorted(kernel.apps) == [(5, 3, 10), (5, 3, 26)]
    assert not run(kernel, dscp_map={"10": 3})["changed"]


def test_an_unknown_selector_in_the_table_is_left_alone():
    kernel = Mlx5Dcbnl()
    kernel.apps = [(1, 3, 0x8915)]  # an ethertype entry (RoCE v1) written by another tool
    assert run(kernel, trust="dscp", dscp_map={"26": 3})["changed"]
    assert (1, 3, 0x8915) in kernel.apps
    assert run(kernel, trust="pcp")["changed"] and kernel.apps == [(1, 3, 0x8915)]


def test_dcbx_back_to_the_firmware():
    kernel = Mlx5Dcbnl(dcbx_host=True)
    assert run(kernel, dcbx="firmware")["changed"] and kernel.dcbx == 0x0C
    assert not run(kernel, dcbx="firmware")["changed"]


def test_a_firmware_that_keeps_its_own_view_fails_the_run():
    kernel = Mlx5Dcbnl()
    original = kernel._set

    def willing(tb):  # DCBX in the firmware, the switch's PFC wins: the driver accepts and nothing changes
        answer = original(tb)
        kernel.pfc_en = 0
        return answer

    kernel._set = willing
    result = run(kernel, pfc_priorities=[3])
    assert result["failed"] and "reports otherwise (pfc priorities none -> [3])" in result["msg"]
    assert "set dcbx: host" in result["msg"]


def test_this_kernels_loopback_has_no_dcbnl_ops():
    with pyroute2.IPRoute() as ipr:
        with pytest.raises(_dcb.DcbError, match="interface: lo has no DCB .dcbnl answered EOPNOTSUPP"):
            _dcb.query(ipr, "lo")
