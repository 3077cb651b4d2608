# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``netns_lab_hosts``: the embedded lab's namespaces, ports and addresses, from the inventory."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.aifabric.lab.plugins.plugin_utils._netns_lab import LabError, lab_hosts


def netns_lab_hosts(groups, hostvars, prefix="afl-", subnet="198.18.0.0/24", sinks_group="sinks",
                    workers_group="workers"):
    try:
        return lab_hosts(groups, hostvars, prefix, subnet, sinks_group, workers_group)
    except LabError as exc:
        raise AnsibleFilterError("netns_lab_hosts: %s" % exc) from None


class FilterModule:
    def filters(self):
        return {"netns_lab_hosts": netns_lab_hosts}
