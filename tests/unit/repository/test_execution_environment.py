# -*- coding: utf-8 -*-
"""What an execution environment and a lab host need is declared once, parsed the way its readers parse it.

meta/execution-environment.yml names the files ansible-builder reads from the installed collection; bindep.txt is read
with bindep itself (installed with the test tooling; the ansible-core matrix venvs hold only the collection's pins, so
there these tests are skipped and the .venv tier runs them); the Python ranges are checked against the exact versions
the tests run. (make test's install check runs ansible-builder's introspection on the installed tarball as well.)
"""
from __future__ import annotations

import os
import re

import pytest
import yaml
from packaging.requirements import Requirement

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def _read(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return handle.read()


def _requirements(*parts):
    lines = [line.split("#")[0].strip() for line in _read(*parts).splitlines()]
    return [Requirement(line) for line in lines if line and not line.startswith("-")]


def test_the_collection_names_its_dependency_files():
    ee = yaml.safe_load(_read("meta", "execution-environment.yml"))
    assert ee["version"] == 1
    assert ee["dependencies"] == {"python": "requirements.txt", "system": "bindep.txt"}
    for name in ee["dependencies"].values():
        assert os.path.isfile(os.path.join(ROOT, name)), name


def test_every_python_range_admits_the_version_the_tests_run():
    ranges = {r.name.lower(): r for r in _requirements("requirements.txt")}
    assert set(ranges) == {"pyroute2", "jinja2", "numpy"}
    assert "ansible-core" not in ranges   # the EE's ansible-core is its definition's, never a collection's
    pins = {r.name.lower(): r for r in _requirements("constraints.txt")}
    for name, wanted in ranges.items():
        assert name in pins, "constraints.txt has no exact version of %s" % name
        (spec,) = pins[name].specifier
        assert spec.operator == "=="
        assert wanted.specifier.contains(spec.version), "%s %s excludes the tested %s" % (name, wanted, spec.version)
        operators = sorted(s.operator for s in wanted.specifier)
        # the collection requirements for EE files: a lower bound, never a cap or a pin (collections must combine)
        assert ">=" in operators and set(operators) <= {">=", "!="}, "%s: %s is not a lower bound" % (name, wanted)


@pytest.fixture(scope="module")
def bindep():
    depends = pytest.importorskip("bindep.depends", reason="bindep is installed with requirements-test.txt (.venv)")
    return depends.Depends(_read("bindep.txt"))


def _packages(bindep, *profiles):
    return sorted({rule[0] for rule in bindep.active_rules(list(profiles))})


def test_the_ee_gets_iproute_and_nothing_a_host_alone_needs(bindep):
    assert _packages(bindep, "platform:dpkg", "default") == ["iproute2"]
    assert _packages(bindep, "platform:redhat", "default") == ["iproute"]


def test_a_host_gets_the_rdma_stack_under_both_families(bindep):
    dpkg = _packages(bindep, "platform:dpkg", "host")
    rpm = _packages(bindep, "platform:redhat", "host")
    for name in ("python3", "rdma-core", "perftest", "python3-pyverbs", "kmod"):
        assert name in dpkg and name in rpm, name
    assert {"ibverbs-utils", "ibverbs-providers", "udev", "iproute2"} <= set(dpkg)
    assert {"libibverbs-utils", "libibverbs", "systemd-udev", "iproute"} <= set(rpm)
    assert len(dpkg) == len(rpm), "a package named for one family only: %s vs %s" % (dpkg, rpm)


def test_the_vm_lab_guest_is_built_from_the_host_packages(bindep):
    # The VM tier proves the modules on a Debian guest; it must hold every package bindep.txt promises a host needs.
    image = re.search(r"^packages=(\S+)$", _read("lab", "vm", "build-image.sh"), re.M).group(1).split(",")
    missing = [name for name in _packages(bindep, "platform:dpkg", "host") if name not in image]
    assert not missing, "lab/vm/build-image.sh does not install %s" % missing
