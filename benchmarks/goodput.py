"""Goodput of one flow through a shaper against the configured rate, header-corrected (MTU 9000: 8948/9014).

For each rate and qdisc (htb and tbf, applied with the collection's own tc code through pyroute2), one tcp-engine flow
of about 4 seconds on a veth pair. Goal: goodput >= 0.99 of the header-corrected rate.
"""
from __future__ import annotations

import os
import subprocess

from _netns import PY, ROOT, engine_flow, veth_pair

FACTOR = 8948 / 9014
RATES = ["100mbit", "1gbit", "2gbit", "8gbit", "20gbit"]
SHAPE = r"""
import sys
sys.path.insert(0, %r)
from pyroute2 import IPRoute
from ansible_collections.aifabric.lab.plugins.module_utils._tc import Shaper, desired_shaper
qdisc, rate = sys.argv[1], sys.argv[2]
with IPRoute() as ipr:
    s = Shaper(ipr, "eth0")
    if qdisc == "none":
        s.remove()
    else:
        s.apply(desired_shaper({"qdisc": qdisc, "rate": rate, "burst": None, "latency": 0.05,
                                "fair_share_sources": []}, s.mtu))
""" % os.path.join(ROOT, ".collections")


def run():
    import sys

    sys.path.insert(0, os.path.join(ROOT, ".collections"))
    from ansible_collections.aifabric.lab.plugins.module_utils._units import parse_rate

    print("%-8s %-5s %12s %12s %9s" % ("rate", "qdisc", "ideal Gb/s", "goodput", "ratio"))
    worst = 1.0
    with veth_pair("aflb-gp") as (a, b):
        port = 18800
        ceiling = engine_flow(a, b, 8 * 10**9, port=port)[0]
        print("%-8s %-5s %12s %12.4f %9s   (this machine's unshaped ceiling, same veth)" % (
            "-", "none", "-", ceiling["gbps"], "-"))
        for rate in RATES:
            for qdisc in ("htb", "tbf"):
                subprocess.run(["ip", "netns", "exec", a, PY, "-c", SHAPE, qdisc, rate], check=True)
                bps = parse_rate(rate)
                ideal = bps * FACTOR / 1e9
                volume = int(bps / 8 * 4)
                port += 1
                result = engine_flow(a, b, volume, port=port)[0]
                ratio = result["gbps"] / ideal
                cpu_bound = ideal > 0.7 * ceiling["gbps"]
                if not cpu_bound:
                    worst = min(worst, ratio)
                note = "   (near the CPU ceiling: not counted)" if cpu_bound else ""
                print("%-8s %-5s %12.4f %12.4f %9.4f%s" % (rate, qdisc, ideal, result["gbps"], ratio, note))
                subprocess.run(["ip", "netns", "exec", a, PY, "-c", SHAPE, "none", rate], check=True)
    print("worst ratio below the CPU ceiling: %.4f (goal >= 0.99)" % worst)


if __name__ == "__main__":
    run()
