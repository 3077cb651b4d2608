# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Two counter snapshots to what moved, and the verdict the seed's lab read off its counters: every error counter
still zero while the step ran slower than its fair share."""

from __future__ import annotations

import re

__all__ = ["diff", "verdict", "is_error_counter", "is_congestion_counter"]

_ERROR = re.compile(r"(err|error|discard|drop|symbol|downed|overrun|out_of_buffer|out_of_sequence|seq_err|retry|"
                    r"retrans|timeout|nak|constraint|vl15|collision|carrier|fifo|missed|over_errors|frame)", re.I)
_CONGESTION = re.compile(r"(xmit_wait|cnp|ecn|overlimits|requeues|backlog|pause)", re.I)


def is_error_counter(name):
    return bool(_ERROR.search(name)) and not _CONGESTION.search(name)


def is_congestion_counter(name):
    return bool(_CONGESTION.search(name))


def _walk(tree, path=()):
    for key, value in (tree or {}).items():
        if isinstance(value, dict):
            yield from _walk(value, path + (str(key),))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            yield path + (str(key),), value


def diff(before, after):
    """Deltas of every counter present in both snapshots, plus the error and congestion counters that moved."""
    old = dict(_walk({k: before.get(k) for k in ("rdma", "netdev", "qdisc")}))
    deltas, errors, congestion = {}, {}, {}
    for path, value in _walk({k: after.get(k) for k in ("rdma", "netdev", "qdisc")}):
        if path not in old:
            continue
        delta = value - old[path]
        name = "/".join(path)
        deltas[name] = delta
        if delta and is_error_counter(path[-1]):
            errors[name] = delta
        elif delta and is_congestion_counter(path[-1]):
            congestion[name] = delta
    seconds = (after.get("taken_at") or 0) - (before.get("taken_at") or 0)
    return {"seconds": round(seconds, 6), "deltas": deltas, "errors": errors, "congestion": congestion}


def verdict(delta, slower_than_fair_share=None):
    """One sentence: the error counters, the congestion counters, and (when given) how far the step ran slow."""
    if delta["errors"]:
        text = "error counters moved: %s" % ", ".join("%s +%d" % kv for kv in sorted(delta["errors"].items()))
    else:
        text = "all error counters zero"
    if delta["congestion"]:
        text += "; congestion counters moved: %s" % ", ".join(
            "%s +%d" % kv for kv in sorted(delta["congestion"].items()))
    if slower_than_fair_share is not None:
        text += ", step %.0f%% slower than fair share" % (slower_than_fair_share * 100)
    return text
