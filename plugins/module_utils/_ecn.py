# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ECN marker of a switch port: a shallow buffer and CE marks instead of drops (docs/congestion.md).

The lab's kernel has no ``red`` qdisc (nor fq_codel, netem), so the marker is a BPF classifier (cls_bpf, direct
action) at the root of the port's htb shaper (``aifabric.lab.tc_shape``), at filter priority ``MARKER_PRIO``: after
the ACK filter (prio 1: a host's ACKs go around the queue, as the shaper's ``ack_priority`` says) and before the
fair-share filters (prio 11 on). It returns "unclassified" for what it passes, so htb's next filter chooses the class.

The program (bpf/ecn_marker.bpf.c, shipped built in ``_ecn_program.py``) keeps a *virtual* queue in its map: the
bytes it admitted, drained at the port's rate over the time between arrivals. ``VirtualQueue`` below is the same
arithmetic in Python (the unit tests' model, and this file's documentation of the program):

* ``backlog = max(0, backlog - elapsed_ns * rate / 1e9)`` on every arrival;
* ``backlog + len > buffer``: dropped (tail drop; the buffer is the queue limit);
* ECT and ``backlog >= max_threshold``: marked CE; ``min_threshold < backlog < max_threshold``: marked with
  probability ``max_probability * (backlog - min) / (max - min)`` (RED's ramp on the instantaneous queue, no
  average); ``min == max`` is DCTCP's step at K;
* not-ECT where an ECT packet would be marked: dropped (``non_ect: drop``, RED's behaviour) or passed;
* admitted: ``backlog += len``.

Everything is counted in the map's one entry (``FIELDS``); ``decode`` reads it. The filter's name carries the map's
id (``aifabric.lab ecn map=ID``), so a later task finds the map through ``BPF_MAP_GET_FD_BY_ID`` (pyroute2 0.9
does not decode cls_bpf's TCA_BPF_ID), and the map's own name and size confirm it is the marker's.
"""

from __future__ import annotations

import os
import socket
import struct

from . import _bpf, _ecn_program
from ._tc import HTB_HANDLE, ShapeError, Shaper, netlink_reason
from ._units import UnitError, format_rate, format_size, parse_rate, parse_size

try:
    from pyroute2.netlink.exceptions import NetlinkError
except ImportError:  # the module fails earlier with missing_required_lib; this keeps the name defined

    class NetlinkError(Exception):
        code = 0

FIELDS = ("rate", "limit", "min_threshold", "max_threshold", "max_p", "flags", "last_ns", "backlog",
          "packets", "bytes", "ect", "not_ect", "ce_in", "marked", "dropped", "early_dropped", "dropped_bytes",
          "max_backlog", "segs", "ect_segs", "marked_segs", "dropped_segs")
HIST_BUCKETS = 16
# ECT packets admitted by the queue they found (bucket b: backlog * 16 // (buffer + 1) == b), and the marked of them
FIELDS += tuple("hist_ect_%d" % b for b in range(HIST_BUCKETS)) + tuple(
    "hist_marked_%d" % b for b in range(HIST_BUCKETS))
CONFIG_FIELDS = FIELDS[:6]
COUNTERS = tuple(f for f in FIELDS[8:] if not f.startswith("hist_"))
VALUE = struct.Struct("<%dQ" % len(FIELDS))
FLAG_MARK, FLAG_DROP_NOT_ECT = 1, 2
P_ONE = 1 << 32  # probability 1 in the map's fixed point
NS = 1_000_000_000
MAX_RATE_BPS = 100_000_000_000  # (elapsed % 1 s) * bytes per second stays below 2^64 up to 147 gbit
MAX_BUFFER = 1 << 30  # max_p * (backlog - min) stays below 2^64
MARKER_PRIO = 5
FILTER_HANDLE = 1
NAME_PREFIX = "aifabric.lab ecn map="
MAP_NAME = "afl_ecn_port"
PROG_NAME = "afl_ecn"
ETH_P_ALL = 0x0003
MODES = ("step", "red", "taildrop")


class EcnError(ValueError):
    """Bad input, or a device the marker cannot go on; the message names the parameter and the fix."""


# ---------------------------------------------------------------- the configuration
def desired_marker(params, rate_bps, mtu=1500):
    """The marker's configuration from the module's parameters and the port's rate (bit/s): a dict of
    ``CONFIG_FIELDS`` (bytes, bytes per second, the probability scaled to 2^32) plus ``mode`` and ``non_ect``."""
    mode = params.get("mode") or "step"
    if mode not in MODES:
        raise EcnError("mode: %r; use one of %s" % (mode, ", ".join(MODES)))
    if rate_bps > MAX_RATE_BPS:
        raise EcnError("rate: %s is above the %s the marker's arithmetic holds" % (
            format_rate(rate_bps), format_rate(MAX_RATE_BPS)))
    floor = 2 * (mtu + 14)
    try:
        buffer = parse_size(params.get("buffer"), "buffer", minimum=floor, maximum=MAX_BUFFER)
    except UnitError as exc:
        raise EcnError("%s (the buffer holds at least two frames of the port's MTU %d)" % (exc, mtu)) from None
    out = {"mode": mode, "rate": rate_bps // 8, "limit": buffer, "non_ect": params.get("non_ect") or "drop"}
    if out["non_ect"] not in ("drop", "pass"):
        raise EcnError("non_ect: %r; use drop (RED: a not-ECT packet is dropped where it would be marked) or pass"
                       % (out["non_ect"],))
    flags = FLAG_DROP_NOT_ECT if out["non_ect"] == "drop" else 0
    if mode == "taildrop":
        for key in ("threshold", "min_threshold", "max_threshold"):
            if params.get(key) is not None:
                raise EcnError("%s: not with mode: taildrop (nothing is marked); use mode: step or red" % key)
        out.update(min_threshold=buffer, max_threshold=buffer, max_p=0, flags=0, non_ect="pass")
        return out
    if mode == "step":
        if params.get("min_threshold") is not None or params.get("max_threshold") is not None:
            raise EcnError("min_threshold, max_threshold: mode: step takes threshold (K); use mode: red for a ramp")
        k = _size(params, "threshold", buffer)
        out.update(min_threshold=k, max_threshold=k, max_p=P_ONE, flags=flags | FLAG_MARK)
        return out
    if params.get("threshold") is not None:
        raise EcnError("threshold: mode: red takes min_threshold and max_threshold; use mode: step for K")
    low, high = _size(params, "min_threshold", buffer), _size(params, "max_threshold", buffer)
    if low >= high:
        raise EcnError("min_threshold, max_threshold: %s is not below %s; give min < max (or mode: step)" % (
            format_size(low), format_size(high)))
    p = params.get("max_probability")
    p = 0.1 if p is None else p
    if not 0 < p <= 1:
        raise EcnError("max_probability: %r; give a probability above 0 and at most 1 (e.g. 0.1)" % (p,))
    out.update(min_threshold=low, max_threshold=high, max_p=min(P_ONE, int(round(p * P_ONE))),
               flags=flags | FLAG_MARK)
    return out


def _size(params, key, buffer):
    if params.get(key) is None:
        raise EcnError("%s: required with mode: %s (bytes, e.g. 60KB)" % (key, params.get("mode") or "step"))
    try:
        size = parse_size(params[key], key, minimum=1)
    except UnitError as exc:
        raise EcnError(str(exc)) from None
    if size > buffer:
        raise EcnError("%s: %s is above the buffer (%s): nothing would be marked before the tail drops; give a "
                       "threshold below the buffer" % (key, format_size(size), format_size(buffer)))
    return size


def config_of(values):
    """The configuration a decoded map entry holds, in ``desired_marker``'s shape."""
    out = {key: values[key] for key in CONFIG_FIELDS}
    flags = values["flags"]
    if not flags & FLAG_MARK:
        out["mode"] = "taildrop"
    else:
        out["mode"] = "step" if values["min_threshold"] == values["max_threshold"] else "red"
    out["non_ect"] = "drop" if flags & FLAG_DROP_NOT_ECT else "pass"
    return out


def same_config(current, desired):
    return current is not None and all(current.get(k) == desired.get(k) for k in CONFIG_FIELDS)


def describe(config):
    """The configuration in words and units, for diff output and the result."""
    if not config:
        return {}
    out = {"mode": config["mode"], "rate": format_rate(config["rate"] * 8), "buffer": format_size(config["limit"])}
    if config["mode"] == "step":
        out["threshold"] = format_size(config["min_threshold"])
    elif config["mode"] == "red":
        out.update(min_threshold=format_size(config["min_threshold"]),
                   max_threshold=format_size(config["max_threshold"]),
                   max_probability=round(config["max_p"] / P_ONE, 6))
    if config["mode"] != "taildrop":
        out["non_ect"] = config["non_ect"]
    return out


# ---------------------------------------------------------------- the map
def encode(config, state=None):
    """A map entry: the configuration, and the state and counters of ``state`` (a decoded entry) or zeros."""
    values = [config[key] for key in CONFIG_FIELDS]
    values += [(state or {}).get(key, 0) for key in FIELDS[6:]]
    return VALUE.pack(*values)


def decode(raw):
    """A map entry (``VALUE``'s bytes, little-endian u64s in ``FIELDS``' order) as a dict."""
    if len(raw) < VALUE.size:
        raise EcnError("the marker's map entry is %d bytes, not %d: not this collection's marker" % (
            len(raw), VALUE.size))
    return dict(zip(FIELDS, VALUE.unpack_from(raw)))


def counters(values):
    """What the marker counted: packets and bytes, by ECN codepoint on arrival, marks, drops, the queue."""
    out = {key: values[key] for key in COUNTERS if key != "max_backlog"}
    out["backlog_bytes"] = values["backlog"]
    out["max_backlog_bytes"] = values["max_backlog"]
    ect = values["ect_segs"]
    # per wire packet, as the receivers count CE (a GSO packet of 7 segments marked is 7 marks there)
    out["marking_ratio"] = round(values["marked_segs"] / ect, 6) if ect else None
    out["marking_by_queue"] = marking_by_queue(values)
    out["drop_ratio"] = (round((values["dropped"] + values["early_dropped"]) / values["packets"], 6)
                         if values["packets"] else None)
    return out


def marking_by_queue(values):
    """The marking probability against the queue the packets found (the BMWG draft's section 7.1 plot): per bucket
    of 1/16 of the buffer that ECT packets arrived in, ``{from_bytes, to_bytes, ect, marked, ratio}``."""
    limit = values["limit"]
    out = []
    for b in range(HIST_BUCKETS):
        ect, marked = values["hist_ect_%d" % b], values["hist_marked_%d" % b]
        if ect:
            # the bucket holds backlogs q with q * 16 // (limit + 1) == b
            low = -(-b * (limit + 1) // HIST_BUCKETS)
            high = -(-(b + 1) * (limit + 1) // HIST_BUCKETS) - 1
            out.append({"from_bytes": low, "to_bytes": high, "ect": ect, "marked": marked,
                        "ratio": round(marked / ect, 6)})
    return out


# ---------------------------------------------------------------- the model
class VirtualQueue:
    """The program's arithmetic, in Python (integers as the program holds them): ``arrive`` says what the program
    does with one packet. ``config``: ``desired_marker``'s dict."""

    def __init__(self, config):
        self.config = dict(config)
        self.values = {key: 0 for key in FIELDS}
        self.values.update({key: config[key] for key in CONFIG_FIELDS})

    def drain(self, now_ns):
        v = self.values
        backlog = v["backlog"]
        if now_ns > v["last_ns"]:
            elapsed = now_ns - v["last_ns"]
            drained = (elapsed // NS) * v["rate"] + (elapsed % NS) * v["rate"] // NS
            backlog = backlog - drained if backlog > drained else 0
            v["last_ns"] = now_ns
        return backlog

    def arrive(self, now_ns, length, ecn=0, rand32=0, segs=1):
        """``"pass"``, ``"mark"``, ``"drop"`` (buffer full) or ``"early_drop"`` (not-ECT at the threshold) for a
        packet of ``length`` bytes with ECN codepoint ``ecn`` (0 not-ECT, 1 ECT(1), 2 ECT(0), 3 CE) arriving at
        ``now_ns``; ``rand32``: the program's bpf_get_prandom_u32() for this packet; ``segs``: its wire packets (a
        GSO packet's segments)."""
        v = self.values
        backlog = self.drain(now_ns)
        segs = max(1, segs)
        v["packets"] += 1
        v["bytes"] += length
        v["segs"] += segs
        v["ce_in" if ecn == 3 else "ect" if ecn else "not_ect"] += 1
        if ecn in (1, 2):
            v["ect_segs"] += segs
        if backlog + length > v["limit"]:
            v["backlog"] = backlog
            v["dropped"] += 1
            v["dropped_bytes"] += length
            v["dropped_segs"] += segs
            return "drop"
        mark = False
        if v["flags"] & FLAG_MARK:
            low, high = v["min_threshold"], v["max_threshold"]
            if backlog >= high:
                mark = True
            elif backlog > low and high > low:
                mark = rand32 < v["max_p"] * (backlog - low) // (high - low)
        action = "pass"
        bucket = min(HIST_BUCKETS - 1, backlog * HIST_BUCKETS // (v["limit"] + 1)) if ecn in (1, 2) else None
        if bucket is not None:
            v["hist_ect_%d" % bucket] += 1
        if mark and ecn in (1, 2):
            v["hist_marked_%d" % bucket] += 1
            v["marked"] += 1
            v["marked_segs"] += segs
            action = "mark"
        elif mark and ecn == 0 and v["flags"] & FLAG_DROP_NOT_ECT:
            v["backlog"] = backlog
            v["early_dropped"] += 1
            v["dropped_bytes"] += length
            v["dropped_segs"] += segs
            return "early_drop"
        backlog += length
        v["backlog"] = backlog
        v["max_backlog"] = max(v["max_backlog"], backlog)
        return action


# ---------------------------------------------------------------- the port
def filter_name(map_id):
    return "%s%d" % (NAME_PREFIX, map_id)


def map_id_of(name):
    """The map id a marker's filter name carries, or None for another filter's name."""
    if not name or not name.startswith(NAME_PREFIX) or not name[len(NAME_PREFIX):].isdigit():
        return None
    return int(name[len(NAME_PREFIX):])


class Marker:
    """The marker of one port: found, read, put on, changed in place, taken off, through an ``IPRoute``-like object
    and the bpf() calls of ``bpf`` (a module with ``_bpf``'s functions; injected for tests)."""

    def __init__(self, ipr, device, bpf=_bpf):
        self.ipr, self.device, self.bpf = ipr, device, bpf
        try:
            self.shaper = Shaper(ipr, device)
        except ShapeError as exc:
            raise EcnError(str(exc)) from None
        self.index = self.shaper.index

    def shaper_rate(self):
        """The rate of the port's htb shaper (class 1:1), in bit/s; EcnError when the port has none of ours."""
        current = self.shaper.read()
        if not current or current.get("foreign") or current.get("qdisc") != "htb":
            found = "no root qdisc" if not current else "%s %s" % (current.get("qdisc"), current.get("handle", "1:"))
            raise EcnError("device: %s has %s, not an htb shaper of aifabric.lab.tc_shape; the marker is a filter of "
                           "that shaper (its rate drains the virtual queue): shape the port first" % (
                               self.device, found))
        return current["rate"]

    def find(self):
        """``(filter message, map id)`` of the marker's filter on the port, or ``(None, None)``."""
        for f in self.ipr.get_filters(index=self.index, parent=HTB_HANDLE):
            if f.get_attr("TCA_KIND") != "bpf":
                continue
            opts = f.get_attr("TCA_OPTIONS")
            map_id = map_id_of(opts.get_attr("TCA_BPF_NAME") if opts else None)
            if map_id is not None:
                return f, map_id
        return None, None

    def read(self):
        """The decoded map entry of the port's marker, or None without one. A filter whose map is gone or is not
        the marker's reads as ``{"foreign": True}``."""
        _f, map_id = self.find()
        if map_id is None:
            return None
        try:
            fd = self.bpf.map_fd_by_id(map_id)
        except OSError:
            return {"foreign": True}
        try:
            info = self.bpf.map_info(fd)
            if info["name"] != MAP_NAME or info["value_size"] != VALUE.size:
                return {"foreign": True}
            return decode(self.bpf.map_lookup(fd, VALUE.size))
        finally:
            os.close(fd)

    def attach(self, config):
        """Load the program with a new map holding ``config`` and put its filter on the port (``replace``: a marker
        filter that is there, ours or a stale one, is swapped in one request)."""
        map_fd = prog_fd = None
        try:
            try:
                map_fd = self.bpf.map_create(VALUE.size, MAP_NAME)
                self.bpf.map_update(map_fd, encode(config))
                insns = self.bpf.relocate(_ecn_program.instructions(), _ecn_program.MAP_RELOCATIONS, map_fd)
                prog_fd = self.bpf.prog_load(insns, _ecn_program.LICENSE, PROG_NAME)
                map_id = self.bpf.map_info(map_fd)["id"]
            except OSError as exc:
                log = getattr(exc, "log", "")
                raise EcnError("device: %s: %s%s (the marker needs root and a kernel with BPF for tc: "
                               "CONFIG_NET_CLS_BPF, CONFIG_BPF_SYSCALL)" % (
                                   self.device, exc, "; the verifier said: %s" % log[-2000:] if log else "")) from None
            try:
                self.ipr.tc("replace-filter", "bpf", self.index, FILTER_HANDLE, parent=HTB_HANDLE, prio=MARKER_PRIO,
                            protocol=ETH_P_ALL, fd=prog_fd, name=filter_name(map_id), direct_action=True)
            except (NetlinkError, OSError) as exc:
                raise EcnError("device: attaching the marker to %s's htb root: %s" % (
                    self.device, netlink_reason(exc))) from None
        finally:
            for fd in (prog_fd, map_fd):
                if fd is not None:
                    os.close(fd)

    def update(self, config, current):
        """Write ``config`` into the marker's map in place, keeping its state and counters."""
        _f, map_id = self.find()
        try:
            fd = self.bpf.map_fd_by_id(map_id)
            try:
                self.bpf.map_update(fd, encode(config, current))
            finally:
                os.close(fd)
        except OSError as exc:
            raise EcnError("device: changing the marker of %s in place: %s" % (self.device, exc)) from None

    def remove(self):
        f, _map_id = self.find()
        if f is None:
            return
        prio = f["info"] >> 16
        try:
            self.ipr.tc("del-filter", "bpf", self.index, f["handle"], parent=HTB_HANDLE, prio=prio,
                        protocol=socket.ntohs(f["info"] & 0xFFFF))
        except (NetlinkError, OSError) as exc:
            raise EcnError("state: removing the marker from %s: %s" % (self.device, netlink_reason(exc))) from None


def mark(ipr, params, check_mode=False, bpf=_bpf):
    """Read, compare, apply one port's marker (check and diff mode from the same comparison); the result dict."""
    marker = Marker(ipr, params["device"], bpf=bpf)
    current = marker.read()
    ours = current if current and not current.get("foreign") else None
    desired = None
    if params["state"] == "present":
        if params.get("rate"):
            try:
                rate = parse_rate(params["rate"], "rate")
            except UnitError as exc:
                raise EcnError(str(exc)) from None
        else:
            rate = marker.shaper_rate()
        desired = desired_marker(params, rate, marker.shaper.mtu)
        changed = not same_config(config_of(ours) if ours else None, desired)
    else:
        changed = current is not None
    how = None
    if changed and not check_mode:
        if desired is None:
            marker.remove()
            how = "removed"
        elif ours:
            marker.update(desired, ours)
            how = "changed in place"
        else:
            marker.attach(desired)
            how = "attached"
    result = {
        "changed": changed,
        "device": params["device"],
        "marker": describe(desired) if desired else {},
        "diff": {"before": describe(config_of(ours)) if ours else ({"filter": "foreign"} if current else {}),
                 "after": describe(desired) if desired else {}},
    }
    if how:
        result["applied_by"] = how
    now = marker.read() if not check_mode else current
    result["counters"] = counters(now) if now and not now.get("foreign") else None
    return result
