# -*- coding: utf-8 -*-
from __future__ import annotations

import shlex

from ansible_collections.aifabric.lab.plugins.connection.netns import netns_command


def test_command_is_quoted_once_and_runs_through_the_shell():
    cmd = "/bin/sh -c 'echo \"héllo; $HOME\"'"
    line = netns_command("ip", "afl-worker1", cmd, "/bin/sh")
    assert shlex.split(line) == ["ip", "netns", "exec", "afl-worker1", "/bin/sh", "-c", cmd]


def test_hostile_names_stay_single_arguments():
    line = netns_command("ip", "x; rm -rf /", "true", "/bin/sh")
    assert shlex.split(line)[3] == "x; rm -rf /"
