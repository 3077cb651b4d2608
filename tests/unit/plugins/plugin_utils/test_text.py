# -*- coding: utf-8 -*-
"""The report's and the history's text helpers, one home each."""
from __future__ import annotations

from ansible_collections.aifabric.lab.plugins.plugin_utils._text import natural_key, number_or_dash, share_or_dash
from jinja2 import Environment, StrictUndefined


def test_a_number_or_a_dash():
    assert number_or_dash(8.0594) == "8.059" and number_or_dash(8.0594, "%.1f") == "8.1"
    assert number_or_dash(None) == "-" and number_or_dash(0) == "0.000"
    # a value a template left undefined is no number either
    undefined = Environment(undefined=StrictUndefined).from_string("{{ f(x.missing) }}")
    assert undefined.render(f=number_or_dash, x={}) == "-"


def test_a_share_or_a_dash():
    assert share_or_dash(0.333) == "33%" and share_or_dash(0.0123, "%.1f%%") == "1.2%"
    assert share_or_dash(-0.004, "%+.1f%%") == "-0.4%" and share_or_dash(None) == "-"


def test_names_in_their_natural_order():
    names = ["worker10", "worker2", "sink", "worker1", "w1a", "w1", "leaf1->spine10", "leaf1->spine9"]
    assert sorted(names, key=natural_key) == [
        "leaf1->spine9", "leaf1->spine10", "sink", "w1", "w1a", "worker1", "worker2", "worker10"]
