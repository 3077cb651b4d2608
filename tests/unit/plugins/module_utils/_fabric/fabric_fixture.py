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


def clos3_params(**kw):
    """A 3-tier Clos: pods 1 and 2, each one leaf (leaf1, leaf2) under two spines (spine1.1 spine1.2, spine2.1
    spine2.2), two superspines: super1 above each pod's first spine (plane 1), super2 above the second (plane 2)."""
    out = {
        "leaves": [{"name": "leaf%d" % p, "namespace": PREFIX + "leaf%d" % p, "gateway": "198.18.%d.254/24" % p,
                    "pod": str(p)} for p in (1, 2)],
        "spines": [{"name": "spine%d.%d" % (p, k), "namespace": PREFIX + "sp%d%d" % (p, k), "pod": str(p)}
                   for p in (1, 2) for k in (1, 2)],
        "superspines": [{"name": "super%d" % c, "namespace": PREFIX + "super%d" % c, "plane": c} for c in (1, 2)],
        "hosts": [{"name": "w%d" % p, "namespace": PREFIX + "w%d" % p, "leaf": "leaf%d" % p,
                   "address": "198.18.%d.11/24" % p} for p in (1, 2)],
        "mtu": 9000, "hash": "l4", "seed": 7,
    }
    out.update(kw)
    return out


def rail_params(relay=True, **kw):
    """A rail-optimized fabric: two machines m1, m2 of two NICs each (m1r1 on rail1, m1r2 on rail2, ...), one spine
    above the rails; with ``relay`` each machine's NICs joined by an in-host link."""
    out = {
        "leaves": [{"name": "rail%d" % r, "namespace": PREFIX + "rail%d" % r, "gateway": "198.18.%d.254/24" % r}
                   for r in (1, 2)],
        "spines": [{"name": "spine1", "namespace": PREFIX + "spine1"}],
        "hosts": [{"name": "m%dr%d" % (m, r), "namespace": PREFIX + "m%dr%d" % (m, r), "leaf": "rail%d" % r,
                   "address": "198.18.%d.%d/24" % (r, 10 + m), "machine": "m%d" % m} for m in (1, 2) for r in (1, 2)],
        "mtu": 9000, "hash": "l4", "seed": 7, "relay": relay,
    }
    out.update(kw)
    return out
