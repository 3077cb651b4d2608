# -*- coding: utf-8 -*-
"""kernel_cmdline's editing of /etc/default/grub and /etc/kernel/cmdline, on copies of Debian's files."""
from __future__ import annotations

import os

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._cmdline import (
    CmdlineError,
    edit,
    find_config,
    read_config,
    render_config,
    running_has,
    validate,
    validate_variable,
)

DEBIAN_GRUB = """# If you change this file, run 'update-grub' afterwards to update
# /boot/grub/grub.cfg.

GRUB_DEFAULT=0
GRUB_TIMEOUT=5
GRUB_DISTRIBUTOR=`lsb_release -i -s 2> /dev/null || echo Debian`
GRUB_CMDLINE_LINUX_DEFAULT="quiet"
GRUB_CMDLINE_LINUX="console=ttyS0,115200 iommu=nopt"
"""


def test_edit_adds_replaces_and_keeps_order():
    assert edit(["console=ttyS0,115200", "iommu=nopt"], ["intel_iommu=on", "iommu=pt"], "present") == [
        "console=ttyS0,115200", "iommu=pt", "intel_iommu=on"]
    assert edit(["quiet"], ["quiet"], "present") == ["quiet"]


def test_edit_removes():
    words = ["quiet", "iommu=pt", "intel_iommu=on"]
    assert edit(words, ["intel_iommu"], "absent") == ["quiet", "iommu=pt"]
    assert edit(words, ["iommu=nopt"], "absent") == words  # another value stays
    assert edit(words, ["iommu=pt", "quiet"], "absent") == ["intel_iommu=on"]


@pytest.mark.parametrize("bad", ["intel_iommu=on iommu=pt", "iommu=pt\tquiet", "quiet\nGRUB_X=1", "a\x00b",
                                 "a\x7fb"])
def test_whitespace_and_control_characters_are_refused(bad):
    with pytest.raises(CmdlineError, match="args: .* is not one kernel argument: it contains"):
        validate([bad])


def test_an_empty_argument_is_refused():
    with pytest.raises(CmdlineError, match="args: an empty argument"):
        validate(["quiet", ""])


# Each of these, written into GRUB_CMDLINE_LINUX="...", would end the string, run a command when grub-mkconfig sources
# /etc/default/grub, or be taken by GRUB's parser as an operator or a comment.
@pytest.mark.parametrize("bad,char", [
    ("init=$(reboot)", "$"), ("x=${HOME}", "$"), ("x=`id`", "`"), ('a="b"', '"'), ("a='b'", "'"),
    ("a=b\\", "\\"), ("quiet;reboot", ";"), ("quiet&&reboot", "&"), ("quiet|tee", "|"), ("a<b", "<"),
    ("a>b", ">"), ("a{b", "{"), ("a}b", "}"), ("iommu=pt#", "#"),
])
def test_shell_and_grub_metacharacters_are_refused_naming_the_argument(bad, char):
    with pytest.raises(CmdlineError) as err:
        validate(["intel_iommu=on", bad])
    assert str(err.value).startswith("args: %r contains %r, " % (bad, char))


@pytest.mark.parametrize("good", ["console=ttyS0,115200n8", "root=UUID=0b6c-41ee", "crashkernel=512M-2G:64M,2G-:128M",
                                  "isolcpus=1-3,5", "vfio-pci.ids=15b3:101c", "systemd.unit=multi-user.target",
                                  "rd.lvm.lv=vg0/root", "hugepagesz=1G", "quiet"])
def test_real_kernel_arguments_pass(good):
    validate([good])


@pytest.mark.parametrize("bad", ["GRUB_CMDLINE_LINUX; rm", "1ABC", "", "A B", "A=B"])
def test_the_variable_must_be_a_shell_name(bad):
    with pytest.raises(CmdlineError, match="variable: .* is not a shell variable name"):
        validate_variable(bad)
    validate_variable("GRUB_CMDLINE_LINUX_DEFAULT")


def test_grub_file_round_trip(tmp_path):
    path = tmp_path / "etc/default/grub"
    path.parent.mkdir(parents=True)
    path.write_text(DEBIAN_GRUB)
    assert find_config(str(tmp_path)) == str(path)
    lines, index, words = read_config(str(path), "GRUB_CMDLINE_LINUX")
    assert words == ["console=ttyS0,115200", "iommu=nopt"]
    text = render_config(str(path), "GRUB_CMDLINE_LINUX", lines, index, edit(words, ["intel_iommu=on", "iommu=pt"],
                                                                             "present"))
    assert 'GRUB_CMDLINE_LINUX="console=ttyS0,115200 iommu=pt intel_iommu=on"\n' in text
    assert 'GRUB_CMDLINE_LINUX_DEFAULT="quiet"\n' in text and "GRUB_DISTRIBUTOR=`lsb_release" in text
    assert text.count("\n") == DEBIAN_GRUB.count("\n")
    # the unchanged file renders to itself: no spurious change
    assert render_config(str(path), "GRUB_CMDLINE_LINUX", lines, index, words).replace(
        "console=ttyS0,115200 iommu=nopt", "") == DEBIAN_GRUB.replace("console=ttyS0,115200 iommu=nopt", "")


def test_grub_variable_missing_is_appended(tmp_path):
    path = tmp_path / "grub"
    path.write_text("GRUB_TIMEOUT=5\n")
    lines, index, words = read_config(str(path), "GRUB_CMDLINE_LINUX")
    assert index is None and words == []
    assert render_config(str(path), "GRUB_CMDLINE_LINUX", lines, index, ["iommu=pt"]).endswith(
        'GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX="iommu=pt"\n')


def test_kernel_cmdline_file(tmp_path):
    path = tmp_path / "etc/kernel/cmdline"
    path.parent.mkdir(parents=True)
    path.write_text("root=UUID=1 ro quiet\n")
    assert find_config(str(tmp_path)) == str(path)
    lines, index, words = read_config(str(path), "GRUB_CMDLINE_LINUX")
    assert render_config(str(path), "x", lines, index, edit(words, ["amd_iommu=on"], "present")) == (
        "root=UUID=1 ro quiet amd_iommu=on\n")


def test_no_boot_loader_config(tmp_path):
    with pytest.raises(CmdlineError, match="path: no boot loader configuration here"):
        find_config(str(tmp_path))


def test_running_kernel(tmp_path):
    os.makedirs(tmp_path / "proc")
    (tmp_path / "proc/cmdline").write_text("root=/dev/vda rw intel_iommu=on iommu=pt\n")
    assert running_has(["intel_iommu=on", "iommu=pt"], "present", str(tmp_path))
    assert not running_has(["iommu=nopt"], "present", str(tmp_path))
    assert running_has(["amd_iommu"], "absent", str(tmp_path))
    assert not running_has(["iommu"], "absent", str(tmp_path))
