#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: port_counters_info
short_description: One snapshot of RDMA port counters, hw_counters, netdev and qdisc statistics
version_added: 0.5.0
description:
  - Named C(aifabric.lab.port_counters) before 0.5.0; that name still works (redirected here), deprecated, until
    1.0.0.
  - Reads the counters the wire keeps for itself, for before/after comparisons around a step
    (the M(aifabric.lab.flow) results say what the application moved; these say what the wire and the queues saw).
  - RDMA ports, from C(/sys/class/infiniband/DEV/ports/N). The IB port counters in C(counters/) include
    C(port_xmit_data) and C(port_rcv_data), which count 4-byte words, so C(port_xmit_bytes) and C(port_rcv_bytes)
    are added (x4). The driver's C(hw_counters/) are read too; soft-RoCE has only these.
  - Netdev statistics come from C(/sys/class/net/DEV/statistics), and qdisc and class statistics through netlink
    (pyroute2).
  - "A NIC's QoS counters, for the ports in O(ethtool): per priority the PFC pause frames received and sent and how
    long they paused (mlx5: C(rx_prio3_pause), C(rx_prio3_pause_duration) in microseconds, C(tx_prio3_pause),
    C(tx_prio3_pause_duration), C(rx_prio3_pause_transition); only for the priorities with PFC on), link-level pause,
    pause storms and the per-priority discards and ECN marks. They are driver statistics (C(ethtool -S)), read through
    the ethtool ioctl with pyroute2: ethtool netlink carries no driver statistics, and its pause statistics have no
    priority. DCQCN's own books are RDMA hw_counters (read with O(rdma_devices)): C(np_ecn_marked_roce_packets),
    C(np_cnp_sent), C(rp_cnp_handled)."
  - Compare two snapshots with the C(aifabric.lab.counters_diff) filter, which also gives the verdict (for example
    "all error counters zero").
author:
  - aifabric.lab contributors (@aifabric)
requirements:
  - pyroute2 (for O(qdiscs) and O(ethtool) only)
extends_documentation_fragment:
  - aifabric.lab.attributes
  - aifabric.lab.attributes.info_module
options:
  rdma_devices:
    description: RDMA devices to read. All of them when omitted; none with an empty list.
    type: list
    elements: str
  netdevs:
    description: Network devices whose statistics to read. None when omitted.
    type: list
    elements: str
    default: []
  qdiscs:
    description: Network devices whose root qdisc (and htb classes) to read.
    type: list
    elements: str
    default: []
  ethtool:
    description:
      - Network devices whose QoS statistics to read (PFC pauses per priority, their duration, pause storms,
        per-priority discards and marks). None when omitted. A device without ethtool statistics (V(lo)) fails the
        task, naming it.
    type: list
    elements: str
    default: []
    version_added: 0.5.0
  ecn:
    description:
      - Ports whose ECN marker (M(aifabric.lab.ecn_marker), the netns lab's switch ports) to read - its cumulative
        counters (packets and segments by ECN codepoint on arrival, marked, dropped, early dropped) into
        RV(counters.ecn), its queue (the buffer, the thresholds, the backlog and its peak, the marking histogram by
        queue depth) into RV(counters.ecn_queue). A port without the marker fails the task, naming it.
    type: list
    elements: str
    default: []
    version_added: 0.5.0
  ecn_discover:
    description:
      - Also read every port of this namespace that carries the marker, with its qdisc (the
        C(aifabric.lab.experiment) role reads the switch this way around every step when C(experiment_switch_ecn) is
        on).
    type: bool
    default: false
    version_added: 0.5.0
  step:
    description:
      - The step these counters belong to, returned as RV(step); with O(label) V(before) or V(after), the
        C(aifabric.lab.barrier_report) callback keeps the two snapshots in the step's counters under this host.
    type: str
    version_added: 0.5.0
  label:
    description:
      - Returned as RV(label), for the play's own bookkeeping (pair two snapshots with the
        C(aifabric.lab.counters_diff) filter).
      - A step run by M(aifabric.lab.flow_step) (the C(aifabric.lab.experiment) role) takes its own snapshots, before
        arming and after its flows, and returns them keyed by step and phase; the C(aifabric.lab.barrier_report)
        callback reports what moved beside the step. Nothing parses this label.
    type: str
  interface:
    description: The lab interface these counters describe (returned, for the report's byte checks).
    type: str
  engine:
    description: The flow engine of the step (returned, for the report's per-packet header sizes).
    type: str
seealso:
  - module: aifabric.lab.tc_shape
  - module: aifabric.lab.flow
"""

EXAMPLES = r"""
- name: Counters before the step
  aifabric.lab.port_counters_info:
    rdma_devices: [mlx5_0]
    netdevs: [eth0]
    qdiscs: [eth0]
  register: before

- name: Counters after the step
  aifabric.lab.port_counters_info:
    rdma_devices: [mlx5_0]
    netdevs: [eth0]
    qdiscs: [eth0]
  register: after

- name: PFC and DCQCN on a ConnectX port
  aifabric.lab.port_counters_info:
    rdma_devices: [mlx5_0]
    ethtool: [ens1f0np0]
  register: qos_before

- name: What moved, and the verdict
  ansible.builtin.debug:
    msg: "{{ before.counters | aifabric.lab.counters_diff(after.counters) }}"
"""

RETURN = r"""
label:
  description: O(label), as given.
  returned: when given
  type: str
interface:
  description: O(interface), as given.
  returned: when given
  type: str
engine:
  description: O(engine), as given.
  returned: when given
  type: str
step:
  description: O(step), as given.
  returned: when given
  type: str
  version_added: 0.5.0
counters:
  description: The snapshot.
  returned: always
  type: dict
  contains:
    taken_at:
      description: When it was taken (epoch seconds, host clock).
      type: float
    rdma:
      description: Per device and port, C(state), C(rate), C(link_layer), C(counters) and C(hw_counters).
      type: dict
    netdev:
      description: Per device, its statistics (C(rx_bytes), C(tx_bytes), C(rx_dropped), ...).
      type: dict
    qdisc:
      description: Per device, C(qdisc) (bytes, packets, drops, overlimits, ...) and C(classes).
      type: dict
    ethtool:
      description: Per device in O(ethtool), its QoS statistics by name (C(rx_prio3_pause), ...).
      type: dict
      returned: when O(ethtool) is given
      sample: {ens1f0np0: {rx_prio3_pause: 1204, rx_prio3_pause_duration: 38112, tx_prio3_pause: 0}}
    ecn:
      description:
        - Per port in O(ecn) (and found by O(ecn_discover)), the marker's counters since it was put on.
      type: dict
      returned: when O(ecn) or O(ecn_discover) is given
      sample: {p-sink1: {packets: 11200, segs: 89907, ect_segs: 89472, marked_segs: 88992, dropped_segs: 339}}
    ecn_queue:
      description:
        - Per port, the marker's queue - C(limit_bytes), C(min_threshold_bytes), C(max_threshold_bytes),
          C(backlog_bytes), C(max_backlog_bytes) and the ECT and marked packets by the queue depth they found
          (C(hist_ect), C(hist_marked), 16 buckets of 1/16 of the buffer each).
      type: dict
      returned: when O(ecn) or O(ecn_discover) is given
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aifabric.lab.plugins.module_utils._port_counters_info_module import module_args, run_module


def main():
    run_module(AnsibleModule(**module_args()))


if __name__ == "__main__":
    main()
