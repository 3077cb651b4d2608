"""Where a tier's minutes went: the slowest Ansible tasks of the playbooks it ran.

  slowest_tasks.py DIR [N]

DIR holds the JUnit files that ansible-core's junit callback wrote (JUNIT_OUTPUT_DIR=DIR, the callback enabled), one
per playbook run. A task runs on its hosts side by side, so its time is the longest of its hosts'. Prints each
playbook run's tasks' total and the N slowest tasks (default 15). Printed, never asserted.
"""
import glob
import os
import sys
from xml.etree import ElementTree


def main():
    where, top = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 15
    runs, tasks = [], []
    for path in sorted(glob.glob(os.path.join(where, "*.xml")), key=os.path.getmtime):
        try:
            root = ElementTree.parse(path).getroot()
        except ElementTree.ParseError:
            continue
        longest = {}
        for case in root.iter("testcase"):
            # the callback names a case "[host] task name" and its class the task's file and line
            name = case.get("name", "")
            host, _sep, task = name.partition("] ")
            key = (case.get("classname", ""), task if host.startswith("[") else name)
            longest[key] = max(longest.get(key, 0.0), float(case.get("time") or 0))
        playbook = os.path.basename(path).rsplit("-", 1)[0]
        runs.append((playbook, sum(longest.values()), len(longest)))
        tasks += [(t, playbook, k[1]) for k, t in longest.items()]
    if not runs:
        print("slowest tasks: no JUnit file in %s" % where)
        return 0
    print("playbook runs (their tasks' time, longest host each):")
    for playbook, total, n in runs:
        print("  %7.1f s  %3d tasks  %s" % (total, n, playbook))
    print("the %d slowest tasks:" % top)
    for t, playbook, task in sorted(tasks, reverse=True)[:top]:
        print("  %7.1f s  %s: %s" % (t, playbook, task[:100]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
