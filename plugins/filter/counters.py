# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``counters_diff``: what moved between two port_counters_info snapshots, and the verdict."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.counters import diff as _counters_diff
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.counters import nic_sentences
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.counters import verdict as _counters_verdict


def counters_diff(before, after, slower_than_fair_share=None, host=None):
    if not isinstance(before, dict) or not isinstance(after, dict):
        raise AnsibleFilterError("counters_diff: give two port_counters_info snapshots (the module's 'counters' "
                                 "return)")
    delta = _counters_diff(before, after)
    delta["verdict"] = _counters_verdict(delta, slower_than_fair_share)
    delta["nic"] = nic_sentences(host or "the host", delta["deltas"])
    return delta


class FilterModule:
    def filters(self):
        return {"counters_diff": counters_diff}
