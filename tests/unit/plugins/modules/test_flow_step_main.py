# -*- coding: utf-8 -*-
"""The flow_step module as Ansible runs it: its main(), a real AnsibleModule made from the glue's module_args(), the
glue and the domain. Only what needs no traffic: the constraints (party or parts, never both), the shared perftest
options under ``perftest`` (their choices and defaults), check mode, which starts nothing."""
from __future__ import annotations

import contextlib
import json
from unittest import mock

import pytest
from ansible.module_utils import basic
from ansible_collections.aifabric.lab.plugins.module_utils._flow import step_module
from ansible_collections.aifabric.lab.plugins.modules import flow_step

RENDEZVOUS = {"host": "w1", "address": "198.18.0.1", "parties": ["w1", "w2"]}
CLIENT = {"flow_id": "w2", "address": "198.18.0.1", "port": 18601, "volume": "1MB"}


@contextlib.contextmanager
def module_args(args):
    try:
        from ansible.module_utils.testing import patch_module_args  # ansible-core 2.19 and later
    except ImportError:  # older: the arguments as AnsiballZ hands them over
        with mock.patch.object(basic, "_ANSIBLE_ARGS", json.dumps({"ANSIBLE_MODULE_ARGS": args}).encode()):
            yield
        return
    with patch_module_args(args):
        yield


def run(capsys, tmp_path, **args):
    args.setdefault("_ansible_tmpdir", str(tmp_path))
    args.setdefault("state_dir", str(tmp_path / "state"))
    with module_args(args), pytest.raises(SystemExit):
        flow_step.main()
    return json.loads(capsys.readouterr().out)


def test_party_and_parts_are_one_or_the_other(tmp_path, capsys):
    both = run(capsys, tmp_path, token="tok-gaps-4711", rendezvous=RENDEZVOUS, party="w2",
               parts=[{"party": "w2", "netns": "aflt-wt-gaps-w2"}])
    assert both["failed"] and "mutually exclusive: party|parts" in both["msg"]
    neither = run(capsys, tmp_path, token="tok-gaps-4711", rendezvous=RENDEZVOUS)
    assert neither["failed"] and "one of the following is required: party, parts" in neither["msg"]


def test_check_mode_starts_nothing_with_the_perftest_options_filled_in(tmp_path, capsys):
    checked = run(capsys, tmp_path, _ansible_check_mode=True, token="tok-gaps-4711", rendezvous=RENDEZVOUS, party="w2",
                  engine="perftest", perftest={"device": "rxe0"}, clients=[CLIENT])
    assert (checked["changed"], checked["msg"]) == (False, "check mode: nothing started, no traffic sent")
    assert "failed" not in checked and not (tmp_path / "state").exists()


def test_the_perftest_options_are_filled_in_from_the_shared_spec():
    """AnsibleModule fills ``perftest``'s suboptions from perftest_argument_spec(): PerftestOptions' defaults, as the
    module's documentation gives them."""
    with module_args({"token": "tok-gaps-4711", "rendezvous": RENDEZVOUS, "party": "w2", "engine": "perftest",
                      "perftest": {"device": "rxe0"}, "_ansible_check_mode": True}):
        module = basic.AnsibleModule(**step_module.module_args())
    given = module.params["perftest"]
    assert (given["tool"], given["ib_port"], given["msg_size"], given["qps"], given["rdma_cm"]) == (
        "ib_write_bw", 1, 65536, 1, False)
    assert given["device"] == "rxe0" and given["gid_index"] is None and given["qp_timeout"] is None


def test_a_perftest_tool_outside_the_shared_choices_is_refused_by_name(tmp_path, capsys):
    failed = run(capsys, tmp_path, _ansible_check_mode=True, token="tok-gaps-4711", rendezvous=RENDEZVOUS, party="w2",
                 engine="perftest", perftest={"device": "rxe0", "tool": "ib_atomic_bw"}, clients=[CLIENT])
    assert failed["failed"] and "tool" in failed["msg"] and "ib_write_bw" in failed["msg"]
    assert "perftest" in failed["msg"]


def test_every_call_gives_a_new_spec_down_to_the_nested_options():
    mine = step_module.module_args()
    mine["argument_spec"]["clients"]["options"]["streams"]["default"] = 8
    mine["argument_spec"]["perftest"]["options"]["qps"]["default"] = 8
    mine["mutually_exclusive"].clear()
    fresh = step_module.module_args()
    assert fresh["argument_spec"]["clients"]["options"]["streams"]["default"] == 1
    assert fresh["argument_spec"]["parts"]["options"]["clients"]["options"]["streams"]["default"] == 1
    assert fresh["argument_spec"]["perftest"]["options"]["qps"]["default"] == 1
    assert ("party", "parts") in fresh["mutually_exclusive"]


def _params(**rendezvous):
    """flow_step's parameters as AnsibleModule fills them in (defaults included), for a sink serving one flow."""
    with module_args({"token": "tok-gaps-4711", "rendezvous": dict(RENDEZVOUS, **rendezvous), "party": "w1",
                      "servers": [{"address": "198.18.0.1", "port": 18601, "expected_clients": 1}],
                      "arm_timeout": 20.0, "timeout": 10.0, "_ansible_check_mode": True}):
        return basic.AnsibleModule(**step_module.module_args()).params


def test_the_result_grace_sets_how_long_past_the_timeout_the_servers_and_the_coordinator_wait():
    # the default: 30 s, as before the option; a server lives arm_timeout + timeout + grace = 20 + 10 + 30 s
    default = step_module.build_part(_params())
    assert default.rendezvous["result_grace"] == 30.0 and default.servers[0].timeout == 60.0
    short = step_module.build_part(_params(result_grace=3))
    assert short.rendezvous["result_grace"] == 3.0 and short.servers[0].timeout == 33.0


@pytest.mark.parametrize("grace", [-1.0, float("nan"), float("inf"), 3601.0])
def test_a_result_grace_that_cannot_be_is_refused_by_name(grace):
    with pytest.raises(step_module.FlowError, match=r"rendezvous\.result_grace: .*give seconds from 0 to 3600"):
        step_module.build_part(_params(result_grace=grace))
