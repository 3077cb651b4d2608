# -*- coding: utf-8 -*-
"""nic_dcqcn on a fixture host with MLNX_OFED's ecn/ tree (ecn_tree.py): check mode, apply, check mode again, apply
again, the diff, and each refusal (no ecn/ directory, a VF, a value out of range, a parameter the driver lacks, a
write the firmware refuses, with the earlier writes put back)."""
from __future__ import annotations

import errno
import os

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils import _dcqcn
from ansible_collections.aifabric.lab.plugins.module_utils._nic_dcqcn_module import module_args, run_module
from ecn_tree import Mlx5EcnWrites, mlx5_ofed_host
from module_like import Done, ModuleLike
from pci_tree import cx6_host

BASE = dict(interface="ens2f0np0", rp_priorities=None, np_priorities=None, rp=None, np=None)


def run(root, writes, check_mode=False, diff=True, **params):
    module = ModuleLike(dict(BASE, **params), check_mode=check_mode, diff=diff)
    with pytest.raises(Done):
        run_module(module, root=root, write=writes)
    return module.result


def value(root, rel, netdev="ens2f0np0"):
    with open(os.path.join(root, "sys/class/net", netdev, "ecn", rel)) as handle:
        return int(handle.read())


WANTED = dict(rp_priorities=[3], np_priorities=[3], np={"cnp_dscp": 46, "cnp_802p_prio": 6,
                                                        "min_time_between_cnps": None})


def test_the_tree_reads_as_the_driver_wrote_it(tmp_path):
    state = _dcqcn.read("ens2f0np0", mlx5_ofed_host(tmp_path))
    assert state["writable"] and state["rp"]["enabled"] == list(range(8)) == state["np"]["enabled"]
    assert state["rp"]["parameters"]["dce_tcp_g"] == 1019 and len(state["rp"]["parameters"]) == 16
    assert state["np"]["parameters"] == {"min_time_between_cnps": 4, "cnp_dscp": 48, "cnp_802p_prio": 6}


def test_check_apply_check_apply(tmp_path):
    root, writes = mlx5_ofed_host(tmp_path), Mlx5EcnWrites()
    first = run(root, writes, check_mode=True, **WANTED)
    assert first["changed"] and writes.log == []
    assert [c["file"] for c in first["changes"]] == [
        "ecn/roce_rp/enable/%d" % p for p in (0, 1, 2, 4, 5, 6, 7)] + [
        "ecn/roce_np/enable/%d" % p for p in (0, 1, 2, 4, 5, 6, 7)] + ["ecn/roce_np/cnp_dscp"]
    applied = run(root, writes, **WANTED)
    assert applied["changed"] and len(writes.log) == 15
    # only what differed was written: enable/3 (already 1) was left alone, so mlx5's EPERM never came
    assert ("roce_rp/enable/3", 1) not in writes.log
    assert value(root, "roce_rp/enable/3") == 1 and value(root, "roce_rp/enable/4") == 0
    assert value(root, "roce_np/cnp_dscp") == 46
    assert applied["after"] == first["after"]
    assert applied["after"]["np"]["enabled"] == [3] and applied["after"]["np"]["parameters"]["cnp_dscp"] == 46
    assert not run(root, writes, check_mode=True, **WANTED)["changed"]
    assert not run(root, writes, **WANTED)["changed"] and len(writes.log) == 15


def test_diff_lists_priorities_and_parameters(tmp_path):
    result = run(mlx5_ofed_host(tmp_path), Mlx5EcnWrites(), check_mode=True, **WANTED)
    assert "roce_np enabled on priorities: 0,1,2,3,4,5,6,7" in result["diff"]["before"].splitlines()
    after = result["diff"]["after"].splitlines()
    assert "roce_np enabled on priorities: 3" in after and "roce_np cnp_dscp: 46" in after
    assert "roce_rp dce_tcp_g: 1019" in after


def test_booleans_and_all_priorities_off(tmp_path):
    root, writes = mlx5_ofed_host(tmp_path), Mlx5EcnWrites()
    result = run(root, writes, rp_priorities=[], rp={"clamp_tgt_rate": True})
    assert result["changed"] and value(root, "roce_rp/clamp_tgt_rate") == 1
    assert result["after"]["rp"]["enabled"] == [] and value(root, "roce_np/enable/0") == 1
    assert not run(root, writes, rp_priorities=[], rp={"clamp_tgt_rate": True})["changed"]


@pytest.mark.parametrize("params, message", [
    (dict(np={"cnp_dscp": 64}), "np.cnp_dscp: 64 is out of range (0..63)"),
    (dict(rp={"rpg_min_dec_fac": 101}), "rp.rpg_min_dec_fac: 101 is out of range (0..100)"),
    (dict(rp={"dce_tcp_g": -1}), "rp.dce_tcp_g: -1 is out of range (0..1023)"),
    (dict(np_priorities=[8]), "np_priorities: 8 is no priority (0..7)"),
    (dict(rp={"rpg_rate": 5}), "rp.rpg_rate: not a parameter of mlx5's roce_rp"),
])
def test_values_refused_before_anything_is_written(tmp_path, params, message):
    writes = Mlx5EcnWrites()
    result = run(mlx5_ofed_host(tmp_path), writes, **params)
    assert result["failed"] and result["msg"].startswith(message) and writes.log == []


def test_a_parameter_an_older_driver_lacks(tmp_path):
    root = mlx5_ofed_host(tmp_path)
    os.unlink(os.path.join(root, "sys/class/net/ens2f0np0/ecn/roce_rp/initial_alpha_value"))
    result = run(root, Mlx5EcnWrites(), rp={"initial_alpha_value": 512})
    assert result["msg"] == ("rp.initial_alpha_value: ens2f0np0 has no roce_rp/initial_alpha_value (an older "
                             "driver?); leave it out")


def test_upstream_mlx5_has_no_ecn_directory(tmp_path):
    result = run(cx6_host(tmp_path), Mlx5EcnWrites(), rp_priorities=[3])
    assert result["failed"] and result["msg"].startswith("interface: ens2f0np0 has no ecn/ directory in sysfs")
    assert "ROCE_CC_PRIO_MASK_P1" in result["msg"] and "cc_params" in result["msg"]
    assert run(cx6_host(tmp_path / "x"), Mlx5EcnWrites(), interface="ens9")["msg"] == \
        "interface: there is no interface ens9 on this host"


def test_a_vf_reads_but_is_refused_changes(tmp_path):
    root = mlx5_ofed_host(tmp_path)
    quiet = run(root, Mlx5EcnWrites(), interface="ens2f0v0", rp_priorities=list(range(8)))
    assert not quiet["changed"] and quiet["before"]["writable"] is False
    result = run(root, Mlx5EcnWrites(), interface="ens2f0v0", rp_priorities=[3])
    assert result["failed"] and "read-only (a VF" in result["msg"] and "PF's netdev" in result["msg"]


def test_a_refused_write_puts_back_the_earlier_ones(tmp_path):
    root = mlx5_ofed_host(tmp_path)
    writes = Mlx5EcnWrites(refuse={"roce_rp/rpg_ai_rate": errno.EINVAL})
    result = run(root, writes, rp_priorities=[3], rp={"rpg_ai_rate": 7})
    assert result["failed"]
    assert result["msg"].startswith("rp.rpg_ai_rate: writing 7 to ecn/roce_rp/rpg_ai_rate on ens2f0np0 failed: EINVAL")
    assert "put back: rp_priorities" in result["msg"]
    assert [value(root, "roce_rp/enable/%d" % p) for p in range(8)] == [1] * 8


def test_without_root_the_error_says_become(tmp_path):
    root = mlx5_ofed_host(tmp_path)

    def denied(path, value):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)

    result = run(root, denied, np={"cnp_dscp": 46})
    assert result["msg"] == ("np.cnp_dscp: writing 46 to ecn/roce_np/cnp_dscp on ens2f0np0 failed: EACCES (run as "
                             "root: become: true)")


def test_the_real_writer_writes_the_file(tmp_path):
    root = mlx5_ofed_host(tmp_path)
    result = run(root, _dcqcn.write_int, np={"cnp_dscp": 40})
    assert result["changed"] and value(root, "roce_np/cnp_dscp") == 40


def test_the_argument_spec_types_the_switches_as_booleans():
    spec = module_args()["argument_spec"]
    assert spec["rp"]["options"]["clamp_tgt_rate"] == {"type": "bool"}
    assert spec["np"]["options"]["cnp_dscp"] == {"type": "int"}
    assert set(spec["rp"]["options"]) == set(_dcqcn.PARAMETERS["rp"])
