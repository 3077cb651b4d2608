# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The peers a server or the rendezvous refused, kept in a bounded list: one entry per (address, reason) with a
count, at most ``KEEP`` entries, and the totals, so that 2,000 connections from a stray host cost one entry."""

from __future__ import annotations

import threading
import time

__all__ = ["Refusals", "KEEP", "REASON_MAX"]

KEEP = 32  # distinct (peer, reason) entries; further refusals are counted in ``rejected_unlisted``
REASON_MAX = 200  # characters of a reason kept


def short(text, size=REASON_MAX):
    """``text`` cut to ``size`` characters (a reason may quote what a peer sent)."""
    text = str(text)
    return text if len(text) <= size else text[:size - 3] + "..."


class Refusals:
    """Keeps ``record["rejected"]`` (entries ``{peer, reason, count, first_at, last_at}``), ``rejected_total`` and
    ``rejected_unlisted`` in ``record``. Safe to call from several threads."""

    def __init__(self, record, keep=KEEP, clock=time.time):
        self.record = record
        self.keep = keep
        self.clock = clock
        self.index = {}
        self.lock = threading.Lock()
        record["rejected"] = []
        record["rejected_total"] = 0
        record["rejected_unlisted"] = 0

    def add(self, peer, reason):
        reason = short(reason)
        now = self.clock()
        with self.lock:
            self.record["rejected_total"] += 1
            entry = self.index.get((peer, reason))
            if entry is not None:
                entry["count"] += 1
                entry["last_at"] = now
            elif len(self.record["rejected"]) < self.keep:
                entry = {"peer": peer, "reason": reason, "count": 1, "first_at": now, "last_at": now}
                self.index[(peer, reason)] = entry
                self.record["rejected"].append(entry)
            else:
                self.record["rejected_unlisted"] += 1
