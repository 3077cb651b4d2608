"""The job-program executor on loopback, beside the tcp engine, in one run: bulk rate and per-message overhead.

Every side runs in its own forked process (as on two hosts: no shared GIL), on 127.0.0.1:

* one 1 GB transfer: the executor (one send op, one recv op) and the tcp engine (TcpEngine: one flow of 1 GB), each
  ``--repeat`` times, alternating; the rate is bytes x 8 over the sender's start to its last byte acknowledged, the
  same span for both (the engine's ``gbps``);
* the same 1 GB as 256 messages of 3.9 MB (window 2): what message framing and acks cost at MB sizes;
* the one message again, the receiver draining with ``recv_into`` instead of ``splice`` (Python 3.9 has no
  ``os.splice``);
* 1,000 small messages (1 KiB) from one sender: one iteration of 1,000 send ops with window 1 (each waits for the
  previous ack: a round trip) and window 32 (pipelined), and 1,000 iterations of one send (the iteration barrier
  each time); the figure is the sender's span divided by 1,000.

Figures are printed, never asserted (loopback on a shared 2-core machine moves a lot).

    python benchmarks/program_executor.py [--repeat 3] [--size 1GB]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, ".collections"))

from ansible_collections.aifabric.lab.plugins.module_utils._flow.engine import FlowSpec  # noqa: E402
from ansible_collections.aifabric.lab.plugins.module_utils._flow.program import ProgramFlow  # noqa: E402
from ansible_collections.aifabric.lab.plugins.module_utils._flow.tcp import TcpEngine  # noqa: E402

ADDR = "127.0.0.1"
TOKEN = "bench"
LEAD = 0.6  # s from the arming to the instant


def free_port():
    with socket.socket() as s:
        s.bind((ADDR, 0))
        return s.getsockname()[1]


def in_child(work):
    """Run ``work()`` in a forked process; returns (pid, read end of the pipe its JSON result comes back on)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        code = 0
        try:
            out = work()
        except BaseException as exc:  # noqa: BLE001  the parent must get an answer
            out, code = {"status": "error", "error": repr(exc)}, 1
        with os.fdopen(write_fd, "w") as handle:
            handle.write(json.dumps(out))
        os._exit(code)
    os.close(write_fd)
    return pid, read_fd


def gather(pid, read_fd, timeout=120.0):
    with os.fdopen(read_fd) as handle:
        end = time.time() + timeout
        data = handle.read()
    while time.time() < end:
        done, _status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.01)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    return json.loads(data) if data else {"status": "error", "error": "no result"}


def host_program(name, ops, iterations, ports, window=1):
    peers = {p: {"address": ADDR, "port": port} for p, port in ports.items() if p != name}
    return {"version": 1, "iterations": iterations, "listen": {"address": ADDR, "port": ports[name]},
            "peers": peers, "window": window, "ops": ops}


def run_programs(programs, at, options=None):
    """Each host's program in its own process; their results by host. ``options``: ProgramFlow keywords by host."""
    children = {}
    for name, program in programs.items():
        def work(name=name, program=program):
            flow = ProgramFlow(program, TOKEN, name, listener=ProgramFlow.listen(program), timeout=120.0,
                               **(options or {}).get(name, {}))
            try:
                if not flow.arm(at - 0.05):
                    return flow.result
                return flow.fire(at)
            finally:
                flow.close()

        children[name] = in_child(work)
    return {name: gather(*child) for name, child in children.items()}


def sender_span(result):
    """The sender's first start to its last end (seconds), from the recorded times."""
    starts = [v for row in result["t"]["start"] for v in row if v is not None]
    ends = [v for row in result["t"]["end"] for v in row if v is not None]
    return max(ends) - min(starts)


def executor_transfer(size, messages=1, window=1, splice=True):
    ports = {"tx": free_port(), "rx": free_port()}
    chunk = size // messages
    tx = [{"id": k, "kind": "send", "peer": "rx", "bytes": chunk} for k in range(messages)]
    rx = [{"id": k, "kind": "recv", "peer": "tx", "bytes": chunk} for k in range(messages)]
    at = time.time() + LEAD
    out = run_programs({"tx": host_program("tx", tx, 1, ports, window), "rx": host_program("rx", rx, 1, ports)}, at,
                       {"rx": {"use_splice": splice}})
    if out["tx"]["status"] != "ok" or out["rx"]["status"] != "ok":
        raise RuntimeError("executor transfer failed: %s / %s" % (out["tx"]["error"], out["rx"]["error"]))
    span = sender_span(out["tx"])
    return {"gbps": chunk * messages * 8 / span / 1e9, "span_s": span, "cpu_tx": out["tx"]["cpu_s"],
            "cpu_rx": out["rx"]["cpu_s"]}


def engine_transfer(size):
    port = free_port()
    spec = FlowSpec(role="server", address=ADDR, port=port, token=TOKEN, timeout=120.0)
    server = in_child(lambda: _cpu(lambda: TcpEngine().serve(spec)))
    time.sleep(0.2)
    client_spec = FlowSpec(role="client", address=ADDR, port=port, token=TOKEN, volume=size,
                           start_at=time.time() + LEAD, timeout=120.0, interval=10.0)
    client = in_child(lambda: _cpu(lambda: TcpEngine().send(client_spec)))
    c, s = gather(*client), gather(*server)
    if c.get("status") != "ok":
        raise RuntimeError("tcp engine flow failed: %s" % c.get("error"))
    return {"gbps": c["gbps"], "span_s": c["duration_s"], "cpu_tx": c["cpu"], "cpu_rx": s["cpu"]}


def _cpu(work):
    before = time.process_time()
    out = work()
    out.pop("samples", None)
    out["cpu"] = round(time.process_time() - before, 3)
    return out


def small_messages(count, size, window, iterations_mode):
    ports = {"tx": free_port(), "rx": free_port()}
    if iterations_mode:
        tx, rx, iterations = ([{"id": 0, "kind": "send", "peer": "rx", "bytes": size}],
                              [{"id": 0, "kind": "recv", "peer": "tx", "bytes": size}], count)
    else:
        tx = [{"id": k, "kind": "send", "peer": "rx", "bytes": size} for k in range(count)]
        rx = [{"id": k, "kind": "recv", "peer": "tx", "bytes": size} for k in range(count)]
        iterations = 1
    at = time.time() + LEAD
    out = run_programs({"tx": host_program("tx", tx, iterations, ports, window),
                        "rx": host_program("rx", rx, iterations, ports)}, at)
    if out["tx"]["status"] != "ok":
        raise RuntimeError("small messages failed: %s / %s" % (out["tx"]["error"], out["rx"]["error"]))
    span = sender_span(out["tx"])
    return {"us_per_message": span / count * 1e6, "cpu_tx_us": out["tx"]["cpu_s"] / count * 1e6,
            "cpu_rx_us": out["rx"]["cpu_s"] / count * 1e6}


def parse_size(text):
    text = text.strip().upper()
    for suffix, factor in (("GB", 10 ** 9), ("MB", 10 ** 6), ("KB", 10 ** 3)):
        if text.endswith(suffix):
            return int(float(text[:-2]) * factor)
    return int(text)


def summary(values, key, fmt):
    xs = [v[key] for v in values]
    return (fmt + " (%s)") % (statistics.median(xs), " ".join(fmt % x for x in xs))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--size", default="1GB")
    args = parser.parse_args()
    size = parse_size(args.size)
    print("loopback %s, %d runs each, alternating; median (each run)" % (args.size, args.repeat))
    chunked = "executor, 256 x %.1f MB, window 2" % (size / 256 / 1e6)
    rows = {"executor, 1 message": [], "tcp engine": [], chunked: [], "executor, receiver without splice": []}
    for _run in range(args.repeat):
        rows["executor, 1 message"].append(executor_transfer(size))
        rows["tcp engine"].append(engine_transfer(size))
        rows[chunked].append(executor_transfer(size, 256, 2))
        rows["executor, receiver without splice"].append(executor_transfer(size, splice=False))
    line = "%-34s %-32s %-28s %s"
    print(line % ("one transfer of %s" % args.size, "Gbit/s", "sender CPU s", "receiver CPU s"))
    for name, values in rows.items():
        print(line % (name, summary(values, "gbps", "%.2f"), summary(values, "cpu_tx", "%.3f"),
                      summary(values, "cpu_rx", "%.3f")))
    print()
    line = "%-46s %-30s %-24s %s"
    print(line % ("1,000 messages of 1 KiB", "us per message (span/1000)", "sender CPU us", "receiver CPU us"))
    cases = (("one iteration of 1,000 sends, window 1", 1, False),
             ("one iteration of 1,000 sends, window 32", 32, False),
             ("1,000 iterations of one send", 1, True))
    for label, window, iterations_mode in cases:
        values = [small_messages(1000, 1024, window, iterations_mode) for _run in range(args.repeat)]
        print(line % (label, summary(values, "us_per_message", "%.1f"), summary(values, "cpu_tx_us", "%.1f"),
                      summary(values, "cpu_rx_us", "%.1f")))


if __name__ == "__main__":
    main()
