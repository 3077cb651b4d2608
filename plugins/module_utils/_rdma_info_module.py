# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rdma_info module's glue: its arguments, and ``run_module`` (pyverbs found, in this Python or by respawning
under the system's; the facts from ``_rdma_info.gather``)."""

from __future__ import annotations

import traceback

from ansible.module_utils.basic import missing_required_lib
from ansible.module_utils.common.respawn import has_respawned, probe_interpreters_for_module, respawn_module

from ._rdma_info import PyverbsAdapter, devices_present, gather

try:
    import pyverbs.device as pyverbs_device
except ImportError:
    pyverbs_device = None
    PYVERBS_IMPORT_ERROR = traceback.format_exc()
else:
    PYVERBS_IMPORT_ERROR = None

SYSTEM_PYTHONS = ["/usr/bin/python3", "/usr/libexec/platform-python", "/usr/bin/python"]


def module_args():
    """AnsibleModule's keyword arguments for rdma_info."""
    return dict(argument_spec=dict(devices=dict(type="list", elements="str")), supports_check_mode=True)


def run_module(module):
    if not devices_present():
        module.exit_json(changed=False, **gather(None))
    if pyverbs_device is None:
        if not has_respawned():
            interpreter = probe_interpreters_for_module(SYSTEM_PYTHONS, "pyverbs")
            if interpreter:
                respawn_module(interpreter)
        module.fail_json(msg=missing_required_lib("pyverbs", reason="to query the RDMA devices (Debian: apt install "
                                                  "python3-pyverbs)"), exception=PYVERBS_IMPORT_ERROR)
    try:
        facts = gather(PyverbsAdapter(pyverbs_device), devices=module.params["devices"])
    except KeyError as exc:
        module.fail_json(msg=str(exc).strip('"'))
    module.exit_json(changed=False, **facts)
