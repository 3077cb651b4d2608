#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: nic_dcqcn
short_description: Turn mlx5 DCQCN on or off per priority and set its parameters
version_added: 0.5.0
description:
  - Sets DCQCN, the RoCE congestion control of NVIDIA ConnectX NICs, through the sysfs files of MLNX_OFED's mlx5_core
    under C(/sys/class/net/IF/ecn/). The reaction point (C(roce_rp), the sender, which slows a queue pair down when
    CNPs come back) and the notification point (C(roce_np), the receiver, which sends CNPs for ECN-marked packets)
    are each on or off per priority (C(enable/0) .. C(enable/7)); their parameters hold for every priority of the
    port.
  - Only what is given is compared and changed, and only files whose value differs are written (mlx5 refuses, with
    EPERM, to enable a priority that is on already). Every value is range-checked before anything is written; when
    the driver refuses a write, the files already written in this run are put back and the error names the
    parameter, the file and the driver's answer. The files are read back after the run.
  - "Refuses a port without the files, and says why: upstream mlx5 (the distribution kernels' inbox driver) has no
    C(ecn/) directory; there DCQCN runs on the priorities of the firmware's C(ROCE_CC_PRIO_MASK_P1) (mlxconfig) and
    its parameters are debugfs' C(mlx5/PCI/cc_params). On a VF the files are read-only: set DCQCN on the PF."
  - The parameters' units and defaults are NVIDIA's (the DCQCN parameters page of the MLNX_OFED and DOCA
    documentation); the module checks the width of each field and the ranges of percentages and fractions, and
    leaves the rest to the firmware.
author:
  - aifabric.lab contributors (@aifabric)
requirements:
  - MLNX_OFED's mlx5_core (the C(ecn/) sysfs files)
  - root for changes
extends_documentation_fragment:
  - aifabric.lab.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: Each point's priorities and parameters, before and after.
  idempotent:
    support: full
    details: Compared with what the files read.
options:
  interface:
    description: The PF's netdev (V(ens1f0np0)).
    type: str
    required: true
  rp_priorities:
    description: The priorities (0..7) on which the reaction point runs (the sender slows down on CNPs); off on the
      others. V([]) turns it off everywhere. Unchanged when omitted.
    type: list
    elements: int
  np_priorities:
    description: The priorities on which the notification point runs (the receiver sends CNPs for ECN-marked RoCE
      packets); off on the others. Unchanged when omitted.
    type: list
    elements: int
  rp:
    description: The reaction point's parameters (files under C(ecn/roce_rp)). Each one left out is unchanged.
    type: dict
    suboptions:
      clamp_tgt_rate:
        description: On a CNP, set the target rate to the current rate (clamping) instead of keeping it.
        type: bool
      clamp_tgt_rate_after_time_inc:
        description: Clamp the target rate when the rate-increase timer fires too.
        type: bool
      rpg_time_reset:
        description: Microseconds between rate increases when no CNP arrives.
        type: int
      rpg_byte_reset:
        description: Bytes sent between rate increases when no CNP arrives (0 disables the byte counter).
        type: int
      rpg_threshold:
        description: Rate-increase events before the fast recovery stage ends (NVIDIA gives 1..31).
        type: int
      rpg_max_rate:
        description: The highest rate a queue pair may reach, Mb/s (0 = the port's speed).
        type: int
      rpg_ai_rate:
        description: Additive increase step, Mb/s.
        type: int
      rpg_hai_rate:
        description: Hyper additive increase step, Mb/s.
        type: int
      rpg_gd:
        description: The shift between alpha and the rate reduction (the rate drops by at most alpha / 2^rpg_gd).
        type: int
      rpg_min_dec_fac:
        description: The smallest fraction of the current rate one reduction may leave, percent (0..100).
        type: int
      rpg_min_rate:
        description: The lowest rate a queue pair is slowed to, Mb/s.
        type: int
      rate_to_set_on_first_cnp:
        description: The rate set when the first CNP arrives, Mb/s (0 = the current rate).
        type: int
      dce_tcp_g:
        description: Alpha's gain, a fraction with 10 bits (0..1023; 1019 = 0.995).
        type: int
      dce_tcp_rtt:
        description: Microseconds between alpha updates.
        type: int
      rate_reduce_monitor_period:
        description: Microseconds between two rate reductions.
        type: int
      initial_alpha_value:
        description: Alpha on the first CNP, a fraction with 10 bits (0..1023).
        type: int
  np:
    description: The notification point's parameters (files under C(ecn/roce_np)). Each one left out is unchanged.
    type: dict
    suboptions:
      min_time_between_cnps:
        description: Microseconds the NIC waits at least between two CNPs for the same queue pair.
        type: int
      cnp_dscp:
        description: The DSCP the CNPs carry (0..63; V(48), CS6, by convention, mapped to a priority of its own).
        type: int
      cnp_802p_prio:
        description: The VLAN priority the CNPs carry (0..7).
        type: int
notes:
  - The netns and VM labs have no ConnectX; soft-RoCE (rxe) has no DCQCN. There the congestion is ECN on TCP
    (docs/nic-qos.md says what differs).
  - The settings do not survive a driver reload or reboot; run the module from the play that sets up the hosts.
seealso:
  - module: aifabric.lab.nic_qos
  - module: aifabric.lab.port_counters_info
  - name: NVIDIA DCQCN parameters
    description: Every parameter, its unit and its default.
    link: https://docs.nvidia.com/networking/display/mlnxofedv24010331/dcqcn+parameters
"""

EXAMPLES = r"""
- name: DCQCN on priority 3 only, CNPs on DSCP 48 and priority 6
  aifabric.lab.nic_dcqcn:
    interface: ens1f0np0
    rp_priorities: [3]
    np_priorities: [3]
    np:
      cnp_dscp: 48
      cnp_802p_prio: 6
      min_time_between_cnps: 4
  become: true

- name: A gentler reaction point for an incast experiment
  aifabric.lab.nic_dcqcn:
    interface: ens1f0np0
    rp:
      rpg_min_dec_fac: 50
      rpg_ai_rate: 5
      rpg_hai_rate: 50
      rate_reduce_monitor_period: 4
  become: true
"""

RETURN = r"""
changes:
  description: The files written (or that would be, in check mode), relative to C(/sys/class/net/IF/).
  returned: always
  type: list
  elements: dict
  sample: [{file: ecn/roce_np/enable/5, before: 1, after: 0}, {file: ecn/roce_np/cnp_dscp, before: 46, after: 48}]
before:
  description: The port's DCQCN settings before the run.
  returned: always
  type: dict
  contains:
    rp:
      description: The reaction point, C(enabled) (the priorities it runs on) and C(parameters) (file name to value).
      type: dict
    np:
      description: The notification point, as RV(before.rp).
      type: dict
    writable:
      description: False where the files are read-only (a VF).
      type: bool
  sample:
    rp: {enabled: [3], parameters: {rpg_ai_rate: 5, rpg_min_dec_fac: 50, dce_tcp_g: 1019}}
    np: {enabled: [3], parameters: {cnp_dscp: 48, cnp_802p_prio: 6, min_time_between_cnps: 4}}
    writable: true
after:
  description: The settings after the run, read back (in check mode, as predicted). The same keys as RV(before).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aifabric.lab.plugins.module_utils._nic_dcqcn_module import module_args, run_module


def main():
    run_module(AnsibleModule(**module_args()))


if __name__ == "__main__":
    main()
