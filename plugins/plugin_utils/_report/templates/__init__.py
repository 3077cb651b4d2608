# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's templates and style, as files beside this one (they are read with this file's path: a checkout and an
installed collection alike)."""

from __future__ import annotations

import os

__all__ = ["template_text"]

_HERE = os.path.dirname(os.path.abspath(__file__))


def template_text(name):
    """The text of the template ``name`` (``report.txt.j2``, ``report.html.j2``, ``report.css``)."""
    with open(os.path.join(_HERE, name), encoding="utf-8") as handle:
        return handle.read()
