# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one atomic file writer (a temporary file in the same directory, then a rename): a crash, a full disk or a
killed process never leaves half a file where a whole one was, on the hosts (results, state, udev rules) and on the
controller (run directories)."""

from __future__ import annotations

import json
import os
import tempfile

__all__ = ["write_text", "write_json"]


def write_text(path, text, mode=0o644):
    """Write ``text`` to ``path`` atomically (its directory is created, the data is on disk before the rename);
    ``mode``: the file's permission bits."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), dir=directory)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def write_json(path, data, indent=1):
    """``data`` as JSON (sorted keys) at ``path``, atomically."""
    return write_text(path, json.dumps(data, indent=indent, sort_keys=True))
