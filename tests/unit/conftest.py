# -*- coding: utf-8 -*-
"""Make ``ansible_collections.aifabric.lab`` importable from a checkout (``make`` links it under .collections)."""
from __future__ import annotations

import os
import re
import sys

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
_LINK = os.path.join(_ROOT, ".collections")
if os.path.isdir(os.path.join(_LINK, "ansible_collections", "aifabric", "lab")) and _LINK not in sys.path:
    sys.path.insert(0, _LINK)


# The tests that exercise ansible-core itself (its plugin base classes, AnsibleModule's argument handling, its CLIs),
# marked reaches_core: the ansible-core matrix runs only these on a version whose Python another row already runs the
# whole suite on (tests/matrix/run.sh --units lean). The rest (the plan, the model, the analysis, the host code with a
# fake module) is the same code on every ansible-core; it runs on every Python of the matrix.
_CORE_KINDS = {"action", "callback", "connection", "filter", "modules", "inventory", "lookup", "doc_fragments"}
_CORE_TEXT = re.compile(r"^\s*(from|import)\s+ansible\.(?!errors\b)|ansible-(playbook|doc|test|galaxy)\b", re.M)
_core_cache = {}
_core_users = []


def _core_user_patterns():
    """Regexes that find an import of one of the collection's files that import an ansible-core API (other than
    ansible.errors): a test importing one of them reaches ansible-core through it."""
    if not _core_users:
        plugins = os.path.join(_ROOT, "plugins")
        for top, _dirs, files in os.walk(plugins):
            for name in files:
                if not name.endswith(".py"):
                    continue
                with open(os.path.join(top, name), encoding="utf-8") as f:
                    if not _CORE_TEXT.search(f.read()):
                        continue
                rel = os.path.relpath(os.path.join(top, name[:-3]), _ROOT).split(os.sep)
                if rel[-1] == "__init__":
                    rel = rel[:-1]
                package, module = ".".join(rel[:-1]), rel[-1]
                _core_users.append(re.compile(r"%s\.%s\b|%s import [^\n]*\b%s\b"
                                              % (re.escape(package), module, re.escape(package), module)))
    return _core_users


def reaches_core(path):
    """Whether the test file at ``path`` exercises an ansible-core API: it tests a plugin (_CORE_KINDS), imports
    ansible-core or runs its CLIs (_CORE_TEXT), or imports a file of the collection that does."""
    path = str(path)
    if path not in _core_cache:
        parts = os.path.relpath(path, os.path.dirname(__file__)).split(os.sep)
        if len(parts) > 2 and parts[0] == "plugins" and parts[1] in _CORE_KINDS:
            _core_cache[path] = True
        else:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            _core_cache[path] = bool(_CORE_TEXT.search(text)) or any(p.search(text) for p in _core_user_patterns())
    return _core_cache[path]


def pytest_configure(config):
    # Tests that create network namespaces need root. `pytest tests/unit` skips them for other users; the integration
    # tier runs them (tests/integration/targets/unit_root: pytest -m needs_root).
    config.addinivalue_line("markers", "needs_root: creates network namespaces or links (root); run by the integration "
                                       "tier's unit_root target")
    config.addinivalue_line("markers", "reaches_core: exercises ansible-core itself (set from the file's place and "
                                       "imports: reaches_core(); the matrix's lean rows run these alone)")


def pytest_collection_modifyitems(config, items):
    """As an ordinary user, the tests that need root are skipped with the reason (they create namespaces); as root
    they run where asked (the unit tier deselects them with -m "not needs_root"; the integration tier runs them).
    Every test of a file that reaches ansible-core is marked reaches_core."""
    import pytest

    for item in items:
        if reaches_core(item.path):
            item.add_marker(pytest.mark.reaches_core)
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root (creates network namespaces or links); run as root, or see the "
                                   "integration tier's unit_root target")
    for item in items:
        if "needs_root" in item.keywords:
            item.add_marker(skip)
