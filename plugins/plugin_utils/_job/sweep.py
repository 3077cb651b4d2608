# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A size sweep like nccl-tests' (issue 26, item 6): the sizes, and the table in nccl-tests' layout.

``sizes(minimum, maximum, factor)`` follows nccl-tests' ``-b``/``-e``/``-f``: sizes ``minimum``, ``minimum x factor``,
... while not above ``maximum`` (``for (size = minBytes; size <= maxBytes; size *= stepFactor)`` in its common.cu);
sizes are bytes or nccl-tests' spelling (``8``, ``64K``, ``128M``, ``1G``: binary, K = 1024), or ours (``64KB`` =
64,000, ``64KiB`` = 65,536). ``point(op, size, n)`` is one row's left part as nccl-tests computes it for the type
``float`` (4 bytes): ``count = size / 4`` elements for allreduce and broadcast; for allgather, reducescatter and
alltoall the per-rank count ``(count / n)`` rounded down to a multiple of 4 elements (16 bytes, nccl-tests'
``& -(16/eltSize)``), the size column then being ``count x n x 4`` (``max(sendBytes, expectedBytes)``); ``redop``
``sum`` for the reductions (allreduce, reducescatter), ``none`` otherwise; ``root`` the root's rank for a broadcast,
-1 otherwise. The row's ``size`` is what the job's collective moves (``job_for``).

``table(rows)`` prints nccl-tests' result header and rows exactly (src/util.cu of nccl-tests: ``writeResultHeader``,
``writeBenchmarkLinePreamble``, ``writeBenchmarkLineBody`` with ``getFloatStr``; ``#wrong`` is ``N/A``: nothing is
checked), out-of-place and in-place columns (one measurement: the wire does not know in-place; the same figures in
both), and our prediction columns after them: ``ptime`` (us) and ``pbusbw`` (GB/s). Bandwidths
are GB/s of 1e9 bytes as nccl-tests prints them (algbw = size / time, busbw = algbw x ``bus_factor``).
"""

from __future__ import annotations

import re

from ansible_collections.aifabric.lab.plugins.module_utils._units import UnitError, parse_size
from ansible_collections.aifabric.lab.plugins.plugin_utils._job.algorithms import OPS, bus_factor

__all__ = ["SweepError", "parse_nccl_size", "sizes", "point", "row", "table", "float_str", "job_for"]

_NCCL_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmMgG]?)\s*$")
_UNITS = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}
_WORD = 4  # float
_REDOP = {"allreduce": "sum", "reducescatter": "sum"}
MAX_POINTS = 64


class SweepError(ValueError):
    """A sweep that cannot be run; the message names the parameter, the value and the fix."""


def parse_nccl_size(value, name):
    """Bytes from ``8``, ``64K``, ``128M``, ``1G`` (nccl-tests' binary units) or ``64KB``/``64KiB`` (ours)."""
    if isinstance(value, bool):
        raise SweepError("%s: %r is not a size; write it like 8, 64K, 128M or 1G (nccl-tests' -b/-e)" % (name, value))
    if isinstance(value, int):
        size = value
    else:
        match = _NCCL_SIZE.match(str(value))
        if match:
            size = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
        else:
            try:
                size = parse_size(value, name, minimum=0)
            except UnitError as exc:
                raise SweepError("%s (or nccl-tests' 8, 64K, 128M, 1G)" % exc) from None
    if size < 1:
        raise SweepError("%s: %r; give 1 byte or more" % (name, value))
    return size


def sizes(minimum, maximum, factor=2):
    """nccl-tests' sizes from ``-b minimum -e maximum -f factor``."""
    lo, hi = parse_nccl_size(minimum, "sweep.minimum"), parse_nccl_size(maximum, "sweep.maximum")
    if hi < lo:
        raise SweepError("sweep.maximum: %r is below sweep.minimum %r; give maximum >= minimum" % (maximum, minimum))
    if isinstance(factor, bool) or not isinstance(factor, int) or factor < 2:
        raise SweepError("sweep.factor: %r; give a whole number, 2 or more (nccl-tests' -f)" % (factor,))
    out, size = [], lo
    while size <= hi:
        out.append(size)
        size *= factor
    if len(out) > MAX_POINTS:
        raise SweepError("sweep: %d sizes from %d to %d bytes (factor %d); at most %d: raise the factor or narrow the "
                         "range" % (len(out), lo, hi, factor, MAX_POINTS))
    return out


def point(op, size, n, root_rank=None):
    """``{op, size, count, type, redop, root}`` of one row (nccl-tests' arithmetic, float); ``size`` is the bytes
    the collective moves and the table prints."""
    if op not in OPS:
        raise SweepError("sweep.op: %r; use one of %s" % (op, ", ".join(OPS)))
    count = size // _WORD
    if op in ("allgather", "reducescatter", "alltoall"):
        per_rank = (count // n) & -(16 // _WORD)
        out_size, out_count = per_rank * n * _WORD, per_rank
    else:
        out_size, out_count = count * _WORD, count
    root = (root_rank if root_rank is not None else 0) if op == "broadcast" else -1
    return {"op": op, "size": out_size, "count": out_count, "type": "float", "redop": _REDOP.get(op, "none"),
            "root": root, "ranks": n}


def job_for(point_row, algorithm=None, iterations=20, chunks=1, chunk_size=None, window=2, root=None,
            compute_ms=0):
    """The job (a dict for ``spec.parse_job``) that measures one row: ``iterations`` of the collective alone."""
    collective = {"op": point_row["op"], "size": point_row["size"], "window": window}
    if algorithm:
        collective["algorithm"] = algorithm
    if chunk_size is not None:
        collective["chunk_size"] = chunk_size
    else:
        collective["chunks"] = chunks
    if root is not None:
        collective["root"] = root
    return {"iterations": iterations, "compute_ms": compute_ms, "collectives": [collective]}


def row(point_row, time_s, predicted_time_s=None):
    """A table row: the point with ``time_us``, ``algbw``, ``busbw`` (GB/s) and the prediction's, when given."""
    out = dict(point_row)
    factor = bus_factor(point_row["op"], point_row["ranks"])
    for prefix, t in (("", time_s), ("p", predicted_time_s)):
        if t is None:
            out[prefix + "time_us"] = out[prefix + "algbw"] = out[prefix + "busbw"] = None
            continue
        algbw = point_row["size"] / 1e9 / t if t > 0 else 0.0
        out[prefix + "time_us"] = t * 1e6
        out[prefix + "algbw"] = algbw
        out[prefix + "busbw"] = algbw * factor
    return out


def float_str(value, width):
    """nccl-tests' ``getFloatStr``: two decimals while they fit in ``width``, then fewer, then an exponent."""
    power, val = 0, 1
    while value >= val:
        power += 1
        val *= 10
    if power < width - 2:
        return "%*.2f" % (width, value)
    if power < width - 1:
        return "%*.1f" % (width, value)
    if power < width + 1:
        return "%*.0f" % (width, value)
    if width >= 7:
        return "%*.1e" % (width, value)
    return "%*.0e" % (width, value)


def _body(time_us, algbw, busbw):
    if time_us is None:
        return "  %7s  %6s  %6s    N/A" % ("", "", "")
    return "  %7s  %6s  %6s    N/A" % (float_str(time_us, 7), float_str(algbw, 6), float_str(busbw, 6))


def table(rows, prediction=True):
    """nccl-tests' result table (its three header lines and one line per row, out-of-place and in-place columns
    with the same figures), with our prediction columns after them; a list of lines."""
    blank = ("", "", "", "", "")
    lines = ["#",
             "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          " % blank
             + ("    prediction" if prediction else ""),
             "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %s"
             % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
                "busbw", "#wrong", "") + ("  %7s  %6s" % ("ptime", "pbusbw") if prediction else ""),
             "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %s"
             % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", "")
             + ("  %7s  %6s" % ("(us)", "(GB/s)") if prediction else "")]
    for r in rows:
        line = "%12li  %12li  %8s  %6s  %6s" % (r["size"], r["count"], r["type"], r["redop"], "%6i" % r["root"])
        body = _body(r.get("time_us"), r.get("algbw"), r.get("busbw"))
        line += body + body
        if prediction:
            if r.get("ptime_us") is None:
                line += "  %7s  %6s" % ("", "")
            else:
                line += "  %7s  %6s" % (float_str(r["ptime_us"], 7), float_str(r["pbusbw"], 6))
        lines.append(line)
    return lines
