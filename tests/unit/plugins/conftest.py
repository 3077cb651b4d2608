# -*- coding: utf-8 -*-
"""Fixtures shared by the plugins' unit tests of more than one folder (filter/ and plugin_utils/_history/)."""
from __future__ import annotations

import hashlib
import os

import pytest


def _file_states(directory):
    """Every file under ``directory`` (its path relative to it): its bytes' digest and its modification time (ns)."""
    out = {}
    for dirpath, _dirs, files in os.walk(str(directory)):
        for name in files:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as handle:
                out[os.path.relpath(path, str(directory))] = (hashlib.sha256(handle.read()).hexdigest(),
                                                              os.stat(path).st_mtime_ns)
    return out


@pytest.fixture
def file_states():
    """``file_states(directory)``: {path under it: (sha256 of its bytes, st_mtime_ns)}; two calls compare equal when
    nothing under ``directory`` was written, added or removed."""
    return _file_states
