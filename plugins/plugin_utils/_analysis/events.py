# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a step's hosts saw beside its flows (the run record's ``events/<step>.json``, ``_run.records.step_events``),
as the report's step shows it: the peers refused, whose results survived a coordinator that died, and the anomalies
(a host that could not keep its own copy of its result, a result the coordinator could not store durably)."""

from __future__ import annotations

__all__ = ["report_events"]


def report_events(events):
    """The step report's keys for ``events`` (empty when there is nothing to say): ``refused`` (``{peer, reason,
    count, by}``, in the order they came) and ``refused_total`` (listed and counted past the lists), ``results``
    (``{survived, lost, sentence}``) and ``anomalies``: what went wrong on a host beside the flows, one sentence each
    (a result a host could not keep, a result the coordinator could not store)."""
    out = {}
    if not events:
        return out
    refused = [dict(r) for r in events.get("refused") or []]
    unlisted = sum((events.get("refused_unlisted") or {}).values())
    if refused or unlisted:
        out["refused"] = refused
        out["refused_total"] = sum(r.get("count") or 1 for r in refused) + unlisted
    anomalies = []
    results = events.get("results")
    if results:
        survived, lost = list(results.get("survived") or []), list(results.get("lost") or [])
        sentence = ("the coordinator died: the results of %s survived (stored before they were acknowledged)"
                    % ", ".join(survived) if survived else "the coordinator died: no host's result survived")
        if lost:
            sentence += "; lost: %s (never stored; a host not acknowledged keeps its own copy)" % ", ".join(lost)
        out["results"] = {"survived": survived, "lost": lost, "sentence": sentence}
    for host, error in sorted((events.get("result_file_errors") or {}).items()):
        anomalies.append("%s could not keep its own copy of its result (%s); it reached the coordinator over the "
                         "network" % (host, error))
    for party, error in sorted((events.get("store_errors") or {}).items()):
        anomalies.append("the coordinator could not store %s durably (%s)" % (
            "the step's header" if party == "step" else party + "'s result", error))
    if anomalies:
        out["anomalies"] = anomalies
    return out
