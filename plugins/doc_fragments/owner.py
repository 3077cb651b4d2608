# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    # The owner record of the modules that change a host for an experiment (module_utils/_owner.py, OWNER_OPTIONS).
    DOCUMENTATION = r"""
options:
  owner:
    description:
      - The experiment that holds what this task makes, kept beside it in O(state_dir) so that a later run, or
        M(aifabric.lab.lab_leftovers), can tell a live experiment's from what a killed one left.
      - An owner is live while its lease has not expired and, when its controller runs on the same machine (the netns
        lab, same hostname and boot id), only while that controller process runs.
      - Without it the task behaves as before this option existed; what it makes is recorded without an owner.
    type: dict
    version_added: 0.5.0
    suboptions:
      id:
        description: The experiment's id.
        type: str
        required: true
      controller:
        description: The controller process that runs the experiment.
        type: dict
        required: true
        suboptions:
          host:
            description: Its hostname.
            type: str
            required: true
          pid:
            description: Its PID.
            type: int
            required: true
          start_ticks:
            description: Its start time in clock ticks after boot (field 22 of C(/proc/PID/stat)), which tells it from
              a later process that reuses the PID.
            type: int
          boot_id:
            description: The controller's C(/proc/sys/kernel/random/boot_id).
            type: str
      lease_until:
        description: When the lease ends, in epoch seconds; the owner is not live after it.
        type: float
        required: true
"""
