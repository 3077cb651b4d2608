# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The conntrack_info module's glue: its arguments, and ``run_module`` (the table's size from pyroute2's conntrack
socket, its census from ``_conntrack``)."""

from __future__ import annotations

import os

from ._conntrack import CensusError, accounting_on, census, loaded, read_table
from ._pyroute2 import require_pyroute2
from ._units import UnitError, parse_size

try:
    from pyroute2 import Conntrack
except ImportError:
    Conntrack = None


def module_args():
    """AnsibleModule's keyword arguments for conntrack_info."""
    return dict(
        argument_spec=dict(top=dict(type="int", default=10), elephant_bytes=dict(type="str", default="10MB")),
        supports_check_mode=True,
    )


def run_module(module, conntrack_class=None, proc="/proc"):
    require_pyroute2(module)
    conntrack_class = conntrack_class or Conntrack
    params = module.params
    if not loaded(proc):
        base = os.path.join(proc, "sys/net/netfilter")
        module.exit_json(changed=False, loaded=False, entries=0, msg=(
            "conntrack is not loaded on this host (no %s/nf_conntrack_count): load the nf_conntrack module, or add a "
            "rule that uses it (nftables 'ct state', iptables '-m conntrack')" % base))
    accounting = accounting_on(proc)
    if params["top"] < 0:
        module.fail_json(msg="top: %d; give a number of entries, 0 or more" % params["top"])
    try:
        threshold = parse_size(params["elephant_bytes"], "elephant_bytes", minimum=1)
    except UnitError as exc:
        module.fail_json(msg=str(exc))
    try:
        with conntrack_class() as ct:
            kernel_count, kernel_max = ct.count(), ct.conntrack_max_size()
        result = census(read_table(), top=params["top"], elephant_bytes=threshold, accounting=accounting)
    except (OSError, CensusError) as exc:
        module.fail_json(msg="cannot read the conntrack table: %s" % exc)
    result.update(changed=False, loaded=True, kernel_count=kernel_count, max_entries=kernel_max)
    if not result["entries"]:
        result["msg"] = ("the table is empty: a network namespace tracks nothing until a rule in it uses conntrack "
                         "(nftables 'ct state', iptables '-m conntrack', NAT); see docs/census.md")
    elif not accounting:
        result["msg"] = ("bytes are not counted (net.netfilter.nf_conntrack_acct = 0): set it to 1 (sysctl, per "
                         "namespace) before the connections start, for the top entries by bytes and the "
                         "elephant/mice split by bytes")
    module.exit_json(**result)
