# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Two counter snapshots to what moved, and the verdict the seed's lab read off its counters: every error counter
still zero while the step ran slower than its fair share."""

from __future__ import annotations

import re

from ansible_collections.aifabric.lab.plugins.plugin_utils._model.fair_share import HEADERS_PER_PACKET

__all__ = ["diff", "verdict", "is_error_counter", "is_congestion_counter", "nic_sentences"]

_ERROR = re.compile(r"(err|error|discard|drop|symbol|downed|overrun|out_of_buffer|out_of_sequence|seq_err|retry|"
                    r"retrans|timeout|nak|constraint|vl15|collision|carrier|fifo|missed|over_errors|frame)", re.I)
_CONGESTION = re.compile(r"(xmit_wait|cnp|ecn|overlimits|requeues|backlog|pause|marked)", re.I)
# what an RDMA transport counts when it sends again (mlx5's roce_adp_retrans and local_ack_timeout_err, rxe's
# completer_retry_err, a sequence error's go-back-N): named apart in the verdict, since they explain a slow flow
_RETRANSMISSION = re.compile(r"(roce_adp_retrans|roce_slow_restart|local_ack_timeout_err|packet_seq_err|"
                             r"completer_retry_err|rnr_nak_retry_err|retransmit)", re.I)


def is_error_counter(name):
    return bool(_ERROR.search(name)) and not _CONGESTION.search(name)


def is_congestion_counter(name):
    return bool(_CONGESTION.search(name))


def _walk(tree, path=()):
    for key, value in (tree or {}).items():
        if isinstance(value, dict):
            yield from _walk(value, path + (str(key),))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            yield path + (str(key),), value


# (ecn: the netns lab's switch ports' markers, their cumulative counters; their queue and histogram are under
# ecn_queue, not a counter, and not diffed here)
_BOOKS = ("rdma", "netdev", "qdisc", "ethtool", "ecn")


def diff(before, after):
    """Deltas of every counter present in both snapshots, plus the error and congestion counters that moved."""
    old = dict(_walk({k: before.get(k) for k in _BOOKS}))
    deltas, errors, congestion = {}, {}, {}
    for path, value in _walk({k: after.get(k) for k in _BOOKS}):
        if path not in old:
            continue
        delta = value - old[path]
        name = "/".join(path)
        deltas[name] = delta
        if delta and is_error_counter(path[-1]):
            errors[name] = delta
        elif delta and is_congestion_counter(path[-1]):
            congestion[name] = delta
    seconds = (after.get("taken_at") or 0) - (before.get("taken_at") or 0)
    return {"seconds": round(seconds, 6), "deltas": deltas, "errors": errors, "congestion": congestion}


_LISTED = 8  # congestion counters named one by one; more are summed by counter name (a fabric has dozens of queues)


def _congestion_text(congestion):
    if len(congestion) <= _LISTED:
        return ", ".join("%s +%d" % kv for kv in sorted(congestion.items()))
    by_name = {}
    for path, value in congestion.items():
        entry = by_name.setdefault(path.rsplit("/", 1)[-1], [0, 0])
        entry[0] += value
        entry[1] += 1
    return ", ".join("%s +%d over %d counters" % (name, total, count)
                     for name, (total, count) in sorted(by_name.items())) + " (each one listed in the report's JSON)"


def verdict(delta, slower_than_fair_share=None):
    """One sentence: the error counters, the congestion counters, and (when given) how far the step ran slow."""
    if delta["errors"]:
        text = "error counters moved: %s" % ", ".join("%s +%d" % kv for kv in sorted(delta["errors"].items()))
    else:
        text = "all error counters zero"
    if delta["congestion"]:
        text += "; congestion counters moved: %s" % _congestion_text(delta["congestion"])
    resent = {k: v for k, v in list(delta["errors"].items()) + list(delta["congestion"].items())
              if _RETRANSMISSION.search(k.rsplit("/", 1)[-1])}
    if resent:
        text += "; the transport retransmitted (%s): losses or timeouts on the path" % ", ".join(
            "%s +%d" % kv for kv in sorted(resent.items()))
    if slower_than_fair_share is not None:
        share = round(slower_than_fair_share * 100)
        text += (", step %d%% slower than fair share" % share if share > 0 else
                 ", step %d%% faster than fair share" % -share if share < 0 else ", step as fast as fair share")
    return text


_PRIO_PAUSE = re.compile(r"^ethtool/(?P<dev>[^/]+)/(?P<dir>rx|tx)_prio(?P<prio>[0-7])_pause$")
_GLOBAL_PAUSE = re.compile(r"^ethtool/(?P<dev>[^/]+)/(?P<dir>rx|tx)_global_pause$")
_HW = re.compile(r"^rdma/(?P<dev>[^/]+)/(?P<port>[^/]+)/hw_counters/(?P<name>np_cnp_sent|rp_cnp_handled|"
                 r"np_ecn_marked_roce_packets)$")


def _times(n):
    return "once" if n == 1 else "{:,} times".format(n)


def _ms(microseconds):
    ms = microseconds / 1000.0
    return "{:,.0f} ms".format(ms) if ms >= 10 else "%.1f ms" % ms if ms >= 1 else "%.3f ms" % ms


def nic_sentences(host, deltas):
    """What a NIC's QoS counters say happened, one sentence each: PFC pauses per priority and their duration (mlx5's
    ethtool statistics ``rx_prio3_pause``, ``rx_prio3_pause_duration`` in microseconds; rx: the peer paused this
    port, tx: this port paused its peer), link-level pauses, and DCQCN's books (RDMA hw_counters: ECN-marked RoCE
    packets that arrived, CNPs sent for them, CNPs handled). ``deltas``: ``diff``'s."""
    out = []
    for name, delta in sorted(deltas.items()):
        match = _PRIO_PAUSE.match(name)
        if match and delta > 0:
            duration = deltas.get(name + "_duration")
            spent = ", %s in all" % _ms(duration) if duration else ""
            who = "%s's port %s" % (host, match.group("dev"))
            if match.group("dir") == "rx":
                out.append("%s was paused %s on priority %s%s" % (who, _times(delta), match.group("prio"), spent))
            else:
                out.append("%s paused its peer %s on priority %s%s" % (who, _times(delta), match.group("prio"),
                                                                       spent))
            continue
        match = _GLOBAL_PAUSE.match(name)
        if match and delta > 0:
            duration = deltas.get(name + "_duration")
            spent = ", %s in all" % _ms(duration) if duration else ""
            out.append("%s's port %s %s %s by link-level (global) pause%s" % (
                host, match.group("dev"), "was paused" if match.group("dir") == "rx" else "paused its peer",
                _times(delta), spent))
    ports = {}
    for name, delta in deltas.items():
        match = _HW.match(name)
        if match and delta > 0:
            ports.setdefault((match.group("dev"), match.group("port")), {})[match.group("name")] = delta
    for (dev, port), got in sorted(ports.items()):
        where = "%s's %s port %s" % (host, dev, port)
        if got.get("np_ecn_marked_roce_packets") or got.get("np_cnp_sent"):
            out.append("%s received {:,} ECN-marked RoCE packets and sent {:,} CNPs".format(
                got.get("np_ecn_marked_roce_packets", 0), got.get("np_cnp_sent", 0)) % where)
        if got.get("rp_cnp_handled"):
            out.append("%s handled {:,} CNPs (DCQCN slowed its queue pairs down)".format(got["rp_cnp_handled"])
                       % where)
    return out


# Bytes each counter adds per packet to the application's payload (_model.fair_share.HEADERS_PER_PACKET). A GSO
# super-packet counts its headers once in the netdev's books and once per segment in the qdisc's, and each book's
# packet count matches: so expected bytes = payload + packets x headers holds for both.
TOLERANCE = 0.005


def byte_checks(app_bytes, deltas, interface, engine="tcp", tolerance=TOLERANCE, retrans_bytes=0, relayed=None):
    """The application's bytes against the interface's tx books and its qdisc's, headers added per packet, and the
    payload the kernel sent again (``retrans_bytes``: its retransmissions are on the wire and in both books; their
    packets are in the packet counts already). ``relayed``: ``{sender: bytes}`` that the host forwarded out of the
    interface for other NICs of its machine (the fabric lab's in-host relay): on the wire and in both books, their
    packets in the counts too."""
    header = HEADERS_PER_PACKET.get(engine, HEADERS_PER_PACKET["tcp"])
    relayed = {k: v for k, v in (relayed or {}).items() if v}
    relayed_bytes = sum(relayed.values())
    checks = []
    sources = (("netdev %s tx" % interface, "netdev/%s/tx_bytes" % interface, "netdev/%s/tx_packets" % interface),
               ("qdisc %s" % interface, "qdisc/%s/qdisc/bytes" % interface, "qdisc/%s/qdisc/packets" % interface))
    for label, bytes_key, packets_key in sources:
        if bytes_key not in deltas or packets_key not in deltas or not (app_bytes or relayed_bytes):
            continue
        counted, packets = deltas[bytes_key], deltas[packets_key]
        if not counted:
            continue
        expected = (app_bytes or 0) + packets * header + (retrans_bytes or 0) + relayed_bytes
        difference = counted / float(expected) - 1
        check = {"counter": label, "bytes": counted, "packets": packets, "expected_bytes": expected,
                 "headers_per_packet": header, "retrans_bytes": retrans_bytes or 0,
                 "difference": round(difference, 6), "agrees": abs(difference) <= tolerance}
        if relayed:  # (only a relaying NIC's: every other check keeps its fields)
            check.update(relayed_bytes=relayed_bytes, relayed_for=dict(sorted(relayed.items())))
        checks.append(check)
    return checks


def _relayed_text(relayed_for):
    """``+ 1000 bytes relayed for m1r1`` (several senders: each named with its bytes)."""
    if len(relayed_for) == 1:
        ((sender, count),) = relayed_for.items()
        return "+ %d bytes relayed for %s" % (count, sender)
    return "+ %d bytes relayed for %s" % (sum(relayed_for.values()), ", ".join(
        "%s (%d)" % kv for kv in sorted(relayed_for.items())))


def _relay_checks(delta, snap, book):
    """A NIC's byte checks on a fabric with the in-host relay: its interface carried its own streams that left through
    it and the streams it forwarded for its machine's other NICs (``book``: ``_analysis.fabric.relay_books``'), not
    its own streams that left by a relay link (those are counted on the relay port: the path proof's)."""
    by_relay = {k: v for k, v in book["by_relay"].items() if v}
    checks = byte_checks(book["payload"], delta["deltas"], snap.get("interface") or "eth0",
                         snap.get("engine") or "tcp", retrans_bytes=book["retrans"], relayed=book["relayed_for"])
    for check in checks:
        check["payload_bytes"] = book["payload"]
        if by_relay:
            check["by_relay_bytes"] = sum(by_relay.values())
            check["by_relay"] = dict(sorted(by_relay.items()))
        notes = []
        if check.get("relayed_for"):
            notes.append(_relayed_text(check["relayed_for"]))
        if by_relay:
            notes.append("%d bytes of its own left by %s, not through %s" % (
                check["by_relay_bytes"], ", ".join(sorted(by_relay)), snap.get("interface") or "eth0"))
        check["relay"] = "; ".join(notes)
    return checks


def step_counters(step, snapshots, relays=None):
    """The counters section of one step's report: per host what moved, the byte checks, and the verdict.

    ``snapshots``: ``{host: {"before": snapshot, "after": snapshot, "interface": name}}``. ``relays``: on a fabric
    with the in-host relay, ``_analysis.fabric.relay_books``' answer: a NIC's books are then what its interface
    carried by the plan (its own streams through it, plus those it relayed for its machine's other NICs)."""
    hosts, errors, congestion, disagreements, nic = {}, {}, {}, [], []
    by_host = {w["host"]: w for w in step.get("workers", [])}
    for host, snap in sorted(snapshots.items()):
        if not snap.get("before") or not snap.get("after"):
            hosts[host] = {"missing": "only one of the two snapshots arrived"}
            continue
        delta = diff(snap["before"], snap["after"])
        worker = by_host.get(host, {})
        book = (relays or {}).get(host)
        if book is not None:
            checks = _relay_checks(delta, snap, book)
        else:
            checks = byte_checks(worker.get("bytes"), delta["deltas"], snap.get("interface") or "eth0",
                                 snap.get("engine") or "tcp", retrans_bytes=worker.get("retrans_bytes") or 0) \
                if worker.get("bytes") else []
        hosts[host] = {"errors": delta["errors"], "congestion": delta["congestion"], "checks": checks,
                       "seconds": delta["seconds"]}
        if book is not None and not checks and any(book["by_relay"].values()):
            # every byte of its own left by a relay link: nothing of it on the interface its counters read
            hosts[host]["relay"] = "all its %d bytes left by %s (proved on the relay port by the path proof), none " \
                "through %s" % (sum(book["by_relay"].values()), ", ".join(sorted(
                    k for k, v in book["by_relay"].items() if v)), snap.get("interface") or "eth0")
        nic.extend(nic_sentences(host, delta["deltas"]))
        errors.update({"%s:%s" % (host, k): v for k, v in delta["errors"].items()})
        congestion.update({"%s:%s" % (host, k): v for k, v in delta["congestion"].items()})
        for check in checks:
            if not check["agrees"]:
                disagreements.append(
                    "%s: the application moved %d bytes%s but %s counted %d (%+.2f%% from the %d expected with %d "
                    "bytes of headers per packet%s%s)" % (
                        host, worker.get("bytes") or 0,
                        " (%d through %s)" % (check["payload_bytes"], snap.get("interface") or "eth0")
                        if check.get("by_relay_bytes") else "",
                        check["counter"], check["bytes"], check["difference"] * 100, check["expected_bytes"],
                        check["headers_per_packet"],
                        " and %d bytes retransmitted" % check["retrans_bytes"] if check["retrans_bytes"] else "",
                        (" " if check["relay"].startswith("+") else "; ") + check["relay"] if check.get("relay")
                        else ""))
    slower = None
    if step.get("status") == "ok" and step.get("fair_step_s"):
        slower = step["step_s"] / step["fair_step_s"] - 1
    text = verdict({"errors": errors, "congestion": congestion}, slower)
    if disagreements:
        text += "; the books disagree by more than %.1f%% (see below)" % (TOLERANCE * 100)
    out = {"hosts": hosts, "verdict": text, "disagreements": disagreements}
    if nic:  # only where a NIC's QoS counters moved: older runs re-render as before
        out["nic"] = nic
    return out
