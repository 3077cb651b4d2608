# -*- coding: utf-8 -*-
"""One home per helper (issue 25): each helper the collection used to write several times is defined once, in the
file named here, and nothing writes it again by hand - a byte size, a number or a dash, the natural order, a median,
an idle share, the fork into a network namespace that returns JSON, a link's name, the fabric port's fair classes."""
from __future__ import annotations

import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PLUGINS = os.path.join(ROOT, "plugins")


def _sources():
    for base, _dirs, files in os.walk(PLUGINS):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(base, name)
                with open(path, encoding="utf-8") as handle:
                    yield os.path.relpath(path, ROOT), handle.read()


SOURCES = dict(_sources())

# helper -> (the regular expression of its definition, the one file that holds it)
HOMES = {
    "format_size": (r"^def format_size\(", "plugins/module_utils/_units.py"),
    "scale_size": (r"^def scale_size\(", "plugins/module_utils/_units.py"),
    "number_or_dash": (r"^def number_or_dash\(", "plugins/plugin_utils/_text.py"),
    "share_or_dash": (r"^def share_or_dash\(", "plugins/plugin_utils/_text.py"),
    "natural_key": (r"^def natural_key\(", "plugins/plugin_utils/_text.py"),
    "median": (r"^\s*def _?median\(", "plugins/plugin_utils/_analysis/stats.py"),
    "percentile": (r"^\s*def _?percentiles?\(", "plugins/module_utils/_stats.py"),
    "idle_share": (r"^\s*def _?idle_share\(", "plugins/plugin_utils/_analysis/stats.py"),
    "mean_idle_share": (r"^\s*def _?mean_idle(_share)?\(", "plugins/plugin_utils/_analysis/stats.py"),
    "fork_in_namespace": (r"^\s*def (fork_in_namespace|fork_reporting|in_netns_fork_raw)\(",
                          "plugins/module_utils/_netns_enter.py"),
    "link_name": (r"^def link_name\(", "plugins/module_utils/_link.py"),
    "PORT_BUCKETS": (r"^PORT_BUCKETS\s*=", "plugins/module_utils/_fabric/spec.py"),
}


@pytest.mark.parametrize("helper", sorted(HOMES))
def test_each_helper_is_defined_once_in_its_home(helper):
    pattern, home = HOMES[helper]
    found = sorted(path for path, text in SOURCES.items() if re.search(pattern, text, re.MULTILINE))
    assert found == [home], "%s: defined in %s; its one home is %s" % (helper, found, home)


def test_no_link_name_is_written_by_hand():
    """``"%s->%s"``, ``"leaf%d->spine%d"``, ``split("->")``: a link's name is link_name's, read back by Link.parse."""
    by_hand = re.compile(r"""["'][^"'\n]*(%[sd]|\})->|->(%[sd]|\{)[^"'\n]*["']|["']->["']""")
    found = ["%s:%d: %s" % (path, n, line.strip())
             for path, text in SOURCES.items() if path != "plugins/module_utils/_link.py"
             for n, line in enumerate(text.splitlines(), 1) if by_hand.search(line)]
    assert found == []


def test_the_fork_that_returns_json_is_written_once():
    """A child forked to run work and write its result as JSON to a pipe: ``_netns_enter.fork_in_namespace`` only
    (``_flow/daemon.spawn`` forks a daemon, which returns nothing but its PID)."""
    found = sorted(path for path, text in SOURCES.items() if "os.fork()" in text and "json.dumps(" in text)
    assert found == ["plugins/module_utils/_netns_enter.py"]
