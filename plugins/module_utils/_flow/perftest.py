# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The perftest flow engine: RDMA flows with the tool users trust (ib_write_bw, ib_read_bw, ib_send_bw).

A server runs one perftest server process per expected client, on ports ``port`` .. ``port + N - 1`` (perftest
serves one peer per process). A client starts its perftest process at the step's start instant. perftest prints no
elapsed time, so completion is timed on the host: from the start instant to the process's exit (it exits once its
last completion arrived), which includes perftest's own connection set-up (milliseconds on hardware). perftest's own
average is kept beside it. A perftest that fails or hangs ends at the flow's timeout, with its output kept.

Commands are argument lists built from validated values (``perftest_cli.build_argv``); no shell is involved.

Where a server listens: a perftest that has ``--bind_source_ip`` (23.07 and later) is told the server's lab address,
so its TCP port (and, with ``rdma_cm``, its RDMA CM listener) is bound to that address only. An older perftest (4.5,
Debian 12's) cannot be told: its TCP port listens on every interface of the host (its RDMA CM listener, on every
RDMA device). The server's result says which (``listen``). Either way the TCP ports the servers will take are
bind-tested in the module's own process before the step, so a taken port fails the task naming the port.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import replace

from .. import _rdma_sysfs as _rdma
from .clock import set_normal, sleep_until
from .engine import ClientFlow, FlowEngine, FlowError, PerftestOptions, own_instant, refuse_if_late
from .perftest_cli import BIND_OPTION, TOOLS, PerftestError, build_argv, find_gid_index, parse_text, supports_bind

_BIND_SUPPORT = {}  # tool path -> whether it has --bind_source_ip (asked once per process: the module's, inherited)


def bind_support(tool):
    """Whether perftest tool ``tool`` can bind its server to one address (its ``--help`` says ``--bind_source_ip``).
    False when the tool cannot be run or says nothing of it."""
    path = shutil.which(tool) if tool in TOOLS else None
    if path is None:
        return False
    if path not in _BIND_SUPPORT:
        argv = [path, "--help"]  # the tool's path (shutil.which of one of perftest_cli.TOOLS) and a fixed option
        try:
            # pylint: disable-next=ansible-bad-function  # a probe of the tool's options before any module exists
            out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=10,
                                 check=False).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        _BIND_SUPPORT[path] = supports_bind(out)
    return _BIND_SUPPORT[path]


def server_ports(spec):
    """The TCP ports a perftest server of ``spec`` listens on: one process per expected client, from spec.port up."""
    return [spec.port + i for i in range(spec.expected_clients)]


def check_ports(address, ports, bound, tool="perftest"):
    """Bind-test the TCP ports perftest's servers will listen on, as perftest binds them (SO_REUSEADDR; ``bound``:
    on ``address`` alone, else on every interface); OSError naming the first taken port."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    host = address if bound else ("::" if family == socket.AF_INET6 else "0.0.0.0")
    for i, port in enumerate(ports):
        if not 1 <= port <= 65535:
            raise OSError(0, "TCP port %d (the port of %s server %d of %d: servers[].port + i) is not a port; choose "
                             "a lower servers[].port" % (port, tool, i + 1, len(ports)))
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
        except OSError as exc:
            raise OSError(exc.errno, "TCP port %d on %s (where %s server %d of %d will listen) is taken: %s; free it "
                                     "or choose another port" % (port, host, tool, i + 1, len(ports),
                                                                 exc.strerror or exc)) from None
        finally:
            sock.close()


def _exit_text(code):
    """``exit 1``, or for a process ended by a signal, its name: ``killed by SIGSEGV``."""
    if isinstance(code, int) and code < 0:
        try:
            return "killed by %s" % signal.Signals(-code).name
        except ValueError:
            return "killed by signal %d" % -code
    return "exit %s" % code


class WireWatch:
    """Samples the RDMA port's transmit packet counter (soft-RoCE: hw_counters/sent_pkts; IB and mlx5:
    counters/port_xmit_packets) to find the first and the last moment data left the host."""

    THRESHOLD = 16  # packets: more than perftest's TCP exchange ever shows on an RDMA counter

    def __init__(self, device, port, root="/"):
        base = _rdma.port_dir(device, port, root)
        self.path = next((p for p in (os.path.join(base, "hw_counters", "sent_pkts"),
                                      os.path.join(base, "counters", "port_xmit_packets")) if os.path.exists(p)), None)
        self.base = self.value = self.read()
        self.first = self.last = None

    def read(self):
        if self.path is None:
            return None
        try:
            with open(self.path) as handle:
                return int(handle.read().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def sample(self, now):
        value = self.read()
        if value is None or self.base is None:
            return
        if value != self.value:
            self.last = now
            self.value = value
        if self.first is None and value - self.base >= self.THRESHOLD:
            self.first = now

    def packets(self):
        return None if self.base is None or self.value is None else self.value - self.base


def _options(spec, local_address):
    opts = replace(spec.perftest or PerftestOptions())
    if not opts.device:
        raise FlowError("device: the perftest engine needs the RDMA device (e.g. mlx5_0 or rxe0)")
    if opts.gid_index is None and not opts.rdma_cm:
        if not local_address:
            raise FlowError("gid_index or source: give the GID index, or the client's lab address in source so the "
                            "GID can be found from it")
        try:
            opts.gid_index = find_gid_index(opts.device, opts.ib_port, local_address)
        except PerftestError as exc:
            raise FlowError(str(exc)) from None
    return opts


def _iterations(spec, size):
    if spec.volume is None:
        return None
    return max(5, int(math.ceil(spec.volume / float(size))))


def _tail(text, lines=8):
    return "\n".join(text.strip().splitlines()[-lines:])


def _listening_ports(root="/"):
    """TCP ports in LISTEN state in this network namespace (from /proc/net/tcp and tcp6: the kernel's table)."""
    ports = set()
    for name in ("tcp", "tcp6"):
        try:
            with open(os.path.join(root, "proc/net", name)) as handle:
                next(handle, None)
                for line in handle:
                    parts = line.split()
                    if len(parts) > 3 and parts[3] == "0A":
                        ports.add(int(parts[1].rsplit(":", 1)[1], 16))
        except OSError:
            continue
    return ports


class PerftestClient(ClientFlow):
    """One perftest client. perftest has no pause between its connection and its traffic, so arming checks what can
    be checked (the tool, the device, the GID, the command line) and firing starts the process; its set-up
    (process, memory registration, the QP exchange) is measured apart from the transfer on the wire."""

    def __init__(self, spec):
        self.spec = spec
        self.proc = None
        self.argv = None
        self.opts = None
        self._aborted = None
        self.result = {"engine": PerftestEngine.name, "role": "client", "flow_id": spec.flow_id, "peer": spec.address,
                       "port": spec.port, "volume_bytes": spec.volume, "duration_target_s": spec.duration,
                       "bytes": 0, "status": "error", "error": None}

    def arm(self, deadline):
        spec = self.spec
        try:
            self.opts = _options(spec, spec.source)
            if shutil.which(self.opts.tool) is None:
                raise FlowError("%s is not installed on this host (Debian: apt install perftest)" % self.opts.tool)
            iterations = _iterations(spec, self.opts.msg_size)
            self.argv = build_argv(self.opts.tool, self.opts.device, self.opts.ib_port, self.opts.gid_index,
                                   self.opts.msg_size, iterations, spec.duration, self.opts.qps, spec.port,
                                   spec.address, self.opts.rdma_cm, rate_limit_gbps=self.opts.rate_limit_gbps,
                                   qp_timeout=self.opts.qp_timeout)
        except (FlowError, PerftestError) as exc:
            self.result["error"] = str(exc)
            return False
        self.result["argv"] = self.argv
        return True

    def fire(self, at):
        """Fire at the common instant ``at`` plus the spec's ``start_offset`` (the flow's own instant): ``late_s``
        against its own instant, ``completion_s`` from ``at``."""
        spec, result = self.spec, self.result
        own = own_instant(result, spec, at)
        result["start_at"] = own
        start = sleep_until(own)
        set_normal()  # perftest must not inherit a real-time policy from the thread that waited for the instant
        if refuse_if_late(result, spec, start, own):
            return result
        result["start"] = start
        result["late_s"] = round(start - own, 6)
        if self._aborted:
            result.update(status="aborted", error=self._aborted)
            return result
        # the timeout counts from the flow's own instant (its spec's timeout is the step's less the offset)
        remaining = max(0.1, own + spec.timeout - time.time())
        watch = WireWatch(self.opts.device, self.opts.ib_port)
        text, code, timed_out = self._run(remaining, watch)
        end = time.time()
        if timed_out or self._aborted:
            result.update(status="timeout" if timed_out else "aborted", output=_tail(text),
                          error="perftest did not finish within timeout=%ss" % spec.timeout if timed_out
                          else "%s (perftest ended)" % self._aborted)
            return result
        try:
            parsed = parse_text(text)
        except PerftestError as exc:
            result.update(error="%s (%s)" % (exc, _exit_text(code)), output=_tail(text), exit_code=code)
            return result
        transferred = parsed["bytes"] * parsed["iterations"]
        # The wire says when the data moved: the RDMA port's own packet counter, sampled while perftest ran. Before
        # its first packet perftest was setting up (process, device, memory registration, the TCP exchange of QP
        # numbers); that set-up is part of the completion but not of the flow's rate.
        first, last = watch.first, watch.last
        if first is None or last is None or last <= first:
            first, last = start, end
        duration = last - first
        result.update(bytes=transferred, first_byte=first, last_byte_acked=last, duration_s=round(duration, 6),
                      completion_s=round(end - at, 6), setup_s=round(first - start, 6),
                      teardown_s=round(end - last, 6),
                      wire_timed=watch.first is not None, wire_packets=watch.packets(),
                      gbps=round(transferred * 8 / duration / 1e9, 6) if duration > 0 else 0.0,
                      perftest_gbps=parsed["bw_average_gbps"], perftest=parsed["info"], exit_code=code)
        if code != 0:
            result["error"] = "perftest %s" % _exit_text(code)
        else:
            result["status"] = "ok"
        return result

    def _run(self, timeout, watch, interval=0.005):
        """Run perftest, sampling ``watch`` every ``interval`` s; ``(output, exit code, timed out)``."""
        argv = self.argv
        # pylint: disable-next=ansible-bad-function  # sampled while it runs: run_command waits for its end
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        chunks = []
        reader = threading.Thread(target=lambda: chunks.append(self.proc.stdout.read()), daemon=True)
        reader.start()
        deadline = time.monotonic() + timeout
        timed_out = False
        while self.proc.poll() is None:
            now = time.time()
            if time.monotonic() > deadline:
                self.proc.kill()
                timed_out = True
                break
            watch.sample(now)
            time.sleep(interval)
        self.proc.wait()
        if not timed_out:
            watch.sample(time.time())
        reader.join(5)
        return "".join(chunks), self.proc.returncode, timed_out

    def abort(self, reason):
        self._aborted = self._aborted or reason
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class PerftestEngine(FlowEngine):
    name = "perftest"

    def client(self, spec):
        return PerftestClient(spec)

    def listen(self, spec):
        """Checks before a background server is started (so that a missing tool or device fails the task)."""
        opts = spec.perftest or PerftestOptions()
        if shutil.which(opts.tool) is None:
            raise OSError("%s is not installed on this host (Debian: apt install perftest)" % opts.tool)
        try:
            _rdma.require([opts.device], parameter="perftest.device")
        except KeyError as exc:
            raise OSError(exc.args[0]) from None
        if spec.volume is None and spec.duration is None:
            raise OSError("a perftest server needs the step's volume or duration (it must match its clients')")
        if not opts.rdma_cm:  # with rdma_cm the port is in the RDMA CM's port space, not a kernel TCP port
            check_ports(spec.address, server_ports(spec), bind_support(opts.tool), opts.tool)
        return None

    def ready(self, spec, listener=None):
        """Every perftest server process of ``spec`` listens on its port (rdma_cm listens through the RDMA CM,
        which /proc does not show: then a short settling time stands in)."""
        opts = spec.perftest or PerftestOptions()
        if opts.rdma_cm:
            time.sleep(0.3)
            return True
        wanted = set(server_ports(spec))
        return wanted <= _listening_ports()

    # ------------------------------------------------------------------ server
    def serve(self, spec, listener=None, stop=None):
        result = {"engine": self.name, "role": "server", "address": spec.address, "port": spec.port,
                  "expected_clients": spec.expected_clients, "flows": [], "rejected": [], "status": "error",
                  "error": None, "listening_at": time.time()}
        try:
            opts = _options(spec, spec.address)
            iterations = _iterations(spec, opts.msg_size)
            bound = bind_support(opts.tool)
            argvs = [build_argv(opts.tool, opts.device, opts.ib_port, opts.gid_index, opts.msg_size,
                                iterations, spec.duration, opts.qps, port, None, opts.rdma_cm,
                                bind_address=spec.address if bound else None, qp_timeout=opts.qp_timeout)
                     for port in server_ports(spec)]
        except (FlowError, PerftestError) as exc:
            result["error"] = str(exc)
            return result
        result["listen"] = {"address": spec.address, "how": BIND_OPTION} if bound else {
            "address": "*", "how": "every interface: this perftest has no %s (perftest 23.07 and later have it)"
                                   % BIND_OPTION}
        deadline = time.monotonic() + spec.timeout
        procs = []
        stopping = []
        previous = None
        if stop is None:
            stop = threading.Event()
            previous = signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
        try:
            for argv in argvs:
                out = tempfile.TemporaryFile(mode="w+")
                # pylint: disable-next=ansible-bad-function  # servers run beside the step: run_command would block
                procs.append((argv, out, subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)))
            while any(proc.poll() is None for _argv, _out, proc in procs) and time.monotonic() < deadline:
                if stopping or stop.wait(0.05):
                    stopping.append(True)
                    break
        finally:
            ended_by_us = set()
            for _argv, _out, proc in procs:
                if proc.poll() is None:
                    ended_by_us.add(proc.pid)
                    proc.terminate()
                    try:
                        proc.wait(2)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait()
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
        for argv, out, proc in procs:
            out.seek(0)
            text = out.read()
            out.close()
            entry = {"port": int(argv[argv.index("-p") + 1]), "exit_code": proc.returncode, "status": "error"}
            try:
                parsed = parse_text(text)
                entry.update(status="ok" if proc.returncode == 0 else "error", bytes=parsed["bytes"] *
                             parsed["iterations"], perftest_gbps=parsed["bw_average_gbps"], info=parsed["info"])
                if proc.returncode:
                    entry["error"] = "perftest %s" % _exit_text(proc.returncode)
            except PerftestError as exc:
                if proc.pid in ended_by_us and not stopping:
                    entry.update(error="no client connected, or its flow did not finish, within the server's "
                                       "timeout=%ss (perftest ended)" % spec.timeout, output=_tail(text))
                else:
                    entry.update(error="%s (%s)" % (exc, _exit_text(proc.returncode)), output=_tail(text))
            result["flows"].append(entry)
        done = sum(1 for f in result["flows"] if f["status"] == "ok")
        if stopping and done < spec.expected_clients:
            result["stopped"] = True
            result["error"] = "stopped by request with %d of %d flows complete" % (done, spec.expected_clients)
        elif done < spec.expected_clients:
            result["error"] = "; ".join("port %d: %s" % (f["port"], f["error"]) for f in result["flows"]
                                        if f["status"] != "ok") or "deadline reached"
        else:
            result["status"] = "ok"
        result["bytes"] = sum(f.get("bytes", 0) for f in result["flows"] if f["status"] == "ok")
        return result

    def stop(self, spec):
        # perftest servers have no control channel: a background server is ended by signal (stop_and_collect).
        return {"engine": self.name, "role": "stop", "stopped": False, "status": "ok"}
