#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: mice
short_description: Many short TCP connections with heavy-tailed sizes - the mice beside the elephants
version_added: 0.4.0
description:
  - V(client) opens O(rate) connections a second for O(duration) seconds to O(address):O(port) (an open loop, on
    schedule), each sending a size drawn from a bounded Pareto distribution (O(alpha) between O(size_min) and
    O(size_max), seeded by O(seed)) and closing. V(server) reads every connection to its end for O(duration) seconds
    (and a few more for the last ones).
  - Each connection is one conntrack entry, so M(aifabric.lab.conntrack_info) sees the mice beside the elephants.
  - Runs in the foreground for O(duration) seconds; beside a step, start it with C(async) and C(poll=0) and collect it
    with C(ansible.builtin.async_status) (C(playbooks/census.yml)).
author:
  - aifabric.lab contributors (@aifabric)
extends_documentation_fragment:
  - aifabric.lab.attributes
attributes:
  check_mode:
    support: none
  diff_mode:
    support: none
  idempotent:
    support: none
    details: It sends traffic.
options:
  role:
    description: Send the mice (V(client)) or receive them (V(server)).
    type: str
    required: true
    choices: [client, server]
  address:
    description: The server's address (the client connects to it; the server listens on it).
    type: str
    required: true
  port:
    description: The server's port.
    type: int
    default: 18700
  duration:
    description: Seconds to send (client) or receive (server).
    type: float
    default: 10
  rate:
    description: With V(client), connections a second.
    type: float
    default: 200
  size_min:
    description: With V(client), the smallest mouse, like C(1KB).
    type: str
    default: 1KB
  size_max:
    description: With V(client), the largest mouse, like C(1MB).
    type: str
    default: 1MB
  alpha:
    description: With V(client), the Pareto shape (1.2 - a heavy tail - most mice small, a few large).
    type: float
    default: 1.2
  seed:
    description: With V(client), the seed of the sizes (the same seed, the same mice).
    type: int
    default: 0
  workers:
    description: With V(client), threads that keep the schedule while a large mouse takes its time.
    type: int
    default: 8
  source:
    description: With V(client), the local address to send from.
    type: str
"""

EXAMPLES = r"""
- name: Receive mice on the sink for 12 seconds, in the background
  aifabric.lab.mice:
    role: server
    address: 198.18.0.1
    duration: 12
  async: 60
  poll: 0
  register: mice_server
"""

RETURN = r"""
connections:
  description: With V(server), the connections read to their end.
  returned: role is server
  type: int
sent:
  description: With V(client), the connections made and closed.
  returned: role is client
  type: int
failed:
  description: With V(client), the connections that failed (and C(errors), by exception).
  returned: role is client
  type: int
bytes:
  description: The bytes sent (client) or received (server).
  returned: always
  type: int
size_p50:
  description: With V(client), the median size.
  returned: role is client
  type: float
time_p99_ms:
  description: With V(client), the 99th percentile of a connection's time (connect to close).
  returned: role is client
  type: float
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aifabric.lab.plugins.module_utils._mice_module import module_args, run_module


def main():
    run_module(AnsibleModule(**module_args()))


if __name__ == "__main__":
    main()
