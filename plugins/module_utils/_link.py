# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A directed link between two nodes, and its name: ``worker1->leaf1`` (the sender first).

Every link the collection names is written by ``link_name`` and read back by ``Link.parse``: the plan's paths, the
fabric's links and route lookups (host side), the simulator's fabrics, the report's fabric analysis. A flow that a
host sends to one of several peers is named the same way (``w1->w2``).
"""

from __future__ import annotations

from collections import namedtuple

__all__ = ["ARROW", "Link", "link_name"]

ARROW = "->"


class Link(namedtuple("Link", ("src", "dst"))):
    """A directed link: ``src`` sends into it, ``dst`` receives from it."""

    __slots__ = ()

    def __str__(self):
        return "%s%s%s" % (self.src, ARROW, self.dst)

    @classmethod
    def parse(cls, name):
        """``Link('a', 'b')`` from ``a->b``; ValueError for a name that is not a link's (``worker3 egress``)."""
        src, sep, dst = str(name).partition(ARROW)
        if not sep or not src or not dst:
            raise ValueError("%r is not a link's name (src->dst)" % (name,))
        return cls(src, dst)


def link_name(src, dst):
    """The name of the link from ``src`` to ``dst``."""
    return "%s%s%s" % (src, ARROW, dst)
