# -*- coding: utf-8 -*-
"""The one fork into a network namespace (module_utils/_netns_enter.py): what the child returns reaches the parent as
JSON, and every failure - entering, or the work itself - as an error naming it. Without root: the namespace None
(this one), and a namespace that does not exist (refused before any privilege is needed)."""
from __future__ import annotations

import os

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._netns_enter import (
    NetnsError,
    fork_in_namespace,
    gather,
    run_in_namespace,
)


def test_the_childs_value_reaches_the_parent():
    assert run_in_namespace(None, lambda a, b: {"sum": a + b, "pid": os.getpid()}, 2, 3)["sum"] == 5
    assert run_in_namespace(None, os.getpid) != os.getpid()  # it ran in the child


def test_the_work_gets_the_pipe_and_its_error_is_reported():
    pid, read_fd = fork_in_namespace(None, lambda write_fd: {"status": "started", "fd": write_fd})
    out = gather(pid, read_fd)
    assert out["status"] == "started" and isinstance(out["fd"], int)

    def fails(_write_fd):
        raise KeyError("port")

    assert gather(*fork_in_namespace(None, fails)) == {"status": "failed", "error": "KeyError: 'port'"}


def test_a_namespace_that_does_not_exist_is_named():
    out = gather(*fork_in_namespace("aflt-fork-none", lambda _fd: {"status": "started"}))
    assert out["status"] == "failed" and "network namespace aflt-fork-none does not exist" in out["error"]
    with pytest.raises(NetnsError, match="in namespace aflt-fork-none: .*does not exist"):
        run_in_namespace("aflt-fork-none", lambda: 1)


def test_a_child_that_ends_without_a_result_is_said_to():
    def dies(_write_fd):
        os._exit(3)

    assert gather(*fork_in_namespace(None, dies)) == {"status": "failed",
                                                      "error": "the forked process ended without a result"}
