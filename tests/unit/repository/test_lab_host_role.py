# -*- coding: utf-8 -*-
"""The lab_host role installs what bindep.txt's profile "host" lists, per family, and pyroute2 at constraints.txt's
pin: its package lists and its pin are read against those files (bindep parses bindep.txt, as a host's
``bindep -b host`` would)."""
from __future__ import annotations

import os

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "lab_host")
# The controller's packages (bindep lists them under every profile); a host does not need them.
CONTROLLER_ONLY = {"iproute2", "iproute"}


def _yaml(*parts):
    with open(os.path.join(*parts)) as handle:
        return yaml.safe_load(handle)


@pytest.fixture(scope="module")
def bindep():
    depends = pytest.importorskip("bindep.depends", reason="bindep is installed with requirements-test.txt (.venv)")
    with open(os.path.join(ROOT, "bindep.txt")) as handle:
        return depends.Depends(handle.read())


@pytest.mark.parametrize("family, platform", [("Debian", "platform:dpkg"), ("RedHat", "platform:redhat")])
def test_the_role_installs_the_host_profile_of_each_family(bindep, family, platform):
    names = {rule[0] for rule in bindep.active_rules([platform, "host"])} - CONTROLLER_ONLY
    role = _yaml(ROLE, "vars", family + ".yml")
    assert sorted(role["lab_host_base_packages"] + role["lab_host_rdma_packages"]) == sorted(names)
    # without RDMA a host still gets Python, kmod and udev
    assert "python3" in role["lab_host_base_packages"]
    assert not {"rdma-core", "perftest"} & set(role["lab_host_base_packages"])


def test_the_role_pins_pyroute2_as_constraints_txt_does():
    with open(os.path.join(ROOT, "constraints.txt")) as handle:
        pins = dict(line.strip().split("==") for line in handle if "==" in line and not line.startswith("#"))
    assert _yaml(ROLE, "defaults", "main.yml")["lab_host_pyroute2_version"] == pins["pyroute2"]


def test_every_default_is_declared_in_the_argument_spec():
    defaults = _yaml(ROLE, "defaults", "main.yml")
    spec = _yaml(ROLE, "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert sorted(defaults) == sorted(spec)
    for name, value in defaults.items():
        if "{{" not in str(value):
            assert spec[name].get("default") == value, name
