# -*- coding: utf-8 -*-
"""meta/runtime.yml's plugin_routing: every redirected name points at a plugin that exists, with a deprecation that
says when it goes and what to use; the info modules carry the _info name, their old names redirected."""
from __future__ import annotations

import os

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
DIRS = {"modules": "modules", "filter": "filter", "action": "action"}


def _routing():
    with open(os.path.join(ROOT, "meta", "runtime.yml")) as handle:
        return yaml.safe_load(handle).get("plugin_routing") or {}


def test_every_redirect_reaches_a_plugin_of_this_collection_and_says_when_it_goes():
    checked = 0
    for ptype, plugins in _routing().items():
        for name, entry in plugins.items():
            assert entry.get("deprecation", {}).get("removal_version"), (ptype, name)
            assert entry["deprecation"].get("warning_text"), (ptype, name)
            target = entry.get("redirect")
            if target:
                assert target.startswith("aifabric.lab."), target
                short = target.split(".", 2)[2]
                assert os.path.isfile(os.path.join(ROOT, "plugins", DIRS[ptype], short + ".py")), target
                assert not os.path.exists(os.path.join(ROOT, "plugins", DIRS[ptype], name + ".py")), name
                checked += 1
    assert checked >= 2


def test_the_info_modules_old_names_are_redirected():
    modules = _routing()["modules"]
    assert modules["port_counters"]["redirect"] == "aifabric.lab.port_counters_info"
    assert modules["fabric_paths"]["redirect"] == "aifabric.lab.fabric_paths_info"
