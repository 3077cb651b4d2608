"""The built-in tcp engine against iperf3 on one veth pair (MTU 9000), side by side in one run.

Prints throughput and CPU seconds per GB (sender + receiver, whole processes including interpreter start-up) for each
of several repetitions, interleaved (engine, iperf3, iperf3 -Z, then again), then the medians with the spread (min -
max). The peers: iperf3 as people run it (128 KiB writes, copied), and iperf3 -Z (its zero-copy sendfile sender, its
fairest rival: the engine sends with sendfile too). Goals: the engine's median throughput >= each iperf3's, and its
CPU seconds per GB <= each iperf3's.
"""
from __future__ import annotations

import json
import statistics
import subprocess
import time

from _netns import engine_flow, timed, veth_pair

VOLUME = 4 * 10**9
REPEATS = 9


def iperf3_flow(ns_client, ns_server, zerocopy=False):
    before = __import__("os").times()
    server = subprocess.Popen(["ip", "netns", "exec", ns_server, "iperf3", "-s", "-1", "-p", "5299"],
                              stdout=subprocess.DEVNULL)
    time.sleep(0.3)
    try:
        out, client_cpu = timed(["ip", "netns", "exec", ns_client, "iperf3", "-c", "198.18.250.2", "-p", "5299",
                                 "-n", str(VOLUME), "-J"] + (["-Z"] if zerocopy else []))
        server.wait(30)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    after = __import__("os").times()
    total = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    end = json.loads(out)["end"]["sum_received"]
    return end["bits_per_second"] / 1e9, total


def main():
    rows = {"engine": [], "iperf3": [], "iperf3 -Z": []}
    with veth_pair("aflb-eng") as (a, b):
        for i in range(REPEATS):
            result, c_cpu, s_cpu = engine_flow(a, b, VOLUME, port=18700 + i)
            rows["engine"].append((result["gbps"], (c_cpu + s_cpu) / (VOLUME / 1e9)))
            for name, zerocopy in (("iperf3", False), ("iperf3 -Z", True)):
                gbps, cpu = iperf3_flow(a, b, zerocopy)
                rows[name].append((gbps, cpu / (VOLUME / 1e9)))
            figures = ["%s %.2f Gb/s %.3f cpu-s/GB" % (name, data[-1][0], data[-1][1]) for name, data in rows.items()]
            print("run %d: %s" % (i + 1, " | ".join(figures)))
    print()
    print("%-10s %26s %26s" % ("", "Gb/s median (min - max)", "cpu-s/GB median (min - max)"))
    medians = {}
    for name, data in rows.items():
        gbps = [r[0] for r in data]
        cpu = [r[1] for r in data]
        medians[name] = (statistics.median(gbps), statistics.median(cpu))
        print("%-10s %10.2f (%5.2f - %5.2f) %12.3f (%5.3f - %5.3f)" % (
            name, medians[name][0], min(gbps), max(gbps), medians[name][1], min(cpu), max(cpu)))
    for peer in ("iperf3", "iperf3 -Z"):
        print("engine / %-9s throughput %.3f (goal >= 1), cpu per GB %.3f (goal <= 1)" % (
            peer, medians["engine"][0] / medians[peer][0], medians["engine"][1] / medians[peer][1]))


if __name__ == "__main__":
    main()
