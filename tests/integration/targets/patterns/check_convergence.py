"""Check the convergence experiment's report (playbooks/convergence.yml on the patterns' lab: M = 2, T0 = 1 s, 2 s
after it; 1 Gb/s ports, MTU 9000): worker3 and worker4 start 1 s after the common instant.

By hand (docs/congestion.md, "As an experiment"), with g = 8948/9014 the goodput factor and every flow 1 Gbit: worker1
and worker2 alone at g/2 Gb/s for 1 s, then the four at g/4 until worker1 and worker2 end at 4/g - 1 s; worker3 and
worker4 have 0.5 g Gbit left, alone at g/2: 1 s more, 4/g s. The measured figures of a convergence on a loaded CI
machine are not held to a tolerance (docs/congestion.md gives a measured table); what the report must have is.
"""
import json
import sys

G = 8948 / 9014
report = json.load(open(sys.argv[1]))
queue = sys.argv[2]
steps = {s["step"]: s for s in report["steps"]}
step = steps["convergence-m2"]
assert step["status"] == "ok", step.get("verdict")
assert abs(step["predicted_step_s"] - 4 / G) < 1e-3, step["predicted_step_s"]
predicted = {w["host"]: w["predicted_s"] for w in step["workers"]}
for host, want in (("worker1", 4 / G - 1), ("worker2", 4 / G - 1), ("worker3", 4 / G), ("worker4", 4 / G)):
    assert abs(predicted[host] - want) < 1e-3, (host, predicted[host], want)
for w in step["workers"]:
    # counted from the common instant: a late flow's completion includes its offset
    assert w["completion_s"] > (1.0 if w["host"] in ("worker3", "worker4") else 0.0), w
conv = step["convergence"]
assert "unavailable" not in conv, conv["unavailable"]
assert conv["t0_s"] == 1.0 and conv["joined"] == ["worker3", "worker4"], conv
assert conv["tolerance"] == 0.1 and conv["hold_s"] == 1.0, conv
assert all(abs(v - G / 4) < 1e-4 for v in conv["fair_share_gbps"].values()), conv["fair_share_gbps"]
assert sorted(conv["per_flow_s"]) == ["worker1", "worker2", "worker3", "worker4"], conv
assert isinstance(conv["converged"], bool) and 0 < conv["window_s"] <= 4 / G, conv
assert conv["jfi"] and all(0 < j <= 1 for _t, j in conv["jfi"]), conv["jfi"]
assert conv["verdict"].startswith("2 of 4 flows joined at T0 = 1.00 s: "), conv["verdict"]
experiment = {e["name"]: e for e in report["experiments"]}["convergence-m2"]
assert experiment["labels"] == {"m": 2, "t0_s": 1.0}, experiment["labels"]
print("convergence (%s): %s" % (queue, conv["verdict"]))
