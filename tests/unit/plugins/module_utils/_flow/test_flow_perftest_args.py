# -*- coding: utf-8 -*-
"""The perftest options' one argument spec (``_flow/perftest_args``), as AnsibleModule's validator reads it: the
defaults perftest itself uses (written out here by hand: ib_write_bw, port 1, 64 KiB messages, one QP, no RDMA CM),
the three tools, and a fresh copy per call."""
from __future__ import annotations

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.aifabric.lab.plugins.module_utils._flow import module as flow_module
from ansible_collections.aifabric.lab.plugins.module_utils._flow import step_module
from ansible_collections.aifabric.lab.plugins.module_utils._flow.perftest_args import perftest_argument_spec

DEFAULTS = {"tool": "ib_write_bw", "device": None, "ib_port": 1, "gid_index": None, "msg_size": 65536, "qps": 1,
            "rdma_cm": False, "qp_timeout": None}


def validated(params):
    result = ArgumentSpecValidator(perftest_argument_spec()).validate(params)
    return result.validated_parameters, result.error_messages


def test_nothing_given_is_perftests_own_defaults():
    assert validated({}) == (DEFAULTS, [])


def test_given_values_are_typed_and_kept():
    params, errors = validated({"tool": "ib_read_bw", "device": "mlx5_0", "ib_port": "2", "gid_index": 3,
                                "msg_size": "4096", "qps": 4, "rdma_cm": "yes", "qp_timeout": 14})
    assert errors == []
    assert params == {"tool": "ib_read_bw", "device": "mlx5_0", "ib_port": 2, "gid_index": 3, "msg_size": 4096,
                      "qps": 4, "rdma_cm": True, "qp_timeout": 14}


@pytest.mark.parametrize("params, words", [
    ({"tool": "ib_write_lat"}, ("tool", "ib_write_bw, ib_read_bw, ib_send_bw", "ib_write_lat")),
    ({"qps": "two"}, ("qps", "int")),  # ansible-core before 2.18 does not quote the value given
    ({"streams": 2}, ("streams",)),  # a tcp option: the perftest engine runs QPs instead
])
def test_what_perftest_cannot_take_is_refused_by_name(params, words):
    _params, errors = validated(params)
    assert len(errors) == 1 and all(word in errors[0] for word in words), errors


def test_each_call_is_a_copy_of_its_own():
    mine = perftest_argument_spec()
    mine["tool"]["choices"].append("ib_atomic_bw")
    mine["qps"]["default"] = 8
    assert perftest_argument_spec()["tool"]["choices"] == ["ib_write_bw", "ib_read_bw", "ib_send_bw"]
    assert perftest_argument_spec()["qps"]["default"] == 1


def test_the_flow_modules_take_these_options():
    # both build their spec from perftest_argument_spec(): flow at its top level, flow_step under its perftest option
    assert {key: flow_module.module_args()["argument_spec"][key] for key in DEFAULTS} == perftest_argument_spec()
    assert step_module.module_args()["argument_spec"]["perftest"]["options"] == perftest_argument_spec()
