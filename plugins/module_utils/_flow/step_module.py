# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Argument handling for the ``flow_step`` module: validate, build a HostPart, start, collect or stop."""

from __future__ import annotations

import math
import re

from .. import _netns_enter as _netns
from .. import _units
from .._owner import OWNER_OPTIONS, OwnerError
from .._owner import validate as validate_owner
from . import step as _step
from .engine import FlowError, FlowSpec, PerftestOptions, check_start_window, parse_instant
from .engine import check_address as _check_address
from .perftest_args import perftest_argument_spec
from .program_spec import parse_program
from .state import DEFAULT_STATE_DIR, UnsafeName, check_name
from .tcp_info import ECN_SYSCTL
from .tcp_info import options as _tcp_options


def _server_options():
    return dict(
        address=dict(type="str", required=True),
        port=dict(type="int", required=True),
        expected_clients=dict(type="int", default=1),
        max_bytes=dict(type="raw"),
        volume=dict(type="raw"),
        duration=dict(type="float"),
    )


def _client_options():
    return dict(
        flow_id=dict(type="str", required=True),
        address=dict(type="str", required=True),
        port=dict(type="int", required=True),
        volume=dict(type="raw"),
        duration=dict(type="float"),
        streams=dict(type="int", default=1),
        source=dict(type="str"),
        source_ports=dict(type="list", elements="int"),
        start_offset=dict(type="float", default=0.0),
        rate_limit=dict(type="str"),
        annotations=dict(type="dict", default={}),
    )


def _counters_options():
    return dict(
        interface=dict(type="str"),
        netdevs=dict(type="list", elements="str", default=[]),
        qdiscs=dict(type="list", elements="str", default=[]),
        rdma_devices=dict(type="list", elements="str", default=[]),
        ethtool=dict(type="list", elements="str", default=[]),
        ipext=dict(type="bool", default=False),
    )


_PART = ("party", "servers", "clients", "counters", "program")  # what differs from one host's part to the next


def module_args():
    """``AnsibleModule``'s arguments for ``aifabric.lab.flow_step``, a fresh copy per call: a host's part of a step
    (``party`` and its servers, clients, counters, program) or every part of the hosts a controller reaches through
    namespaces (``parts``), never both. The perftest options are the one spec of ``perftest_args``, as ``flow``'s."""
    argument_spec = dict(
        state=dict(type="str", default="started", choices=["started", "collected", "stopped", "progress"]),
        party=dict(type="str"),
        token=dict(type="str", required=True, no_log=True),
        step=dict(type="str"),
        engine=dict(type="str", default="tcp", choices=["tcp", "perftest", "verbs"]),
        verbs=dict(type="dict", default={}, options=dict(
            device=dict(type="str"),
            ib_port=dict(type="int", default=1),
            gid_index=dict(type="int"),
            qp_timeout=dict(type="int", default=14),
        )),
        perftest=dict(type="dict", default={}, options=perftest_argument_spec()),
        tcp=dict(type="dict", default={}, options=dict(
            ecn=dict(type="str", choices=list(ECN_SYSCTL)),
            congestion=dict(type="str"),
        )),
        servers=dict(type="list", elements="dict", default=[], options=_server_options()),
        clients=dict(type="list", elements="dict", default=[], options=_client_options()),
        rendezvous=dict(type="dict", required=True, options=dict(
            host=dict(type="str", required=True),
            address=dict(type="str", required=True),
            port=dict(type="int", default=18599),
            parties=dict(type="list", elements="str"),
            expected_flows=dict(type="dict", default={}),
            wait_for_collect=dict(type="bool", default=True),
            start_at=dict(type="raw"),
            result_grace=dict(type="float", default=_step.GRACE),
        )),
        counters=dict(type="dict", options=_counters_options()),
        program=dict(type="dict"),
        parts=dict(type="list", elements="dict", options=dict(
            party=dict(type="str", required=True),
            netns=dict(type="str", required=True),
            servers=dict(type="list", elements="dict", default=[], options=_server_options()),
            clients=dict(type="list", elements="dict", default=[], options=_client_options()),
            counters=dict(type="dict", options=_counters_options()),
            program=dict(type="dict"),
        )),
        arm_timeout=dict(type="float", default=60.0),
        timeout=dict(type="float", default=300.0),
        interval=dict(type="float", default=1.0),
        strict_start=dict(type="bool", default=False),
        start_tolerance=dict(type="float", default=0.001),
        missing=dict(type="list", elements="str", default=[]),
        wait=dict(type="float"),
        progress=dict(type="bool", default=False),
        watch=dict(type="bool", default=False),
        state_dir=dict(type="path", default=DEFAULT_STATE_DIR),
        owner=dict(type="dict", options=OWNER_OPTIONS),
    )
    return dict(argument_spec=argument_spec,
                mutually_exclusive=[("party", "parts"), ("servers", "parts"), ("clients", "parts"),
                                    ("counters", "parts"), ("program", "parts")],
                required_one_of=[("party", "parts")], supports_check_mode=True)


def _size(value, name):
    if value is None:
        return None
    try:
        return _units.parse_size(value, name)
    except _units.UnitError as exc:
        raise FlowError(str(exc)) from None


def _name(value, where):
    """A name that reaches a file path on the host (a party, a flow id), checked."""
    try:
        return check_name(value, where)
    except UnsafeName as exc:
        raise FlowError(str(exc)) from None


def _owner(owner):
    try:
        return validate_owner(owner)
    except OwnerError as exc:
        raise FlowError(str(exc)) from None


def _port(value, name):
    if not 1 <= value <= 65535:
        raise FlowError("%s: %d is not a TCP port (1-65535)" % (name, value))
    return value


def build_part(params):
    """Validate the module's parameters into a HostPart; FlowError names the parameter and the fix."""
    for key in ("arm_timeout", "timeout", "interval"):
        if params[key] <= 0:
            raise FlowError("%s: %s must be more than 0 seconds" % (key, params[key]))
    if params["start_tolerance"] < 0:
        raise FlowError("start_tolerance: %s must be 0 or more seconds" % params["start_tolerance"])
    if not params["token"]:
        raise FlowError("token: must not be empty; use one random token per step, the same on every host")
    _name(params["party"], "party")
    rdv = dict(params["rendezvous"])
    rdv["address"] = _check_address(rdv["address"], "rendezvous.address")
    _port(rdv["port"], "rendezvous.port")
    parties = rdv.get("parties") or []
    if rdv["host"] == params["party"] and not parties:
        raise FlowError("rendezvous.parties: the coordinating host (rendezvous.host=%s) needs every host of the step "
                        "(those with servers or clients)" % rdv["host"])
    if parties and rdv["host"] not in parties:
        raise FlowError("rendezvous.host: %s coordinates the step, so it must be one of rendezvous.parties (%s)"
                        % (rdv["host"], ", ".join(parties)))
    if parties and params["party"] not in parties:
        raise FlowError("party: %s is not one of rendezvous.parties (%s); every host of the step must be listed"
                        % (params["party"], ", ".join(parties)))
    for i, name in enumerate(parties):
        _name(name, "rendezvous.parties[%d]" % i)
    if rdv.get("start_at") not in (None, ""):
        given = rdv["start_at"]
        rdv["start_at"] = parse_instant(given, "rendezvous.start_at")
        if params["state"] == "started":
            # a step is started now: the instant must lie within what the arm timeout allows (later states collect,
            # watch or stop a step whose instant has passed)
            check_start_window(rdv["start_at"], "rendezvous.start_at", params["arm_timeout"], "arm_timeout",
                               value=given)
    else:
        rdv["start_at"] = None
    perftest = None
    if params["engine"] == "perftest":
        perftest = PerftestOptions.from_params(params["perftest"])
        if not perftest.device:
            raise FlowError("perftest.device: the perftest engine needs the RDMA device (e.g. mlx5_0 or rxe0)")
    tcp = _tcp_options(params.get("tcp"), params["engine"])
    verbs = _verbs_options(params.get("verbs"), params["engine"], params.get("program"), params["servers"],
                           params["clients"], params["state"] == "started")
    grace = rdv["result_grace"] = float(_step.GRACE if rdv.get("result_grace") is None else rdv["result_grace"])
    if not (math.isfinite(grace) and 0 <= grace <= 3600):
        raise FlowError("rendezvous.result_grace: %r; give seconds from 0 to 3600 (how long past the timeout the "
                        "coordinator and the servers wait for a late host's results)" % (grace,))
    part = _step.HostPart(party=params["party"], token=params["token"], engine=params["engine"],
                          rendezvous=rdv, arm_timeout=params["arm_timeout"], timeout=params["timeout"],
                          step=params.get("step"), counters=params.get("counters"),
                          owner=_owner(params.get("owner")),
                          program=_program(params.get("program"), params["party"], parties, params["engine"]),
                          verbs=verbs)
    for i, srv in enumerate(params["servers"]):
        where = "servers[%d]" % i
        if srv["expected_clients"] < 1:
            raise FlowError("%s.expected_clients: %s must be 1 or more" % (where, srv["expected_clients"]))
        spec = FlowSpec(role="server", address=_check_address(srv["address"], where + ".address"),
                        port=_port(srv["port"], where + ".port"), token=params["token"],
                        expected_clients=srv["expected_clients"], max_bytes=_size(srv.get("max_bytes"),
                                                                                  where + ".max_bytes"),
                        volume=_size(srv.get("volume"), where + ".volume"), duration=srv.get("duration"),
                        timeout=params["arm_timeout"] + params["timeout"] + grace, perftest=perftest, **tcp)
        part.servers.append(spec)
    seen = set()
    for i, cli in enumerate(params["clients"]):
        where = "clients[%d]" % i
        _name(cli["flow_id"], where + ".flow_id")
        if cli["flow_id"] in seen:
            raise FlowError("%s.flow_id: %r is used twice on this host; give every flow its own id"
                            % (where, cli["flow_id"]))
        seen.add(cli["flow_id"])
        if (cli.get("volume") is None) == (cli.get("duration") is None):
            raise FlowError("%s: give exactly one of volume (e.g. 1GB) or duration (seconds)" % where)
        if cli.get("duration") is not None and cli["duration"] <= 0:
            raise FlowError("%s.duration: %s must be more than 0 seconds" % (where, cli["duration"]))
        if cli["streams"] < 1:
            raise FlowError("%s.streams: %s must be 1 or more" % (where, cli["streams"]))
        offset = cli.get("start_offset") or 0.0
        if not (math.isfinite(offset) and 0 <= offset < params["timeout"]):
            raise FlowError("%s.start_offset: %r; give seconds from 0 to less than timeout (%s): the flow starts that "
                            "long after the step's common instant, and its timeout counts from the common instant"
                            % (where, offset, params["timeout"]))
        flow_perftest = perftest
        if params["engine"] == "perftest":
            if cli["streams"] != 1:
                raise FlowError("%s.streams: the perftest engine runs parallel queue pairs instead (perftest.qps)"
                                % where)
            if cli.get("rate_limit"):
                try:
                    rate = _units.parse_rate(cli["rate_limit"], where + ".rate_limit")
                except _units.UnitError as exc:
                    raise FlowError(str(exc)) from None
                flow_perftest = PerftestOptions(**dict(perftest.__dict__, rate_limit_gbps=rate / 1e9))
        elif cli.get("rate_limit"):
            raise FlowError("%s.rate_limit: only the perftest engine has a software rate limiter; shape tcp flows "
                            "with the throttle module" % where)
        spec = FlowSpec(role="client", address=_check_address(cli["address"], where + ".address"),
                        port=_port(cli["port"], where + ".port"), token=params["token"], flow_id=cli["flow_id"],
                        volume=_size(cli.get("volume"), where + ".volume"), duration=cli.get("duration"),
                        streams=cli["streams"], timeout=params["timeout"] - offset, interval=params["interval"],
                        start_offset=offset,
                        strict_start=params["strict_start"], start_tolerance=params["start_tolerance"],
                        source=_check_address(cli["source"], where + ".source") if cli.get("source") else None,
                        source_ports=_source_ports(cli.get("source_ports"), cli["streams"], params["engine"], where),
                        perftest=flow_perftest, **tcp)
        part.clients.append((spec, cli.get("annotations") or {}))
    return part


def _verbs_options(value, engine, program, servers, clients, starting):
    """The verbs engine's device options (``VerbsProgramFlow``'s), or None with another engine. ``starting``: the
    part is started now (collecting, watching or stopping a step needs no device)."""
    if engine != "verbs":
        return None
    value = value or {}
    if servers or clients:
        raise FlowError("engine: verbs runs a job program (its data in RC queue pairs); flows and servers are the tcp "
                        "and perftest engines'; give program alone, or another engine")
    if not starting:
        return dict(value)
    if not value.get("device"):
        raise FlowError("verbs.device: the verbs engine needs the RDMA device (e.g. mlx5_0 or rxe0)")
    if not 1 <= value.get("ib_port", 1) <= 255:
        raise FlowError("verbs.ib_port: %r is not a port number (1-255)" % (value.get("ib_port"),))
    if value.get("gid_index") is not None and not 0 <= value["gid_index"] <= 255:
        raise FlowError("verbs.gid_index: %r is not a GID index (0-255)" % (value["gid_index"],))
    if not 0 <= value.get("qp_timeout", 14) <= 31:
        raise FlowError("verbs.qp_timeout: %r; give 0-31 (4.096 us x 2^N, as perftest's -u)" % (value["qp_timeout"],))
    if program is None:
        raise FlowError("program: the verbs engine runs a job program; give program (or parts[].program)")
    return {"device": value["device"], "ib_port": value.get("ib_port", 1), "gid_index": value.get("gid_index"),
            "qp_timeout": value.get("qp_timeout", 14)}


def _program(value, party, parties, engine):
    """The host's job program (docs/job-contract.md section 1) parsed, or None; FlowError names the field."""
    if value is None:
        return None
    if engine not in ("tcp", "verbs"):
        raise FlowError("program: a job program runs on the hosts' own executor, over TCP (engine tcp) or RDMA verbs "
                        "(engine verbs), and the %s engine runs one transfer per process (a chained program would "
                        "pay a process launch per operation); give engine=tcp or engine=verbs for a program" % engine)
    program = parse_program(value)
    if program.listen is not None and program.listen.address in ("0.0.0.0", "::"):
        raise FlowError("program.listen.address: %s would listen on every interface; give this host's lab address"
                        % program.listen.address)
    for op in program.ops:
        if op.peer is not None and op.peer == party:
            raise FlowError("program.ops[%d].peer: %s is this host (party); a transfer goes to another host of the "
                            "step" % (op.id, op.peer))
        if op.peer is not None and parties and op.peer not in parties:
            raise FlowError("program.ops[%d].peer: %s is not one of rendezvous.parties (%s); every host a program "
                            "exchanges data with is a host of the step" % (op.id, op.peer, ", ".join(parties)))
    return program


def _source_ports(ports, streams, engine, where):
    """One source port per stream (tcp), each 1024-65535, or None (the kernel picks)."""
    if not ports:
        return None
    if engine != "tcp":
        raise FlowError("%s.source_ports: only the tcp engine binds its source ports" % where)
    if len(ports) != streams:
        raise FlowError("%s.source_ports: %d ports for %d streams; give one per stream" % (where, len(ports), streams))
    for port in ports:
        if not 1024 <= port <= 65535:
            raise FlowError("%s.source_ports: %r is not a port from 1024 to 65535" % (where, port))
    if len(set(ports)) != len(ports):
        raise FlowError("%s.source_ports: %s repeats a port; every stream needs its own" % (where, ports))
    return list(ports)


def build_parts(params):
    """With ``parts`` (several hosts' parts, each in a network namespace of this machine): (netns, HostPart) each."""
    if params["state"] != "started":
        raise FlowError("parts: only state=started starts several hosts' parts; collect and stop one host at a time "
                        "(party)")
    built, seen = [], set()
    for i, entry in enumerate(params["parts"]):
        where = "parts[%d]" % i
        _name(entry["party"], where + ".party")
        if entry["party"] in seen:
            raise FlowError("%s.party: %s is listed twice; give every host of the step once" % (where, entry["party"]))
        seen.add(entry["party"])
        if not _netns.valid_name(entry["netns"]):
            raise FlowError("%s.netns: %r is not a network namespace name (a name under %s)"
                            % (where, entry["netns"], _netns.NETNS_RUN_DIR))
        try:
            part = build_part(dict(params, **{key: entry[key] for key in _PART if key in entry}))
        except FlowError as exc:
            # an error in the part's own options is the part's; one in a shared option (token, rendezvous, ...) is not
            field = re.split(r"[.\[:]", str(exc), maxsplit=1)[0]
            if field in _PART:
                raise FlowError("%s (%s): %s" % (where, entry["party"], exc)) from None
            raise
        built.append((entry["netns"], part))
    return built


def _start_parts(module, params):
    try:
        parts = build_parts(params)
    except FlowError as exc:
        module.fail_json(msg=str(exc))
    if module.check_mode:
        module.exit_json(changed=False, msg="check mode: nothing started, no traffic sent")
    started = _step.start_in_namespaces(parts, params["state_dir"])
    failed = [p for p in started if p["status"] != "started"]
    if failed:
        said = "; ".join("%s (netns %s): %s" % (p["host"], p["netns"], p["error"]) for p in failed)
        module.fail_json(msg="%d of %d hosts could not start their part of the step: %s. The step is aborted; every "
                             "host's part ends." % (len(failed), len(started), said), parts=started)
    module.exit_json(changed=True, parts=started)


def run_module(module):
    params = module.params
    if params["parts"] is not None:
        _start_parts(module, params)
    try:
        part = build_part(params)
    except FlowError as exc:
        module.fail_json(msg=str(exc))
    state = params["state"]
    if module.check_mode:
        module.exit_json(changed=False, msg="check mode: nothing started, no traffic sent")
    if state == "started":
        try:
            started = _step.start(part, params["state_dir"])
        except OSError as exc:
            module.fail_json(msg="%s: cannot start its part of the step: %s. Is the address on this host, is the port "
                                 "free, is the engine's tool installed?" % (part.party, exc))
        module.exit_json(changed=True, part=started)
    if state == "collected":
        if not part.coordinates:
            module.fail_json(msg="state=collected runs on the coordinating host (rendezvous.host=%s), not on %s"
                             % (part.rendezvous["host"], part.party))
        wait = params["wait"] if params["wait"] is not None else (
            params["arm_timeout"] + params["timeout"] + 2 * part.rendezvous["result_grace"])
        record = _step.collect(part, params["state_dir"], wait, missing=params["missing"])
        module.exit_json(changed=False, step=record, failed=False)
    if state == "progress":
        if not part.coordinates:
            module.fail_json(msg="state=progress runs on the coordinating host (rendezvous.host=%s), not on %s"
                             % (part.rendezvous["host"], part.party))
        module.exit_json(changed=False, **_step.progress(part, params["state_dir"], watch=params["watch"]))
    module.exit_json(changed=True, **_step.stop(part, params["state_dir"]))
