# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One host's part of a synchronized step, run in the background: servers, armed clients, the rendezvous.

``start`` checks everything that can be checked and binds every listening socket in the module's own process (so a
taken port or a missing address fails the task with the reason), then hands them to a daemon (double fork, new
session, stdio on /dev/null) and returns at once: the controller's dispatch time is off the critical path, because
nothing fires until every host has armed. The daemon:

1. snapshots the host's counters (the wire's books before),
2. runs its servers, and the coordinator when this host coordinates the rendezvous,
3. connects to the rendezvous, arms its client flows (connected and admitted by their servers) and its job program
   (``program.ProgramFlow``: its server bound in the module's process, its connections to and from its peers made)
   and says so,
4. on ``fire`` waits for the instant on an absolute timer (no spin) and sends; on ``abort`` ends its flows,
5. waits for its servers, snapshots the counters again, writes its result on the host (atomically: nothing measured
   is lost; a full disk is noted in the result, which still goes out) and sends it to the coordinator, which writes
   it to its own disk and then acknowledges it (then the host's copy is removed).

``collect`` (on the coordinating host) waits for the coordinator's record of the whole step: every host's results,
arm and fire times, the measured margin and clock offsets. When the coordinator died without a record (killed,
crashed, out of memory), the record is assembled from the results it had stored: which hosts' results survived,
which were lost. ``stop`` (a failed step's cleanup, on any host) ends the host's daemon by its PID - only when the PID
file's identity is still that process - and returns what it had.

Every deadline is on the monotonic clock; the wall clock is the start instant and the timestamps of the results.
"""

from __future__ import annotations

import json
import math
import os
import resource
import shutil
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field

from .. import _netns_enter as _netns
from .._atomic import write_json as write_json_atomic
from .._counters import snapshot
from .._nic import identify as identify_nic
from .clock import set_normal, set_realtime, tight_timers
from .daemon import spawn
from .engine import FlowSpec, engine_class
from .rendezvous import Coordinator, Party, RendezvousError, control_abort, control_collect, control_progress
from .server import owner, pid_record, run_id
from .state import (
    name_problem,
    step_header_path,
    step_paths,
    step_record_path,
    step_results_dir,
    step_stored_result_path,
)
from .tcp import TcpEngine

__all__ = ["HostPart", "start", "start_in_namespaces", "collect", "stop"]

# Everything the daemon runs is imported before the fork: Ansible removes the module's zip file (where these modules
# come from) as soon as the task returns, and a lazy import in the daemon would then fail. What only some parts need
# (the perftest engine; _tc, which _counters imports to read qdiscs) is imported by preload(), in the module's process.
# Every host's task compiles what it imports (a module's zip has no bytecode): importing only what is needed keeps
# the task cheap on a 32-host lab.


def preload(part):
    """Import, before the fork, what this part's daemon will need."""
    engine_class(part.engine)
    if part.program is not None:
        from . import program as _program  # noqa: F401  pylint: disable=unused-import
        if part.engine == "verbs":
            from . import verbs as _verbs  # noqa: F401  pylint: disable=unused-import
    if part.counters and part.counters.get("qdiscs"):
        from .. import _tc  # noqa: F401  pylint: disable=unused-import


GRACE = 30.0  # seconds past a step's timeout that servers and the coordinator wait for late results
FIRE_AHEAD_SLACK = 120.0  # s past the arm timeout a fire instant may lie ahead (more: the message is not believed)
PROGRESS_EVERY = 0.5  # s between a watched step's progress messages (each flow's latest interval sample)
STOPPED = "stopped by the controller (SIGTERM): the step failed elsewhere or the play was interrupted"


@dataclass
class HostPart:
    party: str
    token: str
    engine: str
    servers: list = field(default_factory=list)  # FlowSpec
    clients: list = field(default_factory=list)  # (FlowSpec, annotations)
    counters: dict | None = None  # {netdevs, qdiscs, rdma_devices, ethtool, ipext, interface}
    rendezvous: dict = field(default_factory=dict)  # {host, address, port, parties, expected_flows, start_at}
    arm_timeout: float = 60.0
    timeout: float = 300.0
    step: str | None = None
    owner: dict | None = None  # the experiment that holds this part (module_utils/_owner.py), kept in its PID file
    program: object = None  # the host's job program (program_spec.Program, docs/job-contract.md section 1), or None
    verbs: dict | None = None  # engine verbs: the program's RDMA device {device, ib_port, gid_index, qp_timeout}

    @property
    def run(self):
        return run_id(self.token)

    @property
    def coordinates(self):
        return self.rendezvous.get("host") == self.party


def _nic(part):
    """The step's NIC as the test report identifies it (``_nic.identify``), read after the flows; a NIC that cannot
    be read is said in one line, never costs the result."""
    try:
        return identify_nic(part.counters.get("interface"), (part.counters.get("rdma_devices") or [None])[0])
    except Exception as exc:  # noqa: BLE001  an identification that cannot be read must not cost the flows
        return {"interface": part.counters.get("interface"), "error": "%s: %s" % (type(exc).__name__, exc)}


def _counters(spec):
    """A snapshot of the host's counters (see the port_counters_info module), or the reason it could not be taken."""
    try:
        if spec.get("qdiscs"):
            # pyroute2 is imported here, not with this file: it costs a tenth of a second, which every host's task
            # would pay, and only a host with a tc throttle reads qdiscs. (It comes from the host's site-packages,
            # never from the module's zip file, so importing it in the daemon is safe.)
            try:
                from pyroute2 import IPRoute
            except ImportError:
                return {"error": "pyroute2 is not installed on this host; qdisc counters need it"}
            with IPRoute() as ipr:
                return snapshot(rdma=spec.get("rdma_devices") or [], netdevs=spec.get("netdevs") or [],
                                qdiscs=spec["qdiscs"], ipr=ipr, ipext=bool(spec.get("ipext")),
                                ethtool=spec.get("ethtool") or None, ethtool_optional=True)
        return snapshot(rdma=spec.get("rdma_devices") or [], netdevs=spec.get("netdevs") or [],
                        ipext=bool(spec.get("ipext")), ethtool=spec.get("ethtool") or None, ethtool_optional=True)
    except Exception as exc:  # noqa: BLE001  a counter that cannot be read must not cost the flows
        return {"error": "%s: %s" % (type(exc).__name__, exc)}


# --------------------------------------------------------------------------------------------------- the daemon
class _Daemon:
    def __init__(self, part, listeners, coordinator_listener, arm_deadline, state_dir, program_listener=None):
        """``arm_deadline``: on the monotonic clock. ``program_listener``: the program server's socket, bound in the
        module's process (``ProgramFlow.listen``)."""
        self.part = part
        self.state_dir = state_dir
        self.listeners = listeners
        self.coordinator_listener = coordinator_listener
        self.arm_deadline = arm_deadline
        self.engine = engine_class(part.engine)()
        self.stop = threading.Event()
        self.abort_reason = None
        self.flows = [self.engine.client(spec) for spec, _ann in part.clients]
        # the job program is one more armed flow (armed, fired at the instant and watched with the others); its
        # result is the host's "program" part, not one of its clients
        self.program = None
        if part.program is not None:
            if part.engine == "verbs":  # its data in RC queue pairs (verbs.py)
                from .verbs import VerbsProgramFlow
                self.program = VerbsProgramFlow(part.program, part.token, part.party, listener=program_listener,
                                                timeout=part.timeout, **(part.verbs or {}))
            else:
                from .program import ProgramFlow
                self.program = ProgramFlow(part.program, part.token, part.party, listener=program_listener,
                                           timeout=part.timeout)
            self.flows.append(self.program)
        self.fired = [None] * len(self.flows)
        self.fire_event = threading.Event()
        self.fire_at = None
        self.threads = []
        self.out = {"host": part.party, "step": part.step, "engine": part.engine, "status": "error", "error": None,
                    "servers": [], "clients": [], "pid": os.getpid(), "started_at": time.time(),
                    "kernel": os.uname().release}

    def abort(self, reason):
        if self.abort_reason is None:
            self.abort_reason = reason
        self.stop.set()
        self.fire_event.set()
        for flow in self.flows:
            flow.abort(reason)

    def run(self):
        part, out = self.part, self.out
        tight_timers()
        # a woken thread waits for the GIL at most this long (Python's default is 5 ms)
        sys.setswitchinterval(0.0005)
        signal.signal(signal.SIGTERM, lambda *_: self.abort(STOPPED))
        if part.counters is not None:
            out["counters"] = {"before": _counters(part.counters), "interface": part.counters.get("interface"),
                               "engine": part.engine}
        coordinator = None
        if self.coordinator_listener is not None:
            coordinator = threading.Thread(target=self._coordinate, daemon=True)
            coordinator.start()
        servers = []
        server_results = [None] * len(part.servers)
        for i, (spec, listener) in enumerate(zip(part.servers, self.listeners)):
            thread = threading.Thread(target=self._serve, args=(i, spec, listener, server_results), daemon=True)
            thread.start()
            servers.append(thread)
        party = Party(part.rendezvous["address"], part.rendezvous["port"], part.token, part.party)
        try:
            self._ready(part.servers)
            party.connect(self.arm_deadline, aborted=lambda: self.abort_reason)
            outcome = self._arm(party)
            self.fire_received = time.time()
            if outcome[0] == "fire":
                self._fire(party, outcome[1])
            else:
                self.abort(outcome[1])
                out["error"] = "not started: %s" % outcome[1]
        except RendezvousError as exc:
            self.abort(str(exc))
            out["error"] = "not started: %s" % exc
        # the servers end when their flows are done; after an abort, at once
        while any(t.is_alive() for t in servers):
            if self.stop.is_set():
                for t in servers:
                    t.join(5.0)
                break
            reason = party.poll_abort(0.2)
            if reason:
                self.abort(reason)
        # This thread stayed real-time from the arming on, blocked on the rendezvous socket nearly all the time: had it
        # turned normal while holding the GIL, a real-time thread of this process (the flows woken for the instant,
        # the coordinator sending the fire) would wait behind every normal process of the host for it.
        set_normal()
        out["servers"] = [r for r in server_results if r is not None]
        if part.counters is not None:
            out["counters"]["after"] = _counters(part.counters)
            out["nic"] = _nic(part)
        self._verdict()
        out["ended_at"] = time.time()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        out["cpu_s"] = round(usage.ru_utime + usage.ru_stime, 3)  # this host's part, from its start to here
        result_path, pid_path = step_paths(self.state_dir, part.run, part.party)
        # On the host first (nothing measured is lost if the network is); a disk that cannot take it (full, read-only)
        # is noted in the result, which still goes to the coordinator.
        kept = _write_safely(result_path, out)
        if kept is not True:
            out["result_file_error"] = kept
        # (after an abort, the coordinator may be gone: a closed connection answers at once; a live one writes the
        # result to its disk before its ack, which on a slow guest can take a moment)
        if party.report(out, wait=5.0 if self.stop.is_set() else 10.0):
            out["reported"] = True
            if party.ack_durable and kept is True:
                # the coordinator has it on its disk: this copy is no longer needed
                _unlink(result_path)
        party.close()
        if coordinator is not None:
            coordinator.join()
        if os.path.exists(pid_path) and not os.path.exists(result_path):
            _unlink(pid_path)

    def _serve(self, i, spec, listener, results):
        try:
            results[i] = self.engine.serve(spec, listener, stop=self.stop)
        except Exception as exc:  # noqa: BLE001  a server that crashed still leaves a result
            results[i] = {"role": "server", "address": spec.address, "port": spec.port, "status": "error",
                          "error": "server crashed: %r" % (exc,), "flows": []}

    def _ready(self, servers):
        for spec in servers:
            while not self.engine.ready(spec):
                if time.monotonic() > self.arm_deadline or self.abort_reason:
                    raise RendezvousError("the %s server on port %d never listened" % (self.engine.name, spec.port))
                time.sleep(0.02)

    def _arm(self, party):
        results = [False] * len(self.flows)

        def arm(i):
            flow = self.flows[i]
            if flow is self.program:  # the program's deadline is on the wall clock
                results[i] = flow.arm(time.time() + (self.arm_deadline - time.monotonic()))
            else:
                results[i] = flow.arm(self.arm_deadline)

        threads = [threading.Thread(target=arm, args=(i,), daemon=True) for i in range(len(self.flows))]
        for thread in threads:
            thread.start()
        # while the flows arm (connecting to servers can take until the arm deadline), the rendezvous is listened to:
        # an abort (the step will not run) ends the arming at once. Nothing else comes before this host has armed.
        while any(t.is_alive() for t in threads):
            reason = party.poll_abort(0.1) if party.channel is not None else None
            if party.channel is None and not self.abort_reason:
                reason = "lost the rendezvous at %s:%d while arming" % (party.address, party.port)
            if reason:
                self.abort(reason)
                for thread in threads:
                    thread.join()
                return "abort", reason
        failed = [f for f, ok in zip(self.flows, results) if not ok]
        self.out["armed_at"] = time.time()
        # from here until the fire this thread only blocks on the rendezvous: real-time, so that probes and the fire
        # are answered the moment they arrive, whatever else the host is busy with
        self.out["realtime"] = set_realtime()
        # the flows' threads exist before the fire, so that firing is one wake-up, not a thread start
        self.threads = [threading.Thread(target=self._flow_thread, args=(i,), daemon=True)
                        for i in range(len(self.flows))]
        for thread in self.threads:
            thread.start()
        if failed:
            party.send("arm_failed", error="; ".join("flow %s: %s" % (f.result["flow_id"], f.result["error"])
                                                     for f in failed))
        else:
            party.send("armed", t=self.out["armed_at"], flows=[f.result["flow_id"] for f in self.flows])
        return party.wait_fire(self.arm_deadline + FIRE_AHEAD_SLACK, aborted=lambda: self.abort_reason)

    def _fire(self, party, msg):
        try:
            at = float(msg["at"])
        except (KeyError, TypeError, ValueError):
            at = float("nan")
        ahead = at - time.time()
        if not math.isfinite(at) or ahead > self.part.arm_timeout + FIRE_AHEAD_SLACK:
            # never sleep until a nonsense instant (a daemon would wait until it is killed)
            reason = "the rendezvous sent a start instant %r that is not an instant within the arm timeout" % (
                msg.get("at"),)
            self.abort(reason)
            self.out["error"] = "not started: %s" % reason
            return
        self.out["fire"] = {k: msg.get(k) for k in ("at", "at_coordinator", "offset_s", "margin_s")}
        self.out["fire"]["ahead_s"] = round(at - self.fire_received, 6)
        self.fire_at = at
        self.fire_event.set()
        # the controller watches the step: each flow's latest interval sample to the coordinator twice a second (a
        # tenth of a second after each whole second, so that the controller's query once a second never sees one
        # more than an interval old); scheduled on the monotonic clock from the instant
        report_at = time.monotonic() + ahead + PROGRESS_EVERY + 0.1 if msg.get("progress") else None
        while any(t.is_alive() for t in self.threads):
            if party.channel is None:
                report_at = None  # the rendezvous is gone: the flows go on, their result stays on the host
            reason = party.poll_abort(0.2 if report_at is None
                                      else min(0.2, max(0.01, report_at - time.monotonic())))
            if reason:
                # an abort after the fire (the controller's, or the coordinator's): the flows end now, and the host
                # reports what they measured
                self.abort(reason)
                for thread in self.threads:
                    thread.join()
            if report_at is not None and time.monotonic() >= report_at:
                report_at += PROGRESS_EVERY
                try:
                    party.send("progress", t=round(time.time() - at, 3), flows={
                        f.result["flow_id"]: f.progress() for f in self.flows})
                except Exception:  # noqa: BLE001  showing progress must never cost the step its flows or result
                    report_at = None
        self._gather()

    def _gather(self):
        for i, (flow, (_spec, flow_annotations)) in enumerate(zip(self.flows, self.part.clients)):
            result = self.fired[i] if self.fired[i] is not None else flow.result
            if flow_annotations:
                result["annotations"] = flow_annotations
            self.out["clients"].append(result)
            flow.close()
        if self.program is not None:
            self.out["program"] = self.fired[-1] if self.fired[-1] is not None else self.program.result
            self.program.close()

    def _flow_thread(self, i):
        """Armed flow ``i``: waits for the fire (a futex, no spin), then for the instant (an absolute timer), real-time
        until its first bytes are sent (the flow's ``fire`` drops it)."""
        set_realtime()
        self.fire_event.wait()
        if self.fire_at is None:
            set_normal()
            return
        # how far ahead of the instant the fire reached this host (negative: it came late, and so did the flow)
        self.flows[i].result["fire_ahead_s"] = round(self.fire_at - self.fire_received, 6)
        try:
            # every flow is given the common instant: one with a start offset starts that long after it by itself
            self.fired[i] = self.flows[i].fire(self.fire_at)
        except Exception as exc:  # noqa: BLE001  one flow's crash is its result, not the host's
            self.fired[i] = dict(self.flows[i].result, status="error", error="flow crashed: %r" % (exc,))

    def _verdict(self):
        out = self.out
        if not self.out["clients"]:
            for flow, (_spec, annotations) in zip(self.flows, self.part.clients):
                flow.result.setdefault("error", None)
                flow.result["status"] = "not_started"
                flow.result["error"] = flow.result.get("error") or out.get("error") or self.abort_reason
                if annotations:
                    flow.result["annotations"] = annotations
                out["clients"].append(flow.result)
                flow.close()
        if self.program is not None and "program" not in out:
            self.program.not_started("aborted" if self.abort_reason else "error",
                                     self.program.result.get("error") or out.get("error") or self.abort_reason)
            out["program"] = self.program.result
            self.program.close()
        if self.abort_reason == STOPPED:
            for client in out["clients"]:
                if client.get("status") != "ok":
                    client["cause_from"] = "stop"  # the controller's cleanup, not what went wrong
        bad = ["flow %s: %s" % (c.get("flow_id"), c.get("error")) for c in out["clients"] if c.get("status") != "ok"]
        bad += ["server %s:%s: %s" % (s.get("address"), s.get("port"), s.get("error"))
                for s in out["servers"] if s.get("status") != "ok"]
        if out.get("program") is not None and out["program"].get("status") != "ok":
            bad.append("program: %s" % out["program"].get("error"))
        if out["error"] is None and (bad or self.abort_reason):
            out["error"] = "; ".join(bad) or self.abort_reason
        if out["error"] is None:
            out["status"] = "ok"

    def _coordinate(self):
        part = self.part
        store = step_results_dir(self.state_dir, part.run)
        record = None
        try:
            coordinator = Coordinator(self.coordinator_listener, part.token, part.rendezvous["parties"],
                                      self.arm_deadline, part.timeout, start_at=part.rendezvous.get("start_at"),
                                      grace=part.rendezvous.get("result_grace", GRACE),
                                      wait_for_controller=part.rendezvous.get("wait_for_collect", True),
                                      store=store if os.path.isdir(store) else None)
            record = coordinator.run()  # a crash inside it still returns the record, with every result it had
        except Exception as exc:  # noqa: BLE001  the controller must get a record whatever happened
            record = assemble(part, self.state_dir, "the coordinator crashed: %r" % (exc,)) or {
                "status": "error", "error": "the coordinator crashed: %r" % (exc,), "hosts": {}, "parties": {}}
        record["step"] = part.step
        record["expected_flows"] = part.rendezvous.get("expected_flows") or {}
        if _write_safely(step_record_path(self.state_dir, part.run), record) is True:
            # the whole record is on disk: the results stored one by one are in it
            shutil.rmtree(store, ignore_errors=True)


def start(part, state_dir, close=()):
    """Start the host's part in the background; returns its description. Raises OSError when a server or the
    coordinator cannot listen (with the reason), before anything is started. ``close``: descriptors the daemon
    must not keep (see daemon.spawn)."""
    preload(part)
    if part.engine == "verbs":  # said by the module's task, before the daemon forks
        from .verbs import pyverbs_missing
        missing = pyverbs_missing()
        if missing:
            raise OSError(missing)
    engine = engine_class(part.engine)()
    os.makedirs(state_dir, mode=0o700, exist_ok=True)
    result_path, pid_path = step_paths(state_dir, part.run, part.party)
    for stale in (result_path, pid_path):
        if os.path.exists(stale):
            os.unlink(stale)
    listeners = []
    coordinator_listener = None
    program_listener = None
    try:
        if part.program is not None:
            from .program import ProgramFlow
            try:
                program_listener = ProgramFlow.listen(part.program)
            except OSError as exc:  # its strerror names the address, the port and the fix
                raise OSError("cannot start the program server: %s" % (exc.strerror or exc)) from None
        for spec in part.servers:
            try:
                listeners.append(engine.listen(spec))
            except OSError as exc:
                raise OSError("cannot start the %s server on %s:%d: %s"
                              % (engine.name, spec.address, spec.port, exc.strerror or exc)) from None
        if part.coordinates:
            spec = FlowSpec(role="server", address=part.rendezvous["address"], port=part.rendezvous["port"],
                            token=part.token, expected_clients=len(part.rendezvous["parties"]))
            try:
                coordinator_listener = TcpEngine.listen(spec)
            except OSError as exc:
                raise OSError("cannot start the rendezvous on %s:%d: %s"
                              % (spec.address, spec.port, exc.strerror or exc)) from None
            stale = step_record_path(state_dir, part.run)
            if os.path.exists(stale):
                os.unlink(stale)
            # where the coordinator keeps each host's result before it acknowledges it (a stale one goes)
            store = step_results_dir(state_dir, part.run)
            shutil.rmtree(store, ignore_errors=True)
            os.makedirs(store, mode=0o700)
    except OSError:
        for sock in listeners + [coordinator_listener, program_listener]:
            if sock is not None:
                sock.close()
        raise
    arm_deadline = time.monotonic() + part.arm_timeout
    arm_deadline_wall = time.time() + part.arm_timeout

    def announce(pid):
        write_json_atomic(pid_path, pid_record(pid, part.run, **({"owner": part.owner} if part.owner else {})))

    def run():
        daemon = _Daemon(part, listeners, coordinator_listener, arm_deadline, state_dir,
                         program_listener=program_listener)
        try:
            daemon.run()
        except Exception as exc:  # noqa: BLE001  the daemon must leave a result whatever happens
            where = traceback.extract_tb(exc.__traceback__)[-1]
            daemon.out.update(status="error", error="the step process crashed: %r (%s:%d)" % (
                exc, os.path.basename(where.filename), where.lineno))
            daemon.out["clients"] = [dict(flow.result, status="error", error=daemon.out["error"],
                                          **({"annotations": ann} if ann else {}))
                                     for flow, (_s, ann) in zip(daemon.flows, part.clients)]
            if daemon.program is not None:
                daemon.out["program"] = dict(daemon.program.result, status="error", error=daemon.out["error"])
            _write_safely(result_path, daemon.out)

    try:
        pid = spawn(run, announce=announce, close=close)
    finally:
        for sock in listeners + [coordinator_listener, program_listener]:
            if sock is not None:
                sock.close()
    return {"status": "started", "pid": pid, "host": part.party, "coordinates": part.coordinates,
            "servers": [{"address": s.address, "port": s.port, "expected_clients": s.expected_clients}
                        for s in part.servers],
            "clients": [{"flow_id": s.flow_id, "address": s.address, "port": s.port, "streams": s.streams}
                        for s, _ann in part.clients],
            "program": None if part.program is None else {
                "iterations": part.program.iterations, "ops": len(part.program.ops),
                "listen": None if part.program.listen is None else {
                    "address": part.program.listen.address, "port": part.program.listen.port}},
            "arm_deadline": arm_deadline_wall}


def _in_namespace(netns, work, close=()):
    """``work`` run in a forked child inside network namespace ``netns`` (``_netns_enter.fork_in_namespace``)."""
    return _netns.fork_in_namespace(netns, work, close=close)


def start_in_namespaces(parts, state_dir):
    """Start several hosts' parts from one process, each inside its own network namespace of this machine (the netns
    lab: one task for the step instead of one per host). ``parts``: (netns, HostPart) pairs. Returns one entry per
    part, in order: ``start``'s description, or ``status: failed`` with the error. When any part failed, the step is
    aborted through its rendezvous, so every other part ends at once and says why; when the rendezvous cannot take
    the abort (the coordinating part is the one that failed), every started part is stopped by its PID."""
    for _netns_name, part in parts:
        preload(part)
    children = []
    for netns, part in parts:
        def work(write_fd, part=part):
            return start(part, state_dir, close=(write_fd,))

        children.append(_in_namespace(netns, work, close=[fd for _pid, fd in children]))
    results = []
    for (pid, read_fd), (netns, part) in zip(children, parts):
        out = _netns.gather(pid, read_fd)
        out.update(host=part.party, netns=netns)
        results.append(out)
    failed = [r for r in results if r.get("status") != "started"]
    coordinator = next(((netns, part) for (netns, part), r in zip(parts, results)
                        if part.coordinates and r.get("status") == "started"), None)
    if failed and coordinator is not None:
        netns, part = coordinator
        reason = "; ".join("%s could not start its part: %s" % (r["host"], r["error"]) for r in failed)

        def abort(_write_fd):
            acked = control_abort(part.rendezvous["address"], part.rendezvous["port"], part.token, reason)
            return {"status": "aborted" if acked else "failed"}

        if _netns.gather(*_in_namespace(netns, abort)).get("status") == "aborted":
            return results
    if failed:
        for (_netns_name, part), result in zip(parts, results):
            if result.get("status") == "started":
                result["stopped"] = stop(part, state_dir, wait=5.0)["signal"]
    return results


def _read(path):
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _unlink(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def _write_safely(path, data):
    """Write ``data`` atomically at ``path``: True, or what went wrong (a full, read-only or missing disk)."""
    try:
        write_json_atomic(path, data)
        return True
    except (OSError, ValueError, TypeError) as exc:
        return "cannot write %s: %s" % (path, exc)


def stored_results(part, state_dir):
    """What the coordinator of ``part``'s step stored on this host: ``(header, {party: stored entry})``."""
    store = step_results_dir(state_dir, part.run)
    header = _read(step_header_path(store)) or {}
    stored = {}
    try:
        names = sorted(os.listdir(store))
    except OSError:
        return None, {}
    for name in names:
        if not (name.startswith("host-") and name.endswith(".json")):
            continue
        entry = _read(os.path.join(store, name))
        if entry and entry.get("run") == part.run and isinstance(entry.get("party"), str) \
                and isinstance(entry.get("result"), dict) and name_problem(entry["party"]) is None \
                and os.path.basename(step_stored_result_path(store, entry["party"])) == name:
            stored[entry["party"]] = entry
    return header, stored


def assemble(part, state_dir, why):
    """A record of ``part``'s step from the results its coordinator stored before acknowledging them (it died before
    its record): every stored host's result, and each host whose result was lost, named. None when nothing was
    stored (the coordinator never ran here)."""
    header, stored = stored_results(part, state_dir)
    if header is None:
        return None
    expected = [p for p in (header.get("parties") or part.rendezvous.get("parties") or []) if isinstance(p, str)]
    for party in stored:
        if party not in expected:
            expected.append(party)
    survived = [p for p in expected if p in stored]
    lost = [p for p in expected if p not in stored]
    parties = {}
    for party in expected:
        info = dict(stored[party].get("info") or {}) if party in stored else {}
        if party not in stored:
            info["lost"] = "its result never reached the coordinator's disk before the coordinator died"
        parties[party] = info
    error = "%s; the record was assembled from the results it had stored on %s: %s survived%s" % (
        why, part.party, ", ".join(survived) if survived else "no host's result",
        "; lost: %s (a host that was not acknowledged keeps its own copy: flow_step state=stopped on it returns "
        "it)" % ", ".join(lost) if lost else "")
    return {"run": part.run, "step": part.step, "status": "failed", "error": error, "recovered": True,
            "survived": survived, "lost": lost, "hosts": {p: stored[p]["result"] for p in survived},
            "parties": parties, "fire": header.get("fire"), "started_at": header.get("started_at"),
            "mode": header.get("mode"), "coordinator": header.get("coordinator"), "rejected": [],
            "expected_flows": part.rendezvous.get("expected_flows") or {}}


def _forget_step(part, state_dir):
    """The coordinator's record and stored results, once they are in a record that has been handed over."""
    _unlink(step_record_path(state_dir, part.run))
    shutil.rmtree(step_results_dir(state_dir, part.run), ignore_errors=True)


def collect(part, state_dir, wait, missing=()):
    """On the coordinating host: the step's record, once the coordinator wrote it (at most ``wait`` seconds).
    ``missing``: hosts the controller knows will never arm (their task failed): the step is aborted at once. When the
    coordinator died without its record, the record is assembled from the results it had stored (``assemble``); they
    stay on the host for a re-run and for ``stop``, which removes them."""
    path = step_record_path(state_dir, part.run)
    address, port = part.rendezvous["address"], part.rendezvous["port"]
    if missing:
        control_abort(address, port, part.token, "%s failed before arming (not in the play any more: failed, "
                                                 "unreachable, or left out by --limit)" % ", ".join(missing))
    deadline = time.monotonic() + wait
    result_path, pid_path = step_paths(state_dir, part.run, part.party)
    # Say "collecting" (the step may fire: from now on this task only waits, so nothing of Ansible's competes with
    # the flows) and block until the coordinator closes the connection at the end of the step.
    if not os.path.exists(path):
        control_collect(address, port, part.token, wait)
    gone_since = None
    while not os.path.exists(path) and time.monotonic() < deadline:
        # the coordinating part is gone without a record (its start failed, or it was killed): no use waiting
        if owner(_read(pid_path)) == "gone":
            gone_since = gone_since or time.monotonic()
            if time.monotonic() - gone_since > 2.0:
                break
        time.sleep(0.1)
    record = _read(path)
    if record is None and gone_since is not None:
        part_result = _read(result_path) or {}
        assembled = assemble(part, state_dir, "the coordinator on %s ended without its record (killed, crashed or "
                                              "out of memory)" % part.party)
        if assembled is not None:
            return assembled
        return {"status": "error", "hosts": {}, "parties": {}, "step": part.step,
                "expected_flows": part.rendezvous.get("expected_flows") or {},
                "error": "the rendezvous on %s is not running: %s" % (
                    part.party, part_result.get("error") or "its part of the step was never started, or it ended "
                                                            "without a record (see that host's task)")}
    if record is None:
        control_abort(address, port, part.token, "the controller stopped waiting after %.0f s" % wait)
        end = time.monotonic() + 15.0
        while not os.path.exists(path) and time.monotonic() < end:
            time.sleep(0.05)
        record = _read(path)
        if record is None:
            return assemble(part, state_dir, "the rendezvous on %s wrote no record within %.0f s" % (
                part.party, wait)) or {
                "status": "error", "hosts": {}, "parties": {}, "step": part.step,
                "error": "the rendezvous on %s wrote no record within %.0f s (was this host's part of the step "
                         "started?)" % (part.party, wait)}
    _forget_step(part, state_dir)
    record.setdefault("step", part.step)
    return record


def progress(part, state_dir, watch=False):
    """On the coordinating host, while the step runs: its progress (``summarize_progress``) and whether it is
    ``done`` (the coordinator has ended: collect it). ``watch``: the controller's first query of the step (it lets
    the step fire, and is answered once the flows are under way)."""
    path = step_record_path(state_dir, part.run)
    if os.path.exists(path):
        return {"done": True, "phase": "ended"}
    # the first query waits for the fire however long the arming takes (its answer comes after the instant, or with
    # the reason the step was not started), so that no query's process starts near the instant
    answer = control_progress(part.rendezvous["address"], part.rendezvous["port"], part.token, watch=watch,
                              timeout=part.arm_timeout + 15.0 if watch else 5.0)
    if answer is None:  # no coordinator listens any more: the step has ended (its record follows), or never ran
        return {"done": True, "phase": "ended"}
    out = summarize_progress(answer)
    out["done"] = out["phase"] == "ended"
    return out


def summarize_progress(answer):
    """The coordinator's progress answer, per flow: bytes so far, the rate of its latest interval, the share of its
    volume, and the time it needs at that rate; the step's remaining time (the longest of them)."""
    now, at = answer.get("now"), answer.get("fire_at")
    done = set(answer.get("done") or [])
    elapsed = round(now - at, 3) if now and at else None
    flows, remaining = [], []
    for host, entry in sorted((answer.get("parties") or {}).items()):
        for flow_id, sample in sorted(((entry or {}).get("flows") or {}).items()):
            flow = {"host": host, "flow_id": flow_id, "done": host in done}
            if sample:
                volume, sent, gbps = sample.get("volume"), sample.get("bytes") or 0, sample.get("gbps")
                flow.update(bytes=sent, gbps=gbps, volume=volume,
                            share=round(sent / float(volume), 4) if volume else None)
                if host in done or (volume and sent >= volume):
                    flow["remaining_s"] = 0.0
                elif volume and gbps:
                    since = max(0.0, (elapsed or 0.0) - (sample.get("t") or 0.0))
                    flow["remaining_s"] = round(max(0.0, (volume - sent) * 8 / (gbps * 1e9) - since), 3)
            remaining.append(flow.get("remaining_s"))
            flows.append(flow)
    return {"phase": answer.get("phase", "waiting"), "elapsed_s": elapsed, "flows": flows,
            "hosts_done": len(done), "hosts": len(answer.get("expected") or []),
            "remaining_s": max(remaining) if remaining and None not in remaining else None,
            "errors": answer.get("errors") or []}


def stop(part, state_dir, wait=15.0, kill=os.kill):
    """End the host's part of a step by its PID (it aborts its flows and writes what it has) and return it. Only the
    process the PID file identifies is signalled: a reused PID is not, nor one from a PID file without a start time
    (an older version's), which is reported instead. On the coordinating host, the step's record (or, when the
    coordinator died without one, the record assembled from the results it stored) comes back too, and is removed."""
    result_path, pid_path = step_paths(state_dir, part.run, part.party)
    info = _read(pid_path)
    killed = None
    out = {"host": part.party}
    state = owner(info) if info and info.get("run") == part.run else "gone"
    if state == "unverified":
        out["not_signalled"] = ("process %s still runs, but its PID file (from an older version) has no start time to "
                                "tell it is this step's part: not signalled; end it by hand if it is" % info["pid"])
    elif state == "running":
        pid = info["pid"]
        for sig, grace in ((signal.SIGTERM, wait), (signal.SIGKILL, 2.0)):
            if owner(info) != "running":
                break
            try:
                kill(pid, sig)
            except ProcessLookupError:
                break
            killed = sig.name
            end = time.monotonic() + grace
            while owner(info) == "running" and time.monotonic() < end:
                time.sleep(0.05)
            if owner(info) != "running":
                break
    out.update(part=_read(result_path), signal=killed, was_running=killed is not None)
    if part.coordinates:
        out["step"] = _read(step_record_path(state_dir, part.run)) or assemble(
            part, state_dir, "the coordinator on %s ended without its record (killed, crashed or out of memory)"
            % part.party)
        _forget_step(part, state_dir)
    for path in (result_path, pid_path):
        _unlink(path)
    return out
