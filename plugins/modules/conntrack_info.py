#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: conntrack_info
short_description: A census of the connections a host tracks - by protocol, state and port, elephants and mice
version_added: 0.4.0
description:
  - Reads the host's (or network namespace's) conntrack table through netlink and counts its entries by protocol, by
    TCP state and by destination port, lists the largest by bytes, and splits them into elephants (O(elephant_bytes)
    or more) and mice, by count and by bytes. The front-end network of the seed counted 91,685 tracked connections;
    a training fabric's step is a handful of elephants.
  - Reads the table in a stream (64 KiB at a time) and keeps only the counters, so a table of hundreds of thousands of
    entries costs a few megabytes. The table's size and limit come from pyroute2's conntrack socket.
  - Says so when conntrack is not loaded, when the table is empty (a network namespace tracks nothing until a rule in
    it uses conntrack, such as an nftables C(ct state) match or NAT), and when bytes are not counted
    (C(net.netfilter.nf_conntrack_acct=0); set it to 1, per namespace, before the connections start).
author:
  - aifabric.lab contributors (@aifabric)
requirements:
  - pyroute2
extends_documentation_fragment:
  - aifabric.lab.attributes
  - aifabric.lab.attributes.info_module
options:
  top:
    description: How many destination ports, and how many entries by bytes, to list.
    type: int
    default: 10
  elephant_bytes:
    description: An entry that has moved this many bytes (both directions) or more is an elephant, like C(10MB).
    type: str
    default: 10MB
seealso:
  - module: aifabric.lab.port_counters_info
"""

EXAMPLES = r"""
- name: Count what a lab host tracks
  aifabric.lab.conntrack_info:
    top: 5
    elephant_bytes: 100MB
  register: census

- name: Say it
  ansible.builtin.debug:
    msg: >-
      {{ census.entries }} connections; mice {{ '%.1f' % (census.mice.count_share * 100) }}% of them,
      elephants {{ '%.1f' % (census.elephants.bytes_share * 100) }}% of the bytes
  when: census.elephants is defined
"""

RETURN = r"""
loaded:
  description: Whether conntrack is loaded on the host.
  returned: always
  type: bool
entries:
  description: The entries read from the table.
  returned: always
  type: int
  sample: 91685
kernel_count:
  description: The table's size as the kernel counts it (it may differ from C(entries) while connections come and go).
  returned: when loaded
  type: int
max_entries:
  description: C(nf_conntrack_max).
  returned: when loaded
  type: int
by_protocol:
  description: Entries per protocol, the most first.
  returned: when loaded
  type: dict
  sample: {tcp: 90000, udp: 1685}
tcp_states:
  description: TCP entries per state.
  returned: when loaded
  type: dict
  sample: {ESTABLISHED: 1200, TIME_WAIT: 88000}
top_ports:
  description: The O(top) destination ports with the most entries (C(tcp/443)).
  returned: when loaded
  type: dict
distinct_ports:
  description: How many protocol/destination-port pairs the table holds.
  returned: when loaded
  type: int
accounting:
  description: Whether the kernel counts bytes and packets per entry (C(nf_conntrack_acct)).
  returned: when loaded
  type: bool
top_by_bytes:
  description: The O(top) entries that moved the most bytes (both directions), with protocol, addresses and port.
  returned: when accounting is on and an entry has counters
  type: list
  elements: dict
elephants:
  description: Entries of O(elephant_bytes) or more - C(count), C(bytes), C(count_share), C(bytes_share).
  returned: when accounting is on and an entry has counters
  type: dict
mice:
  description: The other entries - C(count), C(bytes), C(count_share), C(bytes_share).
  returned: when accounting is on and an entry has counters
  type: dict
msg:
  description: Why the census is incomplete or empty, and the fix.
  returned: when conntrack is not loaded, the table is empty, or bytes are not counted
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aifabric.lab.plugins.module_utils._conntrack_info_module import module_args, run_module


def main():
    run_module(AnsibleModule(**module_args()))


if __name__ == "__main__":
    main()
