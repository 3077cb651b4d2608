# -*- coding: utf-8 -*-
"""The small statistics of the report and the history, against figures computed by hand."""
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.stats import (
    idle_share,
    mean,
    mean_idle_share,
    median,
    summary,
)


def test_the_mean_and_the_median():
    assert mean([1.0, 2.0, 6.0]) == 3.0 and mean([]) is None
    assert median([3.0, 1.0, 2.0]) == 2.0 and median([4.0, 1.0, 2.0, 3.0]) == 2.5 and median([]) is None


def test_a_distributions_summary():
    # [1, 2, 3, 4]: p50 between the 2nd and 3rd, 2.5; p90 at rank 0.9 x 3 = 2.7: 3 + 0.7 = 3.7; p99 3.97
    assert summary([4.0, 1.0, 3.0, 2.0]) == {"p50": 2.5, "p90": 3.7, "p99": 3.97, "min": 1.0, "max": 4.0,
                                             "mean": 2.5}
    assert summary([]) is None


def test_idle_shares():
    # the seed: the step 8.06 s, an unthrottled worker done at 5.37 s sat idle (8.06 - 5.37) / 8.06 = 33.4%
    assert idle_share(8.06, 5.37) == pytest.approx(0.333747, abs=1e-6)
    assert idle_share(8.06, 8.06) == 0.0 and idle_share(0.0, 0.0) == 0.0
    assert idle_share(None, 1.0) is None and idle_share(1.0, None) is None
    assert mean_idle_share([{"idle_share": 0.3}, {"idle_share": 0.1}, {}]) == pytest.approx(0.133333, abs=1e-6)
    assert mean_idle_share([]) is None
