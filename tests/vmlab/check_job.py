"""Check make vmlab-job's report (playbooks/vmlab_job.yml): the same broadcast (vm2 to vm1) over verbs and over TCP,
beside perftest's transfer of one iteration, on two TCG guests' soft-RoCE.

Asserted, on any machine: every experiment's steps completed; each job ran its iterations, vm2 sent and vm1 received
S bytes in every iteration, in its chunks, over the transport it was given (the verbs job's
programs say "verbs" and name the device; its report's engine note says RDMA verbs). Printed, not asserted (the
rates are the emulated guests' CPUs'): per iteration, perftest's step, the verbs job's and the TCP job's iteration
times (p50), and perftest's set-up per transfer (its process launch and queue pair set-up, before the first byte): what
a chained schedule over perftest would pay per operation."""
import json
import os
import sys

report = json.load(open(sys.argv[1]))
size, chunks, iterations = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
run = os.path.dirname(os.path.abspath(sys.argv[1]))
experiments = {e["name"]: e for e in report["experiments"]}
assert sorted(experiments) == ["job-tcp", "job-verbs", "perftest-bcast"], sorted(experiments)
steps = {s["step"]: s for s in report["steps"]}
ring = [s for name, s in sorted(steps.items()) if name.startswith("perftest-bcast")]
assert len(ring) == iterations and all(s["status"] == "ok" for s in ring), [s.get("verdict") for s in ring]
# perftest runs at least 5 iterations (its -n floor): with fewer chunks it sends 5 of them
sent = max(chunks, 5) * (size // chunks)
for s in ring:
    assert [(w["host"], w["bytes"]) for w in s["workers"]] == [("vm2", sent)], s["workers"]
figures = {}
for name, transport in (("job-verbs", "verbs"), ("job-tcp", None)):
    step = steps[name]
    assert step["status"] == "ok" and step["kind"] == "job", (name, step.get("verdict"))
    job = step["job"]
    assert job["iterations"]["n"] == iterations and len(job["series_s"]) == iterations, job
    assert job["collectives"][0]["op"] == "broadcast" and job["ranks"] == ["vm1", "vm2"], job["collectives"]
    programs = {}
    for host in ("vm1", "vm2"):
        path = os.path.join(run, "programs", name, host + ".json")
        with open(path) as handle:
            programs[host] = json.load(handle)
    for host, prog in programs.items():
        assert prog["status"] == "ok", (name, host, prog.get("error"))
        assert prog.get("transport") == transport, (name, host, prog.get("transport"))
    assert programs["vm2"]["bytes_sent"] == programs["vm1"]["bytes_received"] == iterations * size, programs
    assert programs["vm1"]["bytes_sent"] == programs["vm2"]["bytes_received"] == 0, programs
    sends = [c for c in programs["vm2"]["connections"] if c["direction"] == "send"]
    assert sum(c["messages"] for c in sends) == iterations * chunks, (name, sends)
    if transport == "verbs":
        for prog in programs.values():
            assert prog["verbs"]["device"] == "rxe0" and prog["verbs"]["path_mtu"] == 1024, prog["verbs"]
    figures[name] = job["iterations"]["p50"]
    if transport == "verbs":
        assert "RDMA verbs" in job["engine_note"], job["engine_note"]
setups = []  # each perftest flow's record (flows/<step>/<host>[--<flow>].json): its set-up before the first byte
for s in ring:
    folder = os.path.join(run, "flows", s["step"])
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name)) as handle:
            flow = json.load(handle)
        if flow.get("setup_s") is not None:
            setups.append(flow["setup_s"])
ring_p50 = sorted(s["step_s"] for s in ring)[len(ring) // 2]
print("vmlab job: one broadcast iteration (S = %d B, %d chunks): perftest's step p50 %.3f s, the job "
      "over verbs %.3f s, over TCP %.3f s (iteration p50)" % (size, chunks, ring_p50, figures["job-verbs"],
                                                              figures["job-tcp"]))
if setups:
    print("vmlab job: perftest's set-up before its first byte (process, queue pair), per transfer: median %.3f s of "
          "%d; a chained schedule over perftest pays it per operation, the verbs engine once per connection"
          % (sorted(setups)[len(setups) // 2], len(setups)))
