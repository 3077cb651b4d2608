# -*- coding: utf-8 -*-
from __future__ import annotations

import socket

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._tc import (
    ETH_P_IP,
    ETH_P_IPV6,
    ShapeError,
    _network_from_keys,
    _u32_key,
    decode_u32_keys,
    default_burst,
    desired_shaper,
    ifb_name_for,
    same_shaper,
)


def p(**kw):
    base = {"qdisc": "htb", "rate": "8gbit", "burst": None, "latency": 0.05, "fair_share_sources": []}
    base.update(kw)
    return base


def test_htb_default_burst_is_a_millisecond():
    shaper = desired_shaper(p(), mtu=9000)
    assert shaper == {"qdisc": "htb", "rate": 8 * 10**9, "burst": 10**6, "fair_share_sources": [],
                      "fair_share_destinations": []}
    assert default_burst(1000, 1500) == 2 * 1514  # below 1 Mb/s: two frames
    assert default_burst(24 * 10**6, 1500) == 10 * 1514  # Mb/s rates: ten frames


def test_400gbit_htb_and_tbf_limit():
    assert desired_shaper(p(rate="400gbit"))["rate"] == 400 * 10**9
    assert desired_shaper(p(qdisc="tbf", rate="34gbit"))["limit"] > 0
    with pytest.raises(ShapeError, match="above what tbf can encode.*use qdisc: htb"):
        desired_shaper(p(qdisc="tbf", rate="35gbit"))


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"rate": "8gbps"}, "rate: '8gbps' is ambiguous"),
        ({"rate": "500bit"}, "outside the supported range 1kbit to 400gbit"),
        ({"rate": "401gbit"}, "outside"),
        ({"burst": "10"}, "burst"),
        ({"qdisc": "tbf", "fair_share_sources": ["198.18.0.11"]}, "needs qdisc: htb"),
        ({"fair_share_sources": ["worker1"]}, "'worker1' is not an address"),
        ({"fair_share_sources": ["198.18.0.11", "198.18.0.11/32"]}, "lists a source twice"),
    ],
)
def test_bad_input(kw, message):
    with pytest.raises(ShapeError, match=message):
        desired_shaper(p(**kw))


def test_sources_normalised():
    assert desired_shaper(p(fair_share_sources=["198.18.0.11", "10.1.2.3/16"]))["fair_share_sources"] == [
        "198.18.0.11/32", "10.1.0.0/16"]


def test_u32_keys_round_trip_through_both_decodings():
    proto, keys = _u32_key("198.18.0.11/32")
    assert proto == ETH_P_IP and keys == ["0xc612000b/0xffffffff+12"]
    # What the kernel holds, decoded by pyroute2 0.9.7 (one field off, value little-endian) ...
    buggy = {"keys": [{"key_mask": 0, "key_val": 0xFFFFFFFF, "key_off": 0x0B0012C6, "key_offmask": 12}]}
    # ... and as a correct decoder would give it.
    fixed = {"keys": [{"key_mask": 0xFFFFFFFF, "key_val": 0xC612000B, "key_off": 12, "key_offmask": 0}]}
    for sel in (buggy, fixed):
        assert decode_u32_keys(sel) == [(0xC612000B, 0xFFFFFFFF, 12)]
        assert _network_from_keys(ETH_P_IP, decode_u32_keys(sel)) == ("fair_share_sources", "198.18.0.11/32")


def test_ipv6_source_keys():
    proto, keys = _u32_key("2001:db8::1/128")
    assert proto == ETH_P_IPV6 and len(keys) == 4
    parsed = [(int(k.split("/")[0], 16), int(k.split("/")[1].split("+")[0], 16), int(k.split("+")[1])) for k in keys]
    assert _network_from_keys(ETH_P_IPV6, parsed) == ("fair_share_sources", "2001:db8::1/128")
    assert socket.ntohs(socket.htons(ETH_P_IPV6)) == ETH_P_IPV6


def test_destination_keys_match_the_destination_and_read_back_as_destinations():
    """A sender's port shared by destination: IPv4 destination at offset 16 of the IP header, IPv6 at 24..36."""
    proto, keys = _u32_key("198.18.0.12", "fair_share_destinations")
    assert proto == ETH_P_IP and keys == ["0xc612000c/0xffffffff+16"]
    read = _network_from_keys(ETH_P_IP, [(0xC612000C, 0xFFFFFFFF, 16)])
    assert read == ("fair_share_destinations", "198.18.0.12/32")
    proto, keys = _u32_key("2001:db8::2/128", "fair_share_destinations")
    assert [int(k.split("+")[1]) for k in keys] == [24, 28, 32, 36]
    parsed = [(int(k.split("/")[0], 16), int(k.split("/")[1].split("+")[0], 16), int(k.split("+")[1])) for k in keys]
    assert _network_from_keys(ETH_P_IPV6, parsed) == ("fair_share_destinations", "2001:db8::2/128")
    shaper = desired_shaper(p(fair_share_destinations=["198.18.0.12", "198.18.0.13"]))
    assert shaper["fair_share_destinations"] == ["198.18.0.12/32", "198.18.0.13/32"]
    with pytest.raises(ShapeError, match="give one"):
        desired_shaper(p(fair_share_sources=["198.18.0.11"], fair_share_destinations=["198.18.0.12"]))


def test_same_shaper_tolerates_tick_rounding_of_the_burst():
    want = desired_shaper(p(fair_share_sources=["198.18.0.11"]))
    have = dict(want, burst=want["burst"] + 50)
    assert same_shaper(have, want)
    assert not same_shaper(dict(want, burst=want["burst"] * 2), want)
    assert not same_shaper(dict(want, rate=2 * 10**9), want)
    assert not same_shaper(dict(want, fair_share_sources=[]), want)
    assert not same_shaper({"qdisc": "htb", "foreign": True}, want)
    assert not same_shaper(None, want)


def test_ifb_names_fit():
    assert ifb_name_for("eth0") == "ifb-eth0"
    assert len(ifb_name_for("a-very-long-name0")) == 15


def test_u32_port_bucket_keys_decode_whatever_the_value():
    # bucket 8 of 64: the value read little-endian is 8, which the old offset heuristic took for an offset
    buggy = {"keys": [{"key_mask": 0, "key_val": 0x3F000000, "key_off": 8, "key_offmask": 21}]}
    fixed = {"keys": [{"key_mask": 0x3F000000, "key_val": 0x08000000, "key_off": 21, "key_offmask": 0}]}
    for sel in (buggy, fixed):
        assert decode_u32_keys(sel) == [(0x08000000, 0x3F000000, 21)]
