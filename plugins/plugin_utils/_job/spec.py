# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A training job's description, validated before anything starts (issue 26, item 3).

A job is a dict (the experiment's ``job``)::

    job:
      iterations: 20          # >= 1
      compute_ms: 5           # the compute phase of every iteration (ms, >= 0; 0: none)
      overlap: false          # see below
      channels: 1             # TCP connections per peer pair and collective (NCCL's channels): piece c on c mod k
      collectives:            # run one after the other after the compute, in every iteration
        - {op: allreduce, algorithm: ring, size: 64MB, chunks: 4, window: 2}
        - {op: broadcast, algorithm: ring, size: 1MB, root: worker1}

A collective: ``op`` (allreduce, allgather, reducescatter, alltoall, broadcast), ``algorithm`` (per op, see
``algorithms.OPS``; default ring, alltoall direct), ``size`` (nccl-tests' meaning: ``algorithms``; ``64MB`` = 64e6
bytes, ``64MiB`` = 2^26), ``chunks`` (pieces per message, default 1) or ``chunk_size`` (bytes per piece), ``window``
(unacknowledged pieces per connection, default 2), ``root`` (broadcast only; default the first rank).

``overlap``: false (default): an iteration is its compute, then its collectives in order, and the next iteration's
compute starts when this host has ended every operation of the iteration. true: the next iteration's compute starts
when this iteration's compute has ended, without waiting for its collectives (gradient bucketing: the communication of
iteration i runs while iteration i+1 computes); the collectives of iteration i+1 start when both its compute and the
collectives of iteration i have ended on this host (one communication stream, in order).

``parse_job(job, ranks)`` returns a ``JobSpec`` or raises ``JobError`` naming the field, the value and the fix; every
collective is scheduled once over ``ranks`` so that what cannot run (halving-doubling on 6 ranks, more chunks than
bytes, a size of 0) is refused before anything starts.
"""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.aifabric.lab.plugins.module_utils._units import UnitError, parse_size
from ansible_collections.aifabric.lab.plugins.plugin_utils._job.algorithms import (
    DEFAULT_ALGORITHM,
    OPS,
    ScheduleError,
    count_ops,
    schedule,
)

__all__ = ["JobError", "JobSpec", "CollectiveSpec", "parse_job", "MAX_OPS_PER_ITERATION"]

_JOB_KEYS = ("iterations", "compute_ms", "collectives", "overlap", "channels")
_COLLECTIVE_KEYS = ("op", "algorithm", "size", "chunks", "chunk_size", "window", "root")
MAX_OPS_PER_ITERATION = 20_000  # operations of one host in one iteration (its op list; the predictor's cost)
MAX_CHANNELS = 16


class JobError(ValueError):
    """A job that cannot run; the message names the field, the value and the fix."""


@dataclass(frozen=True)
class CollectiveSpec:
    """One collective of the iteration, validated (``size`` and ``chunk_size`` in bytes)."""

    index: int
    op: str
    algorithm: str
    size: int
    chunks: int | None
    chunk_size: int | None
    window: int
    root: str | None

    def schedule(self, ranks, channels=1):
        """Its transfers over ``ranks`` (``algorithms.schedule``)."""
        return schedule(self.op, self.algorithm, ranks, self.size, chunks=self.chunks, chunk_size=self.chunk_size,
                        window=self.window, root=self.root, channels=channels)


@dataclass(frozen=True)
class JobSpec:
    """A validated job: ``compute_ms`` per iteration, ``collectives`` in order, over ``ranks`` (host names)."""

    iterations: int
    compute_ms: float
    collectives: tuple
    overlap: bool
    channels: int
    ranks: tuple

    def schedules(self):
        """Every collective's ``Schedule``, in order."""
        return [c.schedule(self.ranks, self.channels) for c in self.collectives]


def _int(value, name, minimum, maximum=None, hint=""):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum or (
            maximum is not None and value > maximum):
        span = "from %d to %d" % (minimum, maximum) if maximum is not None else "%d or more" % minimum
        raise JobError("%s: %r; give a whole number %s%s" % (name, value, span, hint))
    return value


def _bool(value, name):
    if not isinstance(value, bool):
        raise JobError("%s: %r; give true or false" % (name, value))
    return value


def _collective(item, k, ranks):
    where = "job.collectives[%d]" % k
    if not isinstance(item, dict):
        raise JobError("%s: expected a dict such as {op: allreduce, algorithm: ring, size: 64MB}, got %r"
                       % (where, item))
    item = {key: value for key, value in item.items() if value is not None}
    unknown = sorted(set(item) - set(_COLLECTIVE_KEYS))
    if unknown:
        raise JobError("%s: unknown field(s) %s; known: %s" % (where, ", ".join(map(str, unknown)),
                                                               ", ".join(_COLLECTIVE_KEYS)))
    op = item.get("op")
    if op not in OPS:
        raise JobError("%s.op: %r; use one of %s" % (where, op, ", ".join(OPS)))
    algorithm = item.get("algorithm", DEFAULT_ALGORITHM[op])
    if algorithm not in OPS[op]:
        raise JobError("%s.algorithm: %r is not an algorithm of %s; use %s"
                       % (where, algorithm, op, " or ".join(OPS[op])))
    if "size" not in item:
        raise JobError("%s.size: missing; give the collective's size (nccl-tests' meaning), e.g. 64MB" % where)
    try:
        size = parse_size(item["size"], "%s.size" % where, minimum=0)
        chunk_size = parse_size(item["chunk_size"], "%s.chunk_size" % where, minimum=0) \
            if "chunk_size" in item else None
    except UnitError as exc:
        raise JobError(str(exc)) from None
    if size == 0:
        raise JobError("%s.size: %r is 0 bytes: a collective of nothing moves nothing; give a size such as 64MB"
                       % (where, item["size"]))
    if chunk_size == 0:
        raise JobError("%s.chunk_size: %r is 0 bytes; give the bytes of one piece, e.g. 1MB, or use chunks"
                       % (where, item["chunk_size"]))
    if chunk_size is not None and "chunks" in item:
        raise JobError("%s: chunks (%r) and chunk_size (%r) both given; give one of them"
                       % (where, item["chunks"], item["chunk_size"]))
    chunks = None if chunk_size is not None else _int(item.get("chunks", 1), "%s.chunks" % where, 1,
                                                      hint=" (pieces per message)")
    window = _int(item.get("window", 2), "%s.window" % where, 1, hint=" (unacknowledged pieces per connection)")
    root = item.get("root")
    if root is not None and op != "broadcast":
        raise JobError("%s.root: only a broadcast has a root (this is %s); remove it" % (where, op))
    if root is not None and root not in ranks:
        raise JobError("%s.root: %r is not one of the job's workers (%s)" % (where, root, ", ".join(ranks)))
    spec = CollectiveSpec(k, op, algorithm, size, chunks, chunk_size, window, root)
    if op == "allreduce" and algorithm == "halving_doubling" and len(ranks) & (len(ranks) - 1):
        count = 0  # refused by schedule() below, with the fix
    else:
        count = count_ops(op, algorithm, ranks, size, chunks, chunk_size)
    if count > MAX_OPS_PER_ITERATION:
        raise JobError("%s: %d sends and receives per host and iteration (more than %d); use fewer chunks or a "
                       "chunk_size closer to the message size" % (where, count, MAX_OPS_PER_ITERATION))
    return spec, count


def _check_schedule(spec, ranks, channels):
    """Build the collective once: refuses what cannot be cut (more chunks than bytes, ...)."""
    try:
        spec.schedule(ranks, channels)
    except ScheduleError as exc:
        raise JobError("job.collectives[%d].%s" % (spec.index, exc)) from None


def parse_job(job, ranks):
    """Validate ``job`` (a dict, see the module docstring) for ``ranks`` (the workers' host names, in rank order).
    Returns a ``JobSpec``; raises ``JobError``."""
    if not isinstance(job, dict):
        raise JobError("job: expected a dict (iterations, compute_ms, collectives, ...), got %r" % (job,))
    ranks = tuple(ranks)
    if len(ranks) < 2:
        raise JobError("job: a job needs 2 workers or more (got %d: %s); add workers to the inventory or raise "
                       "experiment.workers" % (len(ranks), ", ".join(ranks) or "none"))
    if len(set(ranks)) != len(ranks):
        raise JobError("job: a worker is listed twice in %s; give each host once" % ", ".join(ranks))
    job = {key: value for key, value in job.items() if value is not None}
    unknown = sorted(set(job) - set(_JOB_KEYS))
    if unknown:
        raise JobError("job: unknown field(s) %s; known: %s" % (", ".join(map(str, unknown)), ", ".join(_JOB_KEYS)))
    iterations = _int(job.get("iterations", 1), "job.iterations", 1)
    compute = job.get("compute_ms", 0)
    if isinstance(compute, bool) or not isinstance(compute, (int, float)) or not 0 <= compute < float("inf"):
        raise JobError("job.compute_ms: %r; give milliseconds, 0 or more (0: no compute phase)" % (compute,))
    overlap = _bool(job.get("overlap", False), "job.overlap")
    channels = _int(job.get("channels", 1), "job.channels", 1, MAX_CHANNELS, hint=" (connections per peer pair)")
    items = job.get("collectives")
    if not isinstance(items, list) or not items:
        raise JobError("job.collectives: %r; give a list of one collective or more, e.g. [{op: allreduce, "
                       "algorithm: ring, size: 64MB, chunks: 4}]" % (items,))
    collectives, ops = [], 2 if overlap else 1  # the compute op (and the start op), then per collective its sends
    # and receives and a join
    for k, item in enumerate(items):
        spec, per_host = _collective(item, k, ranks)
        collectives.append(spec)
        ops += per_host + 1
    if ops > MAX_OPS_PER_ITERATION:
        raise JobError("job.collectives: %d operations per host and iteration (more than %d); use fewer chunks or "
                       "a chunk_size closer to the message size" % (ops, MAX_OPS_PER_ITERATION))
    for spec in collectives:
        _check_schedule(spec, ranks, channels)
    return JobSpec(iterations, float(compute), tuple(collectives), overlap, channels, ranks)
