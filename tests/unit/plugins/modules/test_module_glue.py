# -*- coding: utf-8 -*-
"""The one glue convention (docs/architecture.md, "A module and its glue"), checked on every module:

- ``plugins/modules/<name>.py`` holds DOCUMENTATION, EXAMPLES, RETURN, two imports (AnsibleModule; ``module_args``
  and ``run_module`` from the module's glue) and ``main()``, whose body is ``run_module(AnsibleModule(
  **module_args()))``;
- the glue is ``module_utils/_<name>_module.py``, or inside a package ``_<pkg>/``: ``module.py`` for the module named
  ``<pkg>``, ``<rest>_module.py`` for ``<pkg>_<rest>``; every glue file is some module's;
- ``module_args()`` returns AnsibleModule's keyword arguments (a new dict each call), ``run_module(module)`` runs it;
- nothing else in module_utils ends a module (``exit_json``/``fail_json``): the domain raises, the glue reports."""
from __future__ import annotations

import ast
import importlib
import inspect
import os

import pytest
from ansible.module_utils.basic import AnsibleModule

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
MODULES = os.path.join(ROOT, "plugins", "modules")
MODULE_UTILS = os.path.join(ROOT, "plugins", "module_utils")
PACKAGE = "ansible_collections.aifabric.lab.plugins.module_utils"
# What may end a module outside a glue file: the one check of a library every netlink glue makes.
ENDS_A_MODULE_TOO = {"_pyroute2.py"}

NAMES = sorted(f[:-3] for f in os.listdir(MODULES) if f.endswith(".py") and not f.startswith("_"))
PACKAGES = sorted(d for d in os.listdir(MODULE_UTILS) if os.path.isfile(os.path.join(MODULE_UTILS, d, "__init__.py")))


def glue_of(name):
    """Where the convention puts module ``name``'s glue (a dotted path under module_utils)."""
    for pkg in PACKAGES:
        bare = pkg.lstrip("_")
        if name == bare:
            return "%s.module" % pkg
        if name.startswith(bare + "_"):
            return "%s.%s_module" % (pkg, name[len(bare) + 1:])
    return "_%s_module" % name


MAIN = ast.dump(ast.parse('if __name__ == "__main__":\n    main()\n').body[0])
FUTURE = ast.dump(ast.parse("from __future__ import annotations").body[0])


def parse(path):
    with open(path) as handle:
        return ast.parse(handle.read(), path)


def test_the_rule_places_the_glue_files_that_exist():
    assert glue_of("tc_shape") == "_tc_shape_module" and glue_of("fabric_paths_info") == "_fabric.paths_info_module"
    assert glue_of("flow") == "_flow.module" and glue_of("flow_step") == "_flow.step_module"
    glue_files = set()
    for dirpath, _dirs, files in os.walk(MODULE_UTILS):
        rel = os.path.relpath(dirpath, MODULE_UTILS)
        for f in files:
            if f == "module.py" or f.endswith("_module.py"):
                glue_files.add((f[:-3] if rel == "." else "%s.%s" % (rel.replace(os.sep, "."), f[:-3])))
    assert glue_files == {glue_of(name) for name in NAMES}, "a glue file that is no module's, or a module without one"


@pytest.mark.parametrize("name", NAMES)
def test_a_module_file_is_its_documentation_and_main(name):
    tree = parse(os.path.join(MODULES, name + ".py"))
    assigned, imports, functions, other = [], [], [], []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            assigned += [t.id for t in node.targets]
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            imports.append((node.module, sorted(a.name for a in node.names)))
        elif isinstance(node, ast.FunctionDef):
            functions.append(node)
        elif ast.dump(node) not in (MAIN, FUTURE):
            other.append(ast.dump(node))
    assert assigned == ["DOCUMENTATION", "EXAMPLES", "RETURN"] and other == []
    assert imports == [("ansible.module_utils.basic", ["AnsibleModule"]),
                       ("%s.%s" % (PACKAGE, glue_of(name)), ["module_args", "run_module"])]
    assert [f.name for f in functions] == ["main"]
    (statement,) = functions[0].body
    assert ast.dump(statement) == ast.dump(ast.parse("run_module(AnsibleModule(**module_args()))").body[0])


@pytest.mark.parametrize("name", NAMES)
def test_the_glue_gives_ansiblemodules_arguments_and_runs_the_module(name):
    glue = importlib.import_module("%s.%s" % (PACKAGE, glue_of(name)))
    assert list(inspect.signature(glue.run_module).parameters)[0] == "module"
    args = glue.module_args()
    assert args is not glue.module_args()
    accepted = set(inspect.signature(AnsibleModule.__init__).parameters)
    assert set(args) <= accepted and "argument_spec" in args and "supports_check_mode" in args


def test_only_the_glue_ends_a_module():
    found = []
    for dirpath, _dirs, files in os.walk(MODULE_UTILS):
        for f in files:
            if not f.endswith(".py") or f == "module.py" or f.endswith("_module.py") or f in ENDS_A_MODULE_TOO:
                continue
            path = os.path.join(dirpath, f)
            for node in ast.walk(parse(path)):
                if isinstance(node, ast.Attribute) and node.attr in ("exit_json", "fail_json"):
                    found.append("%s:%d %s" % (os.path.relpath(path, ROOT), node.lineno, node.attr))
    assert found == []
