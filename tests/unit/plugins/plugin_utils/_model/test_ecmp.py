# -*- coding: utf-8 -*-
"""The balls-into-bins math of ECMP against brute-force enumeration, an independent expansion, and Monte Carlo."""
from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._model.ecmp import (
    EcmpMathError,
    expected_max_load,
    expected_slowdown,
    max_load_cdf,
    max_load_distribution,
    max_load_variance,
    monte_carlo,
    p_no_collision,
)

SMALL = [(n, m) for n in range(0, 7) for m in range(1, 5)]


def brute_force(n, m):
    """{max load: number of the m^n placements with it}, by listing every placement."""
    return Counter(max(Counter(p).values(), default=0) for p in itertools.product(range(m), repeat=n))


def test_eight_flows_on_eight_uplinks_rarely_avoid_a_collision():
    # 8 * 7 * ... * 1 = 40320 collision-free placements out of 8^8 = 16777216: 0.24%.
    assert p_no_collision(8, 8) == Fraction(40320, 16777216)
    assert round(float(p_no_collision(8, 8)) * 100, 2) == 0.24
    assert max_load_cdf(8, 8, 1) == p_no_collision(8, 8)


def test_no_collision_is_impossible_with_more_flows_than_uplinks():
    assert p_no_collision(5, 4) == 0
    assert p_no_collision(0, 4) == 1
    assert p_no_collision(1, 4) == 1
    assert p_no_collision(2, 2) == Fraction(1, 2)


@pytest.mark.parametrize("n, m", SMALL)
def test_the_busiest_uplink_against_every_placement(n, m):
    counts = brute_force(n, m)
    total = m ** n
    dist = max_load_distribution(n, m)
    assert dist == {k: Fraction(c, total) for k, c in counts.items()}
    assert sum(dist.values()) == 1
    mean = Fraction(sum(k * c for k, c in counts.items()), total)
    assert expected_max_load(n, m) == mean
    assert max_load_variance(n, m) == Fraction(sum((k - mean) ** 2 * c for k, c in counts.items()), total)
    for k in range(-1, n + 2):
        assert max_load_cdf(n, m, k) == Fraction(sum(c for j, c in counts.items() if j <= k), total)
    if n <= m:
        assert p_no_collision(n, m) == Fraction(counts.get(1, 0) if n else 1, total)


def egf_cdf(n, m, k):
    """P(max <= k) = N!/M^N [x^N] (sum_{j<=k} x^j/j!)^M, expanded literally with fractions (the docstring's
    formula, computed another way than the module's integer recurrence)."""
    base = [Fraction(1, math.factorial(j)) if j <= k else Fraction(0) for j in range(n + 1)]
    poly = [Fraction(1)] + [Fraction(0)] * n
    for _uplink in range(m):
        poly = [sum(poly[i] * base[t - i] for i in range(t + 1)) for t in range(n + 1)]
    return math.factorial(n) * poly[n] / m ** n


def occupancy_distribution(n, m):
    """{max load: probability} by summing the multinomial n!/prod(c_i!) over every occupancy vector (c_1..c_m)."""
    out = Counter()

    def vectors(left, bins):
        if bins == 1:
            yield (left,)
            return
        for c in range(left + 1):
            for rest in vectors(left - c, bins - 1):
                yield (c,) + rest

    for v in vectors(n, m):
        out[max(v)] += math.factorial(n) // math.prod(math.factorial(c) for c in v)
    return {k: Fraction(c, m ** n) for k, c in out.items()}


def test_eight_on_eight_busiest_uplink_carries_about_2_6_flows():
    # the issue's figure: the expected busiest of 8 uplinks carries 2.6 of 8 elephants
    dist = occupancy_distribution(8, 8)  # 6435 occupancy vectors, independent of the module's recurrence
    assert max_load_distribution(8, 8) == dist
    mean = expected_max_load(8, 8)
    assert mean == sum(k * p for k, p in dist.items())
    assert round(float(mean), 1) == 2.6
    assert expected_slowdown(8, 8) == mean  # ideal: one flow per uplink
    for k in range(0, 9):
        assert max_load_cdf(8, 8, k) == egf_cdf(8, 8, k)


@pytest.mark.parametrize("n, m, groups", [(2, 2, 2), (3, 2, 2), (2, 3, 3), (4, 4, 2)])
def test_the_busiest_of_independent_groups(n, m, groups):
    # every group hashes its own n flows onto its own m uplinks; the step waits for the busiest uplink of all
    counts = Counter(max(max(Counter(p[g * n:(g + 1) * n]).values()) for g in range(groups))
                     for p in itertools.product(range(m), repeat=n * groups))
    mean = Fraction(sum(k * c for k, c in counts.items()), m ** (n * groups))
    assert expected_max_load(n, m, groups=groups) == mean
    assert expected_slowdown(n, m, groups=groups) == mean / -(-n // m)


def test_the_issues_lab_two_leaves_of_four_flows_on_four_spines():
    assert expected_max_load(4, 4) == Fraction(17, 8)
    assert expected_max_load(4, 4, groups=2) == Fraction(4889, 2048)


def test_slowdown_is_against_ceil_n_over_m():
    assert expected_slowdown(8, 4) == expected_max_load(8, 4) / 2
    assert expected_slowdown(9, 4) == expected_max_load(9, 4) / 3
    assert expected_slowdown(4, 8) == expected_max_load(4, 8)
    assert expected_slowdown(0, 8) == 1


@pytest.mark.parametrize("n, m", [(8, 8), (8, 4), (16, 8)])
def test_monte_carlo_agrees_with_the_exact_values(n, m):
    trials = 200_000
    mc = monte_carlo(n, m, trials=trials, seed=0)
    # Six standard errors of the exact distribution: a seeded run either passes every time or never.
    tol = 6 * math.sqrt(float(max_load_variance(n, m)) / trials)
    assert abs(mc["mean_max_load"] - float(expected_max_load(n, m))) <= tol
    p = float(p_no_collision(n, m))
    assert abs(mc["p_no_collision"] - p) <= 6 * math.sqrt(max(p * (1 - p), 1e-12) / trials) + 1e-12
    assert abs(mc["slowdown"] - float(expected_slowdown(n, m))) <= tol / -(-n // m)
    assert mc["stderr"] == pytest.approx(math.sqrt(float(max_load_variance(n, m)) / trials), rel=0.05)


def test_monte_carlo_is_reproducible_for_a_seed():
    assert monte_carlo(8, 8, trials=1000, seed=3) == monte_carlo(8, 8, trials=1000, seed=3)
    other = monte_carlo(8, 8, trials=1000, seed=4)
    assert monte_carlo(8, 8, trials=1000, seed=3)["mean_max_load"] != other["mean_max_load"]


@pytest.mark.parametrize("call, message", [
    (lambda: p_no_collision(-1, 4), "n \\(flows\\): -1; expected an integer >= 0"),
    (lambda: p_no_collision(4, 0), "m \\(uplinks\\): 0; expected an integer >= 1"),
    (lambda: max_load_cdf(4, 4, 1.5), "k \\(load\\): 1.5; expected an integer"),
    (lambda: monte_carlo(8, 8, trials=1), "trials: 1; expected an integer >= 2"),
    (lambda: expected_max_load(8, "8"), "m \\(uplinks\\): '8'"),
    (lambda: expected_max_load(8, 8, groups=0), "groups: 0; expected an integer >= 1"),
])
def test_bad_arguments_are_named(call, message):
    with pytest.raises(EcmpMathError, match=message):
        call()
