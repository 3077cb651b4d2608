# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    # The flow modules' state directory on a host (module_utils/_flow/state.py, DEFAULT_STATE_DIR), documented once
    # for the modules that keep their files there or read it whole: flow, flow_step, lab_leftovers, preflight_info.
    # Modules that keep one kind of record there (tc_shape, throttle, netns_topology, fabric_topology) say which.
    DOCUMENTATION = r"""
options:
  state_dir:
    description:
      - The state directory of the flow modules on the host, one per host (the netns lab's hosts share the machine's).
        The default is on C(/run), a tmpfs that a reboot empties.
      - It holds the PID and result files of the flows' servers and of each host's part of a step, the records of
        shapers (C(shapers/NETNS/DEVICE.json)) and of network-namespace labs (C(labs/SWITCH.json)), and what earlier
        runs left there, which M(aifabric.lab.lab_leftovers) removes and M(aifabric.lab.preflight_info) lists.
    type: path
    default: /run/aifabric-lab
"""
