# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Processes this collection started, recognised as *the same process* later (a PID alone can be reused).

A state file that names a process keeps ``identity(pid)``: the PID, the process's start time in clock ticks since
boot (``/proc/<pid>/stat`` field 22, which never changes for a process and differs for a reused PID) and the boot id
(``/proc/sys/kernel/random/boot_id``: after a reboot no earlier PID is ours). ``same_process(info)`` is true only
while that very process runs; anything that signals a PID from a file asks it first. ``root``: a fixture tree in
unit tests (``root/proc/...``).
"""

from __future__ import annotations

import os

__all__ = ["identity", "same_process", "alive", "start_ticks", "boot_id"]


def _proc(root, *parts):
    return os.path.join(root, "proc", *parts)


def boot_id(root="/"):
    """This boot's id, or None when the kernel does not say."""
    try:
        with open(_proc(root, "sys", "kernel", "random", "boot_id")) as handle:
            return handle.read().strip() or None
    except OSError:
        return None


def _stat_fields(pid, root):
    """The fields of ``/proc/<pid>/stat`` after the command name (which may hold spaces and parentheses)."""
    try:
        with open(_proc(root, str(int(pid)), "stat")) as handle:
            text = handle.read()
    except (OSError, TypeError, ValueError):
        return None
    end = text.rfind(")")
    if end < 0:
        return None
    return text[end + 1:].split()


def start_ticks(pid, root="/"):
    """Process ``pid``'s start time (clock ticks after boot), or None when there is no such process."""
    fields = _stat_fields(pid, root)
    # fields[0] is field 3 (state); field 22 (starttime) is fields[19]
    if not fields or len(fields) < 20:
        return None
    try:
        return int(fields[19])
    except ValueError:
        return None


def alive(pid, root="/"):
    """Whether a process ``pid`` runs (a zombie does not)."""
    if not pid or isinstance(pid, bool):
        return False
    fields = _stat_fields(pid, root)
    return bool(fields) and fields[0] != "Z"


def identity(pid=None, root="/"):
    """What a state file keeps to recognise process ``pid`` (default: the calling process) later."""
    pid = os.getpid() if pid is None else int(pid)
    return {"pid": pid, "start_ticks": start_ticks(pid, root), "boot_id": boot_id(root)}


def same_process(info, root="/"):
    """True only while the process ``info`` (``identity``'s dict, from a state file) runs: same PID, same start time,
    same boot. A record without a start time (written before this check existed) is never trusted as ours."""
    if not isinstance(info, dict):
        return False
    pid = info.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or not alive(pid, root):
        return False
    if info.get("start_ticks") is None or start_ticks(pid, root) != info["start_ticks"]:
        return False
    recorded = info.get("boot_id")
    return recorded is None or recorded == boot_id(root)
