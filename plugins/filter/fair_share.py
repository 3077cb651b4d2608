# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``fair_share``: the max-min fair-share rates (and completions) of flows over links, usable in any play."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.aifabric.lab.plugins.module_utils._units import UnitError, parse_rate
from ansible_collections.aifabric.lab.plugins.plugin_utils._model.fair_share import max_min_rates, predict_completions


def fair_share(flows, links, volumes=None):
    if not isinstance(flows, dict) or not isinstance(links, dict):
        raise AnsibleFilterError("fair_share: flows and links must be dicts ({flow: [link, ...]}, {link: rate})")
    try:
        caps = {name: parse_rate(rate, "links.%s" % name, minimum=1) for name, rate in links.items()}
        rates = max_min_rates({f: list(p) for f, p in flows.items()}, caps)
        out = {f: {"rate_bps": rates[f]} for f in flows}
        if volumes is not None:
            times = predict_completions({f: list(p) for f, p in flows.items()}, caps, dict(volumes))
            for f in flows:
                out[f]["completion_s"] = times[f]
        return out
    except (UnitError, KeyError) as exc:
        raise AnsibleFilterError("fair_share: %s" % exc) from None


class FilterModule:
    def filters(self):
        return {"fair_share": fair_share}
