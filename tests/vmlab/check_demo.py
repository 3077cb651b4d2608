"""Check make vmlab-demo's report against the shaping: a 60mbit link shared by vm2 and vm2b, vm2b throttled to 24mbit
by tc. Fair share: vm2 36 and vm2b 24 mbit on the wire, 0.946 of it payload (RoCE v2 headers on a 1024-byte MTU)."""
import json
import sys

report = json.load(open(sys.argv[1]))
(step,) = report["steps"]
assert step["status"] == "ok", step.get("failed")
w = {x["host"]: x for x in step["workers"]}
factor = 1024 / (1024 + 58)
for host, mbit in (("vm2", 36), ("vm2b", 24)):
    assert abs(w[host]["gbps"] / (mbit * factor / 1000) - 1) < 0.05, (host, w[host]["gbps"])
    assert abs(w[host]["prediction_error"]) < 0.05, (host, w[host]["prediction_error"])
assert step["straggler"]["host"] == "vm2b" and "tc htb on mv0" in step["straggler"]["cause"], step["straggler"]
predicted_idle = 1 - w["vm2"]["predicted_s"] / w["vm2b"]["predicted_s"]
assert abs(w["vm2"]["idle_share"] - predicted_idle) < 0.05, (w["vm2"]["idle_share"], predicted_idle)
c = step["counters"]
assert c["verdict"].startswith("all error counters zero"), c["verdict"]
checks = {(h, k["counter"]): k for h, x in c["hosts"].items() for k in x["checks"]}
# vm2b's own books agree with its bytes; vm2's data0 also carries vm2b's frames (mv0 sits on it): flagged, as it must
assert checks[("vm2b", "qdisc mv0")]["agrees"] and checks[("vm2b", "netdev mv0 tx")]["agrees"], checks
assert not checks[("vm2", "netdev data0 tx")]["agrees"] and any(d.startswith("vm2: ") for d in c["disagreements"])
print("vmlab demo OK: vm2 %.4f Gb/s, vm2b %.4f Gb/s (throttled), vm2 idle %.0f%% (predicted %.0f%%), "
      "errors %+.1f%% %+.1f%%" % (w["vm2"]["gbps"], w["vm2b"]["gbps"], w["vm2"]["idle_share"] * 100,
                                  predicted_idle * 100, w["vm2"]["prediction_error"] * 100,
                                  w["vm2b"]["prediction_error"] * 100))
