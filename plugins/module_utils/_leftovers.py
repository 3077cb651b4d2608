# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What earlier runs left on a host, found by the collection's marks, named with their owner, and removed when no
live owner holds them (the lab_leftovers module).

What is looked at, and how it is recognised:

* ``daemon`` / ``pidfile``: the state directory's PID files (``step-<run>-<party>.pid``, ``server-<addr>-<port>.pid``,
  _flow/state.py). A PID names our process only while ``_proc.same_process`` says so (PID, start time, boot id); a
  file written before start times were kept is matched by its ``started_at`` against the process's start (within
  ``START_TOLERANCE``); a file with neither is never trusted to signal. A file whose process is gone (or whose PID
  another process reuses) is a stale ``pidfile``.
* ``result``: results never collected - a host's ``step-<run>-<party>.json``, the coordinator's
  ``step-<run>.rendezvous.json`` and its durable ``step-<run>.results/<party>.json``, a server's ``server-*.json``.
  Moved aside to ``<state_dir>/orphaned/`` (kept: nothing measured is lost), or deleted when asked.
* ``shaper`` / ``ifb`` / ``record``: in the network namespace the module runs in, root qdiscs with the collection's
  mark (htb ``1:`` with r2q 44971) or a record (``shapers/<netns>/<device>.json``), ifb devices named ``ifb-*`` or
  with the alias ``aifabric.lab: ...``; a record whose shaper (or namespace) is gone is a stale ``record``. Given
  ``namespaces`` (the netns lab: several hosts that are namespaces of this machine, one task for them all), each of
  those namespaces instead, looked at (and cleaned) by a forked child inside it, side by side (``in_each_namespace``).
* ``lab``: the netns labs netns_topology recorded (``labs/<switch>.json``), with their namespaces. In a namespace of
  a lab up on purpose (recorded without an owner), the shapers tc_shape made without an owner and the ifb devices
  are the lab's (its switch ports): kept. A throttle is an experiment's, never the lab's.
* ``tempfile``: half-written files of the atomic writer (``.<name>.<random>``) that a killed process left.

What goes (``remove``): what belongs to no live owner. A live owner's (lease running, controller alive) and the
caller's own are kept; what carries no owner is kept unless ``unowned=remove`` (a daemon or shaper without owner may
be another experiment's that predates owners), except results, which are moved once older than ``min_age``, and
stale files, which hold nothing. A lab without owner is up on purpose and always kept. A daemon is signalled only
after ``same_process``, checked again before each signal.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import signal
import time

from . import _host_state, _proc
from ._owner import describe, liveness
from ._owner import validate as validate_owner

__all__ = ["Scanner", "Leftover", "daemon_status", "in_each_namespace", "table", "START_TOLERANCE"]

# a PID file's started_at (time.time() in the daemon right after its fork) against the process's start time (boot
# time + start ticks, whole seconds): the same process within this many seconds
START_TOLERANCE = 5.0
ORPHANED = "orphaned"
_STEP_RESULT = re.compile(r"^step-([0-9a-f]+)-.+\.json$")
_RENDEZVOUS = re.compile(r"^step-([0-9a-f]+)\.rendezvous\.json$")
_RESULTS_DIR = re.compile(r"^step-([0-9a-f]+)\.results$")
_STEP_PID = re.compile(r"^step-([0-9a-f]+)-.+\.pid$")
_TEMP = re.compile(r"^\..+\.[A-Za-z0-9_]{6,}$")


def process_started_at(pid, root="/"):
    """When process ``pid`` started, as epoch seconds (boot time + its start ticks), or None."""
    ticks = _proc.start_ticks(pid, root)
    if ticks is None:
        return None
    try:
        with open(os.path.join(root, "proc", "stat")) as handle:
            btime = next(int(line.split()[1]) for line in handle if line.startswith("btime "))
    except (OSError, StopIteration, ValueError, IndexError):
        return None
    return btime + ticks / float(os.sysconf("SC_CLK_TCK"))


def daemon_status(info, root="/"):
    """``(status, how)`` of the process a PID file names: ``running`` (ours), ``gone``, ``reused`` (another process
    has the PID now) or ``unverified`` (alive, but the file has no start time to tell)."""
    pid = info.get("pid") if isinstance(info, dict) else None
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return "gone", "the file names no PID"
    if info.get("boot_id") and info["boot_id"] != _proc.boot_id(root):
        return "gone", "written before a reboot"
    if not _proc.alive(pid, root):
        return "gone", "pid %d has ended" % pid
    if info.get("start_ticks") is not None:
        if _proc.same_process(info, root):
            return "running", "pid %d (start time matches)" % pid
        return "reused", "pid %d is another process now (its start time differs)" % pid
    started = info.get("started_at")
    if isinstance(started, (int, float)) and not isinstance(started, bool):
        began = process_started_at(pid, root)
        if began is not None and abs(began - started) <= START_TOLERANCE:
            return "running", "pid %d (started when the file says)" % pid
        return "reused", "pid %d is another process now (it started %s)" % (
            pid, "at an unknown time" if began is None else "%.0f s from the file's started_at" % (began - started))
    return "unverified", "pid %d runs, but the file has no start time to tell whether it is ours" % pid


class Leftover:
    """One thing found: what it is, who owns it, whether that owner is live, and how it would go (``verb`` and
    ``act``, or None to keep it, with ``reason``)."""

    def __init__(self, kind, name, owner=None, live=None, reason="", scope="machine", verb=None, act=None,
                 **extra):
        self.kind, self.name, self.owner, self.live, self.reason = kind, name, owner, live, reason
        self.scope, self.verb, self.act, self.extra = scope, verb, act, extra
        self.action = "kept"

    def to_dict(self):
        out = {"kind": self.kind, "name": self.name, "owner": (self.owner or {}).get("id"), "live": self.live,
               "action": self.action, "reason": self.reason, "scope": self.scope}
        if self.owner:
            out["owner_record"] = self.owner
        out.update(self.extra)
        return out

    @classmethod
    def from_dict(cls, data):
        """An item as ``to_dict`` gave it (a namespace's, judged and acted on by the child inside it)."""
        data = dict(data)
        item = cls(data.pop("kind"), data.pop("name"), data.pop("owner_record", None), data.pop("live", None),
                   data.pop("reason", ""), data.pop("scope", "machine"))
        item.action = data.pop("action", "kept")
        data.pop("owner", None)
        item.extra = data
        return item


def in_each_namespace(names, work):
    """``work(name)`` in a forked child inside each network namespace of ``names``, side by side; what each returned
    (JSON), or ``{"status": "failed", "error": ...}`` when it could not enter or raised, in the order of ``names``."""
    from . import _netns_enter

    children = []
    for name in names:
        children.append(_netns_enter.fork_in_namespace(name, lambda _write_fd, name=name: work(name),
                                                       close=[fd for _pid, fd in children]))
    return [_netns_enter.gather(pid, fd) for pid, fd in children]


def _read_json(path):
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _owner_of(data):
    try:
        return validate_owner((data or {}).get("owner"))
    except ValueError:
        return None


class Scanner:
    """Finds and (on ``run(remove=True)``) removes leftovers on one host. The system is injected: ``ipr`` (an
    IPRoute of the namespace the module runs in, or None to skip qdiscs and ifbs), ``netns``/``iproute`` (pyroute2's
    netns and IPRoute, to take down a lab; ``iproute`` also opens each of ``namespaces``' from inside it), ``kill``,
    ``sleep``, ``now``, ``root`` (for /proc). ``namespaces``: network namespaces of this machine whose qdiscs and ifb
    devices are looked at instead of ``ipr``'s, each through ``in_namespaces(names, work)`` (default
    ``in_each_namespace``: a forked child inside each), for several hosts of the netns lab at once."""

    def __init__(self, state_dir, owner=None, unowned="keep", results="move", min_age=900.0, grace=10.0,
                 ipr=None, netns=None, iproute=None, netns_key=None, netns_run_dir="/run/netns", root="/",
                 now=None, kill=os.kill, sleep=time.sleep, machine=None, namespaces=None, in_namespaces=None):
        self.state_dir = state_dir
        self.owner = owner
        self.unowned = unowned
        self.results_policy = results
        self.min_age = min_age
        self.grace = grace
        self.ipr = ipr
        self.netns = netns
        self.iproute = iproute
        self.netns_key = netns_key or _host_state.netns_key()
        self.netns_run_dir = netns_run_dir
        self.root = root
        self.now = time.time() if now is None else now
        self.kill = kill
        self.sleep = sleep
        self.machine = machine
        self.namespaces = list(namespaces or [])
        self.in_namespaces = in_namespaces or in_each_namespace

    # ------------------------------------------------------------------ owners
    def _judge(self, owner):
        """``(live, reason, mine)`` of an owner record (None: no owner)."""
        if owner and self.owner and owner.get("id") == self.owner.get("id"):
            return True, "this experiment's own (%s)" % describe(owner), True
        live, reason = liveness(owner, self.now, self.root, self.machine)
        if owner:
            reason = "%s: %s" % (describe(owner), reason)
        return live, reason, False

    def _lab_here(self):
        """The switch of the lab up on purpose (recorded without an owner) whose namespace this task runs in."""
        if not self.netns_key.startswith("netns-"):
            return None
        for _path, rec in _host_state.records(self.state_dir, "labs"):
            if not rec.get("owner") and self.netns_key[6:] in (rec.get("namespaces") or []):
                return rec.get("switch")
        return None

    def _unowned(self, what):
        if self.unowned == "remove":
            return True, "no owner recorded; unowned=remove takes it"
        return False, "no owner recorded: %s may be another experiment's; unowned=remove takes it" % what

    # ------------------------------------------------------------------ daemons
    def daemons(self):
        out = []
        base = self.state_dir
        for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
            if not name.endswith(".pid") or not name.startswith(("step-", "server-")):
                continue
            path = os.path.join(base, name)
            info = _read_json(path)
            label = name[:-4]
            if info is None:
                out.append(Leftover("pidfile", label, live=False, reason="unreadable PID file", verb="remove",
                                    act=self._unlink(path), path=path))
                continue
            status, how = daemon_status(info, self.root)
            owner = _owner_of(info)
            extra = {"path": path, "pid": info.get("pid"), "run": info.get("run"), "process": status}
            if status in ("gone", "reused"):
                out.append(Leftover("pidfile", label, owner, False, "stale: %s" % how, verb="remove",
                                    act=self._unlink(path), **extra))
                continue
            if status == "unverified":
                out.append(Leftover("daemon", label, owner, None, "%s; never signalled" % how, **extra))
                continue
            live, reason, _mine = self._judge(owner)
            item = Leftover("daemon", label, owner, live, "%s; %s" % (how, reason), **extra)
            take = live is False
            if live is None:
                take, reason = self._unowned("a running step")
                item.reason = "%s; %s" % (how, reason)
            if take:
                item.verb, item.act = "end", self._end(info, path)
            out.append(item)
        return out

    def _end(self, info, path):
        def act():
            signalled = None
            for sig, wait in ((signal.SIGTERM, self.grace), (signal.SIGKILL, 2.0)):
                if daemon_status(info, self.root)[0] != "running":
                    break
                try:
                    self.kill(info["pid"], sig)
                except ProcessLookupError:
                    break
                signalled = sig.name
                deadline = time.monotonic() + wait
                while daemon_status(info, self.root)[0] == "running" and time.monotonic() < deadline:
                    self.sleep(0.05)
            if daemon_status(info, self.root)[0] == "running":
                raise OSError(errno.EBUSY, "pid %d is still running after SIGKILL" % info["pid"])
            self._unlink(path)()
            return "ended (%s)" % signalled if signalled else "had ended by itself"
        return act

    def _unlink(self, path):
        def act():
            try:
                os.unlink(path)
            except FileNotFoundError:
                return "already gone"
            return None
        return act

    # ------------------------------------------------------------------ results
    def _runs(self):
        """``{run16: {"owner": record, "running": [pid]}}`` from the PID files (read again after daemons ended)."""
        runs = {}
        base = self.state_dir
        for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
            match = _STEP_PID.match(name)
            if not match:
                continue
            info = _read_json(os.path.join(base, name)) or {}
            entry = runs.setdefault(match.group(1)[:16], {"owner": None, "running": []})
            entry["owner"] = entry["owner"] or _owner_of(info)
            if daemon_status(info, self.root)[0] == "running":
                entry["running"].append(info["pid"])
        return runs

    def results(self, run_owners=None):
        """Results never collected. ``run_owners``: owners of the runs whose daemons were just seen (their PID files
        may be gone now), so a result a killed owner's daemon wrote inherits that owner."""
        runs = self._runs()
        for run, owner in (run_owners or {}).items():
            runs.setdefault(run, {"owner": None, "running": []})
            runs[run]["owner"] = runs[run]["owner"] or owner
        out = []
        base = self.state_dir
        for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
            path = os.path.join(base, name)
            if _RESULTS_DIR.match(name) and os.path.isdir(path):
                run = _RESULTS_DIR.match(name).group(1)[:16]
                for party in sorted(os.listdir(path)):
                    if party.endswith(".json") and not party.startswith("."):
                        out.append(self._result(os.path.join(path, party), "%s/%s" % (name, party), run, runs))
                continue
            if not name.endswith(".json") or name.startswith("."):
                continue
            match = _RENDEZVOUS.match(name) or _STEP_RESULT.match(name)
            if match:
                out.append(self._result(path, name, match.group(1)[:16], runs))
            elif name.startswith("server-"):
                out.append(self._result(path, name, None, runs, pidfile=path[:-5] + ".pid"))
        return out

    def _result(self, path, name, run, runs, pidfile=None):
        data = _read_json(path)
        entry = runs.get(run) or {"owner": None, "running": []}
        owner = _owner_of(data) or entry["owner"]
        try:
            age = self.now - os.stat(path).st_mtime
        except OSError:
            age = 0.0
        item = Leftover("result", name, owner, None, "", path=path, run=run, age_s=round(age, 1))
        running = list(entry["running"])
        if pidfile and os.path.exists(pidfile) and daemon_status(_read_json(pidfile) or {}, self.root)[0] == "running":
            running.append((_read_json(pidfile) or {}).get("pid"))
        if running:
            item.live, item.reason = True, "its step still runs (pid %s)" % ", ".join(str(p) for p in running)
            return item
        live, reason, _mine = self._judge(owner)
        item.live = live
        if live is None:
            if age < self.min_age:
                item.reason = ("never collected, %.0f s old: younger than min_age (%.0f s), a running experiment may "
                               "still collect it" % (age, self.min_age))
                return item
            reason = "never collected, %.0f s old, no owner recorded" % age
        elif live is False:
            reason = "never collected; %s" % reason
        item.reason = reason
        if live is not True and self.results_policy != "keep":
            item.verb = "delete" if self.results_policy == "delete" else "move"
            item.act = self._unlink(path) if item.verb == "delete" else self._move(path, name)
        return item

    def _move(self, path, name):
        def act():
            dest = os.path.join(self.state_dir, ORPHANED, name)
            os.makedirs(os.path.dirname(dest), mode=0o700, exist_ok=True)
            final, n = dest, 0
            while os.path.exists(final):
                n += 1
                final = "%s.%d" % (dest, n)
            try:
                os.rename(path, final)
            except FileNotFoundError:
                return "already gone"
            parent = os.path.dirname(path)
            if parent != self.state_dir:
                try:
                    os.rmdir(parent)  # a results directory left empty
                except OSError:
                    pass
            return "moved to %s" % final
        return act

    # ------------------------------------------------------------------ shapers, ifbs, records
    def shapers(self, elsewhere=True):
        """This namespace's shapers, ifb devices and records (``ipr``'s), and (``elsewhere``) the records of
        namespaces that are gone."""
        from ._tc import IFB_PREFIX, ShapeError, Shaper

        out = []
        records = {}
        for path, rec in _host_state.records(self.state_dir, "shapers"):
            netns = os.path.basename(os.path.dirname(path))
            if netns == self.netns_key:
                records[rec.get("shaped_device") or rec.get("device")] = (path, rec)
            elif elsewhere and netns.startswith("netns-") and not os.path.exists(
                    os.path.join(self.netns_run_dir, netns[6:])):
                out.append(Leftover("record", "%s %s" % (netns[6:], rec.get("device")), _owner_of(rec), False,
                                    "stale: the namespace %s is gone" % netns[6:], verb="remove",
                                    act=self._unlink(path), path=path))
        if self.ipr is None:
            return out
        links = {link.get_attr("IFLA_IFNAME"): link for link in self.ipr.get_links()}
        seen = set()
        for shaped, (path, rec) in sorted(records.items()):
            seen.add(shaped)
            device = rec.get("device")
            owner = _owner_of(rec)
            if shaped not in links or (rec.get("ifb") and device not in links):
                out.append(Leftover("record", "%s (%s)" % (device, shaped), owner, False,
                                    "stale: %s is gone" % (shaped if shaped not in links else device),
                                    scope="netns", verb="remove", act=self._unlink(path), path=path))
                continue
            shaper = Shaper(self.ipr, device)
            target = links[shaped]["index"]
            current = shaper.read(target)
            if not current or current.get("foreign") or current.get("qdisc") != rec.get("qdisc"):
                out.append(Leftover("record", "%s (%s)" % (device, shaped), owner, False,
                                    "stale: %s's root is %s now, not the %s it records" % (
                                        shaped, "%s %s" % (current["qdisc"], current.get("handle", "")) if current
                                        else "none", rec.get("qdisc")),
                                    scope="netns", verb="remove", act=self._unlink(path), path=path))
                continue
            out.append(self._shaper_item(shaper, device, shaped, rec.get("ifb"), rec.get("maker"), owner, path,
                                         current))
        for name, link in sorted(links.items()):
            info = link.get_attr("IFLA_LINKINFO")
            kind = info.get_attr("IFLA_INFO_KIND") if info else None
            alias = link.get_attr("IFLA_IFALIAS") or ""
            if name in seen:
                continue
            if kind == "ifb" and (alias.startswith(_host_state.MARKER) or name.startswith(IFB_PREFIX)):
                served = alias.rsplit(" ", 1)[-1] if alias.startswith(_host_state.MARKER + ": ingress of ") else None
                out.append(self._ifb_item(name, served, links))
                continue
            try:
                shaper = Shaper(self.ipr, name)
                marked = shaper.marked()
            except ShapeError:
                continue
            if marked:
                out.append(self._shaper_item(shaper, name, name, None, None, None, None, shaper.read()))
        return out

    def namespace_part(self, name, ipr, remove=False, check_mode=False):
        """Network namespace ``name``'s shapers, ifb devices and records (``ipr`` its IPRoute: run inside it), judged
        and, with ``remove``, removed there: ``{"items": [dict], "changed": bool, "errors": [str]}``, each item's name
        prefixed with the namespace's."""
        part = Scanner(self.state_dir, owner=self.owner, unowned=self.unowned, results=self.results_policy,
                       min_age=self.min_age, grace=self.grace, ipr=ipr, netns_key="netns-" + name,
                       netns_run_dir=self.netns_run_dir, root=self.root, now=self.now, kill=self.kill,
                       sleep=self.sleep, machine=self.machine)
        found = part.shapers(elsewhere=False)
        errors = []
        changed = part._apply(found, remove, check_mode, errors)
        items = []
        for item in found:
            item.name = "%s: %s" % (name, item.name)
            item.extra["netns"] = name
            items.append(item.to_dict())
        return {"items": items, "changed": changed, "errors": ["%s: %s" % (name, e) for e in errors]}

    def _namespaces(self, remove, check_mode, errors):
        """``namespaces``' parts, each from inside its namespace: ``(items, changed)``."""
        if not self.namespaces:
            return [], False
        from . import _tc  # noqa: F401  (imported once here, not in each child)

        def work(name):
            with self.iproute() as ipr:
                return self.namespace_part(name, ipr, remove, check_mode)

        items, changed = [], False
        for name, out in zip(self.namespaces, self.in_namespaces(self.namespaces, work)):
            if not isinstance(out, dict) or "items" not in out:
                why = (out or {}).get("error") if isinstance(out, dict) else None
                errors.append("netns %s: not looked at: %s" % (name, why or "no answer"))
                continue
            items.extend(Leftover.from_dict(d) for d in out["items"])
            changed = changed or bool(out.get("changed"))
            errors.extend(out.get("errors") or [])
        return items, changed

    def _shaper_item(self, shaper, device, shaped, ifb, maker, owner, record_path, current):
        from ._units import format_rate

        label = "%s %s %s" % (device if not ifb else "%s ingress via %s" % (device, ifb), current["qdisc"],
                              format_rate(current["rate"]))
        extra = {"device": device, "shaped_device": shaped, "maker": maker}
        if record_path:
            extra["path"] = record_path
        item = Leftover("shaper", label, owner, None, "", scope="netns", **extra)
        lab = self._lab_here() if not owner and maker != "throttle" else None
        if lab:
            item.live, take = True, False
            item.reason = "part of the lab %s, up on purpose (a throttle would record its experiment)" % lab
        elif owner:
            item.live, item.reason, _mine = self._judge(owner)
            take = item.live is False
        else:
            take, item.reason = self._unowned("a shaper" + ("" if record_path else " (marked, without a record)"))
        if take:
            def act():
                if ifb:
                    shaper.teardown_ifb(ifb)
                else:
                    shaper.remove()
                if record_path:
                    self._unlink(record_path)()
                return None
            item.verb, item.act = "remove", act
        return item

    def _ifb_item(self, name, served, links):
        from ._tc import Shaper

        item = Leftover("ifb", name, None, None, "", scope="netns", served=served)
        lab = self._lab_here()
        if lab:
            item.live, take, item.reason = True, False, "part of the lab %s, up on purpose" % lab
        else:
            take, item.reason = self._unowned("an ifb device%s" % (" for %s's ingress" % served if served else ""))
        if take:
            def act():
                if served and served in links:
                    Shaper(self.ipr, served).teardown_ifb(name)
                else:
                    self.ipr.link("del", index=links[name]["index"])
                return None
            item.verb, item.act = "remove", act
        return item

    # ------------------------------------------------------------------ labs
    def labs(self):
        from ._netns_topology import Topology

        out = []
        present = set(os.listdir(self.netns_run_dir)) if os.path.isdir(self.netns_run_dir) else set()
        for path, rec in _host_state.records(self.state_dir, "labs"):
            names = rec.get("namespaces") or []
            up = [ns for ns in names if ns in present]
            owner = _owner_of(rec)
            item = Leftover("lab", "%s (%d/%d namespaces up)" % (rec.get("switch"), len(up), len(names)), owner,
                            None, "", path=path, namespaces=up)
            if not up:
                item.live, item.reason = False, "stale: none of its namespaces exists"
                item.verb, item.act = "remove", self._unlink(path)
            elif not owner:
                item.live, item.reason = True, "up on purpose (built without an owner): netns_lab state=down takes it"
            else:
                item.live, item.reason, _mine = self._judge(owner)
                inside = (self.netns_key.startswith("netns-") and self.netns_key[6:] in names) or bool(
                    set(self.namespaces) & set(names))
                if item.live is False and inside:
                    item.reason += "; kept: this task runs inside it (take it down from outside the lab)"
                elif item.live is False and self.netns is not None and self.iproute is not None:
                    topo = rec.get("topology")

                    def act(topo=topo, path=path):
                        stopped = Topology(self.netns, self.iproute).remove(topo, grace=self.grace)
                        Topology.remove_server_files(topo, self.state_dir)
                        self._unlink(path)()
                        return "namespaces deleted%s" % (", processes stopped: %s" % stopped if stopped else "")
                    item.verb, item.act = "remove", act
            out.append(item)
        return out

    # ------------------------------------------------------------------ half-written files
    def tempfiles(self):
        out = []
        for dirpath, dirs, names in os.walk(self.state_dir) if os.path.isdir(self.state_dir) else []:
            dirs[:] = [d for d in dirs if d != ORPHANED]
            for name in sorted(names):
                if not _TEMP.match(name):
                    continue
                path = os.path.join(dirpath, name)
                try:
                    age = self.now - os.stat(path).st_mtime
                except OSError:
                    continue
                rel = os.path.relpath(path, self.state_dir)
                if age < self.min_age:
                    out.append(Leftover("tempfile", rel, None, None, "being written, %.0f s old" % age, path=path))
                else:
                    out.append(Leftover("tempfile", rel, None, False, "half written by a process that ended, %.0f s "
                                        "old" % age, verb="remove", act=self._unlink(path), path=path))
        return out

    # ------------------------------------------------------------------ all of it
    def run(self, remove=False, check_mode=False):
        """Every leftover, and with ``remove`` each one that goes, in an order that loses nothing: daemons end first
        (a daemon ended writes its result), then results are looked at. Returns ``(items, changed, errors)``."""
        items, errors = [], []
        changed = False
        lock = self._lock() if remove and not check_mode else None
        try:
            daemons = self.daemons()
            run_owners = {}
            for item in daemons:
                if item.extra.get("run") and item.owner:
                    run_owners[str(item.extra["run"])[:16]] = item.owner
            changed = self._apply(daemons, remove, check_mode, errors) or changed
            items.extend(daemons)
            for scan in (lambda: self.results(run_owners), self.shapers, self._namespaces, self.labs,
                         self.tempfiles):
                if scan == self._namespaces:  # (judged, and acted on, inside each namespace, before a lab may go)
                    found, ns_changed = self._namespaces(remove, check_mode, errors)
                    changed = ns_changed or changed
                else:
                    found = scan()
                    changed = self._apply(found, remove, check_mode, errors) or changed
                items.extend(found)
        finally:
            if lock is not None:
                os.close(lock)
        return items, changed, errors

    def _apply(self, found, remove, check_mode, errors):
        changed = False
        for item in found:
            if item.verb is None:
                item.action = "kept"
                continue
            if not remove:
                item.action = "would %s" % item.verb
                continue
            changed = True
            if check_mode:
                item.action = "would %s" % item.verb
                continue
            try:
                note = item.act()
            except Exception as exc:  # noqa: BLE001  one failure is reported, the rest still goes
                item.action = "failed"
                item.reason = "%s; %s failed: %s" % (item.reason, item.verb, exc)
                errors.append("%s %s: %s failed: %s" % (item.kind, item.name, item.verb, exc))
                continue
            item.action = {"end": "ended", "remove": "removed", "move": "moved", "delete": "deleted"}[item.verb]
            if note == "already gone":
                item.action = "gone"
                item.reason += "; another task took it first"
            elif note:
                item.reason += "; %s" % note
        return changed

    def _lock(self):
        """One cleaner at a time per state directory (the netns lab's hosts share it): the second waits, then sees
        what the first left."""
        if not os.path.isdir(self.state_dir):
            return None  # nothing there to take turns on (and no directory made for it)
        try:
            fd = os.open(os.path.join(self.state_dir, ".leftovers.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return None
        fcntl.flock(fd, fcntl.LOCK_EX)
        return fd


def table(items):
    """The leftovers as lines of text (the lab_check playbook and the experiment role print them)."""
    if not items:
        return ["no leftovers"]
    rows = [("kind", "name", "owner", "live", "action", "why")]
    for item in items:
        live = {True: "yes", False: "no", None: "-"}[item["live"]]
        rows.append((item["kind"], item["name"], item["owner"] or "-", live, item["action"], item["reason"]))
    widths = [min(44, max(len(str(r[i])) for r in rows)) for i in range(5)]
    return ["  ".join(str(value).ljust(width) for value, width in zip(row[:5], widths)) + "  " + row[5]
            for row in rows]
