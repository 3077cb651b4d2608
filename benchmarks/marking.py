"""ECN marking accuracy and threshold (draft-calabria-bmwg-ai-fabric-training-bench, section 7.1).

The draft: configure a threshold on the DUT's egress queue and verify (a) no packet is marked below it, (b) every
packet is marked above the maximum threshold, (c) the (W)RED probability ramp between the thresholds; plot the
marking probability against the instantaneous queue depth and report the threshold's accuracy (its deviation from the
configured value).

Here the DUT is the lab's switch port: the ECN marker (``aifabric.lab.ecn_marker``, a BPF classifier with a virtual
queue at the root of the port's htb shaper; docs/congestion.md) on a veth between two namespaces of the benchmark's
own (``<prefix><pid>-a``/``-b``, tests/unit/plugins/module_utils/ecn_port.py, shared with test_ecn_kernel.py). For
each marker configuration (``--configs``), a fresh marker on the port, then ``--cycles`` ramps: UDP datagrams of
ECT(0), 1,442 bytes on the wire, paced at ``--overload`` times the port's rate, so the queue grows by about
``(1 - 1/overload) x 1,442`` bytes a packet from empty until the first tail drop; then the queue drains and the
receiver's socket is read. Every datagram carries its sequence number.

The queue depth each packet met is the marker's own: the sender's ``sendto`` runs the qdisc's classifier in its own
context, so the marker's map, read right after each send (``bpf()`` lookup by the map's id), holds the backlog that
packet left (met = backlog after - its length when admitted; the backlog itself when dropped) and its counters say
what was done with it (a sample whose packet count moved by more than one, another packet in between, is left out
and counted; IPv6 is off and the receiver is a permanent neighbour, so nothing else should pass). Whether a packet
was marked is what the receiver got: the TOS byte of that sequence number (IP_RECVTOS). The configured probability at
a depth is the program's: 1 at or above max, ``max_p x (depth - min) / (max - min)`` above min, 0 below (step:
``min == max == K``).

Printed per configuration and bucket of the queue (``--buckets`` of the buffer; 16, the marker's own histogram, by
default): packets (ECT admitted), marked, the measured probability, the configured probability (the mean over the
bucket's packets), the error, and two standard deviations of a binomial with those probabilities (an error within it
is what chance gives). Per configuration: the marking ratio (marked / ECT packets, the marker's books), the marker's
marks against the receiver namespace's ``InCEPkts`` (/proc/net/netstat ``IpExt``) and the receiver socket's CE
datagrams (the reconciliation), the drops, the threshold's accuracy (the smallest depth marked against min or K, the
largest depth left unmarked against max or K, marks below min and packets left unmarked at or above max), and how
far the marker's in-kernel histogram (16 buckets) is from the per-packet samples' counts. Figures are printed,
never asserted. Run it as root, under the lab lock when others use the machine.

    python benchmarks/marking.py [--rate 100mbit] [--buffer 200KB]
                                 [--configs step:30KB,step:60KB,step:120KB,red:30KB:120KB:0.2,red:60KB:180KB:1]
                                 [--cycles 30] [--buckets 16] [--overload 1.1] [--raw marking.json]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import signal
import socket
import struct
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, ".collections"))
sys.path.insert(0, os.path.join(ROOT, "tests", "unit", "plugins", "module_utils"))

import ecn_port  # noqa: E402
from ansible_collections.aifabric.lab.plugins.module_utils import _bpf  # noqa: E402
from ansible_collections.aifabric.lab.plugins.module_utils._ecn import (  # noqa: E402
    FIELDS,
    HIST_BUCKETS,
    P_ONE,
    VALUE,
    Marker,
    decode,
    mark,
)
from ansible_collections.aifabric.lab.plugins.module_utils._flow.tcp_info import ip_ecn_counters  # noqa: E402
from ansible_collections.aifabric.lab.plugins.module_utils._units import (  # noqa: E402
    format_size,
    parse_rate,
    parse_size,
)

AT = {name: FIELDS.index(name) for name in ("packets", "bytes", "backlog", "marked", "dropped", "ect")}
SEQ = struct.Struct("!HI")  # configuration, sequence number
DEFAULT_CONFIGS = "step:30KB,step:60KB,step:120KB,red:30KB:120KB:0.2,red:60KB:180KB:1"


def parse_config(text):
    """``step:K``, ``red:MIN:MAX[:P]`` or ``taildrop`` as the marker's options (``ecn_port.marker_params``)."""
    parts = text.split(":")
    if parts[0] == "step" and len(parts) == 2:
        return {"mode": "step", "threshold": parts[1]}
    if parts[0] == "red" and len(parts) in (3, 4):
        return {"mode": "red", "threshold": None, "min_threshold": parts[1], "max_threshold": parts[2],
                "max_probability": float(parts[3]) if len(parts) == 4 else None}
    if parts == ["taildrop"]:
        return {"mode": "taildrop", "threshold": None}
    raise ValueError("--configs: %r; give step:K, red:MIN:MAX[:P] or taildrop (e.g. step:60KB, red:30KB:120KB:0.2)"
                     % text)


def configured_p(config, depth):
    """The program's marking probability for an ECT packet that meets ``depth`` bytes (bpf/ecn_marker.bpf.c)."""
    if not config["flags"] & 1:
        return 0.0
    low, high = config["min_threshold"], config["max_threshold"]
    if depth >= high:
        return 1.0
    if depth > low and high > low:
        return (config["max_p"] * (depth - low) // (high - low)) / P_ONE
    return 0.0


def collect(receiver, tag, received, timeout):
    """What the receiver got until ``timeout`` s without a datagram, into ``received`` (sequence number: TOS)."""
    for data, tos in ecn_port.receive(receiver, timeout=timeout):
        if len(data) >= SEQ.size:
            got_tag, got_seq = SEQ.unpack_from(data)
            if got_tag == tag:
                received[got_seq] = tos


def ramps(fd, sender, receiver, tag, config, args, wire):
    """``args.cycles`` ramps of the queue from empty to the first tail drop: the samples ``[(seq, depth, fate)]``,
    the TOS the receiver got by sequence number, the samples left out, the offered rate / the port's."""
    rate = config["rate"]  # bytes per second
    gap = wire * 1e9 / (rate * args.overload)  # ns between sends
    per_ramp = int(config["limit"] / (wire * (1 - 1 / args.overload))) + 1
    size = VALUE.size
    pad = b"\0" * (ecn_port.PAYLOAD - SEQ.size)
    samples, received, skipped, seq = [], {}, 0, 0
    sending_ns = 0
    for _cycle in range(args.cycles):
        prev = VALUE.unpack(_bpf.map_lookup(fd, size))
        start = t_next = time.monotonic_ns()
        for _i in range(3 * per_ramp):  # a sender that cannot outrun the port ends the ramp here
            now = time.monotonic_ns()
            while now < t_next:
                now = time.monotonic_ns()
            ecn_port.send(sender, SEQ.pack(tag, seq) + pad)
            vals = VALUE.unpack(_bpf.map_lookup(fd, size))
            t_next += gap
            if now - t_next > gap:  # late (descheduled): no catch-up burst, the pace goes on from now
                t_next = now + gap
            moved = vals[AT["packets"]] - prev[AT["packets"]]
            if moved != 1 or vals[AT["bytes"]] - prev[AT["bytes"]] != wire:
                skipped += 1
                prev = vals
                seq += 1
                continue
            if vals[AT["dropped"]] > prev[AT["dropped"]]:
                samples.append((seq, vals[AT["backlog"]], "drop"))
                prev = vals
                seq += 1
                break
            fate = "mark" if vals[AT["marked"]] > prev[AT["marked"]] else "pass"
            samples.append((seq, vals[AT["backlog"]] - wire, fate))
            prev = vals
            seq += 1
        end = time.monotonic_ns()
        sending_ns += end - start
        # the queue drains (buffer / rate) while the receiver's socket is read
        collect(receiver, tag, received, 0.05)
        time.sleep(max(0.0, config["limit"] / rate - (time.monotonic_ns() - end) / 1e9))
    collect(receiver, tag, received, 0.3)
    offered = seq * wire / (sending_ns / 1e9) / rate if sending_ns else None
    return samples, received, skipped, offered


def buckets_of(samples, received, config, n):
    """Per bucket of the buffer (``depth * n // (buffer + 1)``, the marker's own formula): packets admitted, marked at
    the receiver, the measured and configured probabilities, the error, two standard deviations of chance."""
    limit = config["limit"]
    rows = [{"from_bytes": -(-b * (limit + 1) // n), "to_bytes": -(-(b + 1) * (limit + 1) // n) - 1, "packets": 0,
             "marked": 0, "p_sum": 0.0, "var_sum": 0.0} for b in range(n)]
    for seq, depth, fate in samples:
        if fate == "drop":
            continue
        row = rows[min(n - 1, depth * n // (limit + 1))]
        p = configured_p(config, depth)
        row["packets"] += 1
        row["marked"] += 1 if received.get(seq) is not None and received[seq] & 3 == 3 else 0
        row["p_sum"] += p
        row["var_sum"] += p * (1 - p)
    out = []
    for row in rows:
        k = row.pop("packets")
        p_sum, var_sum = row.pop("p_sum"), row.pop("var_sum")
        if not k:
            continue
        row.update(packets=k, measured=row["marked"] / k, configured=p_sum / k)
        row["error"] = row["measured"] - row["configured"]
        row["two_sd"] = 2 * math.sqrt(var_sum) / k
        out.append(row)
    return out


def threshold(samples, received, config):
    """Where marking starts and where it is complete, against the configuration, from the per-packet samples."""
    marked, unmarked = [], []
    for seq, depth, fate in samples:
        if fate == "drop":
            continue
        tos = received.get(seq)
        if tos is None:
            continue
        (marked if tos & 3 == 3 else unmarked).append(depth)
    low, high = config["min_threshold"], config["max_threshold"]
    first = min(marked) if marked else None
    last = max(unmarked) if unmarked else None
    marks = bool(config["flags"] & 1)  # taildrop: no threshold to be accurate about
    return {"first_marked": first, "min_threshold": low,
            "start_deviation": None if first is None or not marks else first - low,
            "last_unmarked": last, "max_threshold": high,
            "full_deviation": None if last is None or not marks else last - high,
            "marked_below_min": sum(1 for d in marked if d < low),
            "unmarked_at_or_above_max": sum(1 for d in unmarked if d >= high),
            "depth_max": max((d for _s, d, _f in samples), default=0)}


def histogram_apart(samples, values, config):
    """How far the marker's in-kernel histogram (16 buckets: ECT admitted, marked) is from the samples' counts (0:
    the same; a sample left out is in the kernel's and not in the samples)."""
    limit = config["limit"]
    ect, hit = [0] * HIST_BUCKETS, [0] * HIST_BUCKETS
    for _seq, depth, fate in samples:
        if fate == "drop":
            continue
        b = min(HIST_BUCKETS - 1, depth * HIST_BUCKETS // (limit + 1))
        ect[b] += 1
        hit[b] += fate == "mark"
    kernel_ect = [values["hist_ect_%d" % b] for b in range(HIST_BUCKETS)]
    kernel_hit = [values["hist_marked_%d" % b] for b in range(HIST_BUCKETS)]
    return sum(abs(x - y) for x, y in zip(ect + hit, kernel_ect + kernel_hit))


def run_config(tag, text, a, b, sender, receiver, args):
    params = ecn_port.marker_params(buffer=args.buffer, **parse_config(text))
    from pyroute2 import IPRoute

    with IPRoute(netns=a, flags=0) as ipr:
        mark(ipr, ecn_port.marker_params(state="absent"))  # a fresh marker: its counters and queue from zero
        mark(ipr, params)
        _f, map_id = Marker(ipr, ecn_port.DEVICE).find()
    fd = _bpf.map_fd_by_id(map_id)
    try:
        config = decode(_bpf.map_lookup(fd, VALUE.size))
        before_ip = ecn_port.in_ns(b, ip_ecn_counters)
        started = time.monotonic()
        samples, received, skipped, offered = ramps(fd, sender, receiver, tag, config, args, ecn_port.WIRE)
        seconds = time.monotonic() - started
        values = decode(_bpf.map_lookup(fd, VALUE.size))
    finally:
        os.close(fd)
    after_ip = ecn_port.in_ns(b, ip_ecn_counters)
    in_ce = after_ip["ce"] - before_ip["ce"]
    socket_ce = sum(1 for tos in received.values() if tos is not None and tos & 3 == 3)
    admitted = [s for s in samples if s[2] != "drop"]
    lost = sum(1 for s in admitted if s[0] not in received)
    mismatched = sum(1 for s in admitted if s[0] in received and (received[s[0]] & 3 == 3) != (s[2] == "mark"))
    summary = {
        "config": text, "seconds": round(seconds, 2), "offered": offered, "samples": len(samples),
        "skipped": skipped, "ect": values["ect"], "ect_segs": values["ect_segs"], "marked": values["marked"],
        "marked_segs": values["marked_segs"], "dropped": values["dropped"],
        "marking_ratio": values["marked_segs"] / values["ect_segs"] if values["ect_segs"] else None,
        "in_ce_pkts": in_ce, "socket_ce": socket_ce, "reconciliation": in_ce - values["marked_segs"],
        "lost_after_marker": lost, "fate_mismatches": mismatched,
        "histogram_apart": histogram_apart(samples, values, config),
        "threshold": threshold(samples, received, config),
    }
    rows = buckets_of(samples, received, config, args.buckets)
    raw = {"summary": summary, "buckets": rows, "config": {k: config[k] for k in FIELDS[:6]},
           "samples": [[s, d, f, received.get(s)] for s, d, f in samples]}
    return summary, rows, raw


def kb(value):
    return "-" if value is None else format_size(value, digits=2)


def signed(value):
    return "-" if value is None else "%+d B" % value


def report(args, results):
    print("ECN marking accuracy (section 7.1): port %s, buffer %s, ECT(0) datagrams of %d bytes on the wire paced at "
          "%.2f x the port rate, %d ramps from empty to the first tail drop per configuration"
          % (args.rate, args.buffer, ecn_port.WIRE, args.overload, args.cycles))
    for summary, rows, _raw in results:
        print()
        print("%s (%.1f s, offered %.2f x the port rate, %d samples, %d left out)" % (
            summary["config"], summary["seconds"], summary["offered"] or 0, summary["samples"], summary["skipped"]))
        print("| queue depth met | packets | marked | measured p | configured p | error | chance (2 sd) |")
        print("|---|---|---|---|---|---|---|")
        for row in rows:
            print("| %s-%s | %d | %d | %.3f | %.3f | %+.3f | %.3f |" % (
                kb(row["from_bytes"]), kb(row["to_bytes"]), row["packets"], row["marked"], row["measured"],
                row["configured"], row["error"], row["two_sd"]))
    print()
    print("| configuration | ECT packets | marked | ratio | InCEPkts | receiver CE | marker - InCEPkts | dropped "
          "| first marked at | vs min/K | last unmarked at | vs max/K | marked below min | unmarked at/above max "
          "| histogram |")
    print("|%s|" % "|".join(["---"] * 15))
    for summary, _rows, _raw in results:
        t = summary["threshold"]
        print("| %s | %d | %d | %s | %d | %d | %+d | %d | %s | %s | %s | %s | %d | %d | %s |" % (
            summary["config"], summary["ect_segs"], summary["marked_segs"],
            "-" if summary["marking_ratio"] is None else "%.4f" % summary["marking_ratio"], summary["in_ce_pkts"],
            summary["socket_ce"], summary["marked_segs"] - summary["in_ce_pkts"], summary["dropped"],
            "%d B" % t["first_marked"] if t["first_marked"] is not None else "none",
            signed(t["start_deviation"]),
            "%d B" % t["last_unmarked"] if t["last_unmarked"] is not None else "none",
            signed(t["full_deviation"]), t["marked_below_min"], t["unmarked_at_or_above_max"],
            "same" if not summary["histogram_apart"] else "%d apart" % summary["histogram_apart"]))
    for summary, _rows, _raw in results:
        if summary["dropped"] < args.cycles:  # every ramp ends at its first tail drop
            print("%s: %d of %d ramps did not fill the buffer (the queue reached %s): the sender could not outrun "
                  "the port (lower --rate)" % (summary["config"], args.cycles - summary["dropped"], args.cycles,
                                               kb(summary["threshold"]["depth_max"])))
        if summary["lost_after_marker"] or summary["fate_mismatches"]:
            print("%s: %d admitted packets never reached the receiver, %d arrived with another codepoint than the "
                  "marker gave" % (summary["config"], summary["lost_after_marker"], summary["fate_mismatches"]))


def permanent_neighbour(a, b):
    """The receiver's MAC address as a permanent neighbour of the sender: no ARP probe (a packet that is not ours)
    goes through the port in the middle of a ramp when the entry would have gone stale."""
    from pyroute2 import IPRoute

    with IPRoute(netns=b, flags=0) as ipr:
        mac = ipr.get_links(ipr.link_lookup(ifname=ecn_port.PEER)[0])[0].get_attr("IFLA_ADDRESS")
    with IPRoute(netns=a, flags=0) as ipr:
        ipr.neigh("replace", dst=ecn_port.ADDR_B, lladdr=mac, ifindex=ipr.link_lookup(ifname=ecn_port.DEVICE)[0],
                  state=0x80)  # NUD_PERMANENT


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", default="100mbit", help="the port's rate (htb), which drains the marker's queue")
    parser.add_argument("--buffer", default="200KB", help="the port's buffer (the marker's tail drop)")
    parser.add_argument("--configs", default=DEFAULT_CONFIGS,
                        help="marker configurations, comma-separated: step:K, red:MIN:MAX[:P], taildrop")
    parser.add_argument("--cycles", type=int, default=30, help="ramps of the queue per configuration")
    parser.add_argument("--buckets", type=int, default=HIST_BUCKETS, help="buckets of the buffer in the tables")
    parser.add_argument("--overload", type=float, default=1.1,
                        help="the sender's pace / the port's rate during a ramp (the queue's slope)")
    parser.add_argument("--prefix", default="afmk-", help="namespace prefix (<prefix><pid>-a, -b)")
    parser.add_argument("--raw", default=None, help="write every configuration's samples and tables to this JSON file")
    args = parser.parse_args()
    if os.geteuid() != 0:
        parser.error("needs root (namespaces, the marker's BPF program)")
    if args.overload <= 1:
        parser.error("--overload: %s; give more than 1 (the queue must grow)" % args.overload)
    parse_rate(args.rate, "--rate")
    parse_size(args.buffer, "--buffer")
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    for text in configs:
        try:
            parse_config(text)
        except ValueError as exc:
            parser.error(str(exc))
    # SIGTERM unwinds like ^C: the namespaces (and with them the shaper and the marker) are removed. Only here:
    # pyroute2's forked helpers inherit the handler and are stopped with SIGTERM; they leave at once
    main_pid = os.getpid()

    def terminated(*_args):
        if os.getpid() != main_pid:
            os._exit(143)
        sys.exit(143)

    signal.signal(signal.SIGTERM, terminated)
    started = time.monotonic()
    results = []
    with ecn_port.veth_pair(prefix=args.prefix.rstrip("-"), rate=args.rate, ipv6=False) as (a, b):
        receiver = ecn_port.in_ns(b, lambda: ecn_port.receiver_socket(64 << 20))
        sender = ecn_port.in_ns(a, ecn_port.sender_socket)
        try:
            permanent_neighbour(a, b)
            sender.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, ecn_port.ECT0)
            ecn_port.send(sender, b"warm-up")  # ARP resolved before the first measured packet
            ecn_port.receive(receiver, timeout=0.2)
            for tag, text in enumerate(configs, 1):
                results.append(run_config(tag, text, a, b, sender, receiver, args))
                print("%s done" % text, flush=True)
        finally:
            sender.close()
            receiver.close()
    if args.raw:
        with open(args.raw, "w") as handle:
            json.dump({"args": vars(args), "configs": [r[2] for r in results]}, handle)
    report(args, results)
    print()
    print("Run time: %.0f s" % (time.monotonic() - started))


if __name__ == "__main__":
    main()
