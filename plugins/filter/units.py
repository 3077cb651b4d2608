# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters ``rate_bps``: a rate as network engineers write it (``8gbit``), in bit/s; ``size_bytes``: a size
(``400KB``, ``1MiB``), in bytes."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.aifabric.lab.plugins.module_utils._units import UnitError, parse_rate, parse_size


def rate_bps(value, name="rate"):
    try:
        return parse_rate(value, name)
    except UnitError as exc:
        raise AnsibleFilterError(str(exc)) from None


def size_bytes(value, name="size"):
    try:
        return parse_size(value, name)
    except UnitError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    def filters(self):
        return {"rate_bps": rate_bps, "size_bytes": size_bytes}
