# -*- coding: utf-8 -*-
"""The flow modules' state directory is documented once (doc_fragments/state_dir.py) for the modules that keep their
files there or read it whole, and every module that takes ``state_dir`` documents the default its argument spec has:
the one constant, ``_flow.state.DEFAULT_STATE_DIR``."""
from __future__ import annotations

import importlib
import os

import pytest
import yaml
from ansible_collections.aifabric.lab.plugins.doc_fragments.state_dir import ModuleDocFragment
from ansible_collections.aifabric.lab.plugins.module_utils._flow.state import DEFAULT_STATE_DIR

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
MODULES = os.path.join(ROOT, "plugins", "modules")
NAMES = sorted(f[:-3] for f in os.listdir(MODULES) if f.endswith(".py") and not f.startswith("_"))
FRAGMENT = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]["state_dir"]
# the modules whose state_dir is the directory itself (not one kind of record in it): documented by the fragment
SHARED = {"flow", "flow_step", "lab_leftovers", "preflight_info"}


def doc(name):
    module = importlib.import_module("ansible_collections.aifabric.lab.plugins.modules.%s" % name)
    return yaml.safe_load(module.DOCUMENTATION), module


def spec(module):
    glue = None
    for node in vars(module).values():
        if getattr(node, "__name__", None) == "module_args":
            glue = node
    return glue()["argument_spec"] if glue else {}


def test_the_fragment_documents_the_codes_default():
    assert FRAGMENT["type"] == "path" and FRAGMENT["default"] == DEFAULT_STATE_DIR == "/run/aifabric-lab"


@pytest.mark.parametrize("name", NAMES)
def test_every_state_dir_is_documented_with_its_default(name):
    documentation, module = doc(name)
    argument_spec = spec(module)
    if "state_dir" not in argument_spec:
        assert "aifabric.lab.state_dir" not in documentation.get("extends_documentation_fragment", [])
        return
    own = (documentation.get("options") or {}).get("state_dir")
    uses_fragment = "aifabric.lab.state_dir" in documentation.get("extends_documentation_fragment", [])
    assert uses_fragment == (name in SHARED)
    assert (own is None) == uses_fragment, "%s: document state_dir once (its own entry or the fragment)" % name
    documented = FRAGMENT if uses_fragment else own
    assert argument_spec["state_dir"] == {"type": "path", "default": DEFAULT_STATE_DIR}
    assert (documented["type"], documented["default"]) == ("path", argument_spec["state_dir"]["default"])


def test_the_shared_modules_take_state_dir():
    assert {n for n in NAMES if "state_dir" in spec(doc(n)[1])} >= SHARED
