# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The probability math of N flows hashed uniformly onto M equal-cost uplinks (balls into bins), exact and sampled.

ECMP hashes each flow's five-tuple to one of M next hops; a good hash makes each flow's choice uniform and independent
of the others'. So the loads of the M uplinks are those of N balls thrown into M bins. With elephants of equal size
that share an uplink equally, a barrier step lasts as long as the busiest uplink needs: its load (flows on it) times
one flow's time alone, against ``ceil(N/M)`` for a perfect spreading of whole flows.

- No collision: ``P = M! / ((M-N)! * M^N)`` (every flow on its own uplink; 0 when N > M). 8 on 8: 40320/16777216,
  0.24%.
- The busiest uplink: ``P(max <= k) = N!/M^N * [x^N] (sum_{j<=k} x^j/j!)^M`` (exponential generating functions: an
  uplink holding j labelled flows contributes x^j/j!; ``[x^N]`` takes the coefficient of x^N). Computed exactly in
  integers (``_ways_at_most``), then ``E[max] = sum_{k>=0} P(max > k)``. 8 on 8: E[max] = 680849/262144 = 2.597.
- The step's expected slowdown against the ideal: ``E[max] / ceil(N/M)``; over ``G`` independent groups (each leaf
  hashing its own flows), the busiest of all: ``E[max] = sum_{k>=0} (1 - P(max <= k)^G)``.
- Monte Carlo (seeded numpy) for checks and for cases beyond the formulas.

Exact values are ``fractions.Fraction``; ``float()`` them to print.
"""

from __future__ import annotations

import math
import traceback
from fractions import Fraction

try:
    import numpy as np
except ImportError:  # requirements.txt pins it for the controller
    np = None
    NUMPY_IMPORT_ERROR = traceback.format_exc()
else:
    NUMPY_IMPORT_ERROR = None

__all__ = [
    "EcmpMathError",
    "p_no_collision",
    "max_load_cdf",
    "max_load_distribution",
    "expected_max_load",
    "max_load_variance",
    "expected_slowdown",
    "monte_carlo",
]


class EcmpMathError(ValueError):
    """Arguments the formulas cannot take; the message names the parameter and what is expected."""


def _check(n, m):
    for name, value, minimum in (("n (flows)", n, 0), ("m (uplinks)", m, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise EcmpMathError("%s: %r; expected an integer >= %d" % (name, value, minimum))


def p_no_collision(n, m):
    """P(no two of ``n`` flows share an uplink) with ``m`` uplinks: ``M! / ((M-N)! * M^N)``.

    Flow 1 takes any uplink, flow 2 one of the ``M-1`` others, ...: ``prod_{i<N} (M-i)/M``; 0 when ``N > M``.
    ``p_no_collision(8, 8) == Fraction(40320, 16777216)`` (0.24%).
    """
    _check(n, m)
    if n > m:
        return Fraction(0)
    return Fraction(math.factorial(m) // math.factorial(m - n), m ** n)


def _ways_at_most(n, m, k):
    """The number of ways to put ``n`` labelled flows on ``m`` labelled uplinks with at most ``k`` on each.

    ``N! [x^N] (sum_{j<=k} x^j/j!)^M``, expanded one uplink at a time in integers: with ``w_b(t)`` the ways for ``t``
    flows on ``b`` uplinks, ``w_{b+1}(t) = sum_{j<=min(k,t)} C(t, j) w_b(t-j)`` (choose the ``j`` flows of the new
    uplink). O(M N k) big-integer operations.
    """
    ways = [1] + [0] * n  # no uplink: only zero flows
    for _uplink in range(m):
        ways = [sum(math.comb(t, j) * ways[t - j] for j in range(min(k, t) + 1)) for t in range(n + 1)]
    return ways[n]


def max_load_cdf(n, m, k):
    """``P(max load <= k)`` for ``n`` flows hashed uniformly onto ``m`` uplinks (a ``Fraction``).

    ``P(max <= k) = N!/M^N * [x^N] (sum_{j<=k} x^j/j!)^M``.
    """
    _check(n, m)
    if isinstance(k, bool) or not isinstance(k, int):
        raise EcmpMathError("k (load): %r; expected an integer" % (k,))
    if k < 0:
        return Fraction(0)
    if k >= n:
        return Fraction(1)
    return Fraction(_ways_at_most(n, m, k), m ** n)


def max_load_distribution(n, m):
    """``{k: P(max load == k)}`` for every possible ``k`` (``ceil(N/M)`` to ``N``; ``{0: 1}`` for no flow)."""
    _check(n, m)
    if n == 0:
        return {0: Fraction(1)}
    out = {}
    below = Fraction(0)
    for k in range(-(-n // m), n + 1):
        at_most = max_load_cdf(n, m, k)
        if at_most != below:
            out[k] = at_most - below
        below = at_most
    return out


def expected_max_load(n, m, groups=1):
    """``E[max load]`` (flows on the busiest uplink) = ``sum_k k P(max = k)`` = ``sum_{k>=0} (1 - P(max <= k))``.

    8 flows on 8 uplinks: ``Fraction(680849, 262144)``, 2.597. ``groups``: the busiest uplink of that many
    independent groups of ``n`` flows on ``m`` uplinks each (every leaf hashing its own flows onto its uplinks: a step
    waits for the busiest anywhere): ``sum_{k>=0} (1 - P(max <= k)^groups)``. The issue's lab (2 leaves, 4 spines,
    4 cross-leaf flows out of each leaf): ``expected_max_load(4, 4, groups=2)`` = 4889/2048, 2.39.
    """
    _check(n, m)
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise EcmpMathError("groups: %r; expected an integer >= 1" % (groups,))
    return sum((1 - max_load_cdf(n, m, k) ** groups for k in range(n)), Fraction(0))


def max_load_variance(n, m):
    """``Var[max load]``: what bounds a Monte Carlo estimate's spread (standard error ``sqrt(Var / trials)``)."""
    dist = max_load_distribution(n, m)
    mean = sum((k * p for k, p in dist.items()), Fraction(0))
    return sum(((k - mean) ** 2 * p for k, p in dist.items()), Fraction(0))


def expected_slowdown(n, m, groups=1):
    """The barrier step's expected time against the ideal: ``E[max load] / ceil(N/M)``.

    Equal elephants, each limited only by the uplink it hashed to and sharing it equally with the flows there: the
    step lasts (busiest uplink's load) x (one flow's time alone), and perfect spreading of whole flows puts
    ``ceil(N/M)`` on the busiest. 8 on 8: 2.6x. ``groups``: as in ``expected_max_load``.
    """
    _check(n, m)
    if n == 0:
        return Fraction(1)
    return expected_max_load(n, m, groups) / -(-n // m)


def monte_carlo(n, m, trials=100_000, seed=0):
    """Hash ``n`` flows onto ``m`` uplinks ``trials`` times with numpy's generator seeded with ``seed``.

    Returns ``{"mean_max_load", "stderr", "p_no_collision", "slowdown", "trials", "seed"}``: the busiest uplink's mean
    load and its standard error (sample standard deviation / sqrt(trials)), the share of trials with no uplink holding
    two flows, and the mean load over ``ceil(N/M)``. The same seed gives the same figures.
    """
    _check(n, m)
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 2:
        raise EcmpMathError("trials: %r; expected an integer >= 2" % (trials,))
    if np is None:
        raise EcmpMathError("monte_carlo needs numpy on the controller: install the collection's requirements "
                            "(pip install -r requirements.txt). Import error:\n%s" % NUMPY_IMPORT_ERROR)
    rng = np.random.default_rng(seed)
    best = np.zeros(trials, dtype=np.int64)
    chunk = max(1, 4_000_000 // max(1, n + m))  # bounded memory for any trial count
    for lo in range(0, trials, chunk):
        size = min(chunk, trials - lo)
        picks = rng.integers(0, m, size=(size, n))
        cells = (np.arange(size)[:, None] * m + picks).ravel()  # trial t's uplink u: cell t * m + u
        loads = np.bincount(cells, minlength=size * m).reshape(size, m)
        best[lo:lo + size] = loads.max(axis=1)
    mean = float(best.mean())
    return {
        "mean_max_load": mean,
        "stderr": float(best.std(ddof=1) / math.sqrt(trials)),
        "p_no_collision": float((best <= 1).mean()),
        "slowdown": mean / (-(-n // m) if n else 1),
        "trials": trials,
        "seed": seed,
    }
