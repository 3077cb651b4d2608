# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one place that names the files a host keeps in its state directory while flows run in the background:

* ``server-<address>-<port>.{json,pid}`` - a background server of the plain ``flow`` module;
* ``step-<run>-<party>.{json,pid}`` - a host's part of a synchronized step (``flow_step``);
* ``step-<run>.rendezvous.json`` - the coordinator's record of a step, until it is collected;
* ``step-<run>.results/`` - on the coordinating host, each host's result as the coordinator received it
  (``host-<party>.json``, written to disk before the host is acknowledged) and the step's header (``step.json``):
  what ``collect`` and ``stop`` assemble a record from when the coordinator died before it wrote one.

``<run>`` is the first 16 hex digits of the run's id (a hash of its token, never the token itself). A name that
reaches a path (a party, a flow id) is checked by ``check_name`` first: no ``/``, no ``..``, no NUL or other control
character, at most ``NAME_MAX`` characters.
"""

from __future__ import annotations

import os
import re

__all__ = ["DEFAULT_STATE_DIR", "NAME_MAX", "UnsafeName", "check_name", "server_paths", "step_paths",
           "step_record_path", "step_results_dir", "step_stored_result_path", "step_header_path",
           "server_file_address", "is_step_file"]

DEFAULT_STATE_DIR = "/run/aifabric-lab"
NAME_MAX = 128
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class UnsafeName(ValueError):
    """A name that cannot be part of a file name; the message names the parameter and the fix."""


def name_problem(value):
    """Why ``value`` cannot be part of a file name, or None when it can."""
    if not isinstance(value, str) or not value:
        return "it is empty"
    if len(value) > NAME_MAX:
        return "it is %d characters long (at most %d)" % (len(value), NAME_MAX)
    if "/" in value:
        return "it contains '/'"
    if ".." in value:
        return "it contains '..'"
    if _CONTROL.search(value):
        return "it contains a control character (NUL, newline, ...)"
    return None


def check_name(value, where):
    """``value`` when it can be part of a file name; else UnsafeName naming ``where`` and the fix."""
    problem = name_problem(value)
    if problem:
        raise UnsafeName("%s: %r cannot name a file on the host: %s; use letters, digits, '.', '_' and '-' (at most "
                         "%d characters)" % (where, value, problem, NAME_MAX))
    return value


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
    check_name(party, "party")
    base = os.path.join(state_dir, "step-%s-%s" % (run[:16], _SAFE.sub("_", party)))
    return base + ".json", base + ".pid"


def step_record_path(state_dir, run):
    """The coordinator's record of a step."""
    return os.path.join(state_dir, "step-%s.rendezvous.json" % run[:16])


def step_results_dir(state_dir, run):
    """On the coordinating host: where the coordinator keeps every host's result before it acknowledges it."""
    return os.path.join(state_dir, "step-%s.results" % run[:16])


def step_stored_result_path(results_dir, party):
    """One host's stored result in a step's results directory."""
    check_name(party, "party")
    return os.path.join(results_dir, "host-%s.json" % _SAFE.sub("_", party))


def step_header_path(results_dir):
    """The step's header in its results directory (the expected hosts, the fire)."""
    return os.path.join(results_dir, "step.json")


def is_step_file(name):
    """Whether ``name`` is a step's PID file or a coordinator's record (the files that say which process owns them)."""
    return name.startswith("step-") and name.endswith((".pid", ".rendezvous.json"))
