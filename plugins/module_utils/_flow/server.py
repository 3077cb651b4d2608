# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Background flow servers: started by one task, stopped and collected by another.

``start`` binds the listening socket in the module's own process (so a taken port or a missing address fails the
task at once, with the reason), then hands the bound socket to a daemon (double fork, new session, stdio on
/dev/null) that serves the step and writes its result atomically to ``<state_dir>/server-<address>-<port>.json``.
``stop_and_collect`` sends the run's STOP, waits for that file and returns it; a daemon that overstays is ended by
its PID, only when the PID file's identity (PID, start time, boot: ``_proc.identity``) is still that very process:
a reused PID, or a PID file written before identities were kept, is never signalled (the result says so). The
server's lifetime is its work: no Ansible async watchdog outlives it.
"""

from __future__ import annotations

import json
import os
import signal
import time

from .. import _proc
from .._atomic import write_json as write_json_atomic
from .daemon import spawn
from .state import DEFAULT_STATE_DIR, server_paths
from .tcp import token_bytes


def run_id(token):
    """What a result and a PID file carry to say which run they belong to (never the token itself)."""
    return token_bytes(token).hex()


def paths(state_dir, spec):
    return server_paths(state_dir, spec.address, spec.port)


def alive(pid):
    """Whether process ``pid`` runs (a zombie does not)."""
    return _proc.alive(pid)


def pid_record(pid, run, **fields):
    """What a PID file holds: the process's identity (PID, start time, boot id), the run, when it started."""
    return dict(_proc.identity(pid), run=run, started_at=time.time(), **fields)


def owner(info):
    """Whether the process a PID file names runs, and is that process: ``"running"`` (signal it), ``"gone"``, or
    ``"unverified"`` (a PID file without a start time, from an older version: its PID runs, but may be another
    process now; never signalled)."""
    if not isinstance(info, dict) or not alive(info.get("pid")):
        return "gone"
    if info.get("start_ticks") is None:
        return "unverified"
    return "running" if _proc.same_process(info) else "gone"


def start(engine, spec, state_dir=DEFAULT_STATE_DIR):
    """Start a background server; returns its description. Raises OSError when it cannot listen."""
    os.makedirs(state_dir, mode=0o700, exist_ok=True)
    result_path, pid_path = paths(state_dir, spec)
    for stale in (result_path, pid_path):
        if os.path.exists(stale):
            os.unlink(stale)
    listener = engine.listen(spec)

    def serve():
        try:
            result = engine.serve(spec, listener)
        except Exception as exc:  # noqa: BLE001  the daemon must leave a result whatever happens
            result = {"role": "server", "status": "error", "error": "server crashed: %r" % (exc,), "flows": []}
        result["run"] = run_id(spec.token)
        write_json_atomic(result_path, result)

    def announce(pid):
        write_json_atomic(pid_path, pid_record(pid, run_id(spec.token)))

    try:
        daemon = spawn(serve, announce=announce)
    finally:
        if listener is not None:  # engines without a socket of their own (perftest) return None
            listener.close()
    return {"engine": engine.name, "role": "server", "status": "started", "pid": daemon, "address": spec.address,
            "port": spec.port, "expected_clients": spec.expected_clients, "result_file": result_path}


def stop_and_collect(engine, spec, state_dir=DEFAULT_STATE_DIR, wait=10.0, kill=os.kill):
    """Stop the run's background server at ``spec.address:spec.port`` and return its result."""
    result_path, pid_path = paths(state_dir, spec)
    info = None
    if os.path.exists(pid_path):
        try:
            with open(pid_path) as handle:
                info = json.load(handle)
        except (OSError, ValueError):
            info = {}
        if not isinstance(info, dict):
            info = {}
        if info.get("run") != run_id(spec.token):
            return {"role": "server", "status": "error", "error": "the server at %s:%d belongs to another run "
                    "(different token); not stopped" % (spec.address, spec.port)}
    stop = engine.stop(spec)
    deadline = time.monotonic() + wait
    while not os.path.exists(result_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    killed = None
    unverified = None
    pid = (info or {}).get("pid")
    if pid:
        grace = time.monotonic() + 2.0
        while owner(info) != "gone" and time.monotonic() < grace:
            time.sleep(0.05)
        state = owner(info)
        if state == "unverified":
            unverified = pid
        elif state == "running":
            for sig in (signal.SIGTERM, signal.SIGKILL):
                if owner(info) != "running":
                    break
                try:
                    kill(pid, sig)
                except ProcessLookupError:
                    break
                killed = sig.name
                end = time.monotonic() + 1.0
                while owner(info) == "running" and time.monotonic() < end:
                    time.sleep(0.05)
                if owner(info) != "running":
                    break
    if os.path.exists(result_path):
        with open(result_path) as handle:
            result = json.load(handle)
        if result.get("run") != run_id(spec.token):
            result = {"role": "server", "status": "error",
                      "error": "the result at %s belongs to another run" % result_path}
    elif info is None:
        result = {"role": "server", "status": "error",
                  "error": "no background server of this run at %s:%d (nothing to stop; was it started with "
                           "background=true on this host?)" % (spec.address, spec.port)}
    else:
        result = {"role": "server", "status": "error", "flows": [],
                  "error": "the background server (pid %s) wrote no result within %ss" % (pid, wait)}
    for path in (result_path, pid_path):
        if os.path.exists(path):
            os.unlink(path)
    result["stop_request"] = "answered" if stop.get("stopped") else "nothing listening (the server had ended)"
    if killed:
        result["killed"] = killed
    if unverified:
        result["not_signalled"] = ("process %d still runs, but its PID file (from an older version) has no start "
                                   "time to tell it is the server: not signalled; end it by hand if it is" % unverified)
    return result
