# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures shared by the controller's unit tests of more than one folder (_analysis/ and _fabric/)."""
from __future__ import annotations

import pytest

NICS = ("m1r1", "m1r2", "m2r1", "m2r2")


def _rails_inventory(workers=NICS, sinks=(), spines=2, relay_rate="10gbit", relay=True):
    """A rail-optimized fabric's inventory, as ``fabric_topology`` and ``plan`` read it: two machines of two NICs
    (m1r1 m1r2, m2r1 m2r2), NIC r on rail r (rail1 198.18.1.0/24, rail2 198.18.2.0/24), ``spines`` spines; with
    ``relay`` the in-host relay on (rail1's lab_rail_relay, at ``relay_rate``). Returns ``(groups, hostvars)``:
    ``workers`` in that order, ``sinks`` (a group only when given); hostvars for the rails and every NIC."""
    groups = {"leaves": ["rail1", "rail2"], "spines": ["spine%d" % k for k in range(1, spines + 1)],
              "workers": list(workers)}
    if sinks:
        groups["sinks"] = list(sinks)
    rail1 = {"lab_subnet": "198.18.1.0/24"}
    if relay:
        rail1.update(lab_rail_relay=True, lab_relay_rate=relay_rate)
    hostvars = {"rail1": rail1,
                "rail2": {"lab_subnet": "198.18.2.0/24"},
                "m1r1": {"lab_leaf": "rail1", "lab_address": "198.18.1.11", "lab_machine": "m1"},
                "m1r2": {"lab_leaf": "rail2", "lab_address": "198.18.2.11", "lab_machine": "m1"},
                "m2r1": {"lab_leaf": "rail1", "lab_address": "198.18.1.12", "lab_machine": "m2"},
                "m2r2": {"lab_leaf": "rail2", "lab_address": "198.18.2.12", "lab_machine": "m2"}}
    return groups, hostvars


@pytest.fixture
def rails_inventory():
    """``rails_inventory(workers=..., sinks=..., spines=2, relay_rate="10gbit", relay=True)``: ``(groups, hostvars)``
    of the rail fabric of two machines of two NICs (new dicts at every call)."""
    return _rails_inventory
