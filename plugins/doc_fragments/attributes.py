# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    # The attributes every aifabric.lab module declares; each module sets C(support) and C(details).
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in C(check_mode) and return changed status prediction without modifying the host.
  diff_mode:
    description: Returns details on what has changed (or possibly needs changing in C(check_mode)) when in diff mode.
  idempotent:
    description:
      - When run twice in a row with the same arguments, the second run reports no change and changes nothing.
"""

    # For modules that only read (aifabric.lab.attributes.info_module), together with the fragment above.
    INFO_MODULE = r"""
options: {}
attributes:
  check_mode:
    support: full
    details: The module only reads.
  diff_mode:
    support: N/A
    details: The module changes nothing.
  idempotent:
    support: full
    details: The module changes nothing.
"""

    # aifabric.lab.attributes.action_group_flows: the modules of action group C(flows) (meta/runtime.yml).
    ACTION_GROUP_FLOWS = r"""
options: {}
attributes:
  action_group:
    description: >-
      Use C(group/aifabric.lab.flows) in C(module_defaults) to set the options the flow modules share (O(state_dir),
      O(token), O(timeout), O(interval), O(strict_start), O(start_tolerance), O(engine)) once for a play.
    support: full
    membership:
      - aifabric.lab.flows
    version_added: 0.4.0
"""

    # aifabric.lab.attributes.action_group_fabric: the modules of action group C(fabric) (meta/runtime.yml).
    ACTION_GROUP_FABRIC = r"""
options: {}
attributes:
  action_group:
    description: >-
      Use C(group/aifabric.lab.fabric) in C(module_defaults) to give the fabric's description (O(leaves), O(spines),
      O(hosts), O(mtu), O(hash), O(seed), O(link_subnet), O(host_rate), O(uplink_rate)) once for every fabric module
      of a play. Only these: C(state) and C(state_dir) belong to one module alone.
    support: full
    membership:
      - aifabric.lab.fabric
    version_added: 0.4.0
"""
