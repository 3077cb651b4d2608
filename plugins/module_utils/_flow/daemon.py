# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run work in the background, detached from the module that started it (a background server, a host's step part).

``spawn`` double-forks: the daemon has its own session, / as its directory and stdio on /dev/null, so neither the
module's exit nor Ansible's connection ends it. The module's process waits only until the daemon has said its PID.
"""

from __future__ import annotations

import os

__all__ = ["spawn"]


def spawn(body, announce=None, close=()):
    """Run ``body()`` in a daemon and return the daemon's PID.

    ``announce(pid)`` runs in the daemon before the PID is handed back (write the PID file there, so that it exists
    when ``spawn`` returns and the daemon can remove it when it ends). ``close``: file descriptors of the caller the
    daemon must not keep open (a pipe its parent reads to its end). ``body`` must leave its own result: whatever it
    raises ends the daemon."""
    read_fd, write_fd = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover  (runs in the forked processes; covered by the real-socket tests)
        try:
            os.close(read_fd)
            for fd in close:
                try:
                    os.close(fd)
                except OSError:
                    pass
            os.setsid()
            if os.fork():
                os._exit(0)
            os.chdir("/")
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            if announce is not None:
                announce(os.getpid())
            os.write(write_fd, str(os.getpid()).encode())
            os.close(write_fd)
            body()
        finally:
            os._exit(0)
    os.close(write_fd)
    os.waitpid(child, 0)
    pid = int(os.read(read_fd, 32) or b"0")
    os.close(read_fd)
    return pid
