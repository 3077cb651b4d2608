# -*- coding: utf-8 -*-
"""_proc: a process recognised by PID, start time and boot id; a reused PID is not ours."""
from __future__ import annotations

import os
import subprocess
import sys

from ansible_collections.aifabric.lab.plugins.module_utils import _proc


def _fixture(tmp_path, pid, comm, state, starttime, boot="b0"):
    """A /proc fixture with one process; its stat line has the kernel's layout (52 fields)."""
    (tmp_path / "proc" / "sys" / "kernel" / "random").mkdir(parents=True, exist_ok=True)
    (tmp_path / "proc" / "sys" / "kernel" / "random" / "boot_id").write_text(boot + "\n")
    d = tmp_path / "proc" / str(pid)
    d.mkdir(parents=True, exist_ok=True)
    rest = ["0"] * 49
    rest[0] = state  # field 3
    rest[19] = str(starttime)  # field 22
    (d / "stat").write_text("%d (%s) %s\n" % (pid, comm, " ".join(rest)))
    return str(tmp_path)


def test_start_time_is_field_22_even_with_spaces_and_parentheses_in_the_name(tmp_path):
    root = _fixture(tmp_path, 4242, "python3 (x) y", "S", 987654)
    assert _proc.start_ticks(4242, root) == 987654
    assert _proc.identity(4242, root) == {"pid": 4242, "start_ticks": 987654, "boot_id": "b0"}


def test_a_reused_pid_a_zombie_another_boot_and_an_old_record_are_not_ours(tmp_path):
    root = _fixture(tmp_path, 77, "flow", "S", 1000)
    mine = {"pid": 77, "start_ticks": 1000, "boot_id": "b0"}
    assert _proc.same_process(mine, root)
    assert not _proc.same_process(dict(mine, start_ticks=999), root)  # the PID was reused by a later process
    assert not _proc.same_process(dict(mine, boot_id="other"), root)  # recorded before a reboot
    assert not _proc.same_process({"pid": 77}, root)  # no start time: never trusted
    assert not _proc.same_process({"pid": 78, "start_ticks": 1000}, root)  # gone
    assert not _proc.same_process({"pid": True, "start_ticks": 1000}, root)
    assert not _proc.same_process(None, root)
    _fixture(tmp_path, 77, "flow", "Z", 1000)
    assert not _proc.alive(77, root) and not _proc.same_process(mine, root)


def test_the_real_kernel_a_child_is_itself_until_it_ends():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        info = _proc.identity(child.pid)
        assert info["start_ticks"] is not None and _proc.same_process(info)
        assert _proc.identity()["pid"] == os.getpid()
        assert _proc.start_ticks(os.getpid()) != info["start_ticks"] or os.getpid() == child.pid
    finally:
        child.kill()
        child.wait()
    assert not _proc.same_process(info)
