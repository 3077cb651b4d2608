# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Enter a named network namespace the way ``ip netns exec`` does, from a forked, single-threaded process.

``enter(name)`` joins ``/run/netns/<name>`` (setns CLONE_NEWNET), takes a private mount namespace whose mounts do not
propagate back (unshare CLONE_NEWNS, / made a recursive slave) and mounts a sysfs that describes the namespace on
/sys, so that /sys/class/net lists the namespace's own interfaces (iproute2's ``netns_switch`` does the same steps).
Python 3.11 has neither ``os.setns`` nor ``os.unshare``; libc is called through ctypes.

The calling process must be single-threaded (unshare(CLONE_NEWNS) refuses a process with threads) and must not be
the module's own process: the caller forks first, so the module stays where Ansible started it. ``fork_in_namespace``
is that fork, the one place it is written: a child enters the namespace, runs the work, writes what it returns as JSON
to a pipe (or the error it raised) and exits; ``gather`` reads it. ``run_in_namespace`` is both, for a function whose
value is wanted at once (a namespace's sysctls).
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import re

__all__ = ["NETNS_RUN_DIR", "NetnsError", "enter", "fork_in_namespace", "gather", "run_in_namespace", "valid_name"]

NETNS_RUN_DIR = "/run/netns"
_CLONE_NEWNS = 0x00020000
_CLONE_NEWNET = 0x40000000
_MS_RDONLY = 1
_MS_REC = 0x4000
_MS_SLAVE = 1 << 19
_MNT_DETACH = 2
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class NetnsError(OSError):
    pass


def namespace_name(prefix, name):
    """The namespace a host is: ``ansible_netns_prefix`` + its ``ansible_netns_name`` (else its address or inventory
    name, which the caller gives as ``name``). The netns connection enters it; the experiment's plan records it."""
    return "%s%s" % (prefix or "", name)


def valid_name(name):
    return isinstance(name, str) and bool(_NAME.match(name)) and name not in (".", "..")


def _call(libc, what, *args):
    if getattr(libc, what)(*args) != 0:
        err = ctypes.get_errno()
        raise NetnsError(err, "%s: %s" % (what, os.strerror(err)))


def enter(name, run_dir=NETNS_RUN_DIR):
    """Move the calling (forked, single-threaded) process into network namespace ``name``, with its own /sys."""
    if not valid_name(name):
        raise NetnsError(22, "%r is not a network namespace name (letters, digits, '.', '_', '-')" % (name,))
    path = os.path.join(run_dir, name)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        what = "does not exist" if exc.errno == errno.ENOENT else "cannot be opened"
        raise NetnsError(exc.errno, "network namespace %s %s (%s: %s)" % (name, what, path, exc.strerror)) from None
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    try:
        _call(libc, "setns", fd, _CLONE_NEWNET)
    finally:
        os.close(fd)
    _call(libc, "unshare", _CLONE_NEWNS)
    _call(libc, "mount", b"", b"/", b"none", _MS_SLAVE | _MS_REC, None)
    flags = 0
    if libc.umount2(b"/sys", _MNT_DETACH) != 0:
        # no sysfs was mounted there (a container): mount the namespace's own, read-only if / is
        try:
            if os.statvfs("/sys").f_flag & os.ST_RDONLY:
                flags = _MS_RDONLY
        except OSError:
            pass
    _call(libc, "mount", name.encode(), b"/sys", b"sysfs", flags, None)


def fork_in_namespace(name, work, close=()):
    """Run ``work(write_fd)`` in a forked child inside network namespace ``name`` (None: this one). The child writes
    the JSON of what ``work`` returns to a pipe - or, when entering or the work raised, ``{"status": "failed", "error":
    ...}`` - and exits. ``write_fd`` is given to ``work`` so that a daemon it starts can close it (else the pipe would
    stay open as long as the daemon runs); ``close``: descriptors the child closes first (other children's pipes).
    Returns (pid, read_fd) for ``gather``."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover  (runs in the forked process; the namespace tests run it as root)
        try:
            os.close(read_fd)
            for fd in close:
                try:
                    os.close(fd)
                except OSError:
                    pass
            try:
                if name is not None:
                    enter(name)
                out = work(write_fd)
            except Exception as exc:  # noqa: BLE001  every failure is reported, none is raised past the fork
                out = {"status": "failed", "error": str(exc) if isinstance(exc, OSError)
                       else "%s: %s" % (type(exc).__name__, exc)}
            data = json.dumps(out).encode()
            while data:
                data = data[os.write(write_fd, data):]
        finally:
            os._exit(0)
    os.close(write_fd)
    return pid, read_fd


def gather(pid, read_fd):
    """What a ``fork_in_namespace`` child returned (its whole output, then its exit)."""
    chunks = []
    while True:
        chunk = os.read(read_fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read_fd)
    os.waitpid(pid, 0)
    try:
        return json.loads(b"".join(chunks))
    except ValueError:
        return {"status": "failed", "error": "the forked process ended without a result"}


def run_in_namespace(name, fn, *args):
    """``fn(*args)`` run inside network namespace ``name`` (a forked child); its value (JSON). Raises NetnsError
    with the child's error."""
    out = gather(*fork_in_namespace(name, lambda _write_fd: {"value": fn(*args)}))
    if "value" not in out:
        raise NetnsError(errno.EIO, "in namespace %s: %s" % (name, out.get("error") or "no result"))
    return out["value"]
