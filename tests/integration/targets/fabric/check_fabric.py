# -*- coding: utf-8 -*-
"""Checks a fabric run: every flow placed and proved, spread without collisions, the text report's fabric blocks;
then a copy of the run whose plan moves one flow to the other spine must be reported as a path disagreement."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile


def fail(msg):
    print("check_fabric: " + msg)
    sys.exit(1)


def main(run, out_txt):
    report = json.load(open(os.path.join(run, "report.json")))
    text = open(out_txt).read()
    steps = {s["step"]: s for s in report["steps"]}
    if set(steps) != {"l4-hash", "l4-spread"}:
        fail("steps %s" % sorted(steps))
    for name, step in steps.items():
        if step["status"] != "ok":
            fail("%s: %s" % (name, step.get("verdict")))
        fab = step["fabric"]
        if fab["elephants"] != 4 or len(fab["flows"]) != 4:
            fail("%s: %d elephants" % (name, fab["elephants"]))
        for flow in fab["flows"]:
            if not (flow["uplink"] or "").startswith("leaf") or flow["sport_used"] != flow["sport"]:
                fail("%s: flow %s placed on %s from port %s (looked up %s)" % (
                    name, flow["flow"], flow["uplink"], flow["sport_used"], flow["sport"]))
        proof = fab["proof"]
        if proof["status"] != "agrees" or proof["links_checked"] < 12:
            fail("%s: paths %s over %d links: %s"
                 % (name, proof["status"], proof["links_checked"], proof["disagreements"]))
        if fab["ideal_step_s"] <= 0 or fab["slowdown_vs_ideal"] < 0.9:
            fail("%s: ideal %s, slowdown %s" % (name, fab["ideal_step_s"], fab["slowdown_vs_ideal"]))
        # the counters of the switches are in the run record beside the hosts'
        if not {"leaf1", "leaf2", "spine1", "spine2"} <= set(step["counters"]["hosts"]):
            fail("%s: switch counters missing: %s" % (name, sorted(step["counters"]["hosts"])))
        if not step["verdict"].startswith("step ") or "the ideal" not in step["verdict"]:
            fail("%s: verdict %r" % (name, step["verdict"]))
    spread = steps["l4-spread"]["fabric"]
    if spread["collisions"] or spread["worst_uplink_load"] != 1:
        fail("spread: collisions %s" % spread["collisions"])
    hashed = steps["l4-hash"]["fabric"]
    load = {}
    for flow in hashed["flows"]:
        load[flow["uplink"]] = load.get(flow["uplink"], 0) + 1
    if hashed["worst_uplink_load"] != max(load.values()):
        fail("hash: busiest uplink %s vs the flows' uplinks %s" % (hashed["worst_uplink_load"], load))
    for needle in ("=== fabric: the variants side by side", "paths                  proved by the counters",
                   "shares a link with"):
        if needle not in text:
            fail("the text report lacks %r" % needle)
    # a plan that says one flow went by the other spine: the counters contradict it
    work = tempfile.mkdtemp()
    try:
        copy = os.path.join(work, "run")
        shutil.copytree(run, copy)
        plan_path = os.path.join(copy, "plan.json")
        plan = json.load(open(plan_path))
        # plan.json schema 2: the experiment that ran l4-spread, its placement of worker1's stream
        experiment = next(e for e in plan["experiments"] if "l4-spread" in e["steps"])
        links = experiment["fabric"]["placed"]["l4-spread"]["worker1"]["worker1"][0]["links"]
        spine = links[1].split("->")[1]
        other = "spine2" if spine == "spine1" else "spine1"
        links[:] = [link.replace(spine, other) for link in links]
        json.dump(plan, open(plan_path, "w"))
        subprocess.run(["ansible-playbook", "aifabric.lab.render_report", "-e", "run_dir=%s" % copy], check=True,
                       stdout=subprocess.DEVNULL)
        tampered = json.load(open(os.path.join(copy, "report.json")))
        proof = next(s for s in tampered["steps"] if s["step"] == "l4-spread")["fabric"]["proof"]
        if proof["status"] != "disagrees" or not any(("leaf1->%s" % spine) in d for d in proof["disagreements"]):
            fail("a flow moved in the plan was not flagged: %s" % proof)
    finally:
        shutil.rmtree(work)
    print("check_fabric: %s; proof %.2f%% and %.2f%%; tampered plan flagged" % (
        ", ".join("%s %.2fx the ideal" % (n, s["fabric"]["slowdown_vs_ideal"]) for n, s in sorted(steps.items())),
        steps["l4-hash"]["fabric"]["proof"]["largest_difference"] * 100,
        steps["l4-spread"]["fabric"]["proof"]["largest_difference"] * 100))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
