# -*- coding: utf-8 -*-
"""The release is one story: galaxy.yml's version, the changelog's releases, every plugin's version_added, the
ansible-core matrix, meta/runtime.yml (requires_ansible, action groups), the example execution environment and the
README say the same thing.

Plugin documentation is read the way users and antsibull-docs read it: ``ansible-doc --metadata-dump`` of the
ansible-core under test (so the matrix checks every version's view), with the doc fragments merged in.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import yaml
from ansible.module_utils.compat.version import LooseVersion

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PLUGIN_TYPES = ("module", "filter", "callback", "connection")


def _yaml(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return yaml.safe_load(handle)


def _lines(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return [line.strip() for line in handle if line.strip() and not line.lstrip().startswith("#")]


def _v(text):
    return LooseVersion(str(text))


@pytest.fixture(scope="module")
def docs():
    """Every plugin's and role's documentation as ansible-doc gives it, keyed by (type, short name)."""
    env = dict(os.environ)
    env["ANSIBLE_COLLECTIONS_PATH"] = os.path.join(ROOT, ".collections")
    env.pop("ANSIBLE_CONFIG", None)
    if not os.path.isdir(os.path.join(ROOT, ".collections", "ansible_collections", "aifabric", "lab")):
        pytest.fail("the collection is not linked under .collections (run make setup)")
    proc = subprocess.run([sys.executable, "-m", "ansible.cli.doc", "--metadata-dump", "--no-fail-on-errors",
                           "aifabric.lab"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    dump = json.loads(proc.stdout)["all"]
    found = {}
    for ptype, plugins in dump.items():
        for fqcn, entry in plugins.items():
            if fqcn.startswith("aifabric.lab."):
                found[(ptype, fqcn[len("aifabric.lab."):])] = entry
    return found


def _released():
    changelog = _yaml("changelogs", "changelog.yaml")
    versions = sorted(changelog["releases"], key=_v)
    return changelog, versions


def _unreleased_fragments():
    folder = os.path.join(ROOT, "changelogs", "fragments")
    return sorted(n for n in os.listdir(folder) if n.endswith((".yml", ".yaml")))


def test_galaxy_version_is_the_latest_release_or_the_next_one():
    galaxy = _yaml("galaxy.yml")["version"]
    _changelog, versions = _released()
    latest = versions[-1]
    if _unreleased_fragments():
        # between releases: galaxy.yml names the version being built, beyond the latest release
        assert _v(galaxy) > _v(latest), (
            "changelogs/fragments holds unreleased fragments, so galaxy.yml's version (%s) must be the next release, "
            "beyond the latest one (%s)" % (galaxy, latest))
    else:
        assert galaxy == latest, ("galaxy.yml says %s but the changelog's latest release is %s: release with "
                                  "`make release VERSION=%s` or set galaxy.yml's version" % (galaxy, latest, galaxy))


def _version_added(entry, where, problems, limit, required):
    added = entry.get("version_added")
    collection = entry.get("version_added_collection")
    if added is None or added in ("", "historical"):
        if required:
            problems.append("%s: no version_added" % where)
        return
    if collection not in (None, "aifabric.lab"):
        return   # documented by another collection (ansible.builtin's own attributes)
    if _v(added) > _v(limit):
        problems.append("%s: version_added %s is newer than %s" % (where, added, limit))


def _walk_options(options, where, problems, limit):
    for name, option in (options or {}).items():
        _version_added(option, "%s option %s" % (where, name), problems, limit, required=False)
        _walk_options(option.get("suboptions"), "%s.%s" % (where, name), problems, limit)


def test_every_plugin_has_a_version_added_no_newer_than_the_release(docs):
    limit = _yaml("galaxy.yml")["version"]
    problems = []
    seen = {ptype: 0 for ptype in PLUGIN_TYPES}
    for (ptype, name), entry in sorted(docs.items()):
        if ptype not in PLUGIN_TYPES:
            continue
        seen[ptype] += 1
        doc = entry.get("doc") or {}
        where = "%s %s" % (ptype, name)
        _version_added(doc, where, problems, limit, required=True)
        _walk_options(doc.get("options"), where, problems, limit)
        for attr, value in (doc.get("attributes") or {}).items():
            _version_added(value, "%s attribute %s" % (where, attr), problems, limit, required=False)
    assert not problems, "\n".join(problems)
    # the dump holds what the tree holds (a plugin ansible-doc could not load would be missing, not passed)
    tree = {
        "module": [n[:-3] for n in os.listdir(os.path.join(ROOT, "plugins", "modules")) if n.endswith(".py")],
        "filter": [n[:-4] for n in os.listdir(os.path.join(ROOT, "plugins", "filter")) if n.endswith(".yml")],
        "callback": [n[:-3] for n in os.listdir(os.path.join(ROOT, "plugins", "callback")) if n.endswith(".py")],
        "connection": [n[:-3] for n in os.listdir(os.path.join(ROOT, "plugins", "connection")) if n.endswith(".py")],
    }
    assert seen == {ptype: len(names) for ptype, names in tree.items()}


def test_the_changelog_names_each_plugin_in_the_release_that_added_it(docs):
    changelog, versions = _released()
    listed = {}
    for version in versions:
        for ptype, plugins in (changelog["releases"][version].get("plugins") or {}).items():
            for plugin in plugins:
                listed[(ptype, plugin["name"])] = version
        for module in changelog["releases"][version].get("modules") or []:
            listed[("module", module["name"])] = version
    galaxy = _yaml("galaxy.yml")["version"]
    problems = []
    for (ptype, name), entry in sorted(docs.items()):
        if ptype not in PLUGIN_TYPES:
            continue
        added = str((entry.get("doc") or {}).get("version_added"))
        if _v(added) > _v(versions[-1]):
            # after the latest release: only the version being built (galaxy.yml), whose release will list it
            if added != galaxy:
                problems.append("%s %s: version_added %s is neither released nor the version being built (%s)"
                                % (ptype, name, added, galaxy))
        elif added not in changelog["releases"]:
            problems.append("%s %s: version_added %s was never released (releases: %s)"
                            % (ptype, name, added, ", ".join(versions)))
        elif listed.get((ptype, name)) != added:
            problems.append("%s %s: version_added %s, but the changelog lists it under %s"
                            % (ptype, name, added, listed.get((ptype, name))))
    assert not problems, "\n".join(problems)


def test_action_groups_match_the_modules_that_document_them(docs):
    groups = _yaml("meta", "runtime.yml").get("action_groups") or {}
    assert groups, "meta/runtime.yml declares no action_groups"
    documented = {}
    for (ptype, name), entry in docs.items():
        if ptype != "module":
            continue
        attribute = ((entry.get("doc") or {}).get("attributes") or {}).get("action_group")
        for group in (attribute or {}).get("membership", []):
            documented.setdefault(group, set()).add(name)
    assert documented == {"aifabric.lab." + g: set(members) for g, members in groups.items()}
    for group, members in groups.items():
        # the options the group's attribute names (O(...)) exist in every member, with one type: module_defaults gives
        # each of them to every member
        modules = [docs[("module", m)]["doc"] for m in members]
        text = " ".join(modules[0]["attributes"]["action_group"]["description"]) \
            if isinstance(modules[0]["attributes"]["action_group"]["description"], list) \
            else modules[0]["attributes"]["action_group"]["description"]
        shared = re.findall(r"O\(([a-z_]+)\)", text)
        assert len(shared) >= 3, text
        for option in shared:
            types = {m["module"]: m["options"].get(option, {}).get("type", "(missing)") for m in modules}
            assert "(missing)" not in types.values() and len(set(types.values())) == 1, (group, option, types)


def test_the_matrix_spans_requires_ansible_to_the_pinned_core_without_gaps():
    rows = [line.split() for line in _lines("tests", "matrix", "ansible-core.txt")]
    assert all(len(row) == 3 for row in rows), "each line: version, Pythons to run it on, supported range: %s" % rows
    listed = [row[0] for row in rows]
    minors = [tuple(int(p) for p in v.split(".")[:2]) for v in listed]
    assert minors == sorted(set(minors)), "one version per minor, oldest first: %s" % listed
    assert all(b == (a[0], a[1] + 1) for a, b in zip(minors, minors[1:])), "a minor is missing: %s" % listed
    requires = _yaml("meta", "runtime.yml")["requires_ansible"]
    bounds = re.match(r"^>=(\d+)\.(\d+)\.0,<(\d+)\.(\d+)\.0$", requires)
    assert bounds, "requires_ansible should be the tested range, like >=2.16.0,<2.22.0, not %r" % requires
    lower, upper = [(int(bounds.group(i)), int(bounds.group(i + 1))) for i in (1, 3)]
    assert minors[0] == lower, "requires_ansible starts at %s.%s, the matrix at %s" % (lower + (listed[0],))
    assert upper == (minors[-1][0], minors[-1][1] + 1), (
        "requires_ansible admits up to %s.%s (excluded) but the matrix's newest is %s" % (upper + (listed[-1],)))
    pinned = [line.split("==")[1] for line in _lines("constraints.txt") if line.startswith("ansible-core==")]
    assert pinned == [listed[-1]], "constraints.txt pins %s; the matrix's newest is %s" % (pinned, listed[-1])
    with open(os.path.join(ROOT, "README.md")) as handle:
        readme = handle.read()
    for version, pythons, supported in rows:
        # each version runs on one of the controller Pythons it supports, 3.11 or newer (numpy 2.4)
        low, high = [int(p.split(".")[1]) for p in supported.split("-")]
        for python in pythons.split(","):
            assert python.startswith("3.") and max(low, 11) <= int(python.split(".")[1]) <= high, (version, python)
        row = "| %s | %s (%s) |" % (version, pythons.split(",")[0], supported)
        assert row in readme, "README's supported-versions table lacks the row %r" % row


def test_the_example_execution_environment_installs_this_release():
    ee = _yaml("ee", "execution-environment.yml")
    assert ee["version"] == 3
    pinned = [line for line in _lines("constraints.txt") if line.startswith("ansible-core==")]
    assert ee["dependencies"]["ansible_core"]["package_pip"] == pinned[0]
    galaxy = _yaml("galaxy.yml")["version"]
    collections = _yaml("ee", ee["dependencies"]["galaxy"])["collections"]
    assert {"name": "aifabric.lab", "version": galaxy} in collections
    assert "aifabric-lab-ee:%s" % galaxy in ee["options"]["tags"]
