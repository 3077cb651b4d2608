"""What one chaos case left in its run directory: check_chaos.py RUN_DIR STATUS [options]

  STATUS              ok or failed: the step's status in report.json
  --kept H1,H2        these hosts' flows are on disk with status ok (measured, not lost)
  --named H=TEXT      host H's flow failed and its error says TEXT
  --refused ADDRESS   a peer at ADDRESS is listed as refused somewhere in the step's report (the rendezvous' or a
                      flow server's list), with a reason
  --survived H1,H2    the report says these hosts' results survived a coordinator that died
Every case also checks that report.json validates against docs/report.schema.json (a real run's report, with
tests/integration/validate_reports.py's validator: it fails when jsonschema cannot be imported), that its test report
names the driver of the NIC each kept host's step ran on, and that metrics.prom is whole (# EOF).
Prints one line for the closing table: the step's status, the flows kept and the causes named.
"""
import argparse
import json
import os
import sys


def walk(node):
    """Every dict inside ``node``."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


def check_schema(report):
    """report.json against docs/report.schema.json (a real run's report, every case): AssertionError naming the JSON
    paths the schema refuses (the first 5); exit 2 when jsonschema cannot be imported (a pinned test requirement)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    import validate_reports

    try:
        validator = validate_reports.load_validator()
    except validate_reports.CannotValidate as exc:
        print("check_chaos: report.json cannot be checked against its schema: %s" % exc, file=sys.stderr)
        sys.exit(2)
    errors = ["%s: %s" % error[:2] for error in validate_reports.report_errors(report, validator)]
    assert not errors, ("report.json does not validate against docs/report.schema.json", errors[:5])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("run")
    parser.add_argument("status")
    parser.add_argument("--kept", default="")
    parser.add_argument("--named", action="append", default=[])
    parser.add_argument("--refused", action="append", default=[])
    parser.add_argument("--survived", default="")
    args = parser.parse_args()
    report = json.load(open(os.path.join(args.run, "report.json")))
    check_schema(report)
    # the test report identifies the NIC each worker's step ran on, as the host read it (the lab's veth)
    dut = report["test_report"]["dut"]["hosts"]
    for host in [h for h in args.kept.split(",") if h]:
        nic = dut.get(host, {}).get("nic") or {}
        assert nic.get("driver"), ("no NIC identified for %s" % host, dut.get(host))
    with open(os.path.join(args.run, "metrics.prom")) as handle:
        assert handle.read().endswith("\n# EOF\n"), "metrics.prom does not end with # EOF"
    (step,) = report["steps"]
    assert step["status"] == args.status, (step["status"], step.get("failed"), step.get("verdict"))
    flows = {}
    base = os.path.join(args.run, "flows", step["step"])
    for name in os.listdir(base):
        record = json.load(open(os.path.join(base, name)))
        flows[record["host"]] = record
    kept = [h for h in args.kept.split(",") if h]
    for host in kept:
        assert flows.get(host, {}).get("status") == "ok", (host, flows.get(host))
        assert flows[host].get("bytes"), (host, flows[host])
    named = []
    for item in args.named:
        host, text = item.split("=", 1)
        error = str(flows.get(host, {}).get("error"))
        assert flows.get(host, {}).get("status") != "ok" and text in error, (host, text, flows.get(host))
        named.append("%s: %s" % (host, error[:90]))
    for address in args.refused:
        listed = [d for d in walk(step) if d.get("peer") == address and d.get("reason")]
        assert listed, ("no refused peer %s in the report" % address, step.get("start"))
    survived = [h for h in args.survived.split(",") if h]
    if survived:
        text = json.dumps(step)
        assert all(h in text for h in survived) and "surviv" in text, ("survivors not named", step.get("failed"))
    causes = "; ".join(named) or "-"
    print("%s | kept on disk: %s | %s" % (step["status"], ", ".join(kept) or "-", causes))


if __name__ == "__main__":
    sys.exit(main())
