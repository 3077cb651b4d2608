#!/usr/bin/env bash
# A netns-lab inventory for an integration target's own lab: lab-inventory.sh PREFIX THIRD_OCTET [WORKERS]
# (namespaces PREFIX*, addresses 198.18.THIRD_OCTET.0/24: sink .1, workers .11, .12, ...).
set -euo pipefail
prefix=$1 octet=$2 workers=${3:-3}
cat <<INV
all:
  vars:
    ansible_connection: aifabric.lab.netns
    ansible_netns_prefix: $prefix
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
    lab_namespace_prefix: $prefix
    lab_subnet: 198.18.$octet.0/24
    lab_mtu: 9000
    lab_line_rate: 8gbit
    # These targets check what a step did, not how closely a loaded 2-core CI machine starts its hosts: 1% of a
    # 0.5 s step is 5 ms, which a busy machine misses; the lateness bound itself is unit-tested (_analysis).
    barrier_late_bound: 0.2
    elephant_late_bound: 0.2
    collective_late_bound: 0.2
  children:
    switches: {hosts: {switch: {}}}
    sinks: {hosts: {sink: {lab_address: 198.18.$octet.1}}}
    workers:
      hosts:
INV
for i in $(seq 1 "$workers"); do echo "        worker$i: {lab_address: 198.18.$octet.$((10 + i))}"; done
