# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab_leftovers module's glue: its arguments, and ``run_module`` (the options checked, a scan (and removal) by
``_leftovers.Scanner``, the report). With ``namespaces`` (the netns lab's hosts, from one task), the machine's state
directory is looked at once and each namespace's qdiscs and ifb devices from inside it."""

from __future__ import annotations

from ._flow.state import DEFAULT_STATE_DIR
from ._leftovers import Scanner, table
from ._netns_enter import NETNS_RUN_DIR, valid_name
from ._owner import OWNER_OPTIONS, OwnerError, this_machine
from ._owner import validate as validate_owner
from ._pyroute2 import IPRoute, netns


def module_args():
    """AnsibleModule's keyword arguments for lab_leftovers."""
    return dict(
        argument_spec=dict(
            remove=dict(type="bool", default=False),
            state_dir=dict(type="path", default=DEFAULT_STATE_DIR),
            owner=dict(type="dict", options=OWNER_OPTIONS),
            unowned=dict(type="str", default="keep", choices=["keep", "remove"]),
            results=dict(type="str", default="move", choices=["move", "delete", "keep"]),
            min_age=dict(type="float", default=900.0),
            grace=dict(type="float", default=10.0),
            namespaces=dict(type="list", elements="str"),
        ),
        supports_check_mode=True,
    )


def _line(item):
    return "%s %s (owner %s): %s\n" % (item["kind"], item["name"], item["owner"] or "none", item["reason"])


def run_module(module):
    p = module.params
    try:
        owner = validate_owner(p["owner"])
    except OwnerError as exc:
        module.fail_json(msg=str(exc))
    for key in ("min_age", "grace"):
        if p[key] < 0:
            module.fail_json(msg="%s: %r is negative; give seconds, 0 or more" % (key, p[key]))
    for i, name in enumerate(p["namespaces"] or []):
        if not valid_name(name):
            module.fail_json(msg="namespaces[%d]: %r is not a network namespace name (a name under %s)"
                             % (i, name, NETNS_RUN_DIR))
    if IPRoute is None:
        module.warn("pyroute2 is not installed: qdiscs, ifb devices and labs were not looked at, only the files of "
                    "%s" % p["state_dir"])
    kwargs = dict(owner=owner, unowned=p["unowned"], results=p["results"], min_age=p["min_age"], grace=p["grace"])
    if IPRoute is not None and p["namespaces"]:
        # several hosts of this machine at once: each namespace's qdiscs from a child inside it, none of this one's
        scanner = Scanner(p["state_dir"], netns=netns, iproute=IPRoute, namespaces=p["namespaces"], **kwargs)
        items, changed, errors = scanner.run(p["remove"], module.check_mode)
    elif IPRoute is not None:
        with IPRoute() as ipr:
            scanner = Scanner(p["state_dir"], ipr=ipr, netns=netns, iproute=IPRoute, **kwargs)
            items, changed, errors = scanner.run(p["remove"], module.check_mode)
    else:
        scanner = Scanner(p["state_dir"], **kwargs)
        items, changed, errors = scanner.run(p["remove"], module.check_mode)
    found = [item.to_dict() for item in items]
    done = [i for i in found if i["action"] in ("ended", "removed", "moved", "deleted", "gone")]
    result = dict(changed=changed, leftovers=found, table=table(found), machine=this_machine(),
                  netns=scanner.netns_key,
                  summary={"found": len(found), "removed": len(done),
                           "would_remove": len([i for i in found if i["action"].startswith("would ")]),
                           "kept": len([i for i in found if i["action"] == "kept"]),
                           "failed": len(errors)})
    if module._diff:
        result["diff"] = {"before": "".join(_line(i) for i in found),
                          "after": "".join(_line(i) for i in found if i["action"] in ("kept", "failed")),
                          "before_header": "%s (%s)" % (p["state_dir"], scanner.netns_key),
                          "after_header": "%s (%s)" % (p["state_dir"], scanner.netns_key)}
    if errors:
        module.fail_json(msg="lab_leftovers: %d could not be removed: %s" % (len(errors), "; ".join(errors)),
                         **result)
    module.exit_json(**result)
