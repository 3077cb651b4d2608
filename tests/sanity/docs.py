"""Every plugin renders with ansible-doc, as a user meets it: a page of its own, non-empty, no warning or error.

One ansible-doc process per plugin type renders all of that type's plugins (a process costs about a second and a
half of CPU, its pages a few tens of milliseconds each); its output is split into pages by their headers
(``> MODULE aifabric.lab.flow (...)``, ``> ROLE: *aifabric.lab.lab_host* (...)``), and a warning names the plugin it is
about. A name deprecated in meta/runtime.yml renders alone: it warns that it is deprecated, and only that warning is
allowed; its page says DEPRECATED, unless it is a redirect (its page is then its target's, named in the warning).
Prints a line per plugin; exits 1 when one failed.
"""
import glob
import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NS = "aifabric.lab"
HEADER = re.compile(r"^> (?:[A-Z]+:? )?\*?%s\.(\w+)\*? \(" % re.escape(NS))
IGNORED = ("does not have a MANIFEST.json file",)   # ansible-core's own internal collection, on every page


def base(pattern, strip):
    return sorted(os.path.basename(p)[: -len(strip)] for p in glob.glob(pattern))


def names():
    return {
        "module": [n for n in base(os.path.join(ROOT, "plugins/modules/*.py"), ".py") if n != "__init__"],
        "connection": [n for n in base(os.path.join(ROOT, "plugins/connection/*.py"), ".py") if n != "__init__"],
        "callback": [n for n in base(os.path.join(ROOT, "plugins/callback/*.py"), ".py") if n != "__init__"],
        "filter": base(os.path.join(ROOT, "plugins/filter/*.yml"), ".yml"),
        "role": sorted(os.path.basename(os.path.dirname(os.path.dirname(p)))
                       for p in glob.glob(os.path.join(ROOT, "roles/*/meta/argument_specs.yml"))),
    }


def deprecated():
    with open(os.path.join(ROOT, "meta/runtime.yml"), encoding="utf-8") as f:
        routing = (yaml.safe_load(f) or {}).get("plugin_routing", {})
    kind = {"modules": "module", "filter": "filter", "callback": "callback", "connection": "connection"}
    return sorted((kind.get(t, t), n, "redirect" in p) for t, plugins in routing.items()
                  for n, p in (plugins or {}).items() if "deprecation" in (p or {}))


def ansible_doc(kind, plugins):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(["ansible-doc", "-t", kind] + ["%s.%s" % (NS, n) for n in plugins], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)
    noise = [line for line in (proc.stderr + proc.stdout).splitlines()
             if re.match(r"\s*\[(WARNING|ERROR|DEPRECATION WARNING)\]", line) and not any(i in line for i in IGNORED)]
    return proc.returncode, proc.stdout, noise


def pages(stdout):
    found, current = {}, None
    for line in stdout.splitlines():
        m = HEADER.match(line)
        if m:
            current = m.group(1)
            found[current] = []
        if current is not None:
            found[current].append(line)
    return found


def main():
    failed = 0
    alone = {(kind, n) for kind, n, _redirect in deprecated()}
    for kind, plugins in names().items():
        plugins = [n for n in plugins if (kind, n) not in alone]
        if not plugins:
            continue
        rc, stdout, noise = ansible_doc(kind, plugins)
        found = pages(stdout)
        # a warning is about the first of our plugins it names
        first = [re.search(r"\b%s\.(\w+)" % re.escape(NS), w) for w in noise]
        about = {n: [w for w, m in zip(noise, first) if m and m.group(1) == n] for n in plugins}
        orphans = [w for w in noise if not any(w in ws for ws in about.values())]
        for n in plugins:
            problems = about[n] + ([] if n in found else ["no page"])
            if not problems and len(found[n]) < 3:
                problems = ["a page of %d lines" % len(found[n])]
            if problems:
                failed += 1
                print("ansible-doc -t %s %s.%s: FAILED" % (kind, NS, n))
                print("\n".join("  " + p for p in problems[:20]))
            else:
                print("ansible-doc -t %s %s.%s: ok (%d lines)" % (kind, NS, n, len(found[n])))
        if orphans or (rc != 0 and not failed):
            failed += 1
            print("ansible-doc -t %s (%d plugins): FAILED: exit %d%s" % (kind, len(plugins), rc, "".join(
                "\n  " + w for w in orphans[:20])))
    for kind, n, redirect in deprecated():
        rc, stdout, noise = ansible_doc(kind, [n])
        left = [w for w in noise if "Deprecation warnings can be disabled" not in w
                and not ("DEPRECATION WARNING" in w and "%s.%s" % (NS, n) in w)]
        said = any("DEPRECATION WARNING" in w and "%s.%s" % (NS, n) in w for w in noise)
        # a redirect's page is its target's (which is not deprecated): the warning names the name to use instead
        says = redirect or "DEPRECATED" in stdout
        if rc != 0 or left or not said or not says or not pages(stdout):
            failed += 1
            why = "%s%s" % ("warns that it is deprecated" if said else "no deprecation warning",
                            "" if says else ", its page does not say DEPRECATED")
            print("ansible-doc -t %s %s.%s (deprecated in meta/runtime.yml): FAILED: exit %d, %s%s"
                  % (kind, NS, n, rc, why, "".join("\n  " + w for w in left[:20])))
        else:
            print("ansible-doc -t %s %s.%s: ok (deprecated: it warns, and its page says so)" % (kind, NS, n))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
