# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Waiting for a wall-clock instant without spinning.

``sleep_until`` blocks in ``clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME)``: the kernel wakes the thread at the
instant itself (an absolute timer also follows a clock step), and ``tight_timers`` sets the thread's timer slack to
1 ns (the default 50 us is added to every normal task's timer). Nothing polls or spins, so 32 armed flows on 2 cores
leave both cores idle until the instant. Where ``clock_nanosleep`` cannot be called (no libc through ctypes), a
plain ``time.sleep`` loop is used: later by the scheduler's slack, never busy.

``realtime`` puts the calling thread in SCHED_FIFO for the few microseconds between the wake-up and its first send
(no spin: the thread sleeps in the kernel until then), so a flow's first bytes are not queued behind other work that
the same instant woke. It needs root; without it the start is merely a little looser, and the result says so.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import time

__all__ = ["sleep_until", "tight_timers", "realtime", "set_realtime", "set_normal"]

_CLOCK_REALTIME = 0
_TIMER_ABSTIME = 1
_PR_SET_TIMERSLACK = 29
_EINTR = 4


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def _libc():
    try:
        try:
            lib = ctypes.CDLL("libc.so.6", use_errno=True)  # glibc; find_library would run ldconfig every time
        except OSError:
            lib = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        lib.clock_nanosleep.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(_Timespec),
                                        ctypes.POINTER(_Timespec)]
        lib.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
        return lib
    except (OSError, AttributeError):
        return None


_LIBC = _libc()


def tight_timers():
    """Timer slack of 1 ns for the calling thread (Linux); returns whether it was set."""
    if _LIBC is None:
        return False
    return _LIBC.prctl(_PR_SET_TIMERSLACK, 1, 0, 0, 0) == 0


def sleep_until(instant, clock=time.time):
    """Block until the wall clock reads ``instant`` (epoch seconds); return the clock read on waking.

    Returns at once when the instant has passed. Signals do not end the wait early."""
    if _LIBC is not None:
        sec = int(instant)
        spec = _Timespec(sec, int(round((instant - sec) * 1e9)))
        if spec.tv_nsec >= 1_000_000_000:
            spec = _Timespec(sec + 1, spec.tv_nsec - 1_000_000_000)
        while True:
            err = _LIBC.clock_nanosleep(_CLOCK_REALTIME, _TIMER_ABSTIME, ctypes.byref(spec), None)
            if err != _EINTR:
                break
        return clock()
    while True:
        now = clock()
        if now >= instant:
            return now
        time.sleep(instant - now)


def set_realtime():
    """SCHED_FIFO (priority 1) for the calling thread, when the host allows it (root); returns whether it did.

    Only for a thread that then blocks (on the rendezvous, on the fire, on the instant): a blocked real-time thread
    costs its neighbours nothing, and when it wakes it runs at once instead of after whatever else is runnable (on a
    2-core lab host, Ansible's own processes)."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        return True
    except (AttributeError, OSError):
        return False


def set_normal():
    """Back to SCHED_OTHER for the calling thread (the bulk of a flow never runs real-time)."""
    try:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    except (AttributeError, OSError):
        pass


@contextlib.contextmanager
def realtime():
    """SCHED_FIFO for the calling thread inside the block, SCHED_OTHER after it; yields whether it was allowed."""
    try:
        yield set_realtime()
    finally:
        set_normal()
