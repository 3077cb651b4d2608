"""Back-to-back burst absorption at an N:1 port (draft-calabria-bmwg-ai-fabric-training-bench section 5.3).

Issue 27, item 3. The draft's test: transmit bursts at line rate with the minimum inter-frame gap, increase the burst
length until the first frame is lost, at incast ratios 2:1 to 32:1, and report the burst absorption capacity (frames
and bytes) per incast ratio. Here, on the netns lab (inventories/netns8: 8 workers, 1 Gb/s ports; inventories/netns32:
32 workers, 250 Mb/s), for each N: N workers each send a burst of K frames to sink1, all starting at one instant, and
sink1's switch port, one tail-drop FIFO of ``--buffer`` bytes drained at the line rate, is the congested egress. K
doubles from one frame (at most ``--cap`` x the buffer per sender) until a frame is lost, then bisection narrows it
to one frame (or ``--resolution`` of K): the largest burst that passed without loss. The search is repeated
``--reps`` times; the table gives per N the largest lossless burst per sender (min / median over the repetitions,
frames and bytes), the total (N x the median), the total over the buffer, and beside it what a perfectly
synchronized line-rate burst fits: K x (N-1) frames <= the buffer, a total of N/(N-1) buffers.

**UDP, not TCP.** A burst here is K datagrams of one frame each (``--frame`` bytes on the wire, the lab's MTU plus the
Ethernet header by default) handed at once to a token bucket at the line rate on the worker's own interface (tbf, a
bucket of ``--bucket`` frames): the worker's NIC, which serializes the burst at the line rate with no gap and never
drops it (its queue and the socket's buffer hold the largest burst). That is the draft's "bursts at line rate with
minimum inter-frame gap" (RFC 9004's back-to-back frames; RoCEv2 writes leave a NIC that way). A TCP sender would not
do it: slow start sends ten segments and then grows by the ACK clock, so the burst that reaches the port is shaped by
the congestion control, the largest lossless "burst" would measure TCP's window growth, and a loss is repaired
instead of counted. UDP sends the frames the test asks for, once.

**Loss.** A trial is lossless when the port's qdiscs counted no drop (their drop counters in the switch namespace,
read through pyroute2's tc stats before and after the trial) and the receiver on sink1 got every datagram of the
trial (each carries the trial, the sender and a sequence number). A datagram missing at the receiver with no drop at
the port (a drop elsewhere, which should not happen) is a loss too, and is reported apart.

**Synchronized?** The workers' agents are started once and armed by a line on their stdin; each waits on an absolute
timer (``_flow/clock.py``'s ``sleep_until``, real-time for its first send) for the trial's start instant. Each frame's
software transmit timestamp (SO_TIMESTAMPING at the worker's veth) says when the burst really left: ``start spread``
is the time from the first worker's first frame to the last worker's first frame, and ``sent as`` the incast ratio
the bursts had as they left the NICs (their bytes over what the port sends in the time they took, plus its bucket;
N:1 for N perfectly overlapping line-rate bursts). Two cores forward about 2 Gb/s of 9,000-byte frames: at the
netns8 line rate (1 Gb/s) bursts of 4 and 8 senders leave as about 2:1, and the port absorbs what the CPUs, not the
buffer, allow (the benchmark notes it). ``--rate`` runs the port and the NICs slower than the lab's line rate; the
burst absorbed, in bytes, does not depend on the rate when the bursts are truly N:1, and at 100 Mb/s they are.

It brings its own lab up under the prefix ``--prefix`` (default ``afcb-``) and takes it down in every case (its
agents killed first, by their PIDs). Run it under the lab lock when others use the machine. Figures are printed,
never asserted. docs/congestion.md has the measured tables and the commands.

    python benchmarks/burst.py [--inventory netns8|netns32] [--ns 2,4,8] [--buffer 200KB] [--reps 3]
                               [--rate 100mbit] [--frame 9014] [--bucket 2] [--cap 8] [--resolution 0.05]
                               [--raw results.json]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import select
import statistics
import subprocess
import sys
import time

from _lab import COLL, ROOT, fifo, inventory_facts, netns_lab, qdisc_drops, tbf
from ansible_collections.aifabric.lab.plugins.module_utils._units import format_size, parse_rate, parse_size
from pyroute2 import IPRoute

PORT = "p-sink1"
UDP_PORT = 18900
ETH_IP_UDP = 14 + 20 + 8  # the Ethernet, IPv4 and UDP headers of a frame, as the queues count it (no FCS)
BUCKET_MARGIN = 512  # bytes
HEADER = "!IHI"  # trial, sender, sequence: the start of every datagram

# One worker's sender: arms on a line {"trial", "frames", "start_at"}, sends its burst at the instant, answers with
# when its frames left (the software transmit timestamps of the veth) and how late it woke.
SENDER = r"""
import json, select, socket, struct, sys, time
sys.path.insert(0, %(coll)r)
from ansible_collections.aifabric.lab.plugins.module_utils._flow.clock import realtime, sleep_until, tight_timers
cfg = json.loads(sys.argv[1])
SO_TIMESTAMPING = 37  # also the control message's type (SCM_TIMESTAMPING)
SO_SNDBUFFORCE, SO_RCVBUFFORCE = 32, 33
# TX_SOFTWARE | SOFTWARE | OPT_ID | OPT_TSONLY: a software timestamp when each frame leaves for the driver
TS_FLAGS = (1 << 1) | (1 << 4) | (1 << 7) | (1 << 11)
header = struct.Struct(%(header)r)
tight_timers()
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)  # the error queue holds every frame's timestamp
# the whole burst fits in the socket's buffer: the sender hands it to its NIC's queue at once and sleeps, and the
# NIC (its tbf) sends it at the line rate
sock.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, cfg["sndbuf"])
sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPING, TS_FLAGS)
sock.connect((cfg["address"], cfg["port"]))
buf = bytearray(cfg["payload"])


def stamps(want, until):
    out = []
    while len(out) < want:
        try:
            _, anc, _, _ = sock.recvmsg(0, 1024, socket.MSG_ERRQUEUE | socket.MSG_DONTWAIT)
        except BlockingIOError:
            if time.time() >= until:
                break
            select.select([sock], [], [], 0.002)
            continue
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPING and len(data) >= 16:
                sec, nsec = struct.unpack_from("qq", data, 0)
                out.append(sec + nsec * 1e-9)
    return out


print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    cmd = json.loads(line)
    if not cmd:
        break
    stamps(1 << 30, 0)  # whatever an earlier trial left
    trial, frames, at = cmd["trial"], cmd["frames"], cmd["start_at"]
    error = None
    try:
        with realtime() as rt:
            start = sleep_until(at)
            header.pack_into(buf, 0, trial, cfg["sender"], 0)
            sock.send(buf)
        for seq in range(1, frames):
            header.pack_into(buf, 0, trial, cfg["sender"], seq)
            sock.send(buf)
    except OSError as exc:
        error = str(exc)
    done = time.time()
    got = stamps(frames, done + frames * cfg["frame"] * 8.0 / cfg["rate"] + 0.1)
    print(json.dumps({"trial": trial, "sender": cfg["sender"], "frames": frames, "late_s": start - at,
                      "realtime": rt, "send_end": done, "stamps": len(got), "error": error,
                      "wire_first": min(got) if got else None, "wire_last": max(got) if got else None}), flush=True)
""" % {"coll": COLL, "header": HEADER}

# sink1's receiver: on a line {"trial", "expect", "until"} counts the trial's datagrams until it has them all, or
# until the instant ``until`` has passed and nothing came for a tenth of a second.
RECEIVER = r"""
import json, select, socket, struct, sys, time
cfg = json.loads(sys.argv[1])
SO_RCVBUFFORCE = 33
header = struct.Struct(%(header)r)
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
sock.bind((cfg["address"], cfg["port"]))
sock.setblocking(False)
buf = bytearray(65536)
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    cmd = json.loads(line)
    if not cmd:
        break
    trial, expect, until = cmd["trial"], cmd["expect"], cmd["until"]
    got, stale, last, per = 0, 0, None, {}
    # read after the burst: the socket's buffer holds it, and the CPUs forward it meanwhile
    time.sleep(max(0.0, cmd["quiet_until"] - time.time()))
    while got < expect:
        wait = max(until, (last or 0) + 0.1) - time.time()
        if wait <= 0:
            break
        if not select.select([sock], [], [], wait)[0]:
            continue
        while got < expect:
            try:
                size = sock.recv_into(buf)
            except BlockingIOError:
                break
            if size < header.size:
                continue
            t, sender, _ = header.unpack_from(buf)
            if t != trial:
                stale += 1
                continue
            got += 1
            last = time.time()
            per[sender] = per.get(sender, 0) + 1
    print(json.dumps({"trial": trial, "received": got, "stale": stale, "last": last,
                      "per_sender": {str(k): v for k, v in per.items()}}), flush=True)
""" % {"header": HEADER}


class Agent:
    """A Python process in a namespace, driven by JSON lines on its stdin; its answers are JSON lines. Started in a
    session of its own (a Ctrl-C reaches only the benchmark, which kills it by its PID)."""

    def __init__(self, namespace, code, cfg):
        self.name = namespace
        self.proc = subprocess.Popen(["ip", "netns", "exec", namespace, sys.executable, "-c", code, json.dumps(cfg)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
                                     start_new_session=True)

    def send(self, obj):
        self.proc.stdin.write(json.dumps(obj) + "\n")
        self.proc.stdin.flush()

    def recv(self, timeout):
        if not select.select([self.proc.stdout], [], [], timeout)[0]:
            raise RuntimeError("%s: no answer in %.1f s" % (self.name, timeout))
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("%s: the agent ended (exit status %s)" % (self.name, self.proc.poll()))
        return json.loads(line)

    def stop(self):
        """Ask it to end; kill it (by its PID) when it does not."""
        try:
            if self.proc.poll() is None:
                self.send({})
                self.proc.wait(timeout=2)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


class Bench:
    def __init__(self, args, facts, switch, cap):
        self.args, self.facts, self.switch = args, facts, switch
        self.rate = args.rate
        self.frame = args.frame
        self.trial_id = 0
        self.cap = cap
        self.senders, self.receiver = [], None

    def start_agents(self, workers):
        sink = self.facts["address"]["sink1"]
        self.receiver = Agent(self.args.prefix + "sink1", RECEIVER, {"address": sink, "port": UDP_PORT})
        for i, host in enumerate(workers):
            self.senders.append(Agent(self.args.prefix + host, SENDER, {
                "address": sink, "port": UDP_PORT, "sender": i, "payload": self.frame - ETH_IP_UDP,
                "frame": self.frame, "rate": self.rate, "sndbuf": max(4 << 20, 4 * self.cap * self.frame)}))
        for agent in [self.receiver] + self.senders:
            agent.recv(60)

    def stop_agents(self):
        for agent in self.senders + ([self.receiver] if self.receiver else []):
            agent.stop()

    def trial(self, n, k):
        """N senders, K frames each, from one instant. Returns the trial's record."""
        self.trial_id += 1
        total = n * k
        drain = total * self.frame * 8.0 / self.rate  # the port's time to send the whole burst
        before = qdisc_drops(self.switch)
        at = time.time() + self.args.lead
        self.receiver.send({"trial": self.trial_id, "expect": total, "until": at + 1.5 * drain + 0.2,
                            "quiet_until": at + drain})
        for agent in self.senders[:n]:
            agent.send({"trial": self.trial_id, "frames": k, "start_at": at})
        sent = [agent.recv(self.args.lead + 2 * drain + 30) for agent in self.senders[:n]]
        rx = self.receiver.recv(self.args.lead + 2 * drain + 30)
        after = qdisc_drops(self.switch)
        port = after.get(PORT, 0) - before.get(PORT, 0)
        elsewhere = sum(v - before.get(d, 0) for d, v in after.items() if d != PORT)
        errors = [s["error"] for s in sent if s.get("error")]
        if errors:
            raise RuntimeError("trial %d: a sender failed: %s" % (self.trial_id, errors[0]))
        firsts = [s["wire_first"] for s in sent if s["wire_first"] is not None]
        lasts = [s["wire_last"] for s in sent if s["wire_last"] is not None]
        out = {"trial": self.trial_id, "n": n, "frames": k, "sent": total, "received": rx["received"],
               "port_drops": port, "other_switch_drops": elsewhere,
               "lossless": port == 0 and rx["received"] == total,
               "late_ms": max(abs(s["late_s"]) for s in sent) * 1000,
               "realtime": all(s["realtime"] for s in sent),
               "stamps": sum(s["stamps"] for s in sent),
               "start_spread_us": (max(firsts) - min(firsts)) * 1e6 if len(firsts) == n else None,
               "arrival_s": max(lasts) - min(firsts) if len(firsts) == n and lasts else None}
        # the incast ratio of the burst as it left the NICs (their transmit timestamps): its bytes over what the port
        # sends while they leave (its bucket, and the rate over the span from the first frame to the last); N for N
        # perfectly overlapping line-rate bursts
        if out["arrival_s"] is not None:
            out["incast_sent"] = total * self.frame / (out["arrival_s"] * self.rate / 8 + self.args.bucket * self.frame)
        else:
            out["incast_sent"] = None
        # the buckets of the NICs and the port refill (they hold --bucket frames)
        time.sleep(max(0.01, 1.5 * self.args.bucket * self.frame * 8.0 / self.rate))
        return out

    def search(self, n, cap):
        """The largest K in 0..cap that passes without loss: K doubles from one frame until a burst loses a frame
        (the draft's "increase burst length until first frame loss"; small bursts first, so a trial at a low rate
        is short), then bisection. Returns (largest lossless K, smallest lossy K or None, the trials)."""
        lo, hi, trials = 0, None, []
        k = 1
        while hi is None:
            t = self.trial(n, k)
            trials.append(t)
            if not t["lossless"]:
                hi = k
            elif k >= cap:
                return k, None, trials
            else:
                lo, k = k, min(2 * k, cap)
        while hi - lo > max(1, int(self.args.resolution * lo)):
            k = (lo + hi) // 2
            t = self.trial(n, k)
            trials.append(t)
            if t["lossless"]:
                lo = k
            else:
                hi = k
        return lo, hi, trials


def nic_drops(prefix, hosts):
    total = 0
    for host in hosts:
        with IPRoute(netns=prefix + host) as ipr:
            total += qdisc_drops(ipr).get("eth0", 0)
    return total


def model_frames(n, buffer, frame):
    """A perfectly synchronized burst at the line rate: each sender's NIC bucket lets its first frames out at once,
    the port's bucket passes as many, then the queue grows by (N-1) frames per frame time; the largest K whose queue
    at the last arrival fits: (N-1) x K x frame + sender bucket - port bucket <= buffer (equal buckets here)."""
    return int(buffer // ((n - 1) * frame))


def kb(size):
    return format_size(size, digits=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", default="netns8")
    parser.add_argument("--ns", default=None, help="incast ratios N (N:1), comma-separated (default 2,4,8; "
                        "2,4,8,16,32 with 32 workers)")
    parser.add_argument("--buffer", default="200KB", help="the port's FIFO, bytes")
    parser.add_argument("--reps", type=int, default=3, help="independent searches per N")
    parser.add_argument("--frame", type=int, default=None, help="bytes on the wire per datagram (default: MTU + 14)")
    parser.add_argument("--bucket", type=int, default=2, help="frames in the token buckets of the NICs and the port")
    parser.add_argument("--cap", type=float, default=8.0, help="the largest burst tried per sender, x the buffer")
    parser.add_argument("--resolution", type=float, default=0.05, help="the search stops within this fraction of K "
                        "(and never below one frame)")
    parser.add_argument("--rate", default=None, help="the rate of sink1's port and of the workers' NICs (default: "
                        "the inventory's line rate; at most that)")
    parser.add_argument("--lead", type=float, default=0.1, help="seconds between arming the senders and the start")
    parser.add_argument("--prefix", default="afcb-")
    parser.add_argument("--raw", default=None, help="write every trial's record to this JSON file")
    args = parser.parse_args()
    began = time.monotonic()
    inv = os.path.join(ROOT, "inventories", args.inventory, "hosts.yml")
    facts = inventory_facts(inv)
    workers = facts["workers"]
    if args.ns:
        ns = [int(x) for x in args.ns.split(",")]
    else:
        ns = [n for n in (2, 4, 8, 16, 32) if n <= len(workers)]
    if min(ns) < 2 or max(ns) > len(workers):
        parser.error("N must be 2..%d (the workers of %s)" % (len(workers), args.inventory))
    buffer = parse_size(args.buffer, "--buffer")
    args.rate = parse_rate(args.rate, "--rate") if args.rate else facts["rate"]
    if args.rate > facts["rate"]:
        parser.error("--rate: at most the lab's line rate (%g Mb/s): the switch's own shapers run at it"
                     % (facts["rate"] / 1e6))
    args.frame = args.frame or facts["mtu"] + 14
    if not ETH_IP_UDP + 10 <= args.frame <= facts["mtu"] + 14:
        parser.error("--frame must be %d..%d" % (ETH_IP_UDP + 10, facts["mtu"] + 14))
    if args.bucket < 1:
        parser.error("--bucket must be at least one frame")
    # the buckets of the NICs and the port: --bucket frames, and a margin for the rounding of the bucket into the
    # kernel's time units (a bucket a few bytes short of a frame would drop every frame)
    bucket = args.bucket * args.frame + BUCKET_MARGIN
    cap = max(1, int(math.ceil(args.cap * buffer / args.frame)))
    rows, raw = [], {"args": vars(args), "facts": facts, "ns": {}}
    try:
        with netns_lab(inv, args.prefix, "aflb-burst-"):
            fifo(args.prefix, PORT, args.rate, buffer, burst=bucket)
            for host in workers[:max(ns)]:
                with IPRoute(netns=args.prefix + host) as ipr:
                    # the NIC: line rate, no gap; its queue holds the largest burst, so it never drops
                    tbf(ipr, "eth0", args.rate, max(4 << 20, 4 * cap * args.frame), bucket)
            with IPRoute(netns=args.prefix + "switch") as switch:
                bench = Bench(args, facts, switch, cap)
                try:
                    bench.start_agents(workers[:max(ns)])
                    bench.trial(max(ns), 1)  # warm-up: ARP and the bridge learn every host
                    for n in ns:
                        nic_before = nic_drops(args.prefix, workers[:n])
                        reps = [bench.search(n, cap) for _rep in range(args.reps)]
                        nic = nic_drops(args.prefix, workers[:n]) - nic_before
                        raw["ns"][n] = {"reps": [{"lossless": lo, "lossy": hi, "trials": t} for lo, hi, t in reps],
                                        "nic_drops": nic}
                        rows.append((n, reps, nic))
                        print("N=%d: largest lossless %s frames per sender (%d trials)" % (
                            n, ", ".join(str(lo) for lo, _hi, _t in reps), sum(len(t) for _lo, _hi, t in reps)),
                            flush=True)
                finally:
                    bench.stop_agents()
    finally:
        if args.raw:
            with open(args.raw, "w") as handle:
                json.dump(raw, handle)
    elapsed = time.monotonic() - began
    print()
    print("Burst absorption (section 5.3) on %s (%g Mb/s ports, MTU %d): sink1's port one tail-drop FIFO of %s at "
          "%g Mb/s (tbf, bucket %s); N workers send K frames of %d bytes each at %g Mb/s from one instant (UDP, each "
          "NIC a tbf, bucket %s); %d searches per N, K from 1 frame (at most %d), to %d%% or one frame" % (
              args.inventory, facts["rate"] / 1e6, facts["mtu"], kb(buffer), args.rate / 1e6, kb(bucket),
              args.frame, args.rate / 1e6, kb(bucket), args.reps, cap, args.resolution * 100))
    header = ("lab", "N:1", "buffer", "largest lossless burst per sender, min / median", "total burst (N x median)",
              "total / buffer", "line-rate model (total / buffer)", "start spread", "sent as", "trials")
    print("| %s |" % " | ".join(header))
    print("|%s|" % "|".join(["---"] * len(header)))
    notes = []
    for n, reps, nic in rows:
        ks = sorted(lo for lo, _hi, _t in reps)
        kmin, kmed = ks[0], statistics.median(ks)
        capped = any(hi is None for _lo, hi, _t in reps)
        trials = [t for _lo, _hi, ts in reps for t in ts]
        # the spread of the first frames in each search's largest lossless trial
        best = [t for lo, _hi, ts in reps for t in ts if t["lossless"] and t["frames"] == lo]
        spreads = [t["start_spread_us"] for t in best if t["start_spread_us"] is not None]
        seen = [t["incast_sent"] for t in best if t["incast_sent"] is not None]
        model = model_frames(n, buffer, args.frame)
        per = "%s / %s frames (%s / %s)" % (kmin, "%g" % kmed, kb(kmin * args.frame), kb(kmed * args.frame))
        if capped:
            per += ", the cap"
        print("| %s | %d:1 | %s | %s | %s frames, %s | %.2f | %d frames each, %.2f | %s | %s | %d |" % (
            args.inventory, n, kb(buffer), per, "%g" % (n * kmed), kb(n * kmed * args.frame),
            n * kmed * args.frame / buffer, model, n * model * args.frame / buffer,
            "%.0f us" % statistics.median(spreads) if spreads else "-",
            "%.1f:1" % statistics.median(seen) if seen else "-", len(trials)))
        if model < 3:
            notes.append("N=%d: the line-rate model fits %d frame(s) per sender; a smaller --frame resolves the burst "
                         "better" % (n, model))
        if seen and statistics.median(seen) < 0.8 * n:
            notes.append("N=%d: the bursts left the NICs as %.1f:1, not %d:1 - the senders' start spread and the "
                         "lab's CPUs, not the port, shaped them (a lower --rate lets the lab keep up)"
                         % (n, statistics.median(seen), n))
        odd = [t for t in trials if not t["lossless"] and t["port_drops"] == 0]
        if odd or nic:
            notes.append("N=%d: %d trials lost datagrams with no drop at the port (NICs' drops: %d, other switch "
                         "queues: %d)" % (n, len(odd), nic, sum(t["other_switch_drops"] for t in odd)))
        late = max(t["late_ms"] for t in trials)
        if late > 1.0:
            notes.append("N=%d: a sender woke up to %.1f ms late" % (n, late))
    for note in notes:
        print("note: " + note)
    print("run time: %.0f s (the lab's setup and removal included)" % elapsed)


if __name__ == "__main__":
    main()
