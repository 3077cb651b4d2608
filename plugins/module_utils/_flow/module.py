# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Argument handling for the ``flow`` module: validate, build a FlowSpec, run the engine, report."""

from __future__ import annotations

import os
import socket
import time

from .._atomic import write_json as write_json_atomic
from .._units import UnitError, parse_rate, parse_size
from . import server as _flow_server
from .engine import FlowError, FlowSpec, PerftestOptions, check_start_window, engine_class, parse_instant
from .engine import check_address as _check_address
from .perftest_args import perftest_argument_spec
from .state import DEFAULT_STATE_DIR, UnsafeName, check_name
from .tcp_info import ECN_SYSCTL
from .tcp_info import options as _tcp_options


def module_args():
    """``AnsibleModule``'s arguments for ``aifabric.lab.flow``, a fresh copy per call; the perftest options are the
    one spec of ``perftest_args``."""
    argument_spec = dict(
        engine=dict(type="str", default="tcp", choices=["tcp", "perftest"]),
        rate_limit=dict(type="str"),
        role=dict(type="str", required=True, choices=["server", "client"]),
        state=dict(type="str", default="started", choices=["started", "stopped"]),
        address=dict(type="str", required=True),
        port=dict(type="int", default=18600),
        source=dict(type="str"),
        token=dict(type="str", required=True, no_log=True),
        flow_id=dict(type="str"),
        volume=dict(type="raw"),
        duration=dict(type="float"),
        start_at=dict(type="raw"),
        start_tolerance=dict(type="float", default=0.001),
        strict_start=dict(type="bool", default=False),
        streams=dict(type="int", default=1),
        tcp=dict(type="dict", default={}, options=dict(
            ecn=dict(type="str", choices=list(ECN_SYSCTL)),
            congestion=dict(type="str"),
        )),
        timeout=dict(type="float", default=300.0),
        interval=dict(type="float", default=1.0),
        expected_clients=dict(type="int", default=1),
        max_bytes=dict(type="raw"),
        annotations=dict(type="dict", default={}),
        result_dir=dict(type="path"),
        background=dict(type="bool", default=False),
        state_dir=dict(type="path", default=DEFAULT_STATE_DIR),
        stop_wait=dict(type="float", default=10.0),
    )
    argument_spec.update(perftest_argument_spec())
    return dict(argument_spec=argument_spec, mutually_exclusive=[("volume", "duration")],
                required_if=[("role", "client", ("start_at",))], supports_check_mode=True)


def build_spec(params, now=None):
    """Validate module parameters into a FlowSpec; raise FlowError with a message naming the parameter."""
    now = time.time() if now is None else now
    role = params["role"]
    if not 1 <= params["port"] <= 65535:
        raise FlowError("port: %d is not a TCP port (1-65535)" % params["port"])
    for key in ("timeout", "interval", "stop_wait"):
        if params[key] <= 0:
            raise FlowError("%s: %s must be more than 0 seconds" % (key, params[key]))
    if params.get("streams", 1) < 1:
        raise FlowError("streams: %s must be 1 or more (parallel connections of one flow)" % params["streams"])
    if params["start_tolerance"] < 0:
        raise FlowError("start_tolerance: %s must be 0 or more seconds" % params["start_tolerance"])
    flow_id = params.get("flow_id") or socket.gethostname()
    try:
        check_name(flow_id, "flow_id")  # it names the result file in result_dir
    except UnsafeName as exc:
        raise FlowError(str(exc)) from None
    spec = FlowSpec(
        role=role,
        address=_check_address(params["address"], "address"),
        port=params["port"],
        token=params["token"],
        flow_id=flow_id,
        timeout=params["timeout"],
        interval=params["interval"],
        start_tolerance=params["start_tolerance"],
        strict_start=params.get("strict_start", False),
        streams=params.get("streams", 1),
        **_tcp_options(params.get("tcp"), params.get("engine", "tcp")),
    )
    if not params["token"]:
        raise FlowError("token: must not be empty; use one random token per run, the same on servers and clients")
    if params.get("engine") == "perftest":
        spec.perftest = PerftestOptions.from_params(params)
        if params.get("rate_limit"):
            try:
                spec.perftest.rate_limit_gbps = parse_rate(params["rate_limit"], "rate_limit") / 1e9
            except UnitError as exc:
                raise FlowError(str(exc)) from None
        if spec.streams != 1:
            raise FlowError("streams: the perftest engine runs parallel queue pairs instead (qps)")
        if not params.get("device"):
            raise FlowError("device: the perftest engine needs the RDMA device (e.g. mlx5_0 or rxe0)")
    elif params.get("rate_limit"):
        raise FlowError("rate_limit: only the perftest engine has a software rate limiter; shape tcp flows with "
                        "aifabric.lab.tc_shape (or the throttle module)")
    try:
        if role == "server" and params.get("engine") == "perftest":
            # perftest servers must run the same count or duration as their clients
            if params.get("volume") is not None:
                spec.volume = parse_size(params["volume"], "volume")
            spec.duration = params.get("duration")
        if role == "client":
            if params.get("volume") is None and params.get("duration") is None:
                raise FlowError("volume or duration: a client needs one (e.g. volume: 1GB or duration: 10)")
            if params.get("volume") is not None:
                spec.volume = parse_size(params["volume"], "volume")
            if params.get("duration") is not None:
                if params["duration"] <= 0:
                    raise FlowError("duration: %s must be more than 0 seconds" % params["duration"])
                spec.duration = params["duration"]
            spec.start_at = parse_instant(params["start_at"])
            if params.get("source"):
                spec.source = _check_address(params["source"], "source")
            # a client arms until the instant and waits for it: not one that has passed, nor one further ahead than
            # its timeout (its server, started with the same timeout, would have ended)
            check_start_window(spec.start_at, "start_at", spec.timeout, "timeout", now=now, value=params["start_at"])
        else:
            if params.get("expected_clients", 1) < 1:
                raise FlowError("expected_clients: %s must be 1 or more" % params["expected_clients"])
            spec.expected_clients = params["expected_clients"]
            if params.get("max_bytes") is not None:
                spec.max_bytes = parse_size(params["max_bytes"], "max_bytes")
    except UnitError as exc:
        raise FlowError(str(exc)) from None
    return spec


def write_result(result_dir, name, data):
    """Write one result atomically (temp file + rename), so a crash never leaves half a JSON file."""
    return write_json_atomic(os.path.join(result_dir, name + ".json"), data)


def run_module(module):
    params = module.params
    try:
        spec = build_spec(params)
    except FlowError as exc:
        module.fail_json(msg=str(exc))
    engine = engine_class(params["engine"])()
    if module.check_mode:
        module.exit_json(changed=False, msg="check mode: no traffic sent",
                         flow={"role": spec.role, "status": "skipped"})
    if spec.role == "server" and params["state"] == "stopped":
        if params["background"]:
            # Stop and collect: the server's result comes back whatever its status; the task fails only when it
            # cannot do that (another run's server), so an always section goes on to remove throttles.
            collected = _flow_server.stop_and_collect(engine, spec, params["state_dir"], params["stop_wait"])
            if "belongs to another run" in (collected.get("error") or ""):
                module.fail_json(msg=collected["error"], flow=collected)
            module.exit_json(changed=True, flow=collected)
        module.exit_json(changed=False, flow=engine.stop(spec))
    if spec.role == "server" and not params["background"] and params["engine"] == "perftest":
        try:
            engine.listen(spec)  # the tool, the device, the TCP ports it will listen on: before it runs
        except OSError as exc:
            module.fail_json(msg="cannot start the perftest server on %s:%d: %s" % (
                spec.address, spec.port, exc.strerror or exc))
    if spec.role == "server" and params["background"]:
        try:
            started = _flow_server.start(engine, spec, params["state_dir"])
        except OSError as exc:
            module.fail_json(msg="cannot start the %s server on %s:%d: %s. Is the address on this host, is the "
                                 "port free, is the engine's tool installed?" % (engine.name, spec.address,
                                                                                 spec.port, exc))
        module.exit_json(changed=True, flow=started)
    result = engine.serve(spec) if spec.role == "server" else engine.send(spec)
    result["annotations"] = params["annotations"]
    if params.get("result_dir"):
        result["result_file"] = write_result(params["result_dir"], "%s-%s" % (spec.role, spec.flow_id), result)
    if result["status"] != "ok":
        module.fail_json(msg="%s flow %s: %s" % (spec.role, spec.flow_id, result.get("error")), flow=result)
    module.exit_json(changed=True, flow=result)
