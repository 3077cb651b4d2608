# -*- coding: utf-8 -*-
"""The kernel_cmdline module as Ansible runs it - its main(), a real AnsibleModule with these arguments, the glue and
the domain - on a copy of Debian's /etc/default/grub: check mode, apply, check mode again, apply again (changed,
changed, not changed, not changed), the file as it is after each, the diff, a bad argument refused by name."""
from __future__ import annotations

import contextlib
import json
from unittest import mock

import pytest
from ansible.module_utils import basic
from ansible_collections.aifabric.lab.plugins.modules import kernel_cmdline

DEBIAN_GRUB = """GRUB_DEFAULT=0
GRUB_TIMEOUT=5
GRUB_CMDLINE_LINUX_DEFAULT="quiet"
GRUB_CMDLINE_LINUX="console=ttyS0,115200 iommu=nopt"
"""
EDITED = DEBIAN_GRUB.replace('"console=ttyS0,115200 iommu=nopt"', '"console=ttyS0,115200 iommu=pt intel_iommu=on"')


@contextlib.contextmanager
def module_args(args):
    try:
        from ansible.module_utils.testing import patch_module_args  # ansible-core 2.19 and later
    except ImportError:  # older: the arguments as AnsiballZ hands them over
        with mock.patch.object(basic, "_ANSIBLE_ARGS", json.dumps({"ANSIBLE_MODULE_ARGS": args}).encode()):
            yield
        return
    with patch_module_args(args):
        yield


def run(capsys, tmp_path, **args):
    args.setdefault("_ansible_tmpdir", str(tmp_path))
    with module_args(args), pytest.raises(SystemExit):
        kernel_cmdline.main()
    return json.loads(capsys.readouterr().out)


def test_check_apply_check_apply(tmp_path, capsys):
    grub = tmp_path / "grub"
    grub.write_text(DEBIAN_GRUB)
    args = dict(args=["intel_iommu=on", "iommu=pt"], path=str(grub))
    checked = run(capsys, tmp_path, _ansible_check_mode=True, _ansible_diff=True, **args)
    assert checked["changed"] and grub.read_text() == DEBIAN_GRUB
    assert checked["args"] == ["console=ttyS0,115200", "iommu=pt", "intel_iommu=on"]
    assert checked["diff"]["before"] == DEBIAN_GRUB and checked["diff"]["after"] == EDITED
    applied = run(capsys, tmp_path, **args)
    assert applied["changed"] and grub.read_text() == EDITED
    assert applied["path"] == str(grub) and applied["update_command"] == ["update-grub"]
    assert not run(capsys, tmp_path, _ansible_check_mode=True, **args)["changed"]
    assert not run(capsys, tmp_path, **args)["changed"] and grub.read_text() == EDITED


def test_a_bad_argument_fails_by_name_and_the_file_stays(tmp_path, capsys):
    grub = tmp_path / "grub"
    grub.write_text(DEBIAN_GRUB)
    failed = run(capsys, tmp_path, args=["init=$(reboot)"], path=str(grub))
    assert failed["failed"] and failed["msg"].startswith("args: ") and "$" in failed["msg"]
    assert grub.read_text() == DEBIAN_GRUB
