"""Check one fault case's run directory: the step failed (or not), the named hosts and causes, the flows kept on disk.

usage: check_fault.py RUN_DIR STATUS [HOST=CAUSE_SUBSTRING ...] [--kept HOST,HOST]
Prints one line for the closing table.
"""
import json
import os
import sys

run_dir, status = sys.argv[1], sys.argv[2]
expect, kept = {}, []
args = sys.argv[3:]
while args:
    arg = args.pop(0)
    if arg == "--kept":
        kept = [h for h in args.pop(0).split(",") if h]
    else:
        host, cause = arg.split("=", 1)
        expect[host] = cause
report = json.load(open(os.path.join(run_dir, "report.json")))
step = [s for s in report["steps"] if s["kind"] == "barrier"][-1]
assert step["status"] == status, (step["status"], step.get("failed"))
if status == "failed":
    assert step["step_s"] is None, "a failed step must have no step time"
failed = {f["host"]: f for f in step["failed"]}
for host, cause in expect.items():
    assert host in failed, (host, failed)
    assert cause in failed[host]["cause"], (host, cause, failed[host])
assert set(failed) == set(expect), (sorted(failed), sorted(expect))
for host in kept:
    path = os.path.join(run_dir, "flows", step["step"], host + ".json")
    record = json.load(open(path))
    assert record["status"] == "ok" and record["bytes"] > 0, record
said = "; ".join("%s %s: %s" % (h, f["status"], f["cause"][:70]) for h, f in sorted(failed.items())) or "ok"
print("REPORT| %s | %s | kept on disk: %s" % (step["status"], said, ", ".join(kept) or "-"))
