# -*- coding: utf-8 -*-
"""tc_shape against a namespace's traffic control as the kernel answers it (tc_kernel.TcKernel: pyroute2's own
messages, tc_modify_qdisc's rules): foreign roots read and left alone, replace instead of delete-then-add, a refusal
part-way leaving no half shaper, every netlink error named by its parameter, the marks and the owner record. The
real kernel's answers are checked by the needs_root test at the end (and by the tc_shape integration target)."""
from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils import _host_state
from ansible_collections.aifabric.lab.plugins.module_utils._owner import owner_record
from ansible_collections.aifabric.lab.plugins.module_utils._tc import (
    HTB_HANDLE,
    R2Q_MARK,
    ShapeError,
    Shaper,
    desired_shaper,
    same_shaper,
    shape,
)
from tc_kernel import FQ_CODEL, TcKernel


def params(**kw):
    base = {"device": "eth0", "direction": "egress", "qdisc": "htb", "rate": "2gbit", "burst": None,
            "latency": 0.05, "fair_share_sources": [], "fair_share_destinations": [], "ack_priority": False,
            "fair_share_ports": None, "ifb_device": None, "state": "present", "state_dir": None, "owner": None}
    base.update(kw)
    return base


def kernel_with(name="eth0", **kw):
    kernel = TcKernel()
    index = kernel.add_link(name, **kw)
    return kernel, index


def roots(kernel, index):
    return [(q["kind"], q["handle"]) for q in kernel.qdiscs[index] if q["parent"] == 0xFFFFFFFF]


def writes(kernel, since=0):
    return [r[0] for r in kernel.requests[since:]]


# ------------------------------------------------------------------ foreign roots, as real dumps show them
@pytest.mark.parametrize("setup,expected", [
    (dict(kind="veth"), {"qdisc": "noqueue", "foreign": True, "handle": "0:", "default": True}),
    (dict(kind="ether", queues=4), {"qdisc": "mq", "foreign": True, "handle": "0:", "default": True}),
    (dict(kind="ether", default=("fq_codel", FQ_CODEL)),
     {"qdisc": "fq_codel", "foreign": True, "handle": "0:", "default": True}),
    (dict(kind="ether", default=("pfifo_fast", None)),
     {"qdisc": "pfifo_fast", "foreign": True, "handle": "0:", "default": True}),
])
def test_the_kernels_default_roots_read_as_foreign_defaults(setup, expected):
    kernel, _index = kernel_with(**setup)
    assert Shaper(kernel, "eth0").read() == expected


def test_someones_qdiscs_read_as_foreign_with_their_handle():
    kernel, index = kernel_with(kind="ether")
    kernel.add_qdisc(index, "fq_codel", 0x80010000, FQ_CODEL)
    assert Shaper(kernel, "eth0").read() == {"qdisc": "fq_codel", "foreign": True, "handle": "8001:",
                                             "default": False}
    init = {"version": 3, "rate2quantum": 10, "defcls": 0, "debug": 0, "direct_pkts": 0}
    kernel.add_qdisc(index, "htb", 0x20000, {"attrs": [["TCA_HTB_INIT", init]]})
    assert Shaper(kernel, "eth0").read()["handle"] == "2:"


@pytest.mark.parametrize("setup", [dict(kind="veth"), dict(kind="ether", queues=8),
                                   dict(kind="ether", default=("fq_codel", FQ_CODEL))])
def test_absent_leaves_a_foreign_root_alone_and_says_so_every_time(setup):
    kernel, index = kernel_with(**setup)
    before = roots(kernel, index)
    for _run in range(2):
        result = shape(kernel, params(state="absent"))
        assert not result["changed"] and result["diff"]["before"] == result["diff"]["after"]
    assert roots(kernel, index) == before
    assert [r for r in kernel.requests if not r[0].startswith("link")] == []


def test_absent_leaves_someones_fq_codel_alone():
    kernel, index = kernel_with(kind="ether")
    kernel.add_qdisc(index, "fq_codel", 0x80010000, FQ_CODEL)
    result = shape(kernel, params(state="absent"))
    assert not result["changed"] and result["diff"]["before"] == {"root": "fq_codel 8001:"}
    assert roots(kernel, index) == [("fq_codel", 0x80010000)] and kernel.requests == []


# ------------------------------------------------------------------ replace, not delete then add
def test_a_new_shaper_replaces_the_default_root_in_one_request_and_is_marked():
    kernel, index = kernel_with(kind="ether", queues=4)
    warnings = []
    result = shape(kernel, params(fair_share_sources=["198.18.0.11", "198.18.0.12"], ack_priority=True),
                   warn=warnings.append)
    assert result["changed"] and result["applied_by"] == "rebuilt" and warnings == []
    assert writes(kernel) == ["replace", "add-class", "add-class", "add-filter", "add-class", "add-class",
                              "add-filter", "add-class", "add-filter"]
    assert "del" not in writes(kernel)
    shaper = Shaper(kernel, "eth0")
    assert shaper.marked() and roots(kernel, index) == [("htb", HTB_HANDLE)]
    assert same_shaper(shaper.read(), desired_shaper(params(fair_share_sources=["198.18.0.11", "198.18.0.12"],
                                                            ack_priority=True), 9000))
    # the r2q mark is in the qdisc the kernel holds
    init = shaper.root_qdisc().get_attr("TCA_OPTIONS").get_attr("TCA_HTB_INIT")
    assert init["rate2quantum"] == R2Q_MARK == 44971
    again = len(kernel.requests)
    assert not shape(kernel, params(fair_share_sources=["198.18.0.11", "198.18.0.12"],
                                    ack_priority=True))["changed"]
    assert kernel.requests[again:] == []


def test_a_new_rate_on_the_same_layout_changes_the_classes_in_place():
    kernel, index = kernel_with()
    args = params(fair_share_sources=["198.18.0.11", "198.18.0.12", "198.18.0.13"], ack_priority=True)
    shape(kernel, args)
    since = len(kernel.requests)
    result = shape(kernel, dict(args, rate="8gbit"))
    assert result["applied_by"] == "replaced"
    # 1:1, 1:2 (ACKs), 1:10 (other) and a class per source: changed, nothing deleted, no qdisc or filter request
    assert writes(kernel, since) == ["replace-class"] * 6
    read = Shaper(kernel, "eth0").read()
    assert read["rate"] == 8 * 10**9 and read["fair_share_sources"] == ["198.18.0.11/32", "198.18.0.12/32",
                                                                        "198.18.0.13/32"]
    share = [c for c in kernel.get_classes(index) if c["handle"] == 0x10011][0]
    # 8gbit / 4 classes under 1:1 = 250 MB/s each: computed by hand
    assert share.get_attr("TCA_OPTIONS").get_attr("TCA_HTB_PARMS")["rate"] == 250000000


def test_tbf_changes_in_place_with_one_replace():
    kernel, index = kernel_with()
    shape(kernel, params(qdisc="tbf", rate="1gbit"))
    since = len(kernel.requests)
    shape(kernel, params(qdisc="tbf", rate="3gbit"))
    assert writes(kernel, since) == ["replace"] and Shaper(kernel, "eth0").read()["rate"] == 3 * 10**9


def test_a_new_layout_over_our_htb_deletes_the_root_first_then_builds():
    kernel, index = kernel_with()
    shape(kernel, params())
    since = len(kernel.requests)
    result = shape(kernel, params(qdisc="tbf", rate="1gbit"))
    assert result["applied_by"] == "rebuilt" and writes(kernel, since) == ["del", "replace"]
    assert Shaper(kernel, "eth0").read()["qdisc"] == "tbf"


# ------------------------------------------------------------------ a refusal part-way leaves no half shaper
def test_a_refused_filter_on_a_fresh_device_leaves_its_default_root_and_names_the_source():
    kernel, index = kernel_with(kind="ether", queues=2)
    kernel.fail(lambda c, k, i, h, kw: c == "add-filter" and kw.get("prio") == 12, errno.EINVAL)
    with pytest.raises(ShapeError) as err:
        shape(kernel, params(fair_share_sources=["198.18.0.11", "198.18.0.12"]))
    assert str(err.value) == ("fair_share_sources[1]: the u32 filter of 198.18.0.12/32 on eth0: the kernel refused "
                              "the value (EINVAL); nothing of the new shaper is left: eth0 has its default qdisc, as "
                              "before")
    assert roots(kernel, index) == [("mq", 0)] and kernel.classes[index] == [] and kernel.filters[index] == []


def test_a_refused_rebuild_over_our_shaper_puts_the_old_one_back():
    kernel, index = kernel_with()
    shape(kernel, params(rate="2gbit"))
    kernel.fail(lambda c, k, i, h, kw: c == "add-class" and h == 0x10011, errno.ENOMEM)
    with pytest.raises(ShapeError) as err:
        shape(kernel, params(rate="4gbit", fair_share_destinations=["198.18.0.1"]))
    assert str(err.value).startswith("fair_share_destinations[0]: htb class 1:11 for 198.18.0.1/32 at 2gbit on eth0: "
                                     "the kernel is out of memory (ENOMEM); the shaper that was there (htb 2gbit) "
                                     "was put back")
    read = Shaper(kernel, "eth0").read()
    assert read["rate"] == 2 * 10**9 and read["fair_share_destinations"] == []


def test_a_refused_class_change_puts_the_classes_already_changed_back():
    kernel, index = kernel_with()
    args = params(fair_share_sources=["198.18.0.11", "198.18.0.12"])
    shape(kernel, args)
    kernel.fail(lambda c, k, i, h, kw: c == "replace-class" and h == 0x10012 and kw["ceil"] == 10**9, errno.EINVAL)
    with pytest.raises(ShapeError) as err:
        shape(kernel, dict(args, rate="8gbit"))
    assert str(err.value).startswith("fair_share_sources[1]: htb class 1:12 for 198.18.0.12/32 at ")
    assert str(err.value).endswith("the classes already changed were put back: the shaper is as it was (2gbit)")
    ceilings = {c["handle"]: c.get_attr("TCA_OPTIONS").get_attr("TCA_HTB_PARMS")["ceil"]
                for c in kernel.get_classes(index)}
    assert ceilings == {0x10001: 250000000, 0x10010: 250000000, 0x10011: 250000000, 0x10012: 250000000}


def test_a_refused_qdisc_says_why_without_a_traceback():
    kernel, index = kernel_with()
    kernel.fail(lambda c, k, i, h, kw: c == "replace", errno.EPERM)
    with pytest.raises(ShapeError, match=r"^qdisc: htb qdisc 1: at the root on eth0: not permitted: tc needs root "
                                         r"\(CAP_NET_ADMIN in this network namespace\) \(EPERM\)"):
        shape(kernel, params())
    with pytest.raises(ShapeError, match=r"^rate: tbf 1gbit \(burst 125KB\) on eth0: .*\(EPERM\); nothing of the "
                                         r"new shaper is left"):
        shape(kernel, params(qdisc="tbf", rate="1gbit"))


def test_someones_root_with_our_handle_is_deleted_first_and_said_gone_when_the_build_fails():
    kernel, index = kernel_with(kind="ether")
    kernel.add_qdisc(index, "prio", HTB_HANDLE, None)
    kernel.fail(lambda c, k, i, h, kw: c == "add-class", errno.EINVAL)
    warnings = []
    with pytest.raises(ShapeError) as err:
        shape(kernel, params(), warn=warnings.append)
    assert "replacing a prio 1: root qdisc on eth0 that this module did not make" in warnings[0]
    assert str(err.value).endswith("nothing of the new shaper is left; the prio 1: root it replaced is gone: eth0 has "
                                   "its default qdisc")
    assert roots(kernel, index) == [("fq_codel", 0)]


# ------------------------------------------------------------------ ingress through ifb
def test_ingress_marks_its_ifb_and_a_refused_redirect_takes_back_what_it_made():
    kernel, index = kernel_with("p-worker1")
    kernel.fail(lambda c, k, i, h, kw: c == "add-filter" and kw.get("action"), errno.EOPNOTSUPP)
    with pytest.raises(ShapeError) as err:
        shape(kernel, params(device="p-worker1", direction="ingress"))
    assert str(err.value) == ("direction: redirecting the ingress to ifb-p-worker1 on p-worker1: the device or the "
                              "kernel does not support it (EOPNOTSUPP); the ingress qdisc added was removed; the ifb "
                              "device ifb-p-worker1 created was removed")
    assert kernel.link_lookup("ifb-p-worker1") == [] and Shaper(kernel, "p-worker1").ingress_qdisc() is None
    kernel.failures = []
    result = shape(kernel, params(device="p-worker1", direction="ingress"))
    assert result["shaped_device"] == "ifb-p-worker1"
    (ifb,) = kernel.link_lookup("ifb-p-worker1")
    link = kernel.get_links(ifb)[0]
    assert link.get_attr("IFLA_IFALIAS") == "aifabric.lab: ingress of p-worker1" and link.get_attr("IFLA_MTU") == 9000
    assert Shaper(kernel, "p-worker1").ingress_redirect_target() == ifb
    removed = shape(kernel, params(device="p-worker1", direction="ingress", state="absent"))
    assert removed["changed"] and kernel.link_lookup("ifb-p-worker1") == []
    assert not shape(kernel, params(device="p-worker1", direction="ingress", state="absent"))["changed"]


def test_absent_on_ingress_leaves_a_clsact_alone_and_present_refuses_to_replace_it():
    kernel, index = kernel_with(kind="ether")
    kernel.add_qdisc(index, "clsact", 0xFFFF0000, None, parent=0xFFFFFFF1)
    assert not shape(kernel, params(direction="ingress", state="absent"))["changed"]
    with pytest.raises(ShapeError, match="direction: ingress: eth0 has a clsact qdisc at its ingress .* Remove it "
                                         "first, or shape egress; the ifb device ifb-eth0 created was removed"):
        shape(kernel, params(direction="ingress"))
    assert Shaper(kernel, "eth0").ingress_qdisc().get_attr("TCA_KIND") == "clsact"


# ------------------------------------------------------------------ the record and the owner
def _owner(ident, lease=600.0, pid=None):
    return owner_record(ident, lease, pid=pid)


def test_the_record_keeps_the_owner_and_is_removed_with_the_shaper(tmp_path):
    kernel, index = kernel_with()
    owner = _owner("exp-a")
    result = shape(kernel, params(state_dir=str(tmp_path), owner=owner))
    with open(result["record"]) as handle:
        record = json.load(handle)
    assert record["marker"] == "aifabric.lab" and record["kind"] == "shaper" and record["maker"] == "tc_shape"
    assert record["owner"] == owner and record["device"] == "eth0" and record["rate"] == "2gbit"
    assert result["record"] == os.path.join(str(tmp_path), "shapers", _host_state.netns_key(), "eth0.json")
    # a renewed lease is bookkeeping, not a change
    assert not shape(kernel, params(state_dir=str(tmp_path), owner=dict(owner, lease_until=owner[
        "lease_until"] + 60)))["changed"]
    with open(result["record"]) as handle:
        assert json.load(handle)["owner"]["lease_until"] == owner["lease_until"] + 60
    shape(kernel, params(state_dir=str(tmp_path), owner=owner, state="absent"))
    assert not os.path.exists(result["record"])


def test_a_shaper_made_before_its_record_gets_one_once_and_check_mode_says_so(tmp_path):
    kernel, _index = kernel_with()
    shape(kernel, params())
    assert shape(kernel, params(state_dir=str(tmp_path)), check_mode=True)["changed"]
    assert _host_state.records(str(tmp_path), "shapers") == []
    assert shape(kernel, params(state_dir=str(tmp_path)))["changed"]
    assert not shape(kernel, params(state_dir=str(tmp_path)))["changed"]


def test_another_live_owners_shaper_is_never_changed_nor_removed(tmp_path):
    kernel, index = kernel_with()
    a = _owner("exp-a")
    shape(kernel, params(state_dir=str(tmp_path), owner=a))
    b = _owner("exp-b")
    with pytest.raises(ShapeError, match=r"device: eth0 is shaped by experiment exp-a \(controller .* pid %d\), which "
                                         r"is live \(its controller \(pid %d\) runs on this machine" % (
                                             os.getpid(), os.getpid())):
        shape(kernel, params(state_dir=str(tmp_path), owner=b, rate="4gbit"))
    for caller in (b, None):  # nor by a task without an owner
        warnings = []
        result = shape(kernel, params(state_dir=str(tmp_path), owner=caller, state="absent"), warn=warnings.append)
        assert not result["changed"] and result["held_by"]["id"] == "exp-a"
        assert "leaving the shaper on eth0: it belongs to experiment exp-a" in warnings[0]
    assert Shaper(kernel, "eth0").read()["rate"] == 2 * 10**9
    assert _host_state.read_record(os.path.join(str(tmp_path), "shapers", _host_state.netns_key(),
                                                "eth0.json"))["owner"]["id"] == "exp-a"


def test_a_gone_owners_shaper_is_taken_over_or_removed(tmp_path):
    kernel, index = kernel_with()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        dead = _owner("exp-killed", pid=child.pid)
    finally:
        child.kill()
        child.wait()
    shape(kernel, params(state_dir=str(tmp_path), owner=dead))
    # the controller that made it has ended: another experiment may change it, and the record is its own then
    result = shape(kernel, params(state_dir=str(tmp_path), owner=_owner("exp-b"), rate="4gbit"))
    assert result["changed"] and Shaper(kernel, "eth0").read()["rate"] == 4 * 10**9
    assert _host_state.read_record(result["record"])["owner"]["id"] == "exp-b"
    # exp-b's lease runs out (its controller on another machine, unreachable): a task without owner removes it
    record = _host_state.read_record(result["record"])
    _host_state.write_record(result["record"], dict(record, owner=dict(
        record["owner"], lease_until=time.time() - 5, controller=dict(record["owner"]["controller"],
                                                                      host="elsewhere"))))
    assert shape(kernel, params(state_dir=str(tmp_path), state="absent"))["changed"]
    assert Shaper(kernel, "eth0").read()["qdisc"] == "noqueue" and not os.path.exists(result["record"])


def test_an_owner_that_cannot_be_recorded_fails_and_without_one_the_shaper_still_goes_on(tmp_path):
    kernel, _index = kernel_with()
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    with pytest.raises(ShapeError, match="state_dir: cannot record the owner of eth0's shaper in "):
        shape(kernel, params(state_dir=str(blocked), owner=_owner("exp-a")))
    kernel2, _index = kernel_with()
    assert shape(kernel2, params(state_dir=str(blocked)))["changed"]


# ------------------------------------------------------------------ the real kernel (the integration tier runs these)
@pytest.mark.needs_root
def test_the_real_kernel_replaces_in_place_and_leaves_a_foreign_root_alone():
    """On a veth in a namespace of its own: noqueue read as the default, htb built by replace, a new rate changed in
    place (the qdisc handle and its class counters survive), a tbf<->htb swap, a fifo root someone put there left
    alone by absent. The dev machine has htb, tbf, ingress and fifo (no fq_codel): pfifo stands for a foreign root."""
    from pyroute2 import IPRoute, netns

    name = "aflt-tcapply-%d" % os.getpid()
    netns.create(name)
    try:
        with IPRoute(netns=name) as ipr:
            ipr.link("add", ifname="tca0", kind="veth", peer={"ifname": "tca1"})
            index = ipr.link_lookup(ifname="tca0")[0]
            ipr.link("set", index=index, state="up")
            assert Shaper(ipr, "tca0").read()["default"] is True
            assert shape(ipr, params(device="tca0", fair_share_sources=["198.18.0.11"]))["changed"]
            assert Shaper(ipr, "tca0").marked()
            again = shape(ipr, params(device="tca0", fair_share_sources=["198.18.0.11"], rate="4gbit"))
            assert again["applied_by"] == "replaced" and Shaper(ipr, "tca0").read()["rate"] == 4 * 10**9
            assert shape(ipr, params(device="tca0", qdisc="tbf", rate="1gbit"))["applied_by"] == "rebuilt"
            assert shape(ipr, params(device="tca0", state="absent"))["changed"]
            ipr.tc("replace", "pfifo", index, 0x80010000, limit=1000)
            for _run in range(2):
                assert not shape(ipr, params(device="tca0", state="absent"))["changed"]
            assert Shaper(ipr, "tca0").read() == {"qdisc": "pfifo", "foreign": True, "handle": "8001:",
                                                  "default": False}
    finally:
        netns.remove(name)


def test_a_refused_replace_over_someones_root_leaves_it_there_and_says_so():
    kernel, index = kernel_with(kind="ether")
    kernel.add_qdisc(index, "fq_codel", 0x80010000, FQ_CODEL)
    kernel.fail(lambda c, k, i, h, kw: c == "replace", errno.ENOENT)
    with pytest.raises(ShapeError) as err:
        shape(kernel, params())
    assert str(err.value).endswith("(ENOENT); nothing of the new shaper is left; the fq_codel 8001: root is still "
                                   "there")
    assert roots(kernel, index) == [("fq_codel", 0x80010000)]


def test_a_devices_egress_and_ingress_shapers_each_keep_their_own_record_and_a_second_run_changes_nothing(tmp_path):
    """The netns lab shapes every switch port both ways (two tasks); with one record per device, each direction's
    task read the other's record as a change, every run."""
    kernel, _index = kernel_with("p-worker1")
    egress = params(device="p-worker1", state_dir=str(tmp_path), ack_priority=True,
                    fair_share_sources=["198.18.0.1", "198.18.0.12"])
    ingress = params(device="p-worker1", direction="ingress", state_dir=str(tmp_path), ack_priority=True,
                     fair_share_destinations=["198.18.0.1", "198.18.0.12"])
    assert shape(kernel, egress)["changed"] and shape(kernel, ingress)["changed"]
    assert not shape(kernel, egress)["changed"] and not shape(kernel, ingress)["changed"]
    assert not shape(kernel, egress, check_mode=True)["changed"]
    records = sorted(os.listdir(os.path.dirname(shape(kernel, egress)["record"])))
    assert records == ["ifb-p-worker1.json", "p-worker1.json"]
