# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Forked processes of a module: a daemon detached from it (a background server, a host's step part). A child that
reports one JSON result back (a host's part started inside its network namespace) is
``_netns_enter.fork_in_namespace``'s, the one place that fork is written.

``spawn`` double-forks: the daemon has its own session, / as its directory and stdio on /dev/null, so neither the
module's exit nor Ansible's connection ends it. The module's process waits only until the daemon has said its PID.
"""

from __future__ import annotations

import os

__all__ = ["spawn"]


def _fork_with_pipe(close=()):
    """Fork with a pipe from the child to the parent. In the child: (0, None, write_fd), ``close`` closed; in the
    parent: (child's PID, read_fd, None)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover  (runs in the forked processes; covered by the real-socket tests)
        os.close(read_fd)
        for fd in close:
            try:
                os.close(fd)
            except OSError:
                pass
        return 0, None, write_fd
    os.close(write_fd)
    return pid, read_fd, None


def spawn(body, announce=None, close=()):
    """Run ``body()`` in a daemon and return the daemon's PID.

    ``announce(pid)`` runs in the daemon before the PID is handed back (write the PID file there, so that it exists
    when ``spawn`` returns and the daemon can remove it when it ends). ``close``: file descriptors of the caller the
    daemon must not keep open (a pipe its parent reads to its end). ``body`` must leave its own result: whatever it
    raises ends the daemon."""
    child, read_fd, write_fd = _fork_with_pipe(close)
    if child == 0:  # pragma: no cover  (runs in the forked processes; covered by the real-socket tests)
        try:
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
    os.waitpid(child, 0)
    said = os.read(read_fd, 32)
    os.close(read_fd)
    if not said:
        raise OSError("the background process ended before it said its PID (could it write its PID file?)")
    return int(said)
