# -*- coding: utf-8 -*-
"""struct tcp_info decoded from packed fixtures (offsets from include/uapi/linux/tcp.h, written here field by field,
not from the decoder's table), the short struct of an older kernel, the host's ECN setting and congestion controls
in fixture /proc trees (the layout of the lab machine's Linux 6.18), and a flow's evidence over its streams."""
from __future__ import annotations

import socket
import struct

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._flow import tcp_info
from ansible_collections.aifabric.lab.plugins.module_utils._flow.engine import FlowError


def packed_6_18():
    """A 280-byte tcp_info as Linux 6.18 fills it: an ECN connection in CWR after 3 retransmissions, 1 RTO."""
    raw = bytearray(280)
    # ESTABLISHED, CA_CWR, backoff 1, options ECN + ECN seen + timestamps, SACK, window scaling
    raw[0:8] = bytes([1, 2, 0, 0, 1, 0x08 | 0x10 | 0x07, 0x77, 0])
    struct.pack_into("<IIII", raw, 8, 204000, 40000, 8948, 8948)     # rto, ato, snd_mss, rcv_mss
    struct.pack_into("<I", raw, 32, 2)                                # lost
    struct.pack_into("<IIII", raw, 68, 1250, 300, 30, 14)             # rtt, rttvar, snd_ssthresh, snd_cwnd
    struct.pack_into("<I", raw, 100, 3)                               # total_retrans
    struct.pack_into("<Q", raw, 120, 4_000_000)                       # bytes_acked
    struct.pack_into("<I", raw, 148, 95)                              # min_rtt
    struct.pack_into("<II", raw, 192, 460, 37)                        # delivered, delivered_ce
    struct.pack_into("<QQ", raw, 200, 4_026_844, 26_844)              # bytes_sent, bytes_retrans
    struct.pack_into("<HHI", raw, 240, 1, 1, 210)                     # total_rto, recoveries, rto time
    struct.pack_into("<I", raw, 248, 0)                               # received_ce (the sender receives none)
    struct.pack_into("<HH", raw, 276, 0, 1)                           # accecn_fail_mode, accecn_opt_seen
    return bytes(raw)


def test_the_6_18_struct_decodes_every_field():
    info = tcp_info.decode(packed_6_18())
    assert info["state"] == 1 and info["ca_state_name"] == "cwr" and info["backoff"] == 1
    assert info["ecn_negotiated"] and info["ecn_seen"] and info["accecn_opt_seen"] == 1
    assert (info["rto_us"], info["snd_mss"], info["rtt_us"], info["rttvar_us"], info["snd_cwnd"]) == (
        204000, 8948, 1250, 300, 14)
    assert (info["total_retrans"], info["lost"], info["total_rto"], info["total_rto_time_ms"]) == (3, 2, 1, 210)
    assert (info["delivered"], info["delivered_ce"], info["received_ce"]) == (460, 37, 0)
    assert info["bytes_acked"] == 4_000_000 and info["bytes_retrans"] == 26_844 and info["min_rtt_us"] == 95


def test_an_older_kernel_s_short_struct_leaves_the_newer_fields_none():
    info = tcp_info.decode(packed_6_18()[:232])  # Linux 5.4-6.1: up to tcpi_rcv_wnd's predecessor
    assert info["delivered_ce"] == 37 and info["total_retrans"] == 3
    assert info["total_rto"] is None and info["received_ce"] is None and info["accecn_opt_seen"] is None
    old = tcp_info.decode(packed_6_18()[:104])  # Linux 2.6's 104 bytes
    assert old["total_retrans"] == 3 and old["bytes_acked"] is None and old["delivered_ce"] is None


def test_the_evidence_of_a_flow_sums_its_streams_and_keeps_unknowns_unknown():
    a = tcp_info.decode(packed_6_18())
    b = dict(a, total_retrans=1, delivered_ce=3, rtt_us=2000, ecn_negotiated=False, min_rtt_us=80)
    out = tcp_info.summary([a, b], "cubic")
    assert out["congestion"] == "cubic" and out["ecn_negotiated"] is False and out["ecn_seen"] is True
    assert (out["total_retrans"], out["delivered_ce"], out["rtt_us"], out["min_rtt_us"]) == (4, 40, 2000, 80)
    assert out["rto_timeouts"] == 2 and out["snd_cwnd"] == 28
    short = tcp_info.summary([tcp_info.decode(packed_6_18()[:232])])
    assert short["rto_timeouts"] is None and short["received_ce"] is None and short["delivered_ce"] == 37


def _proc(tmp_path, ecn="2\n", cc="reno bbr cubic\n"):
    # /proc/sys/net/ipv4 and /proc/thread-self/net/netstat as Linux 6.18 has them (the lab machine's, numbers ours)
    (tmp_path / "proc/sys/net/ipv4").mkdir(parents=True)
    (tmp_path / "proc/sys/net/ipv4/tcp_ecn").write_text(ecn)
    (tmp_path / "proc/sys/net/ipv4/tcp_available_congestion_control").write_text(cc)
    (tmp_path / "proc/thread-self/net").mkdir(parents=True)
    (tmp_path / "proc/thread-self/net/netstat").write_text(
        "TcpExt: SyncookiesSent SyncookiesRecv\nTcpExt: 0 0\n"
        "IpExt: InNoRoutes InTruncatedPkts InMcastPkts OutMcastPkts InBcastPkts OutBcastPkts InOctets OutOctets "
        "InMcastOctets OutMcastOctets InBcastOctets OutBcastOctets InCsumErrors InNoECTPkts InECT1Pkts InECT0Pkts "
        "InCEPkts ReasmOverlaps\n"
        "IpExt: 0 0 0 0 0 0 35353976509 34092499204 0 0 0 0 0 904547 0 5120 311 0\n"
        "MPTcpExt: MPCapableSYNRX\nMPTcpExt: 0\n")
    return str(tmp_path)


def test_the_ecn_sysctl_is_set_and_its_old_value_kept(tmp_path):
    root = _proc(tmp_path)
    assert tcp_info.set_ecn("on", root) == {"before": 2, "after": 1}
    assert (tmp_path / "proc/sys/net/ipv4/tcp_ecn").read_text() == "1\n"
    assert tcp_info.set_ecn("on", root) == {"before": 1, "after": 1}
    with pytest.raises(ValueError, match="tcp.ecn: 'maybe'; use one of off, on, accept, accecn"):
        tcp_info.set_ecn("maybe", root)


def test_the_namespace_s_ecn_counters_are_read(tmp_path):
    assert tcp_info.ip_ecn_counters(_proc(tmp_path)) == {"no_ect": 904547, "ect1": 0, "ect0": 5120, "ce": 311}


def test_an_unknown_congestion_control_names_what_the_kernel_has(tmp_path):
    root = _proc(tmp_path)
    assert tcp_info.available_congestion(root) == ["reno", "bbr", "cubic"]
    with socket.socket() as sock:
        with pytest.raises(ValueError, match=r"tcp.congestion: 'nosuchcc' .*it has: reno, bbr, cubic"):
            tcp_info.set_congestion(sock, "nosuchcc", root)
        tcp_info.set_congestion(sock, "reno", root)
        assert tcp_info.congestion_of(sock) == "reno"


@pytest.mark.parametrize("value,engine,message", [
    ({"ecn": "on"}, "perftest", "tcp: tcp.ecn is the tcp engine's"),
    ({"congestion": "cubic; rm"}, "tcp", "tcp.congestion: 'cubic; rm' is not a congestion control's name"),
])
def test_tcp_options_are_checked(value, engine, message):
    with pytest.raises(FlowError, match=message):
        tcp_info.options(value, engine)


def test_tcp_options_default_to_the_host_s_settings():
    assert tcp_info.options({}, "perftest") == {"ecn": None, "congestion": None}
    assert tcp_info.options({"ecn": None, "congestion": None}, "perftest") == {"ecn": None, "congestion": None}
    assert tcp_info.options({"ecn": "on", "congestion": "bbr"}, "tcp") == {"ecn": "on", "congestion": "bbr"}
