# -*- coding: utf-8 -*-
"""Make ``ansible_collections.aifabric.lab`` importable from a checkout (``make`` links it under .collections)."""
from __future__ import annotations

import os
import sys

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
_LINK = os.path.join(_ROOT, ".collections")
if os.path.isdir(os.path.join(_LINK, "ansible_collections", "aifabric", "lab")) and _LINK not in sys.path:
    sys.path.insert(0, _LINK)


def pytest_configure(config):
    # Tests that create network namespaces need root. `pytest tests/unit` skips them for other users; the integration
    # tier runs them (tests/integration/targets/unit_root: pytest -m needs_root).
    config.addinivalue_line("markers", "needs_root: creates network namespaces or links (root); run by the integration "
                                       "tier's unit_root target")


def pytest_collection_modifyitems(config, items):
    """As an ordinary user, the tests that need root are skipped with the reason (they create namespaces); as root
    they run where asked (the unit tier deselects them with -m "not needs_root"; the integration tier runs them)."""
    if os.geteuid() == 0:
        return
    import pytest

    skip = pytest.mark.skip(reason="needs root (creates network namespaces or links); run as root, or see the "
                                   "integration tier's unit_root target")
    for item in items:
        if "needs_root" in item.keywords:
            item.add_marker(skip)
