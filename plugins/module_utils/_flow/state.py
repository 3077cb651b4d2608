# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one place that names the files a host keeps in its state directory while flows run in the background:

* ``server-<address>-<port>.{json,pid}`` - a background server of the plain ``flow`` module;
* ``step-<run>-<party>.{json,pid}`` - a host's part of a synchronized step (``flow_step``);
* ``step-<run>.rendezvous.json`` - the coordinator's record of a step, until it is collected.

``<run>`` is the first 16 hex digits of the run's id (a hash of its token, never the token itself).
"""

from __future__ import annotations

import os
import re

__all__ = ["DEFAULT_STATE_DIR", "server_paths", "step_paths", "step_record_path", "server_file_address",
           "is_step_file"]

DEFAULT_STATE_DIR = "/run/aifabric-lab"
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def server_paths(state_dir, address, port):
    """A background server's result file and PID file."""
    base = os.path.join(state_dir, "server-%s-%d" % (address.replace(":", "_"), port))
    return base + ".json", base + ".pid"


def server_file_address(name):
    """The address (``:`` written ``_``) in a server file's name, or None when ``name`` is not a server file."""
    parts = name.split("-")
    if name.startswith("server-") and len(parts) >= 3 and name.endswith((".json", ".pid")):
        return "-".join(parts[1:-1])
    return None


def step_paths(state_dir, run, party):
    """A host's result file and PID file for one step."""
    base = os.path.join(state_dir, "step-%s-%s" % (run[:16], _SAFE.sub("_", party)))
    return base + ".json", base + ".pid"


def step_record_path(state_dir, run):
    """The coordinator's record of a step."""
    return os.path.join(state_dir, "step-%s.rendezvous.json" % run[:16])


def is_step_file(name):
    """Whether ``name`` is a step's PID file or a coordinator's record (the files that say which process owns them)."""
    return name.startswith("step-") and name.endswith((".pid", ".rendezvous.json"))
