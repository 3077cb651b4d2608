# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Mice: many short TCP connections with heavy-tailed sizes, beside the elephants.

A front-end network's traffic is a multitude of short connections whose sizes follow a heavy tail (most a few
kilobytes, a few megabytes): the opposite of a training step's handful of elephants. The client opens connections at
``rate`` per second for ``duration`` seconds (an open loop: on schedule, whatever the network does), each sending a
size drawn from a bounded Pareto distribution (``alpha``, ``size_min``, ``size_max``; seeded, so a run repeats),
then closing; the server reads each to its end and closes. Each connection is one conntrack entry, so the census
(``conntrack_info``) sees the mice beside the elephants.
"""

from __future__ import annotations

import random
import selectors
import socket
import threading
import time

from ._stats import percentile

__all__ = ["MiceError", "bounded_pareto", "serve", "generate", "percentile"]


class MiceError(ValueError):
    pass


def bounded_pareto(rng, alpha, low, high):
    """A draw from the Pareto distribution of shape ``alpha`` bounded to [low, high] (inverse transform)."""
    u = rng.random()
    la, ha = low ** alpha, high ** alpha
    return int(round((-(u * ha - u * la - ha) / (ha * la)) ** (-1.0 / alpha)))


def serve(address, port, duration, grace=5.0, clock=time.monotonic):
    """Accept and read connections to their end for ``duration`` seconds (then ``grace`` more for the last ones);
    returns ``{connections, bytes}``."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((address, port))
    except OSError as exc:
        raise MiceError("cannot listen on %s:%d: %s" % (address, port, exc)) from None
    listener.listen(1024)
    listener.setblocking(False)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, None)
    done = {"connections": 0, "bytes": 0}
    open_conns = {}
    end = clock() + duration + grace
    buffer = bytearray(1 << 16)
    try:
        while clock() < end:
            for key, _mask in selector.select(timeout=0.2):
                if key.data is None:
                    try:
                        conn, _peer = listener.accept()
                    except BlockingIOError:
                        continue
                    conn.setblocking(False)
                    selector.register(conn, selectors.EVENT_READ, "conn")
                    open_conns[conn.fileno()] = conn
                    continue
                conn = key.fileobj
                try:
                    size = conn.recv_into(buffer)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    size = 0
                if size:
                    done["bytes"] += size
                    continue
                selector.unregister(conn)
                open_conns.pop(conn.fileno(), None)
                conn.close()
                done["connections"] += 1
    finally:
        for conn in open_conns.values():
            conn.close()
        selector.close()
        listener.close()
    return done


def generate(address, port, rate, duration, size_min=1000, size_max=1_000_000, alpha=1.2, seed=0, workers=8,
             source=None, timeout=5.0, clock=time.monotonic):
    """Open ``rate`` connections a second for ``duration`` seconds to ``address:port``, each sending a bounded-Pareto
    size; ``workers`` threads keep the schedule when a large mouse takes a while. Returns the census of what was sent
    (connections, failures, bytes, sizes and connection times: p50, p99, max)."""
    if rate <= 0 or duration <= 0:
        raise MiceError("rate and duration: give more than 0 (connections a second, seconds)")
    if not 0 < size_min <= size_max:
        raise MiceError("size_min and size_max: give 0 < size_min <= size_max")
    if alpha <= 0:
        raise MiceError("alpha: give the Pareto shape, more than 0 (1.2 is a heavy tail)")
    rng = random.Random(seed)
    count = int(rate * duration)
    plan = [(i / float(rate), bounded_pareto(rng, alpha, size_min, size_max)) for i in range(count)]
    payload = b"\0" * size_max
    lock = threading.Lock()
    results = {"sent": 0, "failed": 0, "bytes": 0, "times": [], "sizes": [], "late": 0, "errors": {}}
    next_index = [0]
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    t0 = clock() + 0.05

    def work():
        while True:
            with lock:
                i = next_index[0]
                if i >= count:
                    return
                next_index[0] += 1
            offset, size = plan[i]
            wait = t0 + offset - clock()
            if wait > 0:
                time.sleep(wait)
            elif wait < -0.1:
                with lock:
                    results["late"] += 1
            start = clock()
            try:
                with socket.socket(family, socket.SOCK_STREAM) as sock:
                    sock.settimeout(timeout)
                    if source:
                        sock.bind((source, 0))
                    sock.connect((address, port))
                    sock.sendall(memoryview(payload)[:size])
                    sock.shutdown(socket.SHUT_WR)
                    while sock.recv(4096):
                        pass
                took = clock() - start
                with lock:
                    results["sent"] += 1
                    results["bytes"] += size
                    results["times"].append(took)
                    results["sizes"].append(size)
            except OSError as exc:
                with lock:
                    results["failed"] += 1
                    name = type(exc).__name__
                    results["errors"][name] = results["errors"].get(name, 0) + 1

    threads = [threading.Thread(target=work, daemon=True) for _worker in range(max(1, workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = clock() - t0
    times, sizes = results.pop("times"), results.pop("sizes")
    results.update(
        planned=count, rate=rate, duration_s=round(elapsed, 3),
        achieved_rate=round(results["sent"] / elapsed, 3) if elapsed > 0 else None,
        size_p50=percentile(sizes, 0.5), size_p99=percentile(sizes, 0.99), size_max=max(sizes, default=None),
        time_p50_ms=round(percentile(times, 0.5) * 1000, 3) if times else None,
        time_p99_ms=round(percentile(times, 0.99) * 1000, 3) if times else None,
        time_max_ms=round(max(times) * 1000, 3) if times else None)
    return results
