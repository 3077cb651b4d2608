# -*- coding: utf-8 -*-
from __future__ import annotations

import json
import os

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._flow.engine import FlowError
from ansible_collections.aifabric.lab.plugins.module_utils._flow.module import (
    build_spec,
    module_args,
    parse_instant,
    write_result,
)

NOW = 1_800_000_000.0


def params(**kw):
    base = {k: v.get("default") for k, v in module_args()["argument_spec"].items()}
    base.update(role="client", address="198.18.0.1", token="t", volume="1GB", start_at=NOW + 5)
    base.update(kw)
    return base


def test_client_spec():
    spec = build_spec(params(flow_id="worker1"), now=NOW)
    assert spec.volume == 10**9 and spec.start_at == NOW + 5 and spec.flow_id == "worker1"


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"address": "sink"}, "address: 'sink' is not an IP address"),
        ({"address": "0.0.0.0", "role": "server"}, "would listen on every interface"),
        ({"port": 0}, "port: 0 is not a TCP port"),
        ({"volume": "1 gallon"}, "volume: unknown size unit"),
        ({"volume": None, "duration": None}, "volume or duration"),
        ({"volume": None, "duration": -1.0}, "duration: -1.0 must be more than 0"),
        ({"start_at": NOW - 1000}, "start_at: .* in the past"),
        ({"start_at": "yesterday"}, "start_at: 'yesterday' is not an instant"),
        ({"start_at": "2026-11-29T09:00:00"}, "has no time zone"),
        ({"timeout": 0.0}, "timeout: 0.0 must be more than 0"),
        ({"interval": -1.0}, "interval"),
        ({"start_tolerance": -0.1}, "start_tolerance"),
        ({"token": ""}, "token: must not be empty"),
        ({"source": "nowhere"}, "source: 'nowhere' is not an IP address"),
        ({"role": "server", "expected_clients": 0}, "expected_clients: 0"),
        ({"role": "server", "max_bytes": "lots"}, "max_bytes"),
    ],
)
def test_bad_input_names_the_parameter(overrides, message):
    with pytest.raises(FlowError, match=message):
        build_spec(params(**overrides), now=NOW)


def test_instants():
    assert parse_instant("2026-11-29T09:00:00+00:00") == pytest.approx(1795942800.0)
    assert parse_instant("2026-11-29T09:00:00Z") == pytest.approx(1795942800.0)
    assert parse_instant("1795942800.25") == 1795942800.25
    assert parse_instant(5) == 5.0


def test_write_result_is_atomic(tmp_path):
    path = write_result(str(tmp_path / "r"), "client-w1", {"bytes": 1})
    assert json.load(open(path)) == {"bytes": 1}
    assert os.listdir(str(tmp_path / "r")) == ["client-w1.json"]


@pytest.mark.parametrize("start_at, message", [
    (float("inf"), r"start_at: inf is not an instant \(not a finite number\)"),
    ("nan", r"start_at: 'nan' is not an instant \(not a finite number\)"),
    (NOW * 1000, r"start_at: 1800000000000.0 looks like epoch milliseconds .* seconds: 1800000000.000"),
    (NOW * 1e6, r"start_at: .* looks like epoch microseconds"),
    (NOW - 2, r"start_at: .* is 2.0 s in the past \(more than 1 s\)"),
    (NOW + 301, r"start_at: .* is 301.0 s ahead, more than timeout=300.0 s allows"),
])
def test_a_start_instant_that_cannot_be_is_refused(start_at, message):
    with pytest.raises(FlowError, match=message):
        build_spec(params(start_at=start_at), now=NOW)


def test_a_start_instant_just_passed_or_within_the_timeout_is_taken():
    assert build_spec(params(start_at=NOW - 0.5), now=NOW).start_at == NOW - 0.5
    assert build_spec(params(start_at=NOW + 299), now=NOW).start_at == NOW + 299


@pytest.mark.parametrize("flow_id, message", [
    ("x/../../../tmp/evil", r"flow_id: 'x/../../../tmp/evil' cannot name a file on the host: it contains '/'"),
    ("..", r"flow_id: '..' cannot name a file on the host: it contains '..'"),
    ("w1\n", r"flow_id: .* control character"),
    ("w" * 200, r"flow_id: .* 200 characters long \(at most 128\)"),
])
def test_a_flow_id_that_would_reach_a_path_is_refused(flow_id, message):
    with pytest.raises(FlowError, match=message):
        build_spec(params(flow_id=flow_id), now=NOW)


def test_the_token_is_never_logged():
    assert module_args()["argument_spec"]["token"]["no_log"] is True
