# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    # The fabric's description, shared by fabric_topology and fabric_paths_info (the fabric_lab role derives it from the
    # inventory with the aifabric.lab.fabric_lab_topology filter).
    DOCUMENTATION = r"""
options:
  leaves:
    description: The leaf switches, in order (leaf I(i)'s link to spine I(k) is its port C(s<k>), the spine's C(l<i>)).
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: The leaf's name in link names and reports (the inventory host).
        type: str
        required: true
      namespace:
        description: Its network namespace.
        type: str
        required: true
      gateway:
        description: Its hosts' gateway address with the subnet's prefix, like C(198.18.1.254/24).
        type: str
        required: true
      pod:
        description:
          - Its pod in a 3-tier Clos (every leaf and spine has one, or none has); a leaf is linked to its pod's
            spines only.
        type: str
  spines:
    description: The spine switches, in order.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The spine's name.
        type: str
        required: true
      namespace:
        description: Its network namespace.
        type: str
        required: true
      pod:
        description: Its pod in a 3-tier Clos.
        type: str
  superspines:
    description:
      - The superspines of a 3-tier Clos, in order. Superspine I(c) and spine I(k) are linked by the spine's port
        C(u<c>) and the superspine's C(p<k>). A spine reaches its own pod's leaves directly and every other subnet
        through its superspines; a superspine each leaf's subnet through its spines in that leaf's pod.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The superspine's name.
        type: str
        required: true
      namespace:
        description: Its network namespace.
        type: str
        required: true
      plane:
        description:
          - The spine position (1, 2, ...) in every pod it stands above (spine I(plane) of each pod); none stands
            above every spine.
        type: int
  hosts:
    description: The hosts, each in its own namespace behind a port of its leaf's bridge.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The host's name (the inventory host).
        type: str
        required: true
      namespace:
        description: Its network namespace.
        type: str
        required: true
      leaf:
        description: The leaf it hangs off.
        type: str
        required: true
      address:
        description: Its address with the leaf subnet's prefix.
        type: str
        required: true
      port:
        description: Its port on the leaf (default C(h-<name>), cut at 15 characters).
        type: str
      interface:
        description: Its interface inside its namespace.
        type: str
        default: eth0
      machine:
        description:
          - The machine this host is a NIC of, in a rail-optimized fabric (the leaves are the rails; a machine has one
            NIC per rail). With O(relay), a machine's NICs are joined by in-host links.
        type: str
  relay:
    description:
      - Join each machine's NICs by in-host links (NIC I(i)'s port C(x<j>) toward NIC I(j)) that they forward over; a
        flow to another rail crosses to its machine's NIC on that rail and takes that rail alone, as NCCL's PXN does
        over NVLink. Needs O(hosts[].machine).
    type: bool
    default: false
  mtu:
    description: The MTU of every link.
    type: int
    default: 9000
  hash:
    description:
      - How the leaves hash flows onto their multipath routes. V(l3) hashes source and destination addresses
        (C(fib_multipath_hash_policy=0)); V(l4) the five-tuple (policy 3, C(fib_multipath_hash_fields=0x37)), which a
        route lookup can reproduce (policy 1 would use a socket hash that veth carries across namespaces).
    type: str
    default: l4
    choices: [l3, l4]
  seed:
    description:
      - C(fib_multipath_hash_seed) of every switch (Linux 6.11+); a fixed seed makes the placement reproducible.
    type: int
  link_subnet:
    description: Where the routed links (leaf-spine, spine-superspine, in-host relay) take their /31 addresses from.
    type: str
    default: 198.19.0.0/16
  host_rate:
    description: The rate of every host link, both directions (htb on the leaf's port, its ingress through an ifb).
    type: str
  uplink_rate:
    description: The rate of every leaf-spine link, both directions (htb on each end's port).
    type: str
  superspine_rate:
    description: The rate of every spine-superspine link, both directions (default O(uplink_rate)).
    type: str
  relay_rate:
    description: The rate of every in-host relay link, both directions (none set, unshaped).
    type: str
"""
