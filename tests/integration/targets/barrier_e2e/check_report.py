"""Check a barrier run's report.json against the shaping (3 workers, 8gbit bottleneck, worker3 at 2gbit, MTU 9000)."""
import json
import sys

report = json.load(open(sys.argv[1]))
out = open(sys.argv[2]).read()
steps = {s["step"]: s for s in report["steps"]}
assert report["status"] == "ok", report
base = steps["elephant"]
assert base["kind"] == "baseline"
factor = 8948 / 9014
# Rates are set by the shaper AND by this machine's CPU: a busy 2-core machine (CI, a newcomer's laptop) only ever
# slows a flow, so what must hold anywhere is the ceiling (never above the shaped goodput), the order (the throttled
# worker is the straggler) and the arithmetic; how close the rates come to fair share is printed, and measured by
# benchmarks/goodput.py on a quiet machine.
ceiling = 1.015  # the shaper's burst lets a 1-second flow run a little over its rate
single = base["workers"][0]["gbps"] / (8 * factor)
assert 0 < single < ceiling, base["workers"][0]
step = steps["barrier"]
w = {x["host"]: x for x in step["workers"]}
assert step["step_s"] == w["worker3"]["completion_s"] == max(x["completion_s"] for x in w.values())
assert step["straggler"]["host"] == "worker3" and "2gbit" in step["straggler"]["cause"]
assert 0 < w["worker3"]["gbps"] < 2 * factor * ceiling, w["worker3"]
assert 0 < sum(x["gbps"] for x in w.values()) < 8 * factor * ceiling, w
# by hand for this shaping: worker3's 750 MB at 2 Gb/s of goodput take 3.0 s, the others' at 3 Gb/s 2.0 s
assert abs(w["worker1"]["predicted_s"] / (750e6 * 8 / (3e9 * factor)) - 1) < 0.01, w["worker1"]
assert abs(w["worker3"]["predicted_s"] / (750e6 * 8 / (2e9 * factor)) - 1) < 0.01, w["worker3"]
print("figures (this machine's, not asserted): single flow %.1f%% of the shaped goodput; rates %s Gb/s against "
      "3/3/2 x %.3f; completion vs prediction %s" % (
          single * 100, {h: x["gbps"] for h, x in w.items()}, factor,
          {h: "%+.1f%%" % (x["prediction_error"] * 100) for h, x in w.items()}))
assert step["baseline_gbps"] == base["workers"][0]["gbps"]
# the start: every flow armed, fired at one instant the rendezvous measured, each flow's lateness within the bound
start = step["start"]
assert start["mode"] == "rendezvous" and start["status"] == "ok", start
assert abs(start["margin_s"] - (3 * max(start["probe_fanout_s"]) + 0.001)) < 3e-6, start
assert set(start["hosts"]) == {"sink", "worker1", "worker2", "worker3"}, start
assert step["late_max_s"] <= step["late_bound_s"] and all(x["late_s"] >= 0 for x in w.values()), step
assert "start                  every host armed" in out
times = [x["completion_s"] for x in w.values()]
assert abs(step["mean_completion_s"] - sum(times) / 3) < 1e-5, step["mean_completion_s"]
for x in w.values():
    assert abs(x["idle_s"] - (step["step_s"] - x["completion_s"])) < 1e-5, x
    assert abs(x["idle_share"] - x["idle_s"] / step["step_s"]) < 1e-5, x
# worker3 is the only throttled worker and the straggler: the unthrottled workers are worker1 and worker2
assert abs(step["unthrottled_idle_share"] - (w["worker1"]["idle_share"] + w["worker2"]["idle_share"]) / 2) < 1e-5
assert step["throttled_idle_share"] is None
assert "BARRIER REPORT" in out and "report: " + sys.argv[1] in out
print("report OK: step %.3f s, shares %s" % (step["step_s"], {h: round(x["idle_share"], 3) for h, x in w.items()}))
# The wire's books around the step: error counters zero, the throttle's queue congested, every book agreeing with the
# application's bytes once headers are added per packet.
c = step["counters"]
assert c["verdict"].startswith("all error counters zero"), c["verdict"]
# the throttled step is slower than the fair step (everyone at the line rate), by what its own figures say
assert step["step_s"] > step["fair_step_s"], step
# how much slower than the fair step (everyone at the line rate), as the step's own figures say
slower = int(c["verdict"].rsplit("step ", 1)[1].split("%")[0])
assert abs(slower - round((step["step_s"] / step["fair_step_s"] - 1) * 100)) <= 1, (c["verdict"], step["step_s"])
assert c["verdict"].endswith("% slower than fair share"), c["verdict"]
assert "overlimits" in c["verdict"], c["verdict"]
assert c["disagreements"] == [], c["disagreements"]
checks = {(h, k["counter"]): k for h, x in c["hosts"].items() for k in x["checks"]}
assert ("worker3", "qdisc eth0") in checks and all(("worker%d" % i, "netdev eth0 tx") in checks for i in (1, 2, 3))
assert all(k["agrees"] and abs(k["difference"]) < 0.005 for k in checks.values()), checks
assert "counters               all error counters zero" in out
print("counters OK: %s" % {"%s %s" % hk: "%+.3f%%" % (k["difference"] * 100) for hk, k in checks.items()})
# The run record: the plan reached the controller once (plan.json, with what the throttle applied and the lab's
# kernels); the flows' files hold measurements only.
import os  # noqa: E402

run = os.path.dirname(sys.argv[1])
plan = json.load(open(os.path.join(run, "plan.json")))
# schema 2: each experiment's plan once (the steps' plans are made from it on reading)
assert plan["schema_version"] == 2 and [e["steps"] for e in plan["experiments"]] == [["elephant"], ["barrier"]], plan
elephant, barrier = plan["experiments"]
assert elephant["kind"] == "baseline" and barrier["kind"] == "barrier" and barrier["line_rate"] == "8gbit", barrier
assert barrier["hosts"]["worker3"]["throttle"]["rate"] == "2gbit", barrier["hosts"]["worker3"]
assert barrier["hosts"]["worker3"]["throttle"]["applied"].startswith("tc htb"), barrier["hosts"]["worker3"]
(rnd,) = barrier["rounds"]
assert sorted(h for h, part in rnd["hosts"].items() if part["clients"]) == ["worker1", "worker2", "worker3"], rnd
(w3,) = rnd["hosts"]["worker3"]["clients"]
assert w3["src"] == "worker3" and w3["dst"] == "sink" and barrier["mtu"] == 9000, w3
assert w3["path"] == [{"link": "worker3->switch", "rate": "8gbit"}, {"link": "switch->sink", "rate": "8gbit"},
                      {"link": "worker3 egress", "rate": "2gbit", "throttle": True}], w3
assert set(plan["lab"]["hosts"]) >= {"sink", "worker1", "worker2", "worker3"}, plan["lab"]
assert plan["lab"]["hosts"]["worker3"]["kernel"] == os.uname().release, plan["lab"]
assert report["lab"] == plan["lab"]
for name in os.listdir(os.path.join(run, "flows", "barrier")):
    flow = json.load(open(os.path.join(run, "flows", "barrier", name)))
    assert "annotations" not in flow, (name, sorted(flow))
applied = barrier["hosts"]["worker3"]["throttle"]["applied"]
# (a busy machine may add "; N segments retransmitted ..." to the cause)
assert step["straggler"]["cause"].startswith("throttled to 2gbit (worker3: %s)" % applied), step["straggler"]
print("run record OK: plan.json schema 2 with %d experiments, flows without annotations" % len(plan["experiments"]))
