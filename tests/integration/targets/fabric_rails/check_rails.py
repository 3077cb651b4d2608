# -*- coding: utf-8 -*-
"""Checks the relay ring's run (runme.sh): the step ran, every path proved (the relay ports' too), and every NIC's
books balance: a rail-1 NIC's eth0 counted its sibling's forwarded flow as expected traffic (issue 28), a rail-2 NIC's
own flow left by its relay link and is not looked for on its eth0. Prints what the books without the relay's paths
would have said of the same counters (the misreading the fix removes)."""

from __future__ import annotations

import json
import os
import sys

HEADER = 66  # bytes per packet on the tcp engine's books (_model.fair_share.HEADERS_PER_PACKET)
MACHINES = (1, 2, 3, 4)


def fail(msg):
    print("check_rails: " + msg)
    sys.exit(1)


def _delta(run, step, host, key):
    data = json.load(open(os.path.join(run, "counters", step, host + ".json")))
    iface = data.get("interface") or "eth0"
    return data["after"]["netdev"][iface][key] - data["before"]["netdev"][iface][key]


def main(run):
    report = json.load(open(os.path.join(run, "report.json")))
    (step,) = report["steps"]
    if step["status"] != "ok":
        fail("step %s: %s" % (step["status"], step.get("verdict")))
    proof = step["fabric"]["proof"]
    if proof["status"] != "agrees":
        fail("paths %s: %s" % (proof["status"], proof["disagreements"]))
    links = {e["link"]: e for e in step["fabric"]["links"]}
    workers = {w["host"]: w for w in step["workers"]}
    counters = step["counters"]
    if counters["disagreements"]:
        fail("the books disagree: %s" % counters["disagreements"])
    old = []
    for m in MACHINES:
        r1, r2 = "m%dr1" % m, "m%dr2" % m
        # the ring: r1's flow crosses its relay to r2 alone; r2's flow crosses its relay to r1, then rail1
        for relay, flow in (("%s->%s" % (r1, r2), r1), ("%s->%s" % (r2, r1), r2)):
            if links.get(relay, {}).get("flows") != [flow] or not links[relay].get("agrees"):
                fail("relay link %s: %s" % (relay, links.get(relay)))
        checks = counters["hosts"][r1]["checks"]
        if not checks or not all(c["agrees"] for c in checks):
            fail("%s's books: %s" % (r1, checks))
        netdev = checks[0]
        forwarded = workers[r2]["bytes"] + (workers[r2].get("retrans_bytes") or 0)
        if netdev.get("relayed_for") != {r2: forwarded} or netdev.get("payload_bytes") != 0 \
                or netdev.get("relay", "").split(";")[0] != "+ %d bytes relayed for %s" % (forwarded, r2):
            fail("%s's eth0 books do not count %s's forwarded %d bytes: %s" % (r1, r2, forwarded, netdev))
        if counters["hosts"][r2]["checks"] or "left by %s->%s" % (r2, r1) not in counters["hosts"][r2].get("relay", ""):
            fail("%s's books: %s" % (r2, counters["hosts"][r2]))
        # what the books said before issue 28's fix: each host's eth0 against its own flow's bytes alone
        for host in (r1, r2):
            counted = _delta(run, step["step"], host, "tx_bytes")
            packets = _delta(run, step["step"], host, "tx_packets")
            expected = workers[host]["bytes"] + packets * HEADER + (workers[host].get("retrans_bytes") or 0)
            old.append((host, counted, expected, counted / float(expected) - 1))
    # the misreading: a rail-2 NIC's eth0 carried none of its own flow (only its sibling's ACKs, relayed)
    if not all(diff < -0.9 for host, _c, _e, diff in old if host.endswith("r2")):
        fail("the rail-2 NICs' eth0 carried their own flows after all: %s" % old)
    text = open(os.path.join(run, "report.txt")).read()
    if "bytes relayed for m1r2" not in text or "left by m1r2->m1r1" not in text:
        fail("the text report does not say what was relayed")
    print("check_rails: every path proved (largest difference %.2f%%); books balanced: %s" % (
        proof["largest_difference"] * 100, "; ".join(
            "%s %+.3f%% (%s)" % (h, c["checks"][0]["difference"] * 100, c["checks"][0]["relay"])
            for h, c in sorted(counters["hosts"].items()) if c.get("checks"))))
    print("check_rails: without the relay's paths the same counters read: %s" % ", ".join(
        "%s %+.2f%%%s" % (h, d * 100, "" if abs(d) <= 0.005 else " DISAGREES") for h, _c, _e, d in old))


if __name__ == "__main__":
    main(sys.argv[1])
