# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters ``ecn_port_books`` and ``ecn_books_table``: the switch ports' marks and drops of a variant, and the
variants side by side; ``incast_cells``: the incast sweep's cells (plugin_utils/_congestion.py)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.aifabric.lab.plugins.plugin_utils._congestion import CongestionError, port_deltas, side_by_side
from ansible_collections.aifabric.lab.plugins.plugin_utils._congestion import incast_cells as _incast_cells


def ecn_port_books(before, after):
    try:
        return port_deltas(before, after)
    except CongestionError as exc:
        raise AnsibleFilterError("ecn_port_books: %s" % exc) from None


def ecn_books_table(variants):
    try:
        return side_by_side(variants)
    except (KeyError, TypeError) as exc:
        raise AnsibleFilterError("ecn_books_table: give [{name, books}] with books from ecn_port_books (%s)" % exc) \
            from None


def incast_cells(grid, threshold="60KB", workers=None):
    try:
        return _incast_cells(grid, threshold, workers)
    except CongestionError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    def filters(self):
        return {"ecn_port_books": ecn_port_books, "ecn_books_table": ecn_books_table,
                "incast_cells": incast_cells}
