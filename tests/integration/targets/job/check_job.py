# -*- coding: utf-8 -*-
"""The job target's report, checked: one job step, every iteration measured and predicted, the figures reconciled
with the prediction (the deviation printed, generous bounds only: the CI machine is slow and noisy), the straggler
the throttled worker, one armed task."""
from __future__ import annotations

import json
import re
import sys

report = json.load(open(sys.argv[1]))
out = open(sys.argv[2]).read()
(step,) = report["steps"]
assert step["kind"] == "job" and step["status"] == "ok", step.get("verdict")
job = step["job"]
assert job["algorithm"] == ["allreduce ring, 1 chunk per message, window 2"], job["algorithm"]
assert job["iterations"]["n"] == 20 and len(job["per_iteration"]) == 20
for row in job["per_iteration"]:
    assert row["measured_s"] > 0 and row["predicted_s"] > 0, row
assert len(step["workers"]) == 8 and all(w["status"] == "ok" for w in step["workers"])
# the job's figures beside the prediction: printed, and only bounded generously
print("JCT %.3f s, predicted %.3f s (%+.1f%%); largest per-iteration deviation %.1f%%; busbw %.3f GB/s, predicted "
      "%.3f GB/s; JCT Ratio %.3f" % (job["jct_s"], job["predicted_jct_s"], job["jct_deviation"] * 100,
                                     job["max_deviation"] * 100, job["collectives"][0]["busbw_GBps"],
                                     job["collectives"][0]["predicted_busbw_GBps"], job["roofline"]["jct_ratio"]))
assert 0.25 < job["jct_s"] / job["predicted_jct_s"] < 4, "the measurement and the prediction are not the same job"
# the throttled worker's slow link holds the ring back: the root cause of the waiting, in most iterations
assert step["straggler"]["host"] == "worker8", step["straggler"]
assert max(job["straggler_count"], key=job["straggler_count"].get) == "worker8"
# one armed task for the whole job: one step started by one flow_step task (the netns lab's batch start)
assert len(re.findall(r"TASK \[aifabric.lab.experiment : Start every host's part", out)) == 1, out
assert "JCT Ratio" in open(sys.argv[1].replace("report.json", "report.txt")).read()
print("check_job: OK")
