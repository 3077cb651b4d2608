#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: conntrack_track
short_description: Make a host (or network namespace) track its connections, with byte accounting
version_added: 0.4.0
description:
  - A network namespace tracks nothing until something in it uses conntrack. This module adds an nftables table
    (C(aifabric_census), family ip) with two chains, at prerouting and output, each with one rule that loads the
    connection's state (C(ct state)) - it matches nothing and drops nothing, but makes the kernel track every packet -
    and turns on C(net.netfilter.nf_conntrack_acct), so that each entry counts its bytes and packets.
  - Through pyroute2's nftables socket, no C(nft) binary needed. V(absent) removes the table (accounting is left on).
  - For the census (M(aifabric.lab.conntrack_info)) of a lab host with mice beside the elephants.
author:
  - aifabric.lab contributors (@aifabric)
requirements:
  - pyroute2
extends_documentation_fragment:
  - aifabric.lab.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: The diff shows whether the table is there and whether bytes are counted, before and after.
  idempotent:
    support: full
options:
  accounting:
    description: Turn on C(net.netfilter.nf_conntrack_acct) (it counts only connections made afterwards).
    type: bool
    default: true
  state:
    description: V(present) makes the host track its connections; V(absent) removes the table.
    type: str
    default: present
    choices: [present, absent]
seealso:
  - module: aifabric.lab.conntrack_info
"""

EXAMPLES = r"""
- name: Track the sink's connections and count their bytes
  aifabric.lab.conntrack_track:
  delegate_to: sink
"""

RETURN = r"""
table:
  description: The nftables table the module manages.
  returned: always
  type: str
  sample: aifabric_census
tracking:
  description: Whether the host tracks its connections (the table is there) after the task.
  returned: always
  type: bool
accounting:
  description: Whether the kernel counts each entry's bytes after the task.
  returned: always
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aifabric.lab.plugins.module_utils._conntrack_track_module import module_args, run_module


def main():
    run_module(AnsibleModule(**module_args()))


if __name__ == "__main__":
    main()
