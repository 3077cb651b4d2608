#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: flow
short_description: Run one elephant flow at a fixed wall-clock instant, timed on the host
version_added: 0.1.0
description:
  - Runs one side of a bulk flow between lab hosts. A C(server) receives the flows of one step and ends after its
    O(expected_clients) have finished, after a O(state=stopped) request of the same run, or at its O(timeout).
  - A C(client) connects and is admitted (armed) before O(start_at), then waits for that wall-clock instant on an
    absolute timer (no spinning; real-time for the wake-up when the host allows it) and starts sending. The result's
    RV(flow.late_s) says how late it started, and RV(flow.completion_s) counts from O(start_at), so lateness is inside
    the figure. A client that arrives after the instant starts at once and records it; with O(strict_start) it refuses
    instead when later than O(start_tolerance).
  - For the flows of a whole step use M(aifabric.lab.flow_step) - it arms every flow first and fires them all at an
    instant chosen once everybody is ready, so how long Ansible takes to reach the hosts does not matter. This module
    is for one flow, or for labs whose clocks are synchronized (PTP) and whose users choose the instant.
  - Every timestamp is taken on the host (the start, the server's first and last byte, and the moment the receiver
    confirmed the last byte). Interval samples read the bytes the receiver acknowledged (C(TCP_INFO)).
  - The C(tcp) engine is built in (C(sendfile) from zero pages, C(splice) into C(/dev/null) on the receiver).
  - The C(perftest) engine runs RDMA flows with C(ib_write_bw), C(ib_read_bw) or C(ib_send_bw). A server runs one
    perftest server per expected client, on ports O(port) to O(port) + O(expected_clients) - 1; give each client its
    own port. perftest prints no elapsed time, so a client's completion is timed on the host, from O(start_at) to
    the process's exit (this includes perftest's connection set-up). perftest's own average is returned beside it.
    Servers need the step's O(volume) or O(duration) too, so their counts match their clients'.
  - Start the servers of a step with O(background=true) before its clients, and stop and collect them with
    O(state=stopped) after, in an C(always) section so a failed step never leaves a server behind. The playbooks of
    this collection do this.
author:
  - aifabric.lab contributors (@aifabric)
extends_documentation_fragment:
  - aifabric.lab.attributes
  - aifabric.lab.attributes.action_group_flows
  - aifabric.lab.state_dir
attributes:
  check_mode:
    support: full
    details: In check mode no socket is opened and no traffic is sent.
  diff_mode:
    support: none
  idempotent:
    support: none
    details: Every run sends a new flow.
options:
  engine:
    description: The flow engine.
    type: str
    default: tcp
    choices: [tcp, perftest]
  tool:
    description: With O(engine=perftest), the perftest tool.
    type: str
    default: ib_write_bw
    choices: [ib_write_bw, ib_read_bw, ib_send_bw]
  device:
    description: With O(engine=perftest), the RDMA device (as in C(/sys/class/infiniband)), like C(mlx5_0) or C(rxe0).
    type: str
  ib_port:
    description: With O(engine=perftest), the device's port.
    type: int
    default: 1
  gid_index:
    description:
      - With O(engine=perftest), the GID index (perftest's C(-x)). By default it is found from the lab address, the
        server's O(address) or the client's O(source), preferring RoCE v2. Not needed with O(rdma_cm=true).
    type: int
  msg_size:
    description:
      - With O(engine=perftest), the message size in bytes. A O(volume) becomes ceil(volume / msg_size) iterations.
    type: int
    default: 65536
  qps:
    description: With O(engine=perftest), the number of queue pairs.
    type: int
    default: 1
  rdma_cm:
    description: With O(engine=perftest), connect the QPs through the RDMA connection manager (perftest's C(-R)).
    type: bool
    default: false
  qp_timeout:
    description:
      - With O(engine=perftest), the queue pairs' retransmission timeout, 4.096 us x 2^N (perftest's C(-u); its default
        14 is 67 ms). Raise it where an ACK can take longer than that without any loss, for example soft-RoCE in
        emulated guests behind a shaper at Mb/s rates (the VM lab uses 18, about 1.07 s); a timer that fires on a late
        ACK resends what arrived, counted as C(completer_retry_err) on the sender and C(duplicate_request) on the
        receiver.
    type: int
    version_added: 0.5.0
  rate_limit:
    description:
      - With O(engine=perftest) on a client, perftest's software rate limiter (C(--rate_limit --rate_units=g
        --rate_limit_type=SW)) at this rate (V(2gbit), V(500mbit)). The one throttle that works for any RDMA device,
        including a hardware PF where tc never sees the verbs traffic; the hardware limiter accepts only fixed IB
        rates (2.5, 5, 10 Gb/s ...) and is not used. The M(aifabric.lab.throttle) module chooses it when nothing else
        applies.
    type: str
  role:
    description: Which side of the flow this host runs.
    type: str
    required: true
    choices: [server, client]
  state:
    description:
      - With O(role=server), V(stopped) asks a running server of the same O(token) at O(address) and O(port) to end
        now, keeping what it received. With O(background=true) it also waits for the server's result (up to
        O(stop_wait) seconds), returns it, and ends the server's process by its PID if it overstays.
      - The task fails only when it cannot do that (the server there belongs to another run), so an C(always)
        section carries on with its other cleanup.
    type: str
    default: started
    choices: [started, stopped]
  background:
    description:
      - With O(role=server), start the server in the background and return at once. The listening socket is bound
        before the task returns, so a missing address or a taken port fails the task with the reason.
      - The server runs until its O(expected_clients) are done, a stop request, or its O(timeout), and writes its result
        (atomically) to O(state_dir); O(state=stopped) with O(background=true) collects it.
    type: bool
    default: false
  stop_wait:
    description: With O(state=stopped) and O(background=true), seconds to wait for the server's result.
    type: float
    default: 10.0
  address:
    description:
      - The server's lab address. A server binds to it (never to a wildcard address); a client connects to it.
    type: str
    required: true
  port:
    description: The server's TCP port.
    type: int
    default: 18600
  source:
    description: The client's local address to send from. Defaults to the kernel's choice.
    type: str
  token:
    description:
      - A per-run token. A server admits only clients (and stop requests) that present the same token, so flows of
        another run or a stray connection are refused and listed in RV(flow.rejected).
      - Never logged (C(no_log)); Ansible hides its value wherever it appears in the output, so use a random token
        (C(lookup('ansible.builtin.password', '/dev/null', chars=['hexdigits'], length=32))), not a word.
    type: str
    required: true
  flow_id:
    description:
      - A name for the flow in results. Playbooks pass C(inventory_hostname). Defaults to the hostname.
      - It names the result file in O(result_dir), so it may not contain C(/), C(..), NUL or other control
        characters, and has at most 128 characters.
    type: str
  volume:
    description:
      - Bytes to send, like C(1GB), C(9.83GB), C(512MiB) or a plain number. Powers of 1000 for KB, MB, GB, TB and of
        1024 for KiB, MiB, GiB, TiB.
      - Mutually exclusive with O(duration). A client needs one of them.
    type: raw
  duration:
    description: Seconds to send for, instead of a fixed O(volume).
    type: float
  start_at:
    description:
      - The step's start instant, wall clock, computed once by the play for every host. Epoch seconds or ISO 8601
        with a time zone. Required for clients. The hosts' clocks must agree (one machine in the netns lab; NTP/PTP
        on a real lab).
      - Refused when it is not a finite number (C(inf), C(nan)), when it looks like epoch milliseconds or
        microseconds, when it passed more than 1 s before the client arms, or when it lies further ahead than
        O(timeout) (the flow's servers would have ended); the message says which and what to give instead.
    type: raw
  start_tolerance:
    description: With O(strict_start), how late (seconds) a client may start after O(start_at).
    type: float
    default: 0.001
  strict_start:
    description:
      - Refuse to start (RV(flow.status=late)) when the flow would start more than O(start_tolerance) after
        O(start_at). Without it a late flow starts and RV(flow.late_s) records it.
    type: bool
    default: false
  streams:
    description:
      - With O(engine=tcp), parallel connections for this one flow; the volume is split between them and the flow
        completes with its last stream. The server counts each as a client (O(expected_clients)).
    type: int
    default: 1
  tcp:
    description:
      - With O(engine=tcp), how the kernel's TCP runs this flow or server (docs/congestion.md); as
        M(aifabric.lab.flow_step)'s O(aifabric.lab.flow_step#module:tcp).
    type: dict
    default: {}
    version_added: 0.5.0
    suboptions:
      ecn:
        description:
          - Set C(net.ipv4.tcp_ecn) of the host's network namespace first - V(on) (1), V(accept) (2, the kernel's
            default), V(off) (0), V(accecn) (3, Linux 6.18 on). Unset, the host's setting stays.
        type: str
        choices: ["off", "on", accept, accecn]
      congestion:
        description: The congestion control of the sockets (C(TCP_CONGESTION)), one the kernel has; unset, its default.
        type: str
  timeout:
    description:
      - Seconds the flow may take. A client counts from O(start_at) and ends with RV(flow.status=timeout) when it
        passes; a server ends at its start plus this.
    type: float
    default: 300.0
  interval:
    description: Seconds between interval samples.
    type: float
    default: 1.0
  expected_clients:
    description: How many client flows a server waits for before it ends.
    type: int
    default: 1
  max_bytes:
    description: The most one client flow may send to this server (a size like O(volume)). Unbounded by default.
    type: raw
  annotations:
    description:
      - Free-form facts about the experiment that the result carries for the barrier report, for example the step
        name, the path's links and rates, the throttle applied to this worker and the MTU.
      - See the experiment documentation (C(docs/experiments.md)) for the keys the report reads.
    type: dict
    default: {}
  result_dir:
    description:
      - A directory on the host where the result is written as JSON (atomically) as soon as the flow ends.
    type: path
notes:
  - The clients of one step start together only if every host reads the same clock; in the netns lab all hosts
    share one kernel clock.
seealso:
  - module: aifabric.lab.tc_shape
  - plugin: aifabric.lab.barrier_report
    plugin_type: callback
"""

EXAMPLES = r"""
- name: Start the sink's server for three workers, in the background
  aifabric.lab.flow:
    role: server
    address: 198.18.0.1
    token: "{{ run_token }}"
    expected_clients: 3
    timeout: 120
    background: true

- name: Send 1 GB from every worker at one instant
  aifabric.lab.flow:
    role: client
    address: 198.18.0.1
    token: "{{ run_token }}"
    flow_id: "{{ inventory_hostname }}"
    volume: 1GB
    start_at: "{{ step_start_at }}"
    annotations:
      step: barrier
      throttle: 2gbit

- name: Stop and collect the server of this run (always section)
  aifabric.lab.flow:
    role: server
    state: stopped
    background: true
    address: 198.18.0.1
    token: "{{ run_token }}"
  register: server_result
"""

RETURN = r"""
flow:
  description: The flow's result, also when it failed (then RV(flow.status) and RV(flow.error) say why).
  returned: always
  type: dict
  contains:
    status:
      description: V(ok), V(late) (refused to start, with O(strict_start)), V(timeout), V(error), V(aborted), or
        V(skipped) in check mode.
      type: str
      sample: ok
    error:
      description: What went wrong, or null.
      type: str
    bytes:
      description: Bytes the receiver confirmed (client), or received over all flows (server).
      type: int
      sample: 1000000000
    start_at:
      description: The requested start instant (epoch seconds).
      type: float
    start:
      description: When the client started sending (epoch seconds, host clock).
      type: float
    late_s:
      description: O(start_at) to the actual start (client); how late it was when refused.
      type: float
      sample: 0.000004
    last_byte_acked:
      description: When the client received the receiver's confirmation of the last byte.
      type: float
    completion_s:
      description: From O(start_at) to the confirmed last byte; the figure the barrier report uses.
      type: float
      sample: 8.06
    duration_s:
      description: From the actual start to the confirmed last byte.
      type: float
    gbps:
      description: Goodput, RV(flow.bytes) over RV(flow.duration_s), in Gb/s.
      type: float
      sample: 2.978
    samples:
      description: Interval samples, each with C(t) (s since start), C(bytes) acknowledged, C(gbps) in the interval,
        C(retransmits) and C(rtt_us).
      type: list
      elements: dict
    tcp:
      description:
        - With O(engine=tcp), the flow's congestion evidence from C(TCP_INFO) at its end, over its streams (a server's
          per admitted client, in RV(flow.flows)) - C(congestion) (the control it ran), C(ecn_negotiated),
          C(ecn_seen) (an ECT packet came), C(total_retrans), C(rto_timeouts) (C(tcpi_total_rto),
          Linux 6.7 on), C(backoff), C(lost), C(rtt_us), C(rttvar_us), C(min_rtt_us), C(snd_cwnd), C(delivered),
          C(delivered_ce) (the sender's packets acknowledged with ECE), C(received_ce) (the receiver's CE-marked
          segments, Linux 6.18 on), C(bytes_retrans), C(dsack_dups).
        - A count the host's kernel does not fill is null (docs/congestion.md has the lab kernel's table).
      type: dict
      version_added: 0.5.0
    tcp_ecn_sysctl:
      description: With O(tcp.ecn), C(net.ipv4.tcp_ecn) before and after (C(before), C(after)).
      type: dict
      version_added: 0.5.0
    perftest_gbps:
      description: With O(engine=perftest), perftest's own BW average in Gb/s (the table's unit converted).
      type: float
    argv:
      description: With O(engine=perftest), the client's perftest command line (an argument list; no shell).
      type: list
      elements: str
    pid:
      description: Background server just started. Its process ID on the host.
      type: int
    result_file:
      description: Background server just started. Where it will write its result.
      type: str
    killed:
      description: Background server collected. The signal that ended it when it overstayed O(stop_wait).
      type: str
    flows:
      description: Server only. One entry per admitted client with C(flow_id), C(peer), C(bytes), C(first_byte),
        C(last_byte), C(status).
      type: list
      elements: dict
    rejected:
      description:
        - Server only. Connections refused, one entry per address and reason - C(peer), C(reason) (wrong run token,
          not a flow client, handshake not complete in time, evicted, dropped when the server ran out of file
          descriptors), C(count), C(first_at), C(last_at). At most 32 entries; see RV(flow.rejected_total).
      type: list
      elements: dict
    rejected_total:
      description: Server only. How many connections were refused in all (those beyond the listed entries are in
        C(rejected_unlisted)).
      type: int
      version_added: 0.5.0
    accept_errors:
      description: Server only. How many times C(accept()) failed (out of file descriptors); the server rested and
        went on.
      type: int
      version_added: 0.5.0
    listen:
      description: A perftest server. Where it listened - C(address) (the lab address, or C(*) for every interface)
        and C(how) (C(--bind_source_ip), or why not - perftest before 23.07 cannot be told an address).
      type: dict
      version_added: 0.5.0
    not_signalled:
      description: Background server collected. Set when its PID still runs but the PID file (from an older version)
        cannot tell it is the server; it was not signalled.
      type: str
      version_added: 0.5.0
    annotations:
      description: The O(annotations) given.
      type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aifabric.lab.plugins.module_utils._flow.module import module_args, run_module


def main():
    run_module(AnsibleModule(**module_args()))


if __name__ == "__main__":
    main()
