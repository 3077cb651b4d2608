#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: throttle
short_description: Slow one host's flows with the mechanism that affects them, and say which one it used
version_added: 0.2.0
description:
  - The seed's experiment throttles one worker's path. Which knob does that depends on the traffic. tc shapes the
    kernel stack, so it slows TCP flows and soft-RoCE (rxe) but never the verbs traffic of a hardware RDMA NIC. A VF's
    C(max_tx_rate) is enforced by the NIC and slows verbs traffic. perftest's software rate limiter paces any perftest
    flow.
  - "With O(mechanism=auto) the module chooses: V(tc) for the tcp engine and for soft-RoCE; V(vf_rate) when the RDMA
    device is an SR-IOV VF (the rate is set on the VF through its PF, with netlink); V(perftest_sw) for a hardware
    PF (nothing on the host changes; RV(flow_args) carries C(rate_limit) for M(aifabric.lab.flow))."
  - RV(mechanism) and RV(description) say what was used, so the barrier report can name the straggler's cause.
  - Choosing V(tc) for a hardware RDMA device gives a warning that it will not slow the verbs traffic.
  - "With V(tc), the shaper is M(aifabric.lab.tc_shape)'s, with its guarantees: changed in place where it can be, never
    left half made, its record (with O(owner)) in O(state_dir); a shaper another live owner holds is never changed
    (O(state=present) fails naming the owner) nor removed (O(state=absent) warns and leaves it)."
author:
  - aifabric.lab contributors (@aifabric)
requirements:
  - pyroute2
extends_documentation_fragment:
  - aifabric.lab.attributes
  - aifabric.lab.owner
attributes:
  check_mode:
    support: full
  diff_mode:
    support: partial
    details: Through the tc shaper's diff for V(tc).
  idempotent:
    support: full
options:
  rate:
    description: The rate to hold the host's flows to (V(2gbit), V(100mbit)). Required with O(state=present).
    type: str
  engine:
    description: The flow engine the step uses.
    type: str
    choices: [tcp, perftest]
    default: tcp
  rdma_device:
    description: The RDMA device of the host's perftest flows. Required with O(engine=perftest).
    type: str
  interface:
    description: The netdev whose egress tc shapes.
    type: str
    default: eth0
  peers:
    description:
      - With V(tc), the addresses the host sends to. The throttle's rate is then shared fairly between them (one htb
        class per destination), as a NIC's arbiter shares a rate-limited VF between its queue pairs; without it the
        host's flows share one queue, where TCP splits the rate unevenly.
    type: list
    elements: str
    default: []
    version_added: 0.3.0
  mechanism:
    description: V(auto) chooses; V(tc), V(vf_rate) and V(perftest_sw) force one (refused where it cannot work).
    type: str
    choices: [auto, tc, vf_rate, perftest_sw]
    default: auto
  state_dir:
    description: With V(tc), where the shaper's record (its marker and O(owner)) is kept; see M(aifabric.lab.tc_shape).
    type: path
    default: /run/aifabric-lab
    version_added: 0.5.0
  state:
    description: V(present) throttles; V(absent) removes the throttle of the mechanism chosen.
    type: str
    choices: [present, absent]
    default: present
seealso:
  - module: aifabric.lab.tc_shape
  - module: aifabric.lab.sriov
  - module: aifabric.lab.flow
"""

EXAMPLES = r"""
- name: Throttle worker3's path, whatever its traffic is
  aifabric.lab.throttle:
    rate: 2gbit
    engine: perftest
    rdma_device: mlx5_2
  register: worker3_throttle

- name: Its flow, with perftest's rate limit when that is the mechanism
  aifabric.lab.flow:
    role: client
    engine: perftest
    device: mlx5_2
    address: 198.18.0.1
    token: "{{ token }}"
    volume: 2GB
    start_at: "{{ start_at }}"
    rate_limit: "{{ worker3_throttle.flow_args.rate_limit | default(omit) }}"
"""

RETURN = r"""
mechanism:
  description: V(tc), V(vf_rate) or V(perftest_sw).
  returned: always
  type: str
reason:
  description: Why this mechanism.
  returned: always
  type: str
description:
  description: What throttles the host, for reports.
  returned: always
  type: str
  sample: max_tx_rate 2000 Mb/s on VF 2 of ens1f0np0
flow_args:
  description: Options to pass to M(aifabric.lab.flow) (C(rate_limit) for V(perftest_sw)); empty otherwise.
  returned: always
  type: dict
shaper:
  description: For V(tc), the tc shaper's result (see M(aifabric.lab.tc_shape)).
  returned: when mechanism is tc
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aifabric.lab.plugins.module_utils._throttle_module import module_args, run_module


def main():
    run_module(AnsibleModule(**module_args()))


if __name__ == "__main__":
    main()
