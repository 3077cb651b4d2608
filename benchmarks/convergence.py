"""Convergence after new flows join a shared bottleneck (draft-calabria-bmwg-ai-fabric-training-bench section 7.3).

Issue 27, item 3. On the netns lab (inventories/netns8: 8 workers, 1 Gb/s ports; inventories/netns32: 32 workers,
250 Mb/s), for each M: M workers send tcp-engine flows to one server on sink1 (its switch port is the shared
bottleneck), M more workers start at T0 (their own fixed start instant, ``start_at`` + T0; every client has armed -
connected and been admitted - before the first flow starts); every flow samples the bytes its receiver acknowledged
every ``--interval`` s. The analysis (``plugin_utils/_analysis/convergence.py``) reports the time from T0 until every
one of the 2M flows stays within ``--tolerance`` of its fair share (the port's TCP goodput / 2M), each flow's time,
Jain's fairness index at the window's end, and the retransmissions (the senders' TCP_INFO) and the drops of the
bottleneck port's qdiscs (pyroute2's tc stats before and after).

The flows run through the tcp engine directly, one process per flow in its host's namespace (as
``benchmarks/_netns.py`` does), not through the experiment role: an experiment starts all its flows at one instant,
and a delayed start per flow is what this test needs. Figures are printed, never asserted. It brings its own lab up
under the prefix ``--prefix`` (default ``afcv-``, apart from the lab's ``afl-``/``afc-``) and takes it down in every
case. Run it under the lab lock when others use the machine.

The lab's switch port has one htb class per sender (a max-min fair arbiter: the arbiter, not TCP, shares the link);
``--queue fifo`` replaces sink1's port with one tail-drop FIFO at the line rate (tbf, ``--buffer``), where the
senders' congestion control does. docs/congestion.md has the measured tables and the commands.

    python benchmarks/convergence.py [--inventory netns8|netns32] [--ms 2,4] [--t0 3] [--after 8] [--interval 0.2]
                                     [--queue fair|fifo] [--congestion cubic] [--raw results.json]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from _lab import COLL, ROOT, fifo, inventory_facts, netns_lab, port_drops
from ansible_collections.aifabric.lab.plugins.module_utils._units import parse_size
from ansible_collections.aifabric.lab.plugins.plugin_utils._analysis.convergence import convergence
from ansible_collections.aifabric.lab.plugins.plugin_utils._model.fair_share import goodput_factor

RUNNER = r"""
import json, sys
sys.path.insert(0, %(coll)r)
from ansible_collections.aifabric.lab.plugins.module_utils._flow.engine import FlowSpec
from ansible_collections.aifabric.lab.plugins.module_utils._flow.tcp import TcpEngine
spec = FlowSpec(**json.loads(sys.argv[1]))
print(json.dumps(TcpEngine().serve(spec) if spec.role == "server" else TcpEngine().send(spec)))
""" % {"coll": COLL}


def run_m(m, facts, prefix, args, port):
    """2M flows to sink1: M from the start, M from T0. Returns (results, start instant)."""
    sink = facts["address"]["sink1"]
    server = subprocess.Popen(
        ["ip", "netns", "exec", prefix + "sink1", sys.executable, "-c", RUNNER,
         json.dumps({"role": "server", "address": sink, "port": port, "token": "conv",
                     "expected_clients": 2 * m, "timeout": args.t0 + args.after + 60})],
        stdout=subprocess.PIPE, text=True)
    clients = []
    try:
        base = time.time() + 2.0 + 0.25 * 2 * m  # time for every client process to start and arm
        for i, host in enumerate(facts["workers"][:2 * m]):
            late = i >= m
            spec = {"role": "client", "address": sink, "port": port, "token": "conv", "flow_id": host,
                    "duration": args.after if late else args.t0 + args.after,
                    "start_at": base + (args.t0 if late else 0.0), "timeout": args.t0 + args.after + 30,
                    "interval": args.interval}
            if args.congestion:
                spec["congestion"] = args.congestion
            clients.append(subprocess.Popen(["ip", "netns", "exec", prefix + host, sys.executable, "-c", RUNNER,
                                             json.dumps(spec)], stdout=subprocess.PIPE, text=True))
        results = []
        for proc in clients:
            out = proc.communicate(timeout=args.t0 + args.after + 90)[0]
            results.append(json.loads(out) if out.strip() else {"status": "error", "error": "no output"})
        server.communicate(timeout=30)
        return results, base
    finally:
        for proc in clients + [server]:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def analyse(results, base, m, facts, args):
    flows = {}
    for r in results:
        if r.get("status") != "ok":
            raise RuntimeError("flow %s: %s" % (r.get("flow_id"), r.get("error")))
        start = r["start"] - base
        flows[r["flow_id"]] = {"start": start, "samples": [{"t": start + s["t"], "bytes": s["bytes"]}
                                                           for s in r["samples"]]}
    fair = facts["rate"] * goodput_factor(facts["mtu"]) / (2 * m)
    # the window ends one interval before the flows do: the last sample is the flow's tail (its final ACKs)
    out = convergence(flows, args.t0, fair, tolerance=args.tolerance, hold=args.hold,
                      end=args.t0 + args.after - args.interval)
    out["retrans"] = sum((r.get("tcp") or {}).get("total_retrans") or r.get("retransmits") or 0 for r in results)
    out["late_ms"] = max(abs(r.get("late_s") or 0.0) for r in results) * 1000
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", default="netns8")
    parser.add_argument("--ms", default="2,4", help="M values, comma-separated (2M workers each)")
    parser.add_argument("--t0", type=float, default=3.0, help="seconds the first M flows run alone")
    parser.add_argument("--after", type=float, default=8.0, help="seconds all 2M flows run after T0")
    parser.add_argument("--interval", type=float, default=0.2, help="the flows' sample interval, s")
    parser.add_argument("--tolerance", type=float, default=0.1)
    parser.add_argument("--hold", type=float, default=1.0, help="converged only if held this long before the end")
    parser.add_argument("--congestion", default=None, help="TCP congestion control (default: the kernel's)")
    parser.add_argument("--queue", choices=("fair", "fifo"), default="fair",
                        help="fair: the lab's port (one htb class per sender); fifo: one tail-drop queue (tbf)")
    parser.add_argument("--buffer", default="400KB", help="the fifo's buffer")
    parser.add_argument("--prefix", default="afcv-")
    parser.add_argument("--raw", default=None, help="write every flow's result (with its samples) to this JSON file")
    args = parser.parse_args()
    inv = os.path.join(ROOT, "inventories", args.inventory, "hosts.yml")
    facts = inventory_facts(inv)
    ms = [int(x) for x in args.ms.split(",")]
    if 2 * max(ms) > len(facts["workers"]):
        parser.error("M=%d needs %d workers; %s has %d" % (max(ms), 2 * max(ms), args.inventory,
                                                           len(facts["workers"])))
    rows, raw = [], {}
    try:
        with netns_lab(inv, args.prefix, "aflb-conv-"):
            if args.queue == "fifo":
                fifo(args.prefix, "p-sink1", facts["rate"], parse_size(args.buffer, "--buffer"))
            for m in ms:
                before = port_drops(args.prefix, "p-sink1")
                results, base = run_m(m, facts, args.prefix, args, 18800 + m)
                drops = port_drops(args.prefix, "p-sink1") - before
                raw[m] = {"base": base, "results": results}
                try:
                    rows.append((m, analyse(results, base, m, facts, args), drops, None))
                except (RuntimeError, ValueError) as exc:
                    rows.append((m, None, drops, str(exc)))
                print("M=%d done" % m, flush=True)
    finally:
        if args.raw:
            with open(args.raw, "w") as handle:
                json.dump(raw, handle)
    print()
    print("Queue at the bottleneck: %s; congestion control: %s" % (
        "one htb class per sender (the lab's port)" if args.queue == "fair" else "tail-drop FIFO of %s (tbf)"
        % args.buffer, args.congestion or "the kernel's default"))
    print("Convergence (section 7.3) on %s: %s ports, MTU %d, M flows from 0 s, M more from T0 = %.1f s, %.1f s "
          "after; tolerance %d%%, samples every %.1f s, held at least %.1f s"
          % (args.inventory, "%g Mb/s" % (facts["rate"] / 1e6), facts["mtu"], args.t0, args.after,
             args.tolerance * 100, args.interval, args.hold))
    header = ("M", "flows", "fair share", "converged", "worst flow", "median converged flow", "JFI end", "retrans",
              "drops", "late ms")
    print("| %s |" % " | ".join(header))
    print("|%s|" % "|".join(["---"] * len(header)))
    for m, out, drops, error in rows:
        if error:
            print("| %d | %d | | failed: %s | | | | | %d | |" % (m, 2 * m, error, drops))
            continue
        times = sorted(v for v in out["per_flow_s"].values() if v is not None)
        never = len(out["per_flow_s"]) - len(times)
        # a flow off its share in the window's last interval never converged within the window
        worst = "never (%d of %d flows)" % (never, 2 * m) if never else "%.1f s" % times[-1]
        median = "%.1f s" % times[len(times) // 2] if times else "-"
        if out["converged"]:
            conv = "%.1f s" % out["convergence_s"]
        else:
            conv = "no" if never else "no: %s" % ", ".join(out["never"])
        print("| %d | %d | %.0f Mb/s | %s | %s | %s | %s | %d | %d | %.1f |" % (
            m, 2 * m, out["fair_share"] / 1e6, conv, worst, median,
            "-" if out["jfi_end"] is None else "%.3f" % out["jfi_end"], out["retrans"], drops, out["late_ms"]))


if __name__ == "__main__":
    main()
