# -*- coding: utf-8 -*-
"""perftest output (captured from perftest 4.5 over soft-RoCE in the VM lab), JSON dialects, GID choice, argv."""
from __future__ import annotations

import os
import socket
import time

import pytest
from ansible_collections.aifabric.lab.plugins.module_utils._flow import perftest
from ansible_collections.aifabric.lab.plugins.module_utils._flow.perftest_cli import (
    PerftestError,
    build_argv,
    find_gid_index,
    parse_json,
    parse_text,
    supports_bind,
)

FIX = os.path.join(os.path.dirname(__file__), "fixtures")  # perftest's outputs, captured
SYSFS = os.path.join(os.path.dirname(__file__), "..", "fixtures", "sysfs")  # captured hosts' sysfs, shared
MIB = 2**20 * 8 / 1e9


def fixture(name):
    with open(os.path.join(FIX, "perftest", name)) as handle:
        return handle.read()


@pytest.mark.parametrize(
    "name, unit, gbps, iterations, test",
    [
        ("4.5_write_gbits_n.client.txt", "Gb/sec", 0.25, 200, "RDMA_Write BW Test"),
        ("4.5_write_gbits_n.server.txt", "Gb/sec", 0.25, 200, "RDMA_Write BW Test"),
        ("4.5_write_mbs_n.client.txt", "MB/sec", 32.68 * MIB, 200, "RDMA_Write BW Test"),
        ("4.5_send_gbits_D.client.txt", "Gb/sec", 0.13, 755, "Send BW Test"),
        ("4.5_read_gbits_rdmacm.client.txt", "Gb/sec", 0.16, 100, "RDMA_Read BW Test"),
    ],
)
def test_real_text_output(name, unit, gbps, iterations, test):
    result = parse_text(fixture(name))
    assert result["unit"] == unit
    assert result["bw_average_gbps"] == pytest.approx(gbps)
    assert result["iterations"] == iterations and result["bytes"] == 65536
    info = result["info"]
    assert info["test"] == test and info["device"] == "rxe0" and info["link_type"] == "Ethernet"
    assert info["mtu"] == 1024 and info["number_of_qps"] == 1


def test_mb_per_sec_of_perftest_45_is_mebibytes():
    # The message rate times the message size is the byte rate: 0.000523 Mpps x 65536 B = 34.3 MB/s = 32.7 MiB/s,
    # which is what perftest 4.5 prints under "MB/sec".
    result = parse_text(fixture("4.5_write_mbs_n.client.txt"))
    byte_rate = result["msg_rate_mpps"] * 1e6 * result["bytes"]
    assert result["bw_average_gbps"] == pytest.approx(byte_rate * 8 / 1e9, rel=0.01)


def test_gid_index_and_rdma_cm_are_read():
    assert parse_text(fixture("4.5_write_gbits_n.client.txt"))["info"]["gid_index"] == 1
    assert parse_text(fixture("4.5_read_gbits_rdmacm.client.txt"))["info"]["rdma_cm_qps"] == "ON"


def test_later_release_layout_with_noise_between_header_and_row():
    text = """---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF          Device         : mlx5_0
 Number of qps   : 2            Transport type : IB
 Mtu             : 4096[B]
 Link type       : IB
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]
Conflicting CPU frequency values detected: 3000.000000 != 2100.000000. CPU Frequency is not max.
 65536      5000             23000.50            22950.25              0.367204
---------------------------------------------------------------------------------------
"""
    result = parse_text(text)
    assert result["unit"] == "MiB/sec"
    assert result["bw_average_gbps"] == pytest.approx(22950.25 * MIB)
    assert result["info"]["device"] == "mlx5_0" and result["info"]["number_of_qps"] == 2
    assert result["info"]["mtu"] == 4096
    assert any("Conflicting CPU frequency" in note for note in result["notes"])


def test_all_sizes_mode_keeps_every_row():
    text = (" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
            " 2          1000             0.01               0.01   \t\t     0.570447\n"
            " 4          1000             0.03               0.03   \t\t     0.861000\n")
    result = parse_text(text)
    assert [r["bytes"] for r in result["rows"]] == [2, 4]
    assert result["bytes"] == 4  # the summary is the last row


@pytest.mark.parametrize(
    "text, message",
    [
        ("Couldn't connect to 198.18.100.1:18515\nUnable to open file descriptor for socket connection\n",
         "Couldn't connect to 198.18.100.1:18515"),
        ("", "printed no result"),
        (" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n", "printed no result"),
    ],
)
def test_no_result_says_what_perftest_said(text, message):
    with pytest.raises(PerftestError, match=message):
        parse_text(text)


def test_json_dialect_of_perftest_45():
    result = parse_json(fixture("4.5_write_json.client.json"), report_gbits=True)
    assert result["bw_average_gbps"] == pytest.approx(0.26)
    assert result["iterations"] == 100 and result["bytes"] == 65536
    assert result["info"]["device"] == "rxe0" and result["info"]["gid_index"] == 1


def test_valid_json_of_later_releases():
    text = ('{"test_info": {"test": "RDMA_Write_BW_Test", "Device": "mlx5_0", "GID_index": 3},'
            ' "results": {"MsgSize": 65536, "n_iterations": 5000, "BW_peak": 23000.5, "BW_average": 22950.25,'
            ' "MsgRate": 0.367204}}')
    result = parse_json(text, report_gbits=False)
    assert result["bw_average_gbps"] == pytest.approx(22950.25 * MIB)
    assert result["info"]["gid_index"] == 3


@pytest.mark.parametrize("text", ["{ test_info: {", '{"test_info": {}}', "not json at all"])
def test_unreadable_json(text):
    with pytest.raises(PerftestError):
        parse_json(text, report_gbits=True)


def test_gid_index_from_the_lab_address_on_rxe():
    assert find_gid_index("rxe0", 1, "198.18.100.1", root=os.path.join(SYSFS, "rxe")) == 1


@pytest.mark.parametrize("address, index", [("198.18.0.11", 3), ("2001:db8::b", 5)])
def test_gid_index_prefers_roce_v2_on_connectx6(address, index):
    assert find_gid_index("mlx5_0", 1, address, root=os.path.join(SYSFS, "cx6")) == index


def test_gid_index_errors_list_the_table():
    with pytest.raises(PerftestError, match=r"no GID of rxe0 port 1 carries 198.18.100.9; its GIDs: 0=fe80::"):
        find_gid_index("rxe0", 1, "198.18.100.9", root=os.path.join(SYSFS, "rxe"))
    with pytest.raises(PerftestError, match="no RDMA device mlx5_9"):
        find_gid_index("mlx5_9", 1, "198.18.0.11", root=os.path.join(SYSFS, "cx6"))


def test_argv_client_and_server():
    server = build_argv("ib_write_bw", "rxe0", gid_index=1, iterations=200, tcp_port=18600)
    assert server == ["ib_write_bw", "-d", "rxe0", "-i", "1", "-s", "65536", "-q", "1", "-p", "18600", "-F", "-x", "1",
                      "--report_gbits", "-n", "200"]
    client = build_argv("ib_send_bw", "mlx5_0", duration=10, qps=4, server="198.18.0.1", rdma_cm=True,
                        rate_limit_gbps=2)
    assert client[-1] == "198.18.0.1" and "-R" in client and ["-D", "10"] == client[client.index("-D"):][:2]
    assert "--rate_limit=2" in client and "--rate_limit_type=SW" in client
    assert "-u" not in client  # perftest's own timeout unless asked


def test_argv_qp_timeout_is_perftests_u():
    argv = build_argv("ib_write_bw", "rxe0", iterations=100, qp_timeout=18, server="198.18.100.1")
    assert argv[argv.index("-u") + 1] == "18" and argv[-1] == "198.18.100.1"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"tool": "ib_write_lat"}, "tool"),
        ({"device": "rxe0; reboot"}, "device"),
        ({"iterations": None, "duration": None}, "exactly one"),
        ({"iterations": 4}, "iterations"),
        ({"qps": 0}, "qps"),
        ({"tcp_port": 70000}, "tcp_port"),
        ({"server": "sink"}, "does not appear to be an IPv4 or IPv6 address"),
        ({"rate_limit_gbps": 0}, "rate_limit"),
        ({"qp_timeout": 0}, "qp_timeout: 0 must be a whole number from 1 to 31"),
        ({"qp_timeout": 32}, "qp_timeout"),
        ({"qp_timeout": True}, "qp_timeout"),
    ],
)
def test_argv_refuses_bad_values(kwargs, message):
    args = {"tool": "ib_write_bw", "device": "rxe0", "iterations": 100}
    args.update(kwargs)
    with pytest.raises((PerftestError, ValueError), match=message):
        build_argv(**args)


# -- where a server listens --------------------------------------------------------------------------------------------
# The help excerpts are perftest's own usage() lines (src/perftest_parameters.c): 4.5-0.20 (Debian 12) offers
# "--source_ip", a name its raw Ethernet option shadows (getopt_long takes the first), so the server cannot be told
# an address; 23.07 renamed it "--bind_source_ip", which binds the server's TCP port (and RDMA CM listener).
@pytest.mark.parametrize("name, can", [("4.5_help_excerpt.txt", False), ("26.04_help_excerpt.txt", True)])
def test_which_perftest_can_bind_its_server(name, can):
    assert supports_bind(fixture(name)) is can


def test_a_server_that_can_bind_is_given_the_lab_address():
    argv = build_argv("ib_write_bw", "rxe0", gid_index=1, iterations=200, tcp_port=18600, bind_address="198.18.0.1")
    assert argv[argv.index("--bind_source_ip"):][:2] == ["--bind_source_ip", "198.18.0.1"]
    with pytest.raises(ValueError):
        build_argv("ib_write_bw", "rxe0", iterations=200, bind_address="sink")


def _fake_tool(tmp_path, monkeypatch, help_name):
    """An ib_write_bw on PATH that prints a real help excerpt (the engine asks the tool itself)."""
    tool = tmp_path / "bin" / "ib_write_bw"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\nexec /bin/cat '%s'\n" % os.path.join(FIX, "perftest", help_name))
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tool.parent))
    monkeypatch.setattr(perftest, "_BIND_SUPPORT", {})


@pytest.mark.parametrize("name, can", [("4.5_help_excerpt.txt", False), ("26.04_help_excerpt.txt", True)])
def test_the_engine_asks_the_tool_whether_it_can_bind(tmp_path, monkeypatch, name, can):
    _fake_tool(tmp_path, monkeypatch, name)
    assert perftest.bind_support("ib_write_bw") is can
    assert perftest.bind_support("rm") is False  # not a perftest tool: never run


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("bound", [True, False])
def test_a_taken_port_is_caught_before_the_step_and_named(bound):
    """Three servers on ports p..p+2; p+1 is taken (a listener on the address): perftest binding the address, or
    every interface, would fail there."""
    port = _free_port()
    while True:  # p+1 free for the holder, p and p+2 free for the check
        try:
            holder = socket.socket()
            holder.bind(("127.0.0.1", port + 1))
            break
        except OSError:
            holder.close()
            port = _free_port()
    holder.listen(1)
    try:
        with pytest.raises(OSError, match=r"TCP port %d on %s \(where ib_write_bw server 2 of 3 will listen\) is "
                                          r"taken: .*; free it or choose another port"
                                          % (port + 1, "127.0.0.1" if bound else "0.0.0.0")):
            perftest.check_ports("127.0.0.1", [port, port + 1, port + 2], bound, "ib_write_bw")
    finally:
        holder.close()
    perftest.check_ports("127.0.0.1", [port, port + 1, port + 2], bound, "ib_write_bw")  # free again: fine


def test_ports_beyond_65535_are_named():
    with pytest.raises(OSError, match="TCP port 65536 .* is not a port"):
        perftest.check_ports("127.0.0.1", [65535, 65536], True)


def test_listen_fails_on_a_taken_port_in_the_modules_process(tmp_path, monkeypatch):
    """What flow_step's start (and the flow module) runs before the step: the tool (a fake one that prints 26.04's
    help), the device (against the soft-RoCE sysfs fixture), then the servers' TCP ports."""
    from ansible_collections.aifabric.lab.plugins.module_utils import _rdma_sysfs
    from ansible_collections.aifabric.lab.plugins.module_utils._flow.engine import FlowSpec, PerftestOptions

    _fake_tool(tmp_path, monkeypatch, "26.04_help_excerpt.txt")
    real = _rdma_sysfs.require
    monkeypatch.setattr(perftest._rdma, "require", lambda wanted, parameter: real(
        wanted, root=os.path.join(SYSFS, "rxe"), parameter=parameter))
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    spec = FlowSpec(role="server", address="127.0.0.1", port=port, token="t", expected_clients=1, volume=10**6,
                    perftest=PerftestOptions(device="rxe0"))
    try:
        with pytest.raises(OSError, match="TCP port %d on 127.0.0.1 .* is taken" % port):
            perftest.PerftestEngine().listen(spec)
    finally:
        holder.close()
    assert perftest.PerftestEngine().listen(spec) is None  # free: the server may start
    spec.perftest = PerftestOptions(device="rxe0", rdma_cm=True)
    holder = socket.socket()
    holder.bind(("127.0.0.1", port))
    holder.listen(1)
    try:  # with rdma_cm the port is the RDMA CM's, not a kernel TCP port: not bind-tested
        assert perftest.PerftestEngine().listen(spec) is None
    finally:
        holder.close()


@pytest.mark.parametrize("offset", [0.0, 0.5])
def test_a_perftest_flow_with_a_start_offset_counts_its_completion_from_the_common_instant(monkeypatch, offset):
    """A step's late joiner over perftest (FlowSpec.start_offset), fired with the common instant: it starts at the
    instant plus its offset (its own instant, start_at; woken 2.5 ms after it here), late_s is against its own
    instant, and its completion (to perftest's exit) counts from the common instant. perftest itself is stood in for
    by its captured output, the port counter by one that saw nothing (the flow is then timed from start to exit)."""
    from ansible_collections.aifabric.lab.plugins.module_utils._flow.engine import FlowSpec, PerftestOptions

    woke_late = 0.0025
    waited = []

    def late_wake(instant):  # the instant has passed: no wait
        waited.append(instant)
        return instant + woke_late

    class Unmoved:
        first = last = None

        def __init__(self, *_args):
            pass

        def packets(self):
            return 0

    monkeypatch.setattr(perftest, "sleep_until", late_wake)
    monkeypatch.setattr(perftest, "set_normal", lambda: None)
    monkeypatch.setattr(perftest, "WireWatch", Unmoved)
    flow = perftest.PerftestClient(FlowSpec(role="client", address="127.0.0.1", port=18515, token="t",
                                            volume=65536 * 200, flow_id="w2", timeout=10.0, start_offset=offset))
    flow.opts = PerftestOptions(device="rxe0")
    monkeypatch.setattr(flow, "_run", lambda timeout, watch: (fixture("4.5_write_gbits_n.client.txt"), 0, False))
    common = time.time() - 1.0
    result = flow.fire(common)
    assert result["status"] == "ok", result["error"]
    assert waited == [common + offset]
    assert result.get("start_offset_s") == (offset or None)
    assert result["start_at"] == common + offset
    assert result["late_s"] == woke_late and result["start"] == common + offset + woke_late
    assert result["setup_s"] == 0.0 and result["teardown_s"] == 0.0  # no wire times: first byte at the start
    assert result["completion_s"] - result["duration_s"] == pytest.approx(offset + woke_late, abs=2e-6)
