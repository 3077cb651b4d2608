"""The built-in tcp engine against iperf3 on one veth pair (MTU 9000), side by side in one run.

Prints throughput and CPU seconds per GB (sender + receiver, whole processes including interpreter start-up) for each
of several repetitions, then the medians. Goal: engine >= iperf3 in throughput.
"""
from __future__ import annotations

import json
import statistics
import subprocess
import time

from _netns import engine_flow, timed, veth_pair

VOLUME = 4 * 10**9
REPEATS = 9


def iperf3_flow(ns_client, ns_server):
    before = __import__("os").times()
    server = subprocess.Popen(["ip", "netns", "exec", ns_server, "iperf3", "-s", "-1", "-p", "5299"],
                              stdout=subprocess.DEVNULL)
    time.sleep(0.3)
    try:
        out, client_cpu = timed(["ip", "netns", "exec", ns_client, "iperf3", "-c", "198.18.250.2", "-p", "5299",
                                 "-n", str(VOLUME), "-J"])
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
    rows = {"engine": [], "iperf3": []}
    with veth_pair("aflb-eng") as (a, b):
        for i in range(REPEATS):
            result, c_cpu, s_cpu = engine_flow(a, b, VOLUME, port=18700 + i)
            rows["engine"].append((result["gbps"], (c_cpu + s_cpu) / (VOLUME / 1e9)))
            gbps, cpu = iperf3_flow(a, b)
            rows["iperf3"].append((gbps, cpu / (VOLUME / 1e9)))
            print("run %d: engine %.2f Gb/s %.3f cpu-s/GB | iperf3 %.2f Gb/s %.3f cpu-s/GB" % (
                i + 1, rows["engine"][-1][0], rows["engine"][-1][1], rows["iperf3"][-1][0], rows["iperf3"][-1][1]))
    print()
    print("%-8s %14s %16s" % ("", "median Gb/s", "median cpu-s/GB"))
    for name, data in rows.items():
        gbps = statistics.median(r[0] for r in data)
        cpu = statistics.median(r[1] for r in data)
        print("%-8s %14.2f %16.3f" % (name, gbps, cpu))
    ratio = statistics.median(r[0] for r in rows["engine"]) / statistics.median(r[0] for r in rows["iperf3"])
    print("engine / iperf3 throughput: %.3f (goal >= 1)" % ratio)


if __name__ == "__main__":
    main()
