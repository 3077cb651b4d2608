# -*- coding: utf-8 -*-
"""Make ``ansible_collections.aifabric.lab`` importable from a checkout (``make`` links it under .collections)."""
from __future__ import annotations

import os
import sys

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
_LINK = os.path.join(_ROOT, ".collections")
if os.path.isdir(os.path.join(_LINK, "ansible_collections", "aifabric", "lab")) and _LINK not in sys.path:
    sys.path.insert(0, _LINK)
