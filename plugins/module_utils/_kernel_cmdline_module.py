# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel_cmdline module's glue: its arguments, and ``run_module`` (the boot loader's configuration read, edited
and compared by ``_cmdline``, written atomically)."""

from __future__ import annotations

import os
import tempfile

from ._cmdline import (
    UPDATE,
    CmdlineError,
    edit,
    find_config,
    read_config,
    render_config,
    running_has,
    validate,
    validate_variable,
)


def module_args():
    """AnsibleModule's keyword arguments for kernel_cmdline."""
    return dict(
        argument_spec=dict(
            args=dict(type="list", elements="str", required=True),
            state=dict(type="str", default="present", choices=["present", "absent"]),
            path=dict(type="path"),
            variable=dict(type="str", default="GRUB_CMDLINE_LINUX"),
        ),
        supports_check_mode=True,
    )


def run_module(module):
    p = module.params
    try:
        validate(p["args"])
        validate_variable(p["variable"])
        path = find_config(path=p["path"])
        lines, index, words = read_config(path, p["variable"])
    except CmdlineError as exc:
        module.fail_json(msg=str(exc))
    new = edit(words, p["args"], p["state"])
    before, after = render_config(path, p["variable"], lines, index, words), render_config(
        path, p["variable"], lines, index, new)
    changed = new != words
    if changed and not module.check_mode:
        module.atomic_move(_tmp(module, after), path)
    update = UPDATE.get(os.path.basename(path), [])
    result = dict(changed=changed, path=path, args=new, update_command=update,
                  reboot_required=not running_has(p["args"], p["state"]))
    if module._diff:
        result["diff"] = {"before": before, "after": after, "before_header": path, "after_header": path}
    module.exit_json(**result)


def _tmp(module, text):
    fd, tmp = tempfile.mkstemp(dir=module.tmpdir)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    return tmp
