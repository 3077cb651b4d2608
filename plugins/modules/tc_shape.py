#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: tc_shape
short_description: Shape a device's egress or ingress to a rate (htb or tbf), through netlink
version_added: 0.1.0
description:
  - Puts a rate shaper on a network device, or removes it. Egress shaping sits on the device itself; ingress shaping
    redirects the device's incoming traffic to an ifb device and shapes that device's egress.
  - V(htb) carries 64-bit rates (1kbit to 400gbit). With O(fair_share_sources), each source gets its own class with an
    equal guaranteed share that may borrow up to O(rate), which gives max-min fair arbitration between sources.
    This is how the embedded lab models a fabric port shared by several workers.
  - V(tbf) is a single token bucket; its netlink message holds a 32-bit byte rate, so it stops at 34.3gbit.
  - Talks netlink through pyroute2 only; it never runs or parses C(tc).
  - Returns the shaper's counters (bytes, packets, drops, overlimits) after the change, for before/after snapshots.
  - "Changes replace, they do not delete then add: a new rate on the same layout changes the classes in place (tbf:
    the qdisc, htb: each class, by C(NLM_F_REPLACE)); a new shaper over the kernel's default root or someone's
    qdisc swaps the root for it in one request. Only a new layout where a root C(1:) already is (htb cannot be changed
    in place, nor a kind swapped under one handle) deletes that root first. A refusal part-way never leaves half a
    shaper: what was built goes, and the shaper that was there is put back. Every netlink error is reported with the
    parameter it came from (O(rate), O(qdisc), O(fair_share_sources)[i], O(ifb_device), ...), never as a traceback."
  - "Another root qdisc (the kernel's default C(fq_codel), C(mq), C(noqueue) or C(pfifo_fast), or a qdisc someone
    added) is read as foreign: O(state=absent) leaves it alone and reports no change; O(state=present) replaces it
    (with a warning unless it is the kernel's default)."
  - "What it makes is marked, for M(aifabric.lab.lab_leftovers): the htb root has C(r2q 44971) (a field htb uses only
    for classes without a quantum, which these never are), the ifb device carries the alias
    C(aifabric.lab: ingress of DEVICE), and a record in O(state_dir) names the device, the shaper and its O(owner)."
  - "With O(owner), a shaper whose record names another live owner is never changed: O(state=present) fails naming
    that owner; O(state=absent) leaves it, warns and returns RV(held_by)."
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
    support: full
  idempotent:
    support: full
    details: Compared are the qdisc, the rate, the sources and the burst (within 1%, as the kernel stores it in ticks).
options:
  device:
    description: The network device, in the namespace the task runs in.
    type: str
    required: true
  direction:
    description: Shape what the device sends (V(egress)) or receives (V(ingress), through an ifb device).
    type: str
    default: egress
    choices: [egress, ingress]
  qdisc:
    description: The shaper.
    type: str
    default: htb
    choices: [htb, tbf]
  rate:
    description:
      - The rate, in tc's bit units, like C(8gbit), C(100mbit), C(1kbit). C(bps) forms are refused because tc reads
        them as bytes per second. Required with O(state=present).
      - Shapers count whole frames (the Ethernet header included), so TCP's goodput at MTU 9000 is 8948/9014 of it.
    type: str
  burst:
    description:
      - The bucket size, like C(1MB) or C(256KiB). Defaults to 1 ms of O(rate) and at least two frames; tc's own
        default (rate/HZ) under-delivers by 5-17% on veth at Gb/s rates.
    type: str
  latency:
    description: With V(tbf), the longest a packet may wait in the queue (seconds); sets the queue limit.
    type: float
    default: 0.05
  fair_share_sources:
    description:
      - With V(htb), source addresses or prefixes that share O(rate) max-min fairly (one class each, u32 match on the
        IPv4 or IPv6 source). Other traffic gets a class of its own.
    type: list
    elements: str
    default: []
  fair_share_destinations:
    description:
      - With V(htb), destination addresses or prefixes that share O(rate) max-min fairly (one class each, u32 match on
        the IPv4 or IPv6 destination), so that a sender's port is shared between the peers it sends to, as a NIC
        arbitrates between its queue pairs. Other traffic gets a class of its own. Not with O(fair_share_sources).
    type: list
    elements: str
    default: []
    version_added: 0.3.0
  ack_priority:
    description:
      - With V(htb), a class beside the rate for the device's small IPv4 TCP segments (ACKs), served first; the
        shaper slows what the host sends, not the flows it receives, whose ACKs would otherwise wait behind the
        shaper's queue of data (at a throttled rate, hundreds of milliseconds).
    type: bool
    default: false
    version_added: 0.3.0
  fair_share_ports:
    description:
      - With V(htb), one class per bucket of the IPv4 TCP source port (the port modulo this power of two, 2-256) under
        O(rate), max-min fair between them - flows whose source ports fall in distinct buckets share the rate equally,
        whoever sends them. The fabric lab chooses its streams' ports so (a bucket each). Not with
        O(fair_share_sources) or O(fair_share_destinations).
    type: int
    version_added: 0.4.0
  ifb_device:
    description:
      - With O(direction=ingress), the ifb device to create and shape. Defaults to C(ifb-DEVICE) (15 characters).
    type: str
  state_dir:
    description:
      - Where the shaper's record (its marker and O(owner)) is kept, as C(STATE_DIR/shapers/NETNS/DEVICE.json) (an
        ingress shaper's under its ifb's name); the default is the M(aifabric.lab.flow_step) state directory, a tmpfs
        that a reboot empties with the qdiscs.
    type: path
    default: /run/aifabric-lab
    version_added: 0.5.0
  state:
    description:
      - V(present) puts the shaper in place; V(absent) restores the device's default qdisc (and removes the ifb).
        A root this module did not make stays.
    type: str
    default: present
    choices: [present, absent]
seealso:
  - module: aifabric.lab.flow
  - name: tc-htb(8)
    description: The hierarchical token bucket.
    link: https://man7.org/linux/man-pages/man8/tc-htb.8.html
"""

EXAMPLES = r"""
- name: Throttle a worker's path to 2gbit
  aifabric.lab.tc_shape:
    device: eth0
    rate: 2gbit

- name: The shared bottleneck toward the sink, fairly shared between three workers
  aifabric.lab.tc_shape:
    device: sink0
    rate: 8gbit
    fair_share_sources: [198.18.0.11, 198.18.0.12, 198.18.0.13]

- name: What a worker sends, fairly shared between the peers it sends to (its switch port's ingress, through ifb)
  aifabric.lab.tc_shape:
    device: worker10
    direction: ingress
    rate: 8gbit
    fair_share_destinations: [198.18.0.1, 198.18.0.12, 198.18.0.13]

- name: Shape what a device receives, through ifb
  aifabric.lab.tc_shape:
    device: eth0
    direction: ingress
    rate: 500mbit

- name: Remove the shaper
  aifabric.lab.tc_shape:
    device: eth0
    state: absent
"""

RETURN = r"""
shaper:
  description: The shaper now in place (empty when absent).
  returned: always
  type: dict
  sample: {qdisc: htb, rate: 8gbit, burst: 1MB, fair_share_sources: [198.18.0.11/32]}
shaped_device:
  description: The device whose egress carries the shaper (the ifb device for ingress).
  returned: always
  type: str
  sample: eth0
record:
  description: The shaper's record in O(state_dir).
  returned: always
  type: str
  sample: /run/aifabric-lab/shapers/netns-afl-worker3/eth0.json
  version_added: 0.5.0
applied_by:
  description: How the shaper was put in place, when it was - V(replaced) (in place, the same layout at new rates) or
    V(rebuilt) (a new layout).
  returned: when the shaper changed
  type: str
  version_added: 0.5.0
held_by:
  description: With O(state=absent), the live owner whose shaper was left on the device.
  returned: when another live owner holds the shaper
  type: dict
  version_added: 0.5.0
counters:
  description: The shaper's counters after the change.
  returned: always
  type: dict
  contains:
    qdisc:
      description:
        - The root qdisc's C(bytes), C(packets), C(drops), C(overlimits), C(requeues), C(backlog_bytes), C(qlen).
        - Null when the device has no root qdisc.
      type: dict
    classes:
      description: Per htb class (C(1:1), C(1:11)...), the same counters.
      type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aifabric.lab.plugins.module_utils._tc_shape_module import module_args, run_module


def main():
    run_module(AnsibleModule(**module_args()))


if __name__ == "__main__":
    main()
