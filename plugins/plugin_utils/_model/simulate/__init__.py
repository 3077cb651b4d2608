# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The flow simulator: the solver (``solver``: max-min fair share event by event, a million flows), ECMP placement
(``placement``) and the fabrics it runs on (``fabrics``: ``leaf_spine``, ``fat_tree``, ``clos3``,
``rail_optimized``). Import its public functions from here; the modules are its parts."""

from __future__ import annotations

from .fabrics import Fabric, clos3, fat_tree, leaf_spine, rail_optimized
from .placement import ecmp_place, flow_hash
from .solver import Simulation, SimulationError, ideal_completions, max_min, simulate, simulate_arrays

__all__ = ["SimulationError", "Simulation", "Fabric", "simulate", "simulate_arrays", "max_min", "ideal_completions",
           "ecmp_place", "flow_hash", "leaf_spine", "fat_tree", "clos3",
           "rail_optimized"]
