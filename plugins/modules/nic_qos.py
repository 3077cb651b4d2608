#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: nic_qos
short_description: Set a NIC's PFC priorities, ETS, trust mode and DSCP-to-priority map through dcbnl
version_added: 0.5.0
description:
  - Sets the IEEE DCB settings of one NIC port through the kernel's dcbnl netlink (C(RTM_SETDCB),
    C(DCB_CMD_IEEE_SET)/C(DCB_CMD_IEEE_DEL), C(DCB_CMD_SDCBX)), as C(dcb) from iproute2 and C(mlnx_qos) do, with
    pyroute2. Nothing is run but netlink.
  - "B(PFC): O(pfc_priorities) lists the priorities that pause (priority flow control, 802.1Qbb). B(ETS): each traffic
    class's transmission selection algorithm (O(ets.tsa)), the bandwidth share of the ETS classes (O(ets.bandwidth))
    and which class each priority goes to (O(ets.prio_tc)). B(Trust): whether the NIC takes a packet's priority from
    its DSCP or from its VLAN priority (PCP). B(DSCP map): which priority each DSCP value gets (O(dscp_map))."
  - "Trust and the DSCP map are the kernel's APP table: on mlx5 (ConnectX-4 and later) the NIC trusts DSCP while the
    table holds a DSCP entry and PCP when it holds none (the driver switches when its first entry is added and its
    last removed). So O(trust=pcp) removes every DSCP entry, and O(trust=dscp) without O(dscp_map) on a table with no
    DSCP entry writes the default map, priority = DSCP >> 3 for all 64 values (what mlx5 loads when the firmware
    starts in DSCP trust). DSCP values that O(dscp_map) does not name are left as they are."
  - Only what is given is compared and changed; settings left out stay as they are. Every value is validated
    against what the NIC reports before anything is sent (the number of traffic classes, C(ets_cap); how many
    priorities may pause at once, C(pfc_cap); ETS shares that sum to 100), and each change is read back.
  - Refuses what the NIC does not offer, naming the interface. A netdev without dcbnl operations (veth, virtio, a
    kernel built without C(CONFIG_MLX5_CORE_EN_DCB)) answers EOPNOTSUPP; a driver without ETS or PFC leaves them out
    of its reply and the module says so. When the driver refuses a change, the changes already sent in this run are
    put back and the error gives the driver's answer.
  - "mlx5 runs DCBX either in the firmware (the default on most cards: a willing port takes its switch's settings)
    or in the host. Set O(dcbx=host) for the host's settings to stay; when the NIC reports settings other than those
    just sent, the module fails and says so."
author:
  - aifabric.lab contributors (@aifabric)
requirements:
  - pyroute2
  - root (CAP_NET_ADMIN) for changes; reading needs none
extends_documentation_fragment:
  - aifabric.lab.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: The DCBX mode, the PFC priorities, each traffic class (algorithm, share, priorities), the trust mode and
      the DSCP map, before and after.
  idempotent:
    support: full
    details: Compared with what the NIC reports. A strict or vendor class's share is not compared (mlx5 reports 100
      for them whatever was sent).
options:
  interface:
    description: The NIC port's netdev (V(ens1f0np0)).
    type: str
    required: true
  pfc_priorities:
    description:
      - The priorities (0..7) with PFC on; every other priority has it off. V([]) turns PFC off. Unchanged when
        omitted.
      - RoCE usually runs on priority 3 (V([3])); the switch ports must pause the same priorities.
    type: list
    elements: int
  ets:
    description: ETS per traffic class. Each list has 8 entries; a list left out is unchanged.
    type: dict
    suboptions:
      tsa:
        description:
          - Each traffic class's transmission selection algorithm, TC 0 first. V(strict) is strict priority (a higher
            TC first), V(ets) shares by O(ets.bandwidth), V(vendor) is the NIC's own (mlx5's default, round robin
            among the vendor classes).
        type: list
        elements: str
        choices: [strict, ets, vendor]
      bandwidth:
        description: Each traffic class's share in percent, TC 0 first. The shares of the ETS classes must sum to
          100; those of the other classes are not used.
        type: list
        elements: int
      prio_tc:
        description: The traffic class of each priority, priority 0 first (mlx5's default is V([1, 0, 2, 3, 4, 5, 6,
          7])). A class must be below the NIC's C(ets_cap).
        type: list
        elements: int
  trust:
    description: Take a packet's priority from its DSCP (V(dscp)) or its VLAN priority (V(pcp)). Unchanged when
      omitted (and O(dscp_map) given implies V(dscp)).
    type: str
    choices: [pcp, dscp]
  dscp_map:
    description:
      - "DSCP value (0..63) to priority (0..7), for example C({26: 3, 48: 6}) (RoCE's AF31 on priority 3, CNPs' CS6
        on priority 6). Needs O(trust=dscp)."
      - The DSCP values named are set; the others keep their priority.
    type: dict
  dcbx:
    description:
      - Where DCBX runs. V(host) lets the host's settings stand; V(firmware) hands DCBX to the NIC's firmware
        (mlx5 with firmware DCBX only; other drivers refuse it).
      - Unchanged when omitted.
    type: str
    choices: [host, firmware]
notes:
  - The netns and VM labs have no NIC with dcbnl (veth and virtio have none); there PFC cannot be emulated, and
    the lab shows the lossy analogue (docs/nic-qos.md).
  - DCB settings do not survive a reboot or a driver reload; run the module from the play that sets up the hosts.
seealso:
  - module: aifabric.lab.nic_dcqcn
  - module: aifabric.lab.port_counters_info
  - module: aifabric.lab.preflight_info
  - name: dcb(8) from iproute2
    description: The same settings from the command line (dcb pfc, dcb ets, dcb app).
    link: https://man7.org/linux/man-pages/man8/dcb.8.html
"""

EXAMPLES = r"""
- name: RoCE on priority 3, lossless, DSCP trusted, CNPs on priority 6
  aifabric.lab.nic_qos:
    interface: ens1f0np0
    dcbx: host
    pfc_priorities: [3]
    trust: dscp
    dscp_map: {26: 3, 48: 6}
  become: true

- name: Two ETS classes, 60/40, with priority 3 in TC 3 and everything else in TC 0
  aifabric.lab.nic_qos:
    interface: ens1f0np0
    ets:
      tsa: [ets, strict, strict, ets, strict, strict, strict, strict]
      bandwidth: [40, 0, 0, 60, 0, 0, 0, 0]
      prio_tc: [0, 0, 0, 3, 0, 0, 0, 0]
  become: true

- name: Back to the VLAN priority and no PFC
  aifabric.lab.nic_qos:
    interface: ens1f0np0
    trust: pcp
    pfc_priorities: []
  become: true
"""

RETURN = r"""
changes:
  description: The changes made (or that would be made, in check mode), one line each.
  returned: always
  type: list
  elements: str
  sample: ["pfc priorities none -> [3]", "dscp map set: 26:3, 48:6"]
before:
  description: The NIC's settings before the run.
  returned: always
  type: dict
  contains:
    dcbx:
      description: V(host), V(firmware) or V(lld_managed); null where the driver reports no DCBX mode.
      type: str
    pfc_priorities:
      description: The priorities with PFC on; null where the NIC has no PFC.
      type: list
      elements: int
    pfc_cap:
      description: How many priorities may pause at once.
      type: int
    ets:
      description: C(ets_cap) (the number of traffic classes), and per class C(tsa) and C(bandwidth); per priority
        C(prio_tc). Null where the NIC has no ETS.
      type: dict
    trust:
      description: V(dscp) while the APP table holds DSCP entries, else V(pcp).
      type: str
    dscp_map:
      description: DSCP value to priority, as the APP table holds it (a list where one value has several). The keys
        are the DSCP values (strings once in a registered result).
      type: dict
  sample:
    dcbx: host
    pfc_priorities: [3]
    pfc_cap: 8
    ets: {ets_cap: 8, tsa: [vendor, vendor, vendor, vendor, vendor, vendor, vendor, vendor],
          bandwidth: [100, 100, 100, 100, 100, 100, 100, 100], prio_tc: [1, 0, 2, 3, 4, 5, 6, 7]}
    trust: dscp
    dscp_map: {"26": 3, "48": 6}
after:
  description: The settings after the run, as the NIC reports them (in check mode, as predicted). The same keys as
    RV(before).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aifabric.lab.plugins.module_utils._nic_qos_module import module_args, run_module


def main():
    run_module(AnsibleModule(**module_args()))


if __name__ == "__main__":
    main()
