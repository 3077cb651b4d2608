#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: history
short_description: Write the run history - record a run directory, index the new ones, or build it again
version_added: 0.5.0
description:
  - The run history (docs/history.md) is one SQLite file indexing every run directory with its lab configuration and
    results. The barrier_report callback records each run as it ends; this action writes it otherwise - a run
    directory made before (O(record)), every run directory the history does not hold yet (O(sync)), or the whole
    history again from the run directories (O(rebuild)).
  - Runs on the controller (an action plugin). The history filters (P(aifabric.lab.history_runs#filter),
    P(aifabric.lab.history_compare#filter), ...) only read; use this first so that they find what they read.
  - Recording a run directory the history already holds as it is changes nothing.
author:
  - aifabric.lab contributors (@aifabric)
extends_documentation_fragment:
  - aifabric.lab.attributes
attributes:
  action:
    description: Runs on the controller, as an action plugin.
    support: full
    details: Nothing runs on a managed host.
  check_mode:
    support: full
    details: Says what it would write (RV(recorded)) and writes nothing.
  diff_mode:
    support: none
  idempotent:
    support: full
    details: O(record) and O(sync) change nothing when the history holds the runs as they are; O(rebuild) always
      rewrites the history (changed).
options:
  record:
    description: A run directory (C(runs/<stamp>-<playbook>)) to record; recording it again replaces its rows.
    type: path
  sync:
    description: Index every run directory under O(runs_dir) the history does not hold yet (all of them when there
      is no history yet).
    type: bool
    default: false
  rebuild:
    description: Build the history again from every run directory under O(runs_dir).
    type: bool
    default: false
  runs_dir:
    description:
      - The directory that holds the run directories.
      - Default the barrier_report callback's C(runs_dir) (C(AIFABRIC_RUNS_DIR), else C(ansible.cfg)'s
        C([aifabric_barrier_report] runs_dir)), else C(runs).
    type: path
  db:
    description:
      - The history file.
      - Default the callback's C(history_db) (C(AIFABRIC_HISTORY_DB), else C(ansible.cfg)), else C(history.sqlite)
        under O(runs_dir).
    type: path
notes:
  - Give one of O(record), O(sync) and O(rebuild).
seealso:
  - plugin: aifabric.lab.history_runs
    plugin_type: filter
  - plugin: aifabric.lab.history_compare
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Index the run directories the history does not hold yet
  aifabric.lab.history:
    sync: true
    runs_dir: runs

- name: Record one run directory
  aifabric.lab.history:
    record: runs/20261130T185009-demo

- name: Build the history again from every run directory
  aifabric.lab.history:
    rebuild: true
"""

RETURN = r"""
db:
  description: The history file.
  returned: always
  type: str
runs_dir:
  description: The directory of the run directories.
  returned: always
  type: str
recorded:
  description: The run directories written (in check mode, those that would be).
  returned: always
  type: list
  elements: str
unreadable:
  description: Run directories that could not be analysed (left out), C({path, error}) each.
  returned: always
  type: list
  elements: dict
msg:
  description: What was done, in one sentence.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aifabric.lab.plugins.module_utils._history_module import module_args, run_module


def main():
    run_module(AnsibleModule(**module_args()))


if __name__ == "__main__":
    main()
