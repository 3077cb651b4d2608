# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fabrics for the simulator: ``leaf_spine``, ``fat_tree``, ``clos3`` (pods of leaf-spine under superspines) and
``rail_optimized`` (hosts with R NICs, NIC r on rail leaf r, spines above the rails, optionally PXN's in-host relay)
build topologies (links named ``h1->leaf1``, ``leaf1->spine2``...) that give, for a host pair, its equal-cost paths,
by name for a few flows and as index arrays (CSR, for ``simulate_arrays``) for a million. Each tier's link rate is its
own, so a fabric is oversubscribed by its rates (``oversubscription``)."""

from __future__ import annotations

from ansible_collections.aifabric.lab.plugins.module_utils._link import link_name

from .solver import SimulationError, csr_ptr, need_numpy, np

__all__ = ["Fabric", "leaf_spine", "fat_tree", "clos3", "rail_optimized"]

# --- fabrics -------------------------------------------------------------------------------------------------------


def _rate(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
        raise SimulationError("%s: %r is not a rate: give bit/s as a number > 0 (e.g. 100e9)" % (name, value))
    return float(value)


def _count(value, name, minimum=1, even=False):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum or (even and value % 2):
        raise SimulationError("%s: %r; expected %s integer >= %d" % (name, value, "an even" if even else "an",
                                                                     minimum))
    return value


class Fabric:
    """A topology: hosts, directed links with capacities, and each host pair's equal-cost paths.

    Built by ``leaf_spine`` or ``fat_tree``. By name (a few flows): ``links`` ({link: bit/s}), ``hosts``,
    ``paths(src, dst)``. As arrays (a million flows): ``capacity``, ``path_count(src, dst)``,
    ``path_links(src, dst, choice)`` (CSR for ``simulate_arrays``), ``ecmp(src, dst, hash, seed)``, ``hose(src, dst)``
    (the ideal's paths when ``nonblocking``); hosts by index.
    """

    kind = "fabric"
    nonblocking = False
    oversubscription = None  # per tier: the rate its switches take in from below over the rate they send up

    def __init__(self, hosts, link_names, capacity, width):
        self.hosts = hosts
        self.link_names = link_names
        self.capacity = capacity
        self.width = width  # the longest path, in links
        self._host_index = {h: i for i, h in enumerate(hosts)}

    @property
    def links(self):
        return dict(zip(self.link_names, self.capacity.tolist()))

    def host_index(self, host):
        if isinstance(host, (int, np.integer)) and not isinstance(host, bool) and 0 <= host < len(self.hosts):
            return int(host)
        if host in self._host_index:
            return self._host_index[host]
        raise SimulationError("host %r is not in this %s (hosts %s ... %s, or indices 0 to %d)"
                              % (host, self.kind, self.hosts[0], self.hosts[-1], len(self.hosts) - 1))

    def _pairs(self, src, dst):
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        if src.shape != dst.shape or src.ndim != 1:
            raise SimulationError("src and dst: expected two 1-d arrays of host indices of the same length")
        n = len(self.hosts)
        if src.size and (src.min() < 0 or dst.min() < 0 or src.max() >= n or dst.max() >= n):
            raise SimulationError("src/dst: host indices run from 0 to %d" % (n - 1))
        if (src == dst).any():
            i = int(np.flatnonzero(src == dst)[0])
            raise SimulationError("flow %d goes from host %s to itself: it would cross no link; give it another "
                                  "destination" % (i, self.hosts[src[i]]))
        return src, dst

    def path_count(self, src, dst):
        """The number of equal-cost paths of each (src, dst) pair (arrays of host indices)."""
        src, dst = self._pairs(src, dst)
        return self._count(src, dst)

    def path_links(self, src, dst, choice):
        """(indptr, indices): the CSR of each flow's chosen path (``choice``: index among its equal-cost paths)."""
        src, dst = self._pairs(src, dst)
        choice = np.asarray(choice, dtype=np.int64)
        counts = self._count(src, dst)
        if choice.shape != src.shape or (choice < 0).any() or (choice >= counts).any():
            raise SimulationError("choice: one path index per flow, from 0 to its path count - 1 (path_count)")
        grid = self._grid(src, dst, choice)
        valid = grid >= 0
        return csr_ptr(valid.sum(axis=1)), grid[valid]

    def ecmp(self, src, dst, hash="random", seed=0):
        """Each flow's path index among its equal-cost paths: ``"random"`` draws them with numpy's generator seeded
        with ``seed`` (uniform, in flow order: the same flows and seed give the same placement), or an array of
        indices is checked and returned."""
        counts = self.path_count(src, dst)
        if isinstance(hash, str):
            if hash != "random":
                raise SimulationError("hash: expected 'random' or an array of path indices, got %r" % (hash,))
            return np.random.default_rng(seed).integers(0, counts)
        choice = np.asarray(hash, dtype=np.int64)
        if choice.shape != counts.shape or (choice < 0).any() or (choice >= counts).any():
            raise SimulationError("hash: one path index per flow, from 0 to its path count - 1")
        return choice

    def hose(self, src, dst):
        """(indptr, indices): each flow's host links only (its source's uplink, its destination's downlink).

        On a non-blocking fabric (``nonblocking``), perfect spreading never fills a switch-to-switch link: a switch's
        traffic, split evenly over its equal-cost next hops, is at most its hosts' line rate on each. So the ideal
        (perfect spreading) of a step is its simulation over the host links alone: the hose model, as cheap at a
        million flows as the step itself.
        """
        if not self.nonblocking:
            raise SimulationError("this %s is oversubscribed (its switch links carry less than its hosts can send): "
                                  "the hose model is not its ideal; use ideal_completions (every flow split over "
                                  "its equal-cost paths)" % self.kind)
        src, dst = self._pairs(src, dst)
        indices = np.empty(2 * src.size, dtype=np.int64)
        indices[0::2] = src
        indices[1::2] = len(self.hosts) + dst
        return np.arange(0, 2 * src.size + 1, 2, dtype=np.int64), indices

    def paths(self, src, dst):
        """Every equal-cost path from host ``src`` to host ``dst`` (names or indices), as lists of link names."""
        s, d = self.host_index(src), self.host_index(dst)
        n = int(self.path_count([s], [d])[0])
        indptr, indices = self.path_links([s] * n, [d] * n, np.arange(n))
        return [[self.link_names[j] for j in indices[indptr[k]:indptr[k + 1]]] for k in range(n)]


class _LeafSpine(Fabric):
    kind = "leaf-spine fabric"

    def __init__(self, leaves, spines, hosts_per_leaf, host_rate, uplink_rate):
        self.leaves, self.spines, self.per_leaf = leaves, spines, hosts_per_leaf
        n = leaves * hosts_per_leaf
        hosts = ["h%d" % (h + 1) for h in range(n)]
        leaf_of = ["leaf%d" % (h // hosts_per_leaf + 1) for h in range(n)]
        names = [link_name(hosts[h], leaf_of[h]) for h in range(n)]
        names += [link_name(leaf_of[h], hosts[h]) for h in range(n)]
        names += [link_name("leaf%d" % (lf + 1), "spine%d" % (s + 1)) for lf in range(leaves) for s in range(spines)]
        names += [link_name("spine%d" % (s + 1), "leaf%d" % (lf + 1)) for lf in range(leaves) for s in range(spines)]
        capacity = np.concatenate([np.full(2 * n, host_rate), np.full(2 * leaves * spines, uplink_rate)])
        super().__init__(hosts, names, capacity, 4)
        self.nonblocking = spines * uplink_rate >= hosts_per_leaf * host_rate
        self.oversubscription = {"leaf": hosts_per_leaf * host_rate / (spines * uplink_rate)}

    def _count(self, src, dst):
        same = src // self.per_leaf == dst // self.per_leaf
        return np.where(same, 1, self.spines)

    def _grid(self, src, dst, choice):
        n, s_n = len(self.hosts), self.spines
        ls, ld = src // self.per_leaf, dst // self.per_leaf
        same = ls == ld
        grid = np.full((src.size, 4), -1, dtype=np.int64)
        grid[:, 0] = src
        grid[:, 3] = n + dst
        grid[~same, 1] = (2 * n + ls * s_n + choice)[~same]
        grid[~same, 2] = (2 * n + self.leaves * s_n + ld * s_n + choice)[~same]
        return grid


class _FatTree(Fabric):
    kind = "fat tree"

    def __init__(self, k, host_rate, fabric_rate):
        self.k = k
        half = k // 2
        self.half = half
        n = k * half * half
        edges = k * half
        hosts = ["h%d" % (h + 1) for h in range(n)]
        edge = ["edge%d.%d" % (e // half + 1, e % half + 1) for e in range(edges)]
        agg = ["agg%d.%d" % (a // half + 1, a % half + 1) for a in range(edges)]  # pod p's agg a: p * half + a
        core = ["core%d.%d" % (a + 1, c + 1) for a in range(half) for c in range(half)]  # agg a's cores: a * half + c
        names = [link_name(hosts[h], edge[h // half]) for h in range(n)]
        names += [link_name(edge[h // half], hosts[h]) for h in range(n)]
        names += [link_name(edge[e], agg[(e // half) * half + a]) for e in range(edges) for a in range(half)]
        names += [link_name(agg[(e // half) * half + a], edge[e]) for e in range(edges) for a in range(half)]
        names += [link_name(agg[pa], core[(pa % half) * half + c]) for pa in range(edges) for c in range(half)]
        names += [link_name(core[(pa % half) * half + c], agg[pa]) for pa in range(edges) for c in range(half)]
        capacity = np.concatenate([np.full(2 * n, host_rate), np.full(4 * edges * half, fabric_rate)])
        super().__init__(hosts, names, capacity, 6)
        self.nonblocking = fabric_rate >= host_rate
        self.oversubscription = {"edge": host_rate / fabric_rate, "aggregation": 1.0}

    def _count(self, src, dst):
        half = self.half
        es, ed = src // half, dst // half
        return np.where(es == ed, 1, np.where(es // half == ed // half, half, half * half))

    def _grid(self, src, dst, choice):
        half, n = self.half, len(self.hosts)
        edges = self.k * half
        es, ed = src // half, dst // half
        ps, pd = es // half, ed // half
        base_ea, base_ae = 2 * n, 2 * n + edges * half
        base_ac, base_ca = 2 * n + 2 * edges * half, 2 * n + 3 * edges * half
        grid = np.full((src.size, 6), -1, dtype=np.int64)
        grid[:, 0] = src
        grid[:, 5] = n + dst
        pod = (es != ed) & (ps == pd)
        a = choice[pod]
        grid[pod, 1] = base_ea + es[pod] * half + a
        grid[pod, 4] = base_ae + ed[pod] * half + a
        far = ps != pd
        a, c = choice[far] // half, choice[far] % half
        grid[far, 1] = base_ea + es[far] * half + a
        grid[far, 2] = base_ac + (ps[far] * half + a) * half + c
        grid[far, 3] = base_ca + (pd[far] * half + a) * half + c
        grid[far, 4] = base_ae + ed[far] * half + a
        return grid


class _Clos3(Fabric):
    kind = "3-tier Clos"

    def __init__(self, pods, leaves, spines, supers, per_leaf, host_rate, uplink_rate, super_rate):
        self.pods, self.leaves, self.spines, self.supers, self.per_leaf = pods, leaves, spines, supers, per_leaf
        n = pods * leaves * per_leaf
        hosts = ["h%d" % (h + 1) for h in range(n)]
        leaf = ["leaf%d.%d" % (x // leaves + 1, x % leaves + 1) for x in range(pods * leaves)]
        spine = ["spine%d.%d" % (x // spines + 1, x % spines + 1) for x in range(pods * spines)]
        sup = ["super%d.%d" % (x // supers + 1, x % supers + 1) for x in range(spines * supers)]  # plane s: s*S + c
        names = [link_name(hosts[h], leaf[h // per_leaf]) for h in range(n)]
        names += [link_name(leaf[h // per_leaf], hosts[h]) for h in range(n)]
        # pod p's leaf l to its spine s: (p * leaves + l) * spines + s, both ways
        pairs = [(p * leaves + lf, p * spines + sp) for p in range(pods) for lf in range(leaves)
                 for sp in range(spines)]
        names += [link_name(leaf[a], spine[b]) for a, b in pairs]
        names += [link_name(spine[b], leaf[a]) for a, b in pairs]
        # pod p's spine s (plane s) to superspine c of its plane: (p * spines + s) * supers + c, both ways
        ups = [(x, (x % spines) * supers + c) for x in range(pods * spines) for c in range(supers)]
        names += [link_name(spine[a], sup[b]) for a, b in ups]
        names += [link_name(sup[b], spine[a]) for a, b in ups]
        capacity = np.concatenate([np.full(2 * n, host_rate), np.full(2 * len(pairs), uplink_rate),
                                   np.full(2 * len(ups), super_rate)])
        super().__init__(hosts, names, capacity, 6)
        self.oversubscription = {"leaf": per_leaf * host_rate / (spines * uplink_rate),
                                 "spine": leaves * uplink_rate / (supers * super_rate)}
        self.nonblocking = all(v <= 1 for v in self.oversubscription.values())

    def _count(self, src, dst):
        ls, ld = src // self.per_leaf, dst // self.per_leaf
        ps, pd = ls // self.leaves, ld // self.leaves
        return np.where(ls == ld, 1, np.where(ps == pd, self.spines, self.spines * self.supers))

    def _grid(self, src, dst, choice):
        n, lv, sp, su = len(self.hosts), self.leaves, self.spines, self.supers
        pairs = self.pods * lv * sp
        ups = self.pods * sp * su
        base_ls, base_sl = 2 * n, 2 * n + pairs
        base_ss, base_ds = 2 * n + 2 * pairs, 2 * n + 2 * pairs + ups
        ls, ld = src // self.per_leaf, dst // self.per_leaf
        ps, pd = ls // lv, ld // lv
        grid = np.full((src.size, 6), -1, dtype=np.int64)
        grid[:, 0] = src
        grid[:, 5] = n + dst
        pod = (ls != ld) & (ps == pd)
        s = choice[pod]
        grid[pod, 1] = base_ls + ls[pod] * sp + s
        grid[pod, 4] = base_sl + ld[pod] * sp + s
        far = ps != pd
        s, c = choice[far] // su, choice[far] % su
        grid[far, 1] = base_ls + ls[far] * sp + s
        grid[far, 2] = base_ss + (ps[far] * sp + s) * su + c
        grid[far, 3] = base_ds + (pd[far] * sp + s) * su + c
        grid[far, 4] = base_sl + ld[far] * sp + s
        return grid


class _Rails(Fabric):
    kind = "rail-optimized fabric"

    def __init__(self, hosts, rails, spines, host_rate, uplink_rate, relay_rate):
        self.host_count, self.rails, self.spines, self.relay = hosts, rails, spines, relay_rate is not None
        e = hosts * rails  # endpoints: host h's NIC r is h * rails + r
        ends = ["h%d.r%d" % (x // rails + 1, x % rails + 1) for x in range(e)]
        rail = ["rail%d" % (r + 1) for r in range(rails)]
        names = [link_name(ends[x], rail[x % rails]) for x in range(e)]
        names += [link_name(rail[x % rails], ends[x]) for x in range(e)]
        names += [link_name(rail[r], "spine%d" % (k + 1)) for r in range(rails) for k in range(spines)]
        names += [link_name("spine%d" % (k + 1), rail[r]) for r in range(rails) for k in range(spines)]
        parts = [np.full(2 * e, host_rate), np.full(2 * rails * spines, uplink_rate)]
        if self.relay:
            # host h's in-host link from NIC a to NIC b (a != b): h * R * (R - 1) + a * (R - 1) + (b - (b > a))
            names += [link_name(ends[h * rails + a], ends[h * rails + b]) for h in range(hosts) for a in range(rails)
                      for b in range(rails) if a != b]
            parts.append(np.full(hosts * rails * (rails - 1), relay_rate))
        super().__init__(ends, names, np.concatenate(parts), 4)
        self.oversubscription = {"rail": hosts * host_rate / (spines * uplink_rate)}
        # with the relay, a flow's first link is another NIC's in-host link: the hose is not its ideal
        self.nonblocking = not self.relay and self.oversubscription["rail"] <= 1

    def _count(self, src, dst):
        same_rail = src % self.rails == dst % self.rails
        if self.relay:
            return np.ones_like(src)
        return np.where(same_rail, 1, self.spines)

    def _grid(self, src, dst, choice):
        e, rails, spines = len(self.hosts), self.rails, self.spines
        rs, rd = src % rails, dst % rails
        hs = src // rails
        grid = np.full((src.size, 4), -1, dtype=np.int64)
        same = rs == rd
        grid[same, 0] = src[same]
        grid[same, 1] = (e + dst)[same]
        cross = ~same
        if self.relay:
            relay = 2 * e + 2 * rails * spines + hs * rails * (rails - 1) + rs * (rails - 1) + rd - (rd > rs)
            local = cross & (hs == dst // rails)  # to another NIC of its own host: the in-host link alone
            grid[local, 0] = relay[local]
            far = cross & ~local  # relayed to its own NIC on the destination's rail, then that rail alone
            grid[far, 0] = relay[far]
            grid[far, 1] = (hs * rails + rd)[far]
            grid[far, 2] = (e + dst)[far]
        else:
            grid[cross, 0] = src[cross]
            grid[cross, 1] = (2 * e + rs * spines + choice)[cross]
            grid[cross, 2] = (2 * e + rails * spines + rd * spines + choice)[cross]
            grid[cross, 3] = (e + dst)[cross]
        return grid


def leaf_spine(leaves, spines, hosts_per_leaf, host_rate, uplink_rate):
    """A two-tier leaf-spine fabric: every leaf linked to every spine; hosts ``h1..``, leaves ``leaf1..``, spines
    ``spine1..``; directed links ``h1->leaf1``, ``leaf1->h1``, ``leaf1->spine2``, ``spine2->leaf1`` at ``host_rate``
    (host links) and ``uplink_rate`` (leaf-spine links), bit/s. Hosts on one leaf have one path (host, leaf, host);
    across leaves ``spines`` equal-cost paths, path ``i`` through spine ``i + 1``."""
    need_numpy()
    return _LeafSpine(_count(leaves, "leaves"), _count(spines, "spines"), _count(hosts_per_leaf, "hosts_per_leaf"),
                      _rate(host_rate, "host_rate"), _rate(uplink_rate, "uplink_rate"))


def fat_tree(k, host_rate, fabric_rate=None):
    """A three-tier k-ary fat tree (Al-Fares et al., SIGCOMM 2008): ``k`` pods of ``k/2`` edge and ``k/2``
    aggregation switches, ``(k/2)^2`` cores, ``k^3/4`` hosts (k=26: 4,394; k=32: 8,192). Edge switch ``edgeP.E`` holds
    ``k/2`` hosts; aggregation ``aggP.A`` links to the cores ``coreA.1..coreA.(k/2)``. Host links at ``host_rate``,
    every switch-to-switch link at ``fabric_rate`` (default: ``host_rate``; non-blocking), bit/s. Equal-cost paths:
    1 under one edge, ``k/2`` within a pod (path ``a``: through aggregation ``a + 1``), ``(k/2)^2`` across pods
    (path ``i``: aggregation ``i // (k/2) + 1``, core ``i % (k/2) + 1``)."""
    need_numpy()
    k = _count(k, "k", minimum=2, even=True)
    host_rate = _rate(host_rate, "host_rate")
    return _FatTree(k, host_rate, host_rate if fabric_rate is None else _rate(fabric_rate, "fabric_rate"))


def clos3(pods, leaves_per_pod, spines_per_pod, superspines, hosts_per_leaf, host_rate, uplink_rate,
          superspine_rate=None):
    """A three-tier Clos: ``pods`` pods, each a leaf-spine of ``leaves_per_pod`` leaves ``leafP.L`` and
    ``spines_per_pod`` spines ``spineP.S``; spine S of every pod (plane S) linked to the ``superspines`` of its plane,
    ``superS.C``; ``hosts_per_leaf`` hosts ``h1..`` under each leaf. Rates per tier: host links ``host_rate``,
    leaf-spine ``uplink_rate``, spine-superspine ``superspine_rate`` (default ``uplink_rate``), bit/s: a tier whose
    links carry less than the tier below can send is oversubscribed (``oversubscription``: per tier, what comes in
    from below over what goes up). Equal-cost paths: 1 under one leaf, ``spines_per_pod`` within a pod (path ``s``:
    spine ``s + 1``), ``spines_per_pod * superspines`` across pods (path ``i``: plane ``i // superspines + 1``,
    superspine ``i % superspines + 1``). ``fat_tree(k)`` is ``clos3(k, k/2, k/2, k/2, k/2, ...)``, named otherwise."""
    need_numpy()
    host_rate = _rate(host_rate, "host_rate")
    uplink_rate = _rate(uplink_rate, "uplink_rate")
    return _Clos3(_count(pods, "pods"), _count(leaves_per_pod, "leaves_per_pod"),
                  _count(spines_per_pod, "spines_per_pod"), _count(superspines, "superspines"),
                  _count(hosts_per_leaf, "hosts_per_leaf"), host_rate, uplink_rate,
                  uplink_rate if superspine_rate is None else _rate(superspine_rate, "superspine_rate"))


def rail_optimized(hosts, rails, spines, host_rate, uplink_rate, relay_rate=None):
    """A rail-optimized fabric: ``hosts`` hosts of ``rails`` NICs each (endpoints ``h1.r1``, ``h1.r2``...: a GPU and
    its NIC), NIC r of every host on rail leaf ``rail<r>``, every rail leaf linked to every spine ``spine1..``. Host
    links at ``host_rate``, rail-spine links at ``uplink_rate`` (``oversubscription``: a rail's hosts over its
    uplinks). Same rail: one path, through the rail leaf alone; across rails: ``spines`` paths (path ``k`` through
    spine ``k + 1``). ``relay_rate`` (bit/s; None: no relay) joins each host's NICs by in-host links ``h1.r1->h1.r2``
    (NVLink, as NCCL's PXN uses it): a flow to another rail first crosses to its own host's NIC on the destination's
    rail, then takes that rail alone (one path, no spine); to another NIC of its own host, the in-host link alone."""
    need_numpy()
    return _Rails(_count(hosts, "hosts"), _count(rails, "rails"), _count(spines, "spines"),
                  _rate(host_rate, "host_rate"), _rate(uplink_rate, "uplink_rate"),
                  None if relay_rate is None else _rate(relay_rate, "relay_rate"))
