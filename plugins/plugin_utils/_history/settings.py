# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the run history is, as the barrier_report callback reads it: its ``runs_dir`` and ``history_db`` options
(their environment variable, else ansible.cfg's ``[aifabric_barrier_report]``, else the default), through Ansible's
configuration manager (its public ``get_config_value``), so the action, the filters and the callback agree."""

from __future__ import annotations

import os

from ansible import constants as C
from ansible.errors import AnsibleError
from ansible.plugins.loader import callback_loader

__all__ = ["CALLBACK", "callback_setting", "history_paths"]

CALLBACK = "aifabric.lab.barrier_report"
_ENV = {"runs_dir": "AIFABRIC_RUNS_DIR", "history_db": "AIFABRIC_HISTORY_DB"}


def callback_setting(key, variables=None):
    """The callback's option ``key`` (``runs_dir`` or ``history_db``) as the callback would get it; None when it is
    empty. A relative path in ansible.cfg is the ansible.cfg's directory's, in the environment the working
    directory's."""
    try:
        callback_loader.get(CALLBACK, class_only=True)  # its options' definitions, when nothing loaded it yet
        value = C.config.get_config_value(key, plugin_type="callback", plugin_name=CALLBACK, variables=variables)
    except AnsibleError:
        value = os.environ.get(_ENV[key]) or ("runs" if key == "runs_dir" else None)
    return str(value) if value else None


def history_paths(runs_dir=None, db=None, variables=None):
    """``(runs_dir, db)``, absolute: those given, else the callback's settings (``db``: ``history.sqlite`` under
    ``runs_dir`` when the callback names none)."""
    runs_dir = os.path.abspath(os.path.expanduser(str(runs_dir or callback_setting("runs_dir", variables) or "runs")))
    db = db or callback_setting("history_db", variables)
    db = os.path.abspath(os.path.expanduser(str(db))) if db else os.path.join(runs_dir, "history.sqlite")
    return runs_dir, db
