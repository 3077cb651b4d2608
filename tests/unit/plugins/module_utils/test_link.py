# -*- coding: utf-8 -*-
"""A link's name, written and read back in one place."""
from __future__ import annotations

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._link import Link, link_name


def test_a_link_is_named_sender_first_and_read_back():
    assert link_name("worker1", "leaf1") == "worker1->leaf1" == str(Link("worker1", "leaf1"))
    assert Link.parse("leaf1->spine2") == Link("leaf1", "spine2") and Link.parse("leaf1->spine2").dst == "spine2"
    # only the first arrow splits: a name may hold one
    assert Link.parse("a->b->c") == Link("a", "b->c")


@pytest.mark.parametrize("name", ["worker3 egress", "->b", "a->", ""])
def test_what_is_not_a_links_name_is_refused(name):
    with pytest.raises(ValueError, match="is not a link's name"):
        Link.parse(name)
