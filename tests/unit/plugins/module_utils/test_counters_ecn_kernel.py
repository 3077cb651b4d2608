# -*- coding: utf-8 -*-
"""port_counters_info reading a switch port's ECN marker on the real kernel (needs root; the integration tier's
unit_root target runs it): the marked ports found by ``ecn_discover``, the marker's counters and queue, the port
qdisc's drops beside the marker's, and the receiving namespace's InCEPkts against the marks (ecn_port.py's veth pair
between two namespaces of its own, removed also on failure)."""
from __future__ import annotations

import pytest
from ecn_port import CE, DEVICE, ECT0, burst, in_ns, marker_params, receiver_socket, sender_socket, veth_pair


def _snapshot(module_args):
    from ansible_collections.aifabric.lab.plugins.module_utils._port_counters_info_module import run_module
    from module_like import Done, ModuleLike

    params = dict(rdma_devices=[], netdevs=[], qdiscs=[], ethtool=[], label="after", interface=None, engine=None,
                  ecn=[], ecn_discover=False, step="s1")
    params.update(module_args)
    module = ModuleLike(params)
    with pytest.raises(Done):
        run_module(module)
    return module.result


@pytest.mark.needs_root
def test_the_switchs_marked_ports_are_found_read_and_agree_with_the_qdisc_and_the_receiver():
    from ansible_collections.aifabric.lab.plugins.module_utils._counters import read_ipext
    from ansible_collections.aifabric.lab.plugins.module_utils._ecn import mark
    from pyroute2 import IPRoute

    with veth_pair(prefix="aflt-wt-ecnc") as (a, b):
        # before the marker: nothing to discover, and a port named without one is refused, naming it
        assert in_ns(a, lambda: _snapshot({"ecn_discover": True}))["counters"]["ecn"] == {}
        refused = in_ns(a, lambda: _snapshot({"ecn": [DEVICE]}))
        assert refused["failed"] and "ecn0 carries no ECN marker" in refused["msg"]
        with IPRoute(netns=a) as ipr:
            mark(ipr, marker_params())
        before = in_ns(a, lambda: _snapshot({"ecn_discover": True, "label": "before"}))
        ce_before = in_ns(b, read_ipext)["InCEPkts"]
        receiver = in_ns(b, receiver_socket)
        sender = in_ns(a, sender_socket)
        try:
            got = burst(sender, receiver, ECT0, 400)
        finally:
            sender.close()
            receiver.close()
        after = in_ns(a, lambda: _snapshot({"ecn_discover": True}))
        ce_after = in_ns(b, read_ipext)["InCEPkts"]
    assert after["step"] == "s1" and after["label"] == "after"
    assert list(after["counters"]["ecn"]) == [DEVICE]  # lo (no htb) is not a marked port
    start, end = before["counters"]["ecn"][DEVICE], after["counters"]["ecn"][DEVICE]
    marked = end["marked_segs"] - start["marked_segs"]
    dropped = end["dropped"] + end["early_dropped"] - start["dropped"] - start["early_dropped"]
    assert marked > 0 and dropped >= 0
    # every mark reached the receiver: its socket saw that many CE datagrams, its namespace counted them
    assert got.count(CE) == marked
    assert ce_after - ce_before == marked
    # a drop by the marker is the htb's drop (TC_ACT_SHOT in its classifier); the queue and config are apart

    def qdisc(snap):
        return snap["counters"]["qdisc"][DEVICE]["qdisc"]["drops"]

    assert qdisc(after) - qdisc(before) == dropped
    queue = after["counters"]["ecn_queue"][DEVICE]
    assert queue["limit_bytes"] == 100_000 and queue["max_backlog_bytes"] > 30_000
    assert sum(queue["hist_marked"]) == end["marked"] and len(queue["hist_ect"]) == 16
