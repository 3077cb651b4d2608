# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The marker records of what the collection makes on a host, in its state directory (``/run/aifabric-lab``, a
tmpfs: the records go at a reboot, with the qdiscs, namespaces and processes they describe):

* ``shapers/<netns>/<device>.json``: a shaper tc_shape or throttle put on ``device`` (its qdisc, the ifb it
  shapes through, the owner);
* ``labs/<switch namespace>.json``: a lab netns_topology built (its namespaces, its topology, the owner).

``<netns>`` names the network namespace the module ran in: ``host`` for the machine's own, ``netns-<name>`` for a
named one (``/run/netns/<name>``, the netns lab's hosts), ``ns-<inode>`` for any other. Every record carries
``"marker": "aifabric.lab"`` and the ``kind`` it describes; each is written atomically.
"""

from __future__ import annotations

import json
import os
import re
import time

from ._atomic import write_json
from ._owner import describe, liveness

__all__ = ["MARKER", "netns_key", "shaper_record_path", "lab_record_path", "read_record", "write_record",
           "remove_record", "records", "held_by_another", "same_record"]

MARKER = "aifabric.lab"
NETNS_RUN_DIR = "/run/netns"
_SAFE = re.compile(r"[^A-Za-z0-9_.:@+-]+")


def _safe(name):
    return _SAFE.sub("_", str(name)) or "_"


def _ns_id(path):
    st = os.stat(path)
    return st.st_dev, st.st_ino


def netns_key(proc="/proc", run_dir=NETNS_RUN_DIR):
    """The name of the network namespace this process runs in (see the module's docstring)."""
    try:
        mine = _ns_id(os.path.join(proc, "self/ns/net"))
    except OSError:
        return "host"
    try:
        if _ns_id(os.path.join(proc, "1/ns/net")) == mine:
            return "host"
    except OSError:
        pass
    for name in sorted(os.listdir(run_dir)) if os.path.isdir(run_dir) else []:
        try:
            if _ns_id(os.path.join(run_dir, name)) == mine:
                return "netns-" + name
        except OSError:
            continue
    return "ns-%d" % mine[1]


def shaper_record_path(state_dir, netns, device):
    return os.path.join(state_dir, "shapers", _safe(netns), "%s.json" % _safe(device))


def lab_record_path(state_dir, switch):
    return os.path.join(state_dir, "labs", "%s.json" % _safe(switch))


def read_record(path):
    """The record at ``path``, or None (absent, unreadable, or not ours)."""
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("marker") == MARKER else None


def write_record(path, data):
    for attempt in range(3):
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        try:
            return write_json(path, dict(data, marker=MARKER))
        except FileNotFoundError:
            # another host of this machine removed the namespace's directory (its last record) in between
            if attempt == 2:
                raise
    return None


def remove_record(path):
    """Remove a record; False when it was not there (another host of this machine took it first). A namespace's
    directory of shapers goes with its last record (a lab that came and went leaves nothing under shapers/)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    parent = os.path.dirname(path)
    if os.path.basename(os.path.dirname(parent)) == "shapers":
        try:
            os.rmdir(parent)
        except OSError:
            pass   # another record is there (or was just written)
    return True


def records(state_dir, kind):
    """``[(path, record)]`` of one kind (``shapers``, ``labs``), every namespace's."""
    base = os.path.join(state_dir, kind)
    out = []
    for dirpath, _dirs, names in sorted(os.walk(base)) if os.path.isdir(base) else []:
        for name in sorted(names):
            if name.endswith(".json") and not name.startswith("."):
                path = os.path.join(dirpath, name)
                data = read_record(path)
                if data is not None:
                    out.append((path, data))
    return out


def held_by_another(record, owner, now=None, root="/"):
    """The live owner, other than ``owner`` (the caller's, or None), that holds what ``record`` describes, as
    ``(owner, why it is live)``; None when the caller may change it (no owner recorded, the caller's own, or an
    owner that is gone)."""
    held = (record or {}).get("owner")
    if not held or (owner and held.get("id") == owner.get("id")):
        return None
    live, reason = liveness(held, now if now is not None else time.time(), root)
    return (held, reason) if live else None


def same_record(old, new):
    """Whether writing ``new`` over ``old`` changes anything but bookkeeping (when it was written, a renewed lease
    of the same owner)."""
    if old is None:
        return False

    def core(rec):
        out = {k: v for k, v in rec.items() if k not in ("created_at", "updated_at", "marker")}
        if out.get("owner"):
            out["owner"] = {k: v for k, v in out["owner"].items() if k != "lease_until"}
        return out

    return core(old) == core(new)


def owner_text(owner):
    return describe(owner)
