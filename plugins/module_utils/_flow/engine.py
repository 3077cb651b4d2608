# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The seam every flow engine plugs into (``tcp``, ``perftest``): exactly what the servers and clients call.

A client flow is *armed* first (connected, admitted by its server, buffers ready: everything that takes an unknown
time) and *fired* later at a start instant; the synchronized step (``step.py``) arms every flow of a step, waits for
the rendezvous and fires them all at one instant. The plain ``flow`` module arms and fires one flow itself.

Engines never call ``fail_json``: a flow that did not complete is a *result* with ``status`` other than ``ok`` and an
``error`` sentence, so the barrier analysis sees every worker, failed ones included.

Lateness is measured, not refused: ``late_s`` is the start minus the instant, and the completion counts from the
instant, so a late start is inside the figure. Only ``strict_start`` refuses a flow later than ``start_tolerance``.

A client flow with a ``start_offset`` (a step's late joiner) is fired with the step's common instant like every other
flow and starts that long after it, at its own instant (``own_instant``): its ``late_s`` is against its own instant,
its completion counts from the common one (the barrier is the common one), and its result says ``start_offset_s``.
"""

from __future__ import annotations

import abc
import ipaddress
import math
import time
from dataclasses import dataclass
from datetime import datetime

from .perftest_cli import PerftestOptions

__all__ = ["FlowSpec", "FlowEngine", "ClientFlow", "FlowError", "PerftestOptions", "refuse_if_late", "send",
           "check_address", "parse_instant", "check_start_window", "own_instant", "START_AT_PAST_TOLERANCE"]

EPOCH_SECONDS_MAX = 1e11  # the year 5138: a larger epoch number is milliseconds (1.8e12) or microseconds (1.8e15)
START_AT_PAST_TOLERANCE = 1.0  # s a fixed instant may have passed when the flow is armed


class FlowError(Exception):
    """Bad input for an engine; the message names the parameter and the fix."""


_INSTANT_FIX = ("give epoch seconds (e.g. 1795941057.77) or ISO 8601 with a zone (e.g. 2026-11-29T09:00:00.000+00:00)")


def parse_instant(value, name="start_at"):
    """An absolute wall-clock instant: epoch seconds (number or numeric string) or ISO 8601 with a zone. Refused: what
    is not finite (inf, nan) and epoch numbers that are milliseconds or microseconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        instant = float(value)
    else:
        text = str(value).strip()
        try:
            instant = float(text)
        except ValueError:
            try:
                parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
            except ValueError:
                raise FlowError("%s: %r is not an instant; %s" % (name, value, _INSTANT_FIX)) from None
            if parsed.tzinfo is None:
                raise FlowError("%s: %r has no time zone; add one (e.g. +00:00) so every host reads the same instant"
                                % (name, value)) from None
            return parsed.timestamp()
    if not math.isfinite(instant):
        raise FlowError("%s: %r is not an instant (not a finite number); %s" % (name, value, _INSTANT_FIX))
    if abs(instant) >= EPOCH_SECONDS_MAX:
        unit, scale = ("microseconds", 1e6) if abs(instant) >= EPOCH_SECONDS_MAX * 1000 else ("milliseconds", 1e3)
        raise FlowError("%s: %r looks like epoch %s (the instant would be thousands of years away); give epoch "
                        "seconds: %.3f" % (name, value, unit, instant / scale))
    return instant


def check_start_window(instant, name, ahead_limit, limit_name, now=None, value=None):
    """Refuse a fixed start instant that passed more than START_AT_PAST_TOLERANCE s ago, or lies further ahead than
    ``ahead_limit`` seconds (what ``limit_name`` allows): a daemon would otherwise sleep until it is killed."""
    now = time.time() if now is None else now
    shown = instant if value is None else value
    if instant < now - START_AT_PAST_TOLERANCE:
        raise FlowError("%s: %s is %.1f s in the past (more than %.0f s); compute it once per step as now + a lead "
                        "time longer than Ansible takes to reach every host" % (
                            name, shown, now - instant, START_AT_PAST_TOLERANCE))
    if instant - now > ahead_limit:
        raise FlowError("%s: %s is %.1f s ahead, more than %s=%s s allows (every host must arm and start within it); "
                        "give an instant sooner, or raise %s" % (name, shown, instant - now, limit_name, ahead_limit,
                                                                 limit_name))
    return instant


def check_address(value, name, allow_wildcard=False):
    """A literal IP address (never a name); a wildcard only when asked for. FlowError names the parameter."""
    try:
        addr = ipaddress.ip_address(value)
    except ValueError:
        raise FlowError("%s: %r is not an IP address; give the lab address (e.g. 198.18.0.1)" % (name, value)) from None
    if addr.is_unspecified and not allow_wildcard:
        raise FlowError(
            "%s: %s would listen on every interface; a flow server binds to the lab address only" % (name, value)
        )
    return str(addr)


@dataclass
class FlowSpec:
    role: str  # server | client
    address: str  # server: bind address; client: server address
    port: int
    token: str
    flow_id: str = ""
    volume: int | None = None  # bytes (client); None with duration
    duration: float | None = None  # seconds (client)
    start_at: float | None = None  # wall-clock epoch seconds (client, fixed-instant mode)
    start_tolerance: float = 0.001  # strict_start: the most a flow may start late
    strict_start: bool = False  # refuse to start later than start_tolerance (else record late_s and go)
    timeout: float = 120.0
    interval: float = 1.0
    expected_clients: int = 1  # server: connections (a client flow with N streams makes N)
    max_bytes: int | None = None  # server: per connection
    source: str | None = None  # client: local bind address
    streams: int = 1  # client: parallel connections (tcp) for one flow; the volume is split between them
    source_ports: list | None = None  # client (tcp): each stream's source port (None: the kernel picks)
    perftest: object = None  # a PerftestOptions, with the perftest engine
    ecn: str | None = None  # tcp: net.ipv4.tcp_ecn of the host's namespace (tcp_info.ECN_SYSCTL's names); None: as is
    congestion: str | None = None  # tcp: the congestion control of the flow's sockets (TCP_CONGESTION); None: default
    start_offset: float = 0.0  # client in a step: seconds after the step's common instant that this flow starts


class ClientFlow(abc.ABC):
    """One client flow: ``arm`` before the instant, ``fire`` at it. ``result`` holds what is known so far."""

    result: dict

    @abc.abstractmethod
    def arm(self, deadline: float) -> bool:
        """Get ready (connect, be admitted, prepare buffers), retrying until ``deadline`` (``time.monotonic()`` s).
        True when armed; else ``result`` says why."""

    @abc.abstractmethod
    def fire(self, at: float) -> dict:
        """Wait for the flow's own instant (the common instant ``at``, host clock, epoch s, plus the spec's
        ``start_offset``: ``own_instant``) without spinning, send, time it (the completion from ``at``); return the
        result."""

    @abc.abstractmethod
    def abort(self, reason: str) -> None:
        """End an armed or running flow now (another thread calls this); its result says ``reason``."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release sockets, processes and buffers."""

    def progress(self):
        """While the flow runs: its latest interval sample ``{t, bytes, gbps}`` (``t`` from its first byte) and its
        ``volume``; None when the engine takes no samples while it runs (perftest reports at its end)."""
        return None


class FlowEngine(abc.ABC):
    """A flow engine: servers that receive a step's flows, clients that arm and fire."""

    name = "abstract"

    @abc.abstractmethod
    def listen(self, spec: FlowSpec):
        """Checks and binds what a server needs before it runs (raises OSError with the reason). Returns the bound
        listener, or None for engines whose tool listens by itself."""

    @abc.abstractmethod
    def serve(self, spec: FlowSpec, listener=None, stop=None) -> dict:
        """Receive the flows of one step until ``spec.expected_clients`` are done, ``stop`` (a threading.Event) is
        set, or ``spec.timeout`` passes."""

    @abc.abstractmethod
    def ready(self, spec: FlowSpec, listener=None) -> bool:
        """Whether a started server accepts its clients now (perftest: its processes are listening)."""

    @abc.abstractmethod
    def client(self, spec: FlowSpec) -> ClientFlow:
        """A client flow to arm and fire."""

    @abc.abstractmethod
    def stop(self, spec: FlowSpec) -> dict:
        """Ask a running server of this run (same token) at ``spec.address:spec.port`` to end now."""

    def send(self, spec: FlowSpec) -> dict:
        """One client flow in fixed-instant mode (the plain ``flow`` module): arm, then fire at ``spec.start_at``."""
        return send(self, spec)


def own_instant(result, spec, at):
    """The instant a client flow of ``spec`` starts at when its step's common instant is ``at``: ``at`` plus the
    flow's ``start_offset``, which ``result`` then says (``start_offset_s``; a flow without one: ``at``, and nothing
    said). The flow's ``start_at`` and ``late_s`` are against this instant, its completion counts from ``at``."""
    offset = spec.start_offset or 0.0
    if offset:
        result["start_offset_s"] = offset
    return at + offset


def refuse_if_late(result, spec, start, at):
    """With ``spec.strict_start``, mark ``result`` late and return True when ``start`` is more than
    ``start_tolerance`` after the instant ``at``. Without it a flow is never refused: ``late_s`` records it."""
    late = start - at
    if not spec.strict_start or late <= spec.start_tolerance:
        return False
    result.update(status="late", late_s=round(late, 6),
                  error="started %.6f s after the start instant, more than start_tolerance=%.6f s with strict_start; "
                        "refused so the step's flows stay synchronized" % (late, spec.start_tolerance))
    return True


def send(engine: FlowEngine, spec: FlowSpec) -> dict:
    """One flow in fixed-instant mode: arm until ``spec.start_at`` (or 1 s more when it has passed), fire at it."""
    flow = engine.client(spec)
    try:
        lead = spec.start_at - time.time()
        if not flow.arm(time.monotonic() + (lead if lead > 0 else 1.0)):
            return flow.result
        flow.result["armed_at"] = time.time()
        return flow.fire(spec.start_at)
    finally:
        flow.close()


def engine_class(name):
    """The engine class called ``name`` (tcp or perftest; verbs, which runs job programs only, has the tcp engine's
    rendezvous). Imported on demand: a module's zip has no bytecode, so every task compiles what it imports, and a
    32-host step should not compile perftest's engine 33 times for TCP."""
    if name == "perftest":
        from .perftest import PerftestEngine

        return PerftestEngine
    if name in ("tcp", "verbs"):
        from .tcp import TcpEngine

        return TcpEngine
    raise FlowError("engine: %r is not an engine; use tcp, perftest or verbs" % (name,))
