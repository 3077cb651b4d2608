# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The seam every flow engine plugs into (``tcp`` today, ``perftest`` next).

An engine gets a :class:`FlowSpec` and returns a plain dict result. Engines never call ``fail_json``: a flow that
did not complete is a *result* with ``status`` other than ``ok`` and an ``error`` sentence, so the barrier analysis
sees every worker, failed ones included.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

__all__ = ["FlowSpec", "FlowEngine", "FlowError", "refuse_if_late", "wait_until"]


class FlowError(Exception):
    """Bad input for an engine; the message names the parameter and the fix."""


@dataclass
class FlowSpec:
    role: str  # server | client
    address: str  # server: bind address; client: server address
    port: int
    token: str
    flow_id: str = ""
    volume: int | None = None  # bytes (client); None with duration
    duration: float | None = None  # seconds (client)
    start_at: float | None = None  # wall-clock epoch seconds (client)
    start_tolerance: float = 0.001
    timeout: float = 120.0
    interval: float = 1.0
    expected_clients: int = 1  # server
    max_bytes: int | None = None  # server: per connection
    source: str | None = None  # client: local bind address
    extra: dict = field(default_factory=dict)


class FlowEngine:
    """Interface of a flow engine. Results are dicts; see the ``flow`` module's RETURN for their keys."""

    name = "abstract"

    def serve(self, spec: FlowSpec) -> dict:
        raise NotImplementedError

    def send(self, spec: FlowSpec) -> dict:
        raise NotImplementedError

    def stop(self, spec: FlowSpec) -> dict:
        raise NotImplementedError


_LATE_FIX = {
    "arrived": "give the play more lead time (start_lead)",
    "woke": "the host stalled while the flow waited",
}


def refuse_if_late(result, spec, now, how="arrived"):
    """Mark ``result`` late and return True when ``now`` (``how``: arrived, or woke after a stall) is past the start
    instant plus its tolerance: a step never mixes a late flow in. Every engine decides lateness here."""
    late = now - spec.start_at
    if late <= spec.start_tolerance:
        return False
    result.update(status="late", late_s=round(late, 6),
                  error="%s %.3f s after the start instant (tolerance %.3f s); refused to start so the step's flows "
                        "stay synchronized: %s" % (how, late, spec.start_tolerance, _LATE_FIX[how]))
    return True


def wait_until(instant: float, clock=time.time, sleep=time.sleep, spin: float = 0.003) -> float:
    """Sleep until ``instant`` (wall clock), spinning the last few ms. Returns the clock at return.

    Sleeping alone overshoots by the scheduler's slack (50 us..several ms); the short spin lands within microseconds.
    """
    while True:
        now = clock()
        remaining = instant - now
        if remaining <= 0:
            return now
        if remaining > spin:
            sleep(remaining - spin)
