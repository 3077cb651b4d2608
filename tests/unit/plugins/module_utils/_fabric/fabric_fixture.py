# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A fabric's description as the fabric modules receive it (leaves, spines, hosts), for the _fabric tests."""
from __future__ import annotations

PREFIX = "aflt-fabu-"


def params(n_leaves=2, n_spines=2, hosts_per_leaf=1, **kw):
    out = {
        "leaves": [{"name": "leaf%d" % i, "namespace": PREFIX + "leaf%d" % i, "gateway": "198.18.%d.254/24" % i}
                   for i in range(1, n_leaves + 1)],
        "spines": [{"name": "spine%d" % k, "namespace": PREFIX + "spine%d" % k} for k in range(1, n_spines + 1)],
        "hosts": [{"name": "w%d%d" % (i, j), "namespace": PREFIX + "w%d%d" % (i, j), "leaf": "leaf%d" % i,
                   "address": "198.18.%d.%d/24" % (i, 10 + j)}
                  for i in range(1, n_leaves + 1) for j in range(1, hosts_per_leaf + 1)],
        "mtu": 9000, "hash": "l4", "seed": 7,
    }
    out.update(kw)
    return out
