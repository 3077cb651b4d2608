#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: ecn_marker
short_description: A switch port's shallow buffer and ECN marker (CE instead of drops), as a BPF program on its shaper
version_added: 0.5.0
description:
  - Puts an ECN marker on a port that M(aifabric.lab.tc_shape) shapes with C(htb), changes it, reads its counters, or
    removes it. For the netns lab's switch ports, whose kernel has no C(red) qdisc (docs/congestion.md).
  - "The marker is a BPF classifier (cls_bpf, direct action) at the htb root, after the shaper's ACK filter and
    before its fair-share filters. It keeps a virtual queue: the bytes it admitted, drained at O(rate) (by default
    the shaper's own rate) between arrivals. A packet that would overflow O(buffer) is dropped (tail drop; the buffer
    is the queue limit). An ECT packet that finds the queue at or above O(threshold) (V(step), DCTCP's K), or
    between O(min_threshold) and O(max_threshold) with RED's linear probability up to O(max_probability) (V(red)),
    leaves with CE. V(taildrop) marks nothing: the shallow buffer alone."
  - "It counts what it sees in its own map: packets and bytes by ECN codepoint on arrival, marks, drops (buffer
    full), early drops (not-ECT at the threshold), the queue's backlog and its peak. Every run returns them
    (RV(counters)), so a task before and after a step gives the step's figures."
  - "The program ships built (plugins/module_utils/_ecn_program.py, made by C(make bpf) from bpf/ecn_marker.bpf.c)
    and is loaded through the bpf() system call: the host needs no compiler, no libbpf, no bpftool and no network."
  - A change of configuration is written into the running marker's map in place (its counters go on); the program is
    loaded only when the port has none. Removing the shaper's htb root removes the marker with it.
author:
  - aifabric.lab contributors (@aifabric)
requirements:
  - pyroute2
  - root (CAP_NET_ADMIN and CAP_BPF), a kernel with CONFIG_NET_CLS_BPF and CONFIG_BPF_SYSCALL
extends_documentation_fragment:
  - aifabric.lab.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  idempotent:
    support: full
    details: Compared is the configuration the marker's map holds (rate, buffer, thresholds, probability, flags).
options:
  device:
    description: The port, in the namespace the task runs in; it must carry an htb shaper of M(aifabric.lab.tc_shape).
    type: str
    required: true
  mode:
    description:
      - V(step) marks every ECT packet that finds the queue at or above O(threshold) (DCTCP's K).
      - V(red) marks with probability rising linearly from 0 above O(min_threshold) to O(max_probability) just below
        O(max_threshold), and every ECT packet at or above O(max_threshold); on the instantaneous queue (RED's
        average with weight 1, as DCTCP's RED setting uses it).
      - V(taildrop) marks nothing; the buffer alone (the lossy baseline beside a marked run).
    type: str
    default: step
    choices: [step, red, taildrop]
  buffer:
    description:
      - The port's buffer (the queue limit), like C(100KB), C(256KiB); a packet that would overflow it is dropped.
        At least two frames of the port's MTU, at most 1GiB. Required with O(state=present).
    type: str
  threshold:
    description: With O(mode=step), K, in bytes (C(30KB)); at most O(buffer).
    type: str
  min_threshold:
    description: With O(mode=red), where marking starts, in bytes.
    type: str
  max_threshold:
    description:
      - With O(mode=red), where every ECT packet is marked, in bytes; above O(min_threshold), at most O(buffer).
    type: str
  max_probability:
    description: With O(mode=red), the marking probability just below O(max_threshold); above 0, at most 1. Default 0.1.
    type: float
  non_ect:
    description:
      - What happens to a packet that is not ECT where an ECT packet would be marked - V(drop) (RED's rule, so hosts
        that do not negotiate ECN see early drops instead of marks) or V(pass) (it joins the queue; only the buffer
        drops it).
    type: str
    default: drop
    choices: [drop, pass]
  rate:
    description:
      - The rate that drains the virtual queue, in tc's bit units (C(8gbit)); by default the shaper's rate (its class
        C(1:1)). At most 100gbit.
    type: str
  state:
    description: V(present) puts the marker on (or changes it); V(absent) takes it off.
    type: str
    default: present
    choices: [present, absent]
notes:
  - "The queue is virtual: the marker predicts the htb queue from the bytes it admitted and the rate, it does not read
    the real backlog. It differs from a switch ASIC's queue (docs/congestion.md): htb's own borrowing and its burst let
    the real queue run a little ahead or behind, the ACK class drains beside the rate, a GSO packet (up to 64KB) is
    queued, marked or dropped whole, as the htb queue holds it (its segments are counted), and two CPUs updating the
    queue at once can lose an update."
seealso:
  - module: aifabric.lab.tc_shape
  - name: docs/congestion.md
    description: What the lab's congestion experiments emulate, and how it differs from a switch.
    link: https://github.com/aifabric/aifabric.lab/blob/main/docs/congestion.md
"""

EXAMPLES = r"""
- name: DCTCP-style marking at K = 30KB in a 100KB buffer on the sink's switch port
  aifabric.lab.ecn_marker:
    device: sink0
    mode: step
    buffer: 100KB
    threshold: 30KB

- name: RED between 20KB and 80KB, up to 10% before 80KB
  aifabric.lab.ecn_marker:
    device: sink0
    mode: red
    buffer: 100KB
    min_threshold: 20KB
    max_threshold: 80KB
    max_probability: 0.1

- name: The lossy baseline - the same shallow buffer, no marks
  aifabric.lab.ecn_marker:
    device: sink0
    mode: taildrop
    buffer: 100KB
  register: port

- name: What the port counted
  ansible.builtin.debug:
    msg: "{{ port.counters.marked }} marked, {{ port.counters.dropped }} dropped"

- name: Take the marker off
  aifabric.lab.ecn_marker:
    device: sink0
    state: absent
"""

RETURN = r"""
marker:
  description: The marker's configuration now (empty when absent), in units.
  returned: always
  type: dict
  sample: {mode: step, rate: 8gbit, buffer: 100KB, threshold: 30KB, non_ect: drop}
applied_by:
  description: How the change was made - V(attached) (the program loaded), V(changed in place) (the map rewritten,
    the counters kept) or V(removed).
  returned: when the marker changed (not in check mode)
  type: str
counters:
  description: What the marker has counted since it was attached (null when the port has none).
  returned: always
  type: dict
  contains:
    packets:
      description: Packets that reached the marker (the ACK class's small TCP segments go around it).
      type: int
    bytes:
      description: Their bytes (whole skbs, Ethernet header included).
      type: int
    ect:
      description: Packets that arrived ECT(0) or ECT(1).
      type: int
    not_ect:
      description: Packets that arrived not-ECT (and anything not IP).
      type: int
    ce_in:
      description: Packets that arrived already CE.
      type: int
    marked:
      description: ECT packets this marker set to CE.
      type: int
    dropped:
      description: Packets dropped because the buffer was full.
      type: int
    early_dropped:
      description: Not-ECT packets dropped where an ECT packet would have been marked (O(non_ect=drop)).
      type: int
    dropped_bytes:
      description: The bytes of both kinds of drop.
      type: int
    backlog_bytes:
      description: The virtual queue after the last arrival (it has drained since).
      type: int
    max_backlog_bytes:
      description: The deepest the virtual queue has been.
      type: int
    segs:
      description: The wire packets of those packets (a GSO packet counts its segments), as the receivers count.
      type: int
    ect_segs:
      description: The wire packets that arrived ECT.
      type: int
    marked_segs:
      description: The wire packets marked CE here (what the receivers' C(InCEPkts) sees of this port).
      type: int
    dropped_segs:
      description: The wire packets of both kinds of drop.
      type: int
    marking_ratio:
      description: C(marked_segs / ect_segs), per wire packet; null before an ECT packet came.
      type: float
    marking_by_queue:
      description:
        - The marking probability against the queue (the BMWG draft's ECN marking accuracy plot) - per sixteenth of
          the buffer that admitted ECT packets found, C(from_bytes), C(to_bytes), C(ect) (packets), C(marked) and
          C(ratio). With O(mode=step) the ratio is 0 below O(threshold) and 1 from the bucket that holds it on (the
          bucket that straddles it is in between).
      type: list
      elements: dict
    drop_ratio:
      description: C((dropped + early_dropped) / packets), null before a packet came.
      type: float
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aifabric.lab.plugins.module_utils._ecn_marker_module import module_args, run_module


def main():
    run_module(AnsibleModule(**module_args()))


if __name__ == "__main__":
    main()
