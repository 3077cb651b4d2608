# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest (ib_write_bw, ib_read_bw, ib_send_bw): its options (with their defaults, in this one place), its command
line, its output, and the GID index to use.

* Text output is the contract: a header row ``#bytes #iterations BW peak[U] BW average[U] MsgRate[Mpps]`` with U one
  of ``Gb/sec`` (``--report_gbits``), ``MB/sec`` (perftest 4.5, which means MiB/s: MsgRate x size = 2^20 x value) or
  ``MiB/sec`` (later releases), then one numeric row per message size. Other lines (CPU frequency warnings,
  "Device not recognized to implement inline feature") may sit between them and are kept as notes.
* ``--out_json`` of perftest 4.5 writes keys and bare words unquoted (fixed upstream in 2024): both that dialect and
  valid JSON are read. JSON carries no unit, so the caller says whether ``--report_gbits`` was given.
* The GID index for RoCE is found from the lab address in ``/sys/class/infiniband/<dev>/ports/<p>/gids`` and
  ``gid_attrs/types`` (RoCE v2 preferred), never guessed.
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass, fields

from .._rdma_sysfs import gid_table

TOOLS = ("ib_write_bw", "ib_read_bw", "ib_send_bw")


@dataclass
class PerftestOptions:
    """The perftest engine's options, with their defaults in this one place: the flow modules' argument specs, the
    command line and the experiment's plan take theirs from here."""

    tool: str = "ib_write_bw"
    device: str | None = None
    ib_port: int = 1
    gid_index: int | None = None
    msg_size: int = 65536
    qps: int = 1
    rdma_cm: bool = False
    qp_timeout: int | None = None  # perftest's -u: the QP's retransmission timeout, 4.096 us x 2^N (perftest: 14)
    rate_limit_gbps: float | None = None

    @classmethod
    def from_params(cls, params):
        """From module parameters (None means the default)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (params or {}).items() if k in known and v is not None})


DEFAULTS = PerftestOptions()
_HEADER = re.compile(r"#bytes\s+#iterations\s+BW peak\[(Gb|MB|MiB)/sec\]\s+BW average\[(?:Gb|MB|MiB)/sec\]\s+"
                     r"MsgRate\[Mpps\]")
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$")
_PAIR = re.compile(r"([A-Za-z][A-Za-z0-9_ .*\-]*?)\s*:\s*([^\s:][^\t]*?)(?=\t|$|\s{2,}[A-Za-z][A-Za-z0-9_ .*\-]*\s*:)")
_FAILURE = re.compile(r"(Couldn't|Unable to|Failed|failed|error|Error|not found|No such|timed out|Timeout)")
_TO_GBPS = {"Gb": 1.0, "MB": 2**20 * 8 / 1e9, "MiB": 2**20 * 8 / 1e9}


class PerftestError(ValueError):
    """perftest did not produce a result; the message carries what it said."""


def _tail(text, lines=6):
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:] if line.strip())


def parse_text(text):
    """Parse one perftest run's standard output. Raises PerftestError when there is no result row."""
    info, notes, rows, unit = {}, [], [], None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or set(stripped) == {"-"}:
            continue
        header = _HEADER.search(line)
        if header:
            unit = header.group(1)
            continue
        row = _ROW.match(line)
        if row and unit:
            size, iters, peak, avg, rate = row.groups()
            rows.append({"bytes": int(size), "iterations": int(iters), "bw_peak_gbps": float(peak) * _TO_GBPS[unit],
                         "bw_average_gbps": float(avg) * _TO_GBPS[unit], "msg_rate_mpps": float(rate)})
            continue
        if stripped.endswith("BW Test") and "test" not in info:
            info["test"] = stripped
            continue
        if stripped.startswith(("local address", "remote address", "GID:")) or set(stripped) == {"*"}:
            continue  # the QP exchange and banners: no facts for the report
        if unit is None and ":" in stripped and not _FAILURE.search(stripped):
            for key, value in _PAIR.findall(line):
                info[key.strip().lower().replace(" ", "_").replace(".", "").replace("*", "")] = value.strip()
            continue
        notes.append(stripped)
    if not rows:
        said = [n for n in notes if _FAILURE.search(n)] or notes
        raise PerftestError("perftest printed no result%s" % (": " + _tail("\n".join(said)) if said else ""))
    result = {"unit": "%s/sec" % unit, "rows": rows, "notes": notes, "info": _typed_info(info)}
    result.update(rows[-1])
    return result


def _typed_info(info):
    out = dict(info)
    for key in ("gid_index", "number_of_qps", "tx_depth", "cq_moderation"):
        if key in out and out[key].isdigit():
            out[key] = int(out[key])
    if "mtu" in out:
        match = re.match(r"(\d+)", out["mtu"])
        out["mtu"] = int(match.group(1)) if match else out["mtu"]
    return out


def _dialect_to_json(text):
    """perftest 4.5's --out_json (``key: value,`` lines, bare words) to valid JSON text."""
    lines = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        match = re.match(r'^"?([A-Za-z_][\w .\-]*?)"?\s*:\s*(.*?)\s*(,?)$', line)
        if not match:
            lines.append(line)
            continue
        key, value, comma = match.groups()
        if value in ("{", "["):
            lines.append('"%s": %s' % (key, value))
            continue
        if not (value.startswith('"') or re.match(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$", value)
                or value in ("true", "false", "null")):
            value = json.dumps(value)
        lines.append('"%s": %s%s' % (key, value, comma))
    joined = "\n".join(lines)
    return re.sub(r",(\s*[}\]])", r"\1", joined)


def parse_json(text, report_gbits):
    """Read ``--out_json`` (valid JSON, or perftest 4.5's dialect). Same result shape as parse_text()."""
    try:
        data = json.loads(text)
    except ValueError:
        try:
            data = json.loads(_dialect_to_json(text))
        except ValueError as exc:
            raise PerftestError("perftest's JSON output cannot be read (%s): %s" % (exc, _tail(text, 3))) from None
    results = data.get("results")
    if not isinstance(results, dict) or "BW_average" not in results:
        raise PerftestError("perftest's JSON output has no results section: %s" % sorted(data))
    factor = 1.0 if report_gbits else _TO_GBPS["MiB"]
    row = {"bytes": int(results.get("MsgSize", 0)), "iterations": int(results.get("n_iterations", 0)),
           "bw_peak_gbps": float(results.get("BW_peak", 0)) * factor,
           "bw_average_gbps": float(results["BW_average"]) * factor,
           "msg_rate_mpps": float(results.get("MsgRate", 0))}
    info = {str(k).lower(): v for k, v in (data.get("test_info") or {}).items()}
    result = {"unit": "Gb/sec" if report_gbits else "MiB/sec", "rows": [row], "notes": [], "info": info}
    result.update(row)
    return result


def find_gid_index(device, port, address, root="/", prefer=("RoCE v2", "IB/RoCE v1")):
    """The GID index whose GID carries ``address`` (IPv4 as ::ffff:a.b.c.d), preferring RoCE v2.

    Raises PerftestError with the device's GID table when no entry matches (wrong device, address not on its netdev).
    """
    try:
        table = gid_table(device, port, root)
    except KeyError as exc:
        raise PerftestError("device: %s" % str(exc).strip('"')) from None
    ip = ipaddress.ip_address(address)
    want = ipaddress.IPv6Address("::ffff:%s" % ip) if ip.version == 4 else ip
    matches = [(prefer.index(e["type"]) if e["type"] in prefer else len(prefer), e["index"])
               for e in table if ipaddress.IPv6Address(e["gid"]) == want]
    if not matches:
        raise PerftestError("gid_index: no GID of %s port %s carries %s; its GIDs: %s. Is the address on the RDMA "
                            "device's netdev?" % (device, port, address, ", ".join(
                                "%d=%s (%s)" % (e["index"], e["gid"], e["type"]) for e in table) or "none"))
    return min(matches)[1]


BIND_OPTION = "--bind_source_ip"  # perftest 23.07.0-0.27 and later (4.5's "--source_ip" is shadowed by raw Ethernet's)


def supports_bind(help_text):
    """Whether a perftest tool's ``--help`` offers ``--bind_source_ip`` (its server then binds its TCP port, and with
    ``-R`` its RDMA CM listener, to that address instead of every interface)."""
    return re.search(r"(^|\s)%s(\s|=|$)" % re.escape(BIND_OPTION), help_text or "", re.MULTILINE) is not None


def build_argv(tool, device, ib_port=DEFAULTS.ib_port, gid_index=None, size=DEFAULTS.msg_size, iterations=None,
               duration=None, qps=DEFAULTS.qps, tcp_port=18515, server=None, rdma_cm=DEFAULTS.rdma_cm,
               report_gbits=True, rate_limit_gbps=None, bind_address=None, qp_timeout=None):
    """The perftest command line as an argument list (never a shell string); every value validated. ``bind_address``:
    the address a server binds to (``--bind_source_ip``; only for a perftest that has it, see ``supports_bind``)."""
    if tool not in TOOLS:
        raise PerftestError("tool: %r is not one of %s" % (tool, ", ".join(TOOLS)))
    if not re.match(r"^[A-Za-z0-9_.\-]{1,64}$", str(device)):
        raise PerftestError("device: %r is not an RDMA device name (like mlx5_0 or rxe0)" % (device,))
    if (iterations is None) == (duration is None):
        raise PerftestError("iterations or duration: give exactly one")
    for name, value, low, high in (("ib_port", ib_port, 1, 255), ("size", size, 1, 2**31), ("qps", qps, 1, 16384),
                                   ("tcp_port", tcp_port, 1, 65535)):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise PerftestError("%s: %r must be a whole number from %d to %d" % (name, value, low, high))
    argv = [tool, "-d", device, "-i", str(ib_port), "-s", str(size), "-q", str(qps), "-p", str(tcp_port), "-F"]
    if gid_index is not None:
        argv += ["-x", str(int(gid_index))]
    if rdma_cm:
        argv.append("-R")
    if qp_timeout is not None:
        if isinstance(qp_timeout, bool) or not isinstance(qp_timeout, int) or not 1 <= qp_timeout <= 31:
            raise PerftestError("qp_timeout: %r must be a whole number from 1 to 31 (the QP's retransmission timeout "
                                "is 4.096 us x 2^qp_timeout; perftest's default 14 is 67 ms)" % (qp_timeout,))
        argv += ["-u", str(qp_timeout)]
    if report_gbits:
        argv.append("--report_gbits")
    if iterations is not None:
        if not 5 <= int(iterations) <= 2**40:
            raise PerftestError("iterations: %r must be 5 or more (perftest's minimum)" % (iterations,))
        argv += ["-n", str(int(iterations))]
    else:
        if not duration > 0:
            raise PerftestError("duration: %r must be more than 0 seconds" % (duration,))
        argv += ["-D", str(int(max(1, round(duration))))]
    if rate_limit_gbps is not None:
        if not rate_limit_gbps > 0:
            raise PerftestError("rate_limit: %r must be more than 0 Gb/s" % (rate_limit_gbps,))
        argv += ["--rate_limit=%g" % rate_limit_gbps, "--rate_units=g", "--rate_limit_type=SW"]
    if bind_address is not None:
        argv += [BIND_OPTION, str(ipaddress.ip_address(bind_address))]
    if server is not None:
        argv.append(str(ipaddress.ip_address(server)))
    return argv
