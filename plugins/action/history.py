# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The history module's action, on the controller: record a run directory in the run history, index the run
directories it does not hold yet, or build it again (``plugin_utils/_history/task.py``); check mode writes nothing
and says what it would write."""

from __future__ import annotations

import sqlite3

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.aifabric.lab.plugins.module_utils._history_module import module_args
from ansible_collections.aifabric.lab.plugins.plugin_utils._history.settings import history_paths
from ansible_collections.aifabric.lab.plugins.plugin_utils._history.store import HistoryError
from ansible_collections.aifabric.lab.plugins.plugin_utils._history.task import run_task

display = Display()


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        spec = module_args()
        _validation, args = self.validate_argument_spec(argument_spec=spec["argument_spec"],
                                                        mutually_exclusive=spec["mutually_exclusive"])
        if not (args["record"] or args["sync"] or args["rebuild"]):
            raise AnsibleActionFail("history: give record (a run directory), sync: true or rebuild: true")
        args["runs_dir"], args["db"] = history_paths(args["runs_dir"], args["db"], variables=task_vars)
        try:
            result.update(run_task(args, check_mode=self._task.check_mode,
                                   notify=lambda m: display.warning("history: %s" % m)))
        except (HistoryError, OSError, sqlite3.Error) as exc:
            raise AnsibleActionFail("history: %s" % exc) from None
        return result
