# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric's argument spec, shared by fabric_topology and fabric_paths (documented in doc_fragments/fabric.py)."""

from __future__ import annotations

FABRIC_ARGS = dict(
    leaves=dict(type="list", elements="dict", required=True, options=dict(
        name=dict(type="str", required=True),
        namespace=dict(type="str", required=True),
        gateway=dict(type="str", required=True),
    )),
    spines=dict(type="list", elements="dict", default=[], options=dict(
        name=dict(type="str", required=True),
        namespace=dict(type="str", required=True),
    )),
    hosts=dict(type="list", elements="dict", default=[], options=dict(
        name=dict(type="str", required=True),
        namespace=dict(type="str", required=True),
        leaf=dict(type="str", required=True),
        address=dict(type="str", required=True),
        port=dict(type="str"),
        interface=dict(type="str", default="eth0"),
    )),
    mtu=dict(type="int", default=9000),
    hash=dict(type="str", default="l4", choices=["l3", "l4"]),
    seed=dict(type="int"),
    link_subnet=dict(type="str", default="198.19.0.0/16"),
    host_rate=dict(type="str"),
    uplink_rate=dict(type="str"),
)
