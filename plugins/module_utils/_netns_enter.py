# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Enter a named network namespace the way ``ip netns exec`` does, from a forked, single-threaded process.

``enter(name)`` joins ``/run/netns/<name>`` (setns CLONE_NEWNET), takes a private mount namespace whose mounts do not
propagate back (unshare CLONE_NEWNS, / made a recursive slave) and mounts a sysfs that describes the namespace on
/sys, so that /sys/class/net lists the namespace's own interfaces (iproute2's ``netns_switch`` does the same steps).
Python 3.11 has neither ``os.setns`` nor ``os.unshare``; libc is called through ctypes.

The calling process must be single-threaded (unshare(CLONE_NEWNS) refuses a process with threads) and must not be
the module's own process: the caller forks first, so the module stays where Ansible started it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re

__all__ = ["NETNS_RUN_DIR", "NetnsError", "enter", "valid_name"]

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
