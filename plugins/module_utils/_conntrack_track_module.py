# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The conntrack_track module's glue: its arguments, and ``run_module`` (read the namespace's tracking, compare,
set it with ``_conntrack.set_tracking``)."""

from __future__ import annotations

from ._conntrack import TRACK_TABLE, loaded, set_tracking, tracking_state
from ._pyroute2 import require_pyroute2

try:
    from pyroute2.nftables.main import NFTables
except ImportError:
    NFTables = None


def module_args():
    """AnsibleModule's keyword arguments for conntrack_track."""
    return dict(
        argument_spec=dict(accounting=dict(type="bool", default=True),
                           state=dict(type="str", default="present", choices=["present", "absent"])),
        supports_check_mode=True,
    )


def run_module(module, nftables_class=None, proc="/proc"):
    require_pyroute2(module)
    nftables_class = nftables_class or NFTables
    present = module.params["state"] == "present"
    want_acct = module.params["accounting"]
    if not loaded(proc):
        module.fail_json(msg="conntrack is not loaded on this host (no %s/sys/net/netfilter/nf_conntrack_count): load "
                             "the nf_conntrack module first" % proc)
    try:
        with nftables_class() as nft:
            before = tracking_state(nft, proc)
            after = {"tracking": present, "accounting": before["accounting"] or (present and want_acct)}
            changed = before != after
            if changed and not module.check_mode:
                set_tracking(nft, present, want_acct, proc)
    except (OSError, ValueError) as exc:
        module.fail_json(msg="cannot change the namespace's nftables or sysctl: %s" % exc)
    module.exit_json(changed=changed, diff={"before": before, "after": after}, table=TRACK_TABLE, **after)
