#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: flow_step
short_description: Run one host's part of a synchronized step (servers, armed clients, the rendezvous)
version_added: 0.3.0
description:
  - A synchronized step in three moves. V(started), on every host of the step, starts the host's part in the
    background and returns at once. V(collected), on the coordinating host (O(rendezvous.host)), waits for the step
    and returns every host's results. V(stopped), in a failed step's cleanup, ends a host's part by its PID.
  - Arm, then fire. Each host's part runs its servers, then connects its client flows to their servers and has them
    admitted (I(armed) - connected, buffers ready), then tells the rendezvous. When every host of
    O(rendezvous.parties) has armed, the coordinator measures how long a message takes to reach them all, picks a
    start instant that far ahead (three times the slowest of three probe rounds, plus 1 ms) and sends it to every host
    in that host's own clock (clock offsets are measured on the way). Every flow waits for the instant on an
    absolute timer (no spinning) and starts. How long Ansible takes to reach the hosts does not matter.
  - Lateness is measured, never hidden. A flow's C(late_s) (in RV(step.hosts)) is its start minus the instant, and
    its completion counts from the instant. With O(strict_start) a flow later than O(start_tolerance) refuses to
    start instead. The barrier report judges lateness against a bound (see C(docs/synchronized-start.md)).
  - A host that does not arm within O(arm_timeout) (its task failed, it cannot reach a server, its server cannot
    listen) fails the step before any byte is sent; the record names the host and the reason, and every host's part
    ends.
  - With O(rendezvous.start_at), the flows start at that fixed instant on every host's own clock instead (labs with
    PTP-synchronized clocks); the rendezvous still checks that everybody armed and collects the results.
  - Several client flows per host run at once (O(clients)), each with O(clients[].streams) parallel connections
    (tcp) or C(perftest.qps) queue pairs; a server accepts many (O(servers[].expected_clients) counts connections).
  - Each host snapshots its counters (O(counters)) before arming and after its flows and servers are done.
  - A host's part may carry a job O(program) instead of, or beside, its flows - a training job's traffic (collectives
    chained by their data, many iterations) that the host runs from the one common instant at its own pace, with no
    task between its rounds or iterations. Every op's start, first byte and end come back in the host's result
    (C(program)). See C(docs/job-contract.md) and C(docs/jobs-host.md).
author:
  - aifabric.lab contributors (@aifabric)
requirements:
  - pyroute2 (for qdisc counters)
extends_documentation_fragment:
  - aifabric.lab.attributes
  - aifabric.lab.attributes.action_group_flows
  - aifabric.lab.owner
  - aifabric.lab.state_dir
attributes:
  check_mode:
    support: full
    details: In check mode the arguments are validated; nothing is started and no traffic is sent.
  diff_mode:
    support: none
  idempotent:
    support: none
    details: Every run starts, collects or stops a new step.
options:
  state:
    description:
      - V(started) (every host), V(collected) (the coordinating host), V(stopped) (cleanup, every host).
      - V(progress) (the coordinating host) returns the step's progress at once (RV(flows), RV(remaining_s),
        RV(done)); V(collected) with O(progress=true) uses it to show progress while the flows run.
    type: str
    default: started
    choices: [started, collected, stopped, progress]
  party:
    description:
      - This host's name in the step (the playbooks pass C(inventory_hostname)).
      - It names the host's state files, so it may not contain C(/), C(..), NUL or other control characters, and has
        at most 128 characters (the same for O(rendezvous.parties), O(parts[].party) and O(clients[].flow_id)).
      - Exactly one of O(party) and O(parts).
    type: str
  token:
    description:
      - The step's random token, the same on every host. Servers admit only its flows and the rendezvous only its
        hosts (each connection to the rendezvous proves it holds the token before anything it sends is read); the
        state files on the host are named after its hash.
      - Never logged (C(no_log)); Ansible hides its value wherever it appears in the output, so use a random token
        (the experiment role draws 32 hex digits), not a word.
    type: str
    required: true
  step:
    description: The step's name, carried into the results.
    type: str
  engine:
    description:
      - The flow engine of every flow of the step.
      - V(verbs) runs a job program (O(program)) with its data in RDMA verbs RC queue pairs (an RDMA WRITE WITH
        IMMEDIATE per message, completions through a completion channel, nothing spinning), on the device of
        O(verbs); it needs pyverbs in the host's Python. It runs no flows or servers (docs/jobs-host.md).
    type: str
    default: tcp
    choices: [tcp, perftest, verbs]
  verbs:
    description: With O(engine=verbs), the RDMA device the program's queue pairs use.
    type: dict
    default: {}
    version_added: 0.5.0
    suboptions:
      device:
        description: The RDMA device (C(mlx5_0), C(rxe0)); required with O(state=started).
        type: str
      ib_port:
        description: Its port.
        type: int
        default: 1
      gid_index:
        description:
          - The GID index of the queue pairs' address. Default, the port's RoCE v2 GID of the connection's local
            address (a RoCE port without one fails the arming, naming the device, port and address); 0 on an
            InfiniBand port.
        type: int
      qp_timeout:
        description:
          - The queue pairs' retransmission timeout, 4.096 us x 2^N (perftest's C(-u)). The VM lab's CPU-bound guests
            need 18 (docs/vmlab.md).
        type: int
        default: 14
  perftest:
    description: With O(engine=perftest), the perftest options of every flow and server of this host.
    type: dict
    default: {}
    suboptions:
      tool:
        description: The perftest tool.
        type: str
        default: ib_write_bw
        choices: [ib_write_bw, ib_read_bw, ib_send_bw]
      device:
        description: The RDMA device (as in C(/sys/class/infiniband)). Required with O(engine=perftest).
        type: str
      ib_port:
        description: The device's port.
        type: int
        default: 1
      gid_index:
        description: The GID index (perftest's C(-x)); found from the lab address by default (RoCE v2 preferred).
        type: int
      msg_size:
        description: The message size in bytes; a volume becomes ceil(volume / msg_size) iterations.
        type: int
        default: 65536
      qps:
        description: Queue pairs per flow.
        type: int
        default: 1
      rdma_cm:
        description: Connect the QPs through the RDMA connection manager (perftest's C(-R)).
        type: bool
        default: false
      qp_timeout:
        description:
          - The queue pairs' retransmission timeout, 4.096 us x 2^N (perftest's C(-u); its default 14 is 67 ms). Raise
            it where an ACK can take longer than that without any loss (soft-RoCE in emulated guests behind a shaper at
            Mb/s rates; the VM lab uses 18, about 1.07 s).
        type: int
        version_added: 0.5.0
  tcp:
    description:
      - With O(engine=tcp), how the kernel's TCP runs every server and client of this host (docs/congestion.md).
    type: dict
    default: {}
    version_added: 0.5.0
    suboptions:
      ecn:
        description:
          - Set C(net.ipv4.tcp_ecn) of the host's network namespace before its servers listen and its flows connect -
            V(on) (1, request ECN and accept it), V(accept) (2, the kernel's default, accept only), V(off) (0),
            V(accecn) (3, Accurate ECN, Linux 6.18 on). Unset, the host's setting stays. A flow negotiates ECN when
            its sender has V(on) and its receiver V(on) or V(accept).
        type: str
        choices: ["off", "on", accept, accecn]
      congestion:
        description:
          - The congestion control of the flows' sockets (C(TCP_CONGESTION)), one the host's kernel has
            (C(/proc/sys/net/ipv4/tcp_available_congestion_control)) - C(cubic), C(reno), C(bbr), C(dctcp) where it is
            built. Unset, the kernel's default.
        type: str
  servers: &servers
    description: The flow servers this host runs for the step.
    type: list
    elements: dict
    default: []
    suboptions:
      address:
        description: The lab address to bind (never a wildcard).
        type: str
        required: true
      port:
        description: The TCP port. A perftest server runs one process per client on O(servers[].port) and up.
        type: int
        required: true
      expected_clients:
        description: How many connections (tcp; a flow with N streams makes N) or perftest clients it serves.
        type: int
        default: 1
      max_bytes:
        description: The most one connection may send (tcp).
        type: raw
      volume:
        description: With perftest, the flows' volume (perftest servers must run the same count as their clients).
        type: raw
      duration:
        description: With perftest, the flows' duration in seconds instead of a volume.
        type: float
  clients: &clients
    description: The client flows this host sends, all fired at the step's instant.
    type: list
    elements: dict
    default: []
    suboptions:
      flow_id:
        description: The flow's name, unique on the host (the playbooks use the host's name, with a suffix when a
          host sends several).
        type: str
        required: true
      address:
        description: The server's lab address.
        type: str
        required: true
      port:
        description: The server's port.
        type: int
        required: true
      volume:
        description: Bytes to send (C(1GB), C(512MiB), a number). Exactly one of O(clients[].volume) and
          O(clients[].duration).
        type: raw
      duration:
        description: Seconds to send for.
        type: float
      streams:
        description: Parallel TCP connections for this flow; the volume is split between them and the flow
          completes with its last stream.
        type: int
        default: 1
      source:
        description: The local address to send from (perftest finds its GID from it).
        type: str
      source_ports:
        description:
          - With the tcp engine, the source port of each stream (one per stream), so that the flow's five-tuples, and
            with them its paths through an ECMP fabric, are known before it starts. Default, the kernel's choice.
        type: list
        elements: int
        version_added: 0.4.0
      start_offset:
        description:
          - Seconds after the step's common instant that this flow starts (armed with the others, fired at the
            instant plus this offset), as the M flows that join M running ones in a convergence test. Less than
            O(timeout), which still counts from the common instant.
          - The flow's result says C(start_offset_s); its C(completion_s) counts from the common instant, its
            C(late_s) against its own.
        type: float
        default: 0.0
        version_added: 0.5.0
      rate_limit:
        description: With perftest, its software rate limiter (the M(aifabric.lab.throttle) module says when).
        type: str
      annotations:
        description:
          - Facts about the flow that its result carries to the barrier report (C(path), C(throttle), C(mtu),
            C(bottleneck), C(kind), C(expected_workers), ...), for a step that no experiment plan describes.
          - The experiment role gives none (the barrier report reads the plan from the run's C(plan.json)).
        type: dict
        default: {}
  rendezvous:
    description: Where the step's hosts meet.
    type: dict
    required: true
    suboptions:
      host:
        description: The host that coordinates (runs the rendezvous on its O(rendezvous.address)).
        type: str
        required: true
      address:
        description: The coordinating host's lab address; every host connects to it over the lab network.
        type: str
        required: true
      port:
        description: The rendezvous' TCP port.
        type: int
        default: 18599
      parties:
        description:
          - Every host of the step (those with servers or clients); the step fires when all have armed.
          - Required on the coordinating host; another host's part does not need it (when given, its O(party) must
            be listed).
        type: list
        elements: str
      expected_flows:
        description: The flow ids each host is to send (host to a list of flow ids), so that the record names the
          flows of a host that never reported.
        type: dict
        default: {}
      wait_for_collect:
        description:
          - The step fires only once every host has armed B(and) the V(collected) task has started on the coordinating
            host. From then on that task only waits (blocked on a socket), so nothing of Ansible's runs on the hosts
            while the flows do - on a 1-vCPU VM the start of an Ansible module costs a second of CPU. Without it the
            step fires as soon as every host has armed.
        type: bool
        default: true
      start_at:
        description:
          - A fixed start instant (epoch seconds or ISO 8601 with a zone) instead of the measured one.
          - Refused when it is not a finite number (C(inf), C(nan)), when it looks like epoch milliseconds or
            microseconds, and, with O(state=started), when it passed more than 1 s ago or lies further ahead than
            O(arm_timeout) allows.
        type: raw
      result_grace:
        description:
          - Seconds past the step's O(timeout) that the coordinating host waits for a late host's results before it
            fails the step naming that host (and that the servers outlive the timeout by). A host that hangs (a
            stopped process, a link gone down) is then failed at O(timeout) plus this grace, plus 10 s that the
            coordinator gives every host to report after it aborts the step.
          - Lower it where a hung host should be named sooner and the hosts end their flows promptly (a lab of
            namespaces); raise it for hosts slow to report (a loaded VM).
        type: float
        default: 30
        version_added: 0.5.0
  program: &program
    description:
      - This host's job program (C(docs/job-contract.md) section 1) - C(version) 1, C(iterations), C(listen) (where
        this host's program server listens, when it receives), C(peers) (name to C({address, port}) of every host it
        sends to, named as in O(rendezvous.parties)), C(window), C(window_by_channel), C(timeout) and C(ops)
        (C(compute), C(send) or C(recv) with their C(deps) and C(deps_prev)). An experiment with a C(job) gets one
        per host from its plan (C(docs/jobs.md)).
      - Its server is bound by the task, before anything else starts (a taken port fails the task naming it); it is
        armed with the host's flows and fired at the step's instant; the step's O(timeout) is its timeout unless it
        gives its own.
      - A bad program is refused naming the field (C(program.ops[12].deps)), the value and the fix. Only with the
        tcp O(engine) (perftest runs one transfer per process).
    type: dict
    version_added: 0.5.0
  counters: &counters
    description: The counters this host snapshots before arming and after the step (see
      M(aifabric.lab.port_counters_info)).
    type: dict
    suboptions:
      interface:
        description: The host's lab interface (named in the report).
        type: str
      netdevs:
        description: Netdevs whose statistics to read.
        type: list
        elements: str
        default: []
      qdiscs:
        description: Netdevs whose root qdisc and classes to read (netlink).
        type: list
        elements: str
        default: []
      rdma_devices:
        description: RDMA devices whose port counters to read.
        type: list
        elements: str
        default: []
      ethtool:
        description:
          - Netdevs whose QoS statistics to read (a real NIC's PFC pause frames and pause duration per priority, as
            O(aifabric.lab.port_counters_info#module:ethtool) reads them); a device without them reads as none,
            never failing the step. The experiment role asks for the lab interface of
            a perftest step.
        type: list
        elements: str
        default: []
        version_added: 0.5.0
      ipext:
        description:
          - Read the namespace's IP packets by ECN codepoint (C(IpExt) of C(/proc/net/netstat)), the CE-marked
            packets a receiver got. The experiment role asks for it on a tcp step.
        type: bool
        default: false
        version_added: 0.5.0
  parts:
    description:
      - With O(state=started), several hosts' parts started by one task, each inside its own network namespace of
        the machine the task runs on (the netns lab, where every host is a namespace of one machine). One task
        instead of one per host takes Ansible's per-host cost off a large lab's step; what each part does is the same.
      - Every entry is what a host's own task would give in O(party), O(servers), O(clients) and O(counters), plus
        its namespace. The other options are common to every part.
      - When any part cannot start (a taken port, a missing namespace), the task fails naming each such host and the
        reason, and the step is aborted through its rendezvous, so every other part ends at once.
    type: list
    elements: dict
    suboptions:
      party:
        description: The host's name in the step.
        type: str
        required: true
      netns:
        description: The host's network namespace (a name under C(/run/netns)).
        type: str
        required: true
      servers: *servers
      clients: *clients
      counters: *counters
      program: *program
  arm_timeout:
    description:
      - Seconds, from the start of a host's part, within which every host must arm. A host that has not armed by
        then fails the step before anything is sent. It is a limit for failures, not a lead time.
    type: float
    default: 60.0
  timeout:
    description: Seconds a flow may take from the instant.
    type: float
    default: 300.0
  interval:
    description: Seconds between a flow's interval samples.
    type: float
    default: 1.0
  strict_start:
    description: A flow that would start more than O(start_tolerance) after the instant refuses to start.
    type: bool
    default: false
  start_tolerance:
    description: With O(strict_start), the most a flow may start late, in seconds.
    type: float
    default: 0.001
  missing:
    description: With O(state=collected), hosts the controller knows will never arm; the step is aborted at once.
    type: list
    elements: str
    default: []
  wait:
    description: With O(state=collected), seconds to wait for the step's record (default O(arm_timeout) +
      O(timeout) + 60).
    type: float
  progress:
    description:
      - With O(state=collected), show on the controller, about once a second while the flows run, each flow's bytes
        so far, the rate of its latest interval sample and the share of its volume, and the step's remaining time at
        those rates (one line per second, from a short O(state=progress) query of the coordinating host; the hosts
        send their samples to the rendezvous only while it is watched). Steps shorter than a second print nothing.
      - The tcp engine's flows report their interval samples (O(interval)); perftest reports at its end, so its flows
        show as running.
      - Handled by the action plugin; the queries cost the controller a module run a second (see
        C(benchmarks/progress.py) for what that does to the flows' goodput).
    type: bool
    default: false
  watch:
    description:
      - With O(state=progress), the controller's first query of a step - it lets the step fire (as the collect task
        does) and is answered once the flows have run 0.3 s. Set by the action plugin.
    type: bool
    default: false
seealso:
  - module: aifabric.lab.flow
  - plugin: aifabric.lab.barrier_report
    plugin_type: callback
notes:
  - The M(aifabric.lab.flow) module runs one flow without a rendezvous, at a fixed O(aifabric.lab.flow#module:start_at).
"""

EXAMPLES = r"""
- name: Start this host's part of the step
  aifabric.lab.flow_step:
    party: "{{ inventory_hostname }}"
    token: "{{ step_token }}"
    step: barrier
    servers: >-
      {{ [{'address': lab_address, 'port': 18600, 'expected_clients': 3}] if inventory_hostname == 'sink' else [] }}
    clients: "{{ [] if inventory_hostname == 'sink' else [{'flow_id': inventory_hostname, 'address': '198.18.0.1',
                                                           'port': 18600, 'volume': '1GB'}] }}"
    rendezvous: {host: sink, address: 198.18.0.1, parties: [sink, worker1, worker2, worker3]}

- name: Wait for the step and collect every host's results
  aifabric.lab.flow_step:
    state: collected
    party: sink
    token: "{{ step_token }}"
    rendezvous: {host: sink, address: 198.18.0.1, parties: [sink, worker1, worker2, worker3]}
    missing: "{{ ['sink', 'worker1', 'worker2', 'worker3'] | difference(ansible_play_hosts) }}"
  when: inventory_hostname == 'sink'
"""

RETURN = r"""
parts:
  description: With O(parts), what was started for each host (as RV(part)), with C(host) and C(netns); a host
    that could not start has C(status=failed) and C(error).
  returned: parts is given
  type: list
  elements: dict
part:
  description: With O(state=started), what was started (PID, servers, clients); with O(state=stopped), the host's
    result file, if it wrote one.
  returned: state is started or stopped
  type: dict
done:
  description: With O(state=progress), whether the step has ended (collect it).
  returned: state is progress
  type: bool
phase:
  description: With O(state=progress) - V(arming), V(running) or V(ended).
  returned: state is progress
  type: str
elapsed_s:
  description: With O(state=progress), seconds since the start instant.
  returned: state is progress and the step has fired
  type: float
remaining_s:
  description: With O(state=progress), the time the slowest flow needs at the rate of its latest interval sample.
  returned: state is progress and the step is running
  type: float
flows:
  description: With O(state=progress), per flow - C(host), C(flow_id), C(bytes) so far, C(gbps) (its latest
    interval), C(volume), C(share) of it, C(remaining_s), C(done).
  returned: state is progress and the step is running
  type: list
  elements: dict
step:
  description: With O(state=collected) (or O(state=stopped) on the coordinating host), the coordinator's record.
  returned: state is collected
  type: dict
  contains:
    status:
      description: V(ok), V(failed) (a host failed or lost), V(aborted) (the step never started).
      type: str
    error:
      description: Why not V(ok), naming the hosts.
      type: str
    fire:
      description: C(at) (the instant, coordinator clock), C(margin_s), C(probe_fanout_s), C(decided_at).
      type: dict
    parties:
      description: Per host, C(armed_at), C(rtt_s), C(offset_s) (its clock minus the coordinator's), C(result_at),
        C(ack_durable) (its result was on the coordinating host's disk before it was acknowledged), C(store_error),
        C(abort_sent_at), and C(lost) or C(not_armed) when it failed.
      type: dict
    rejected:
      description:
        - Connections to the rendezvous it refused, one entry per address and reason - C(peer), C(reason) (another
          run's token, a wrong token, no authenticated first line in time, a line too long, not a rendezvous message,
          evicted, dropped when the host ran out of file descriptors, ...), C(count), C(first_at), C(last_at).
        - At most 32 entries; C(rejected_total) counts every refusal, C(rejected_unlisted) those past the list. A
          refused peer never fails the step.
      type: list
      elements: dict
    rejected_total:
      description: How many connections to the rendezvous were refused in all.
      type: int
      version_added: 0.5.0
    accept_errors:
      description: How many times the rendezvous' C(accept()) failed (out of file descriptors); it rested and went on.
      type: int
      version_added: 0.5.0
    limits:
      description: The rendezvous' limits in force (first line bytes, line bytes, hello deadline, connections waiting
        to authenticate, control connections).
      type: dict
      version_added: 0.5.0
    stored:
      description: The hosts whose results the coordinator wrote to its disk before acknowledging them.
      type: list
      elements: str
      version_added: 0.5.0
    store_errors:
      description: Per host, why its result could not be written to the coordinating host's disk (it was acknowledged
        as not durable, so the host kept its own copy).
      type: dict
      version_added: 0.5.0
    recovered:
      description: True when the coordinator died without its record and this record was assembled from the results
        it had stored (C(status) is then V(failed)).
      type: bool
      version_added: 0.5.0
    survived:
      description: With C(recovered), the hosts whose results survived on the coordinating host.
      type: list
      elements: str
      version_added: 0.5.0
    lost:
      description: With C(recovered), the hosts whose results were lost (one not acknowledged keeps its own copy;
        O(state=stopped) on it returns it in RV(part)).
      type: list
      elements: str
      version_added: 0.5.0
    hosts:
      description:
        - Per host, its result, C(clients) (one result per flow, as the M(aifabric.lab.flow) module's, with
          C(late_s) and C(completion_s) counted from the instant), C(servers), C(counters) (C(before), C(after)),
          C(kernel) (the host's kernel release, for the run record), C(nic) (with counters, the NIC the step ran on,
          its driver, driver version, firmware, PCI id, NUMA node, speed and MTU where the host has them, read after
          the flows, for the test report), and C(result_file_error) when the host could not write its own copy of the
          result (a full or read-only disk; the result came over the network all the same).
        - With O(program), C(program) - the contract's section 2 (C(docs/job-contract.md)) - C(status) (V(ok),
          V(error), V(timeout), V(aborted)), C(error), C(at), C(iterations), C(ops), C(detail), C(sampled),
          C(t) (C(start), C(first), C(end) - per sampled iteration, one value per op, seconds after the instant),
          C(iteration_end), C(bytes_sent), C(bytes_received), C(cpu_s), C(connections), C(refused).
      type: dict
signal:
  description: With O(state=stopped), the signal that ended a still running part, or null.
  returned: state is stopped
  type: str
not_signalled:
  description: With O(state=stopped), set when the PID in the part's PID file still runs but the file (from an older
    version) has no start time to tell it is the part; it was not signalled.
  returned: state is stopped and such a PID file was found
  type: str
  version_added: 0.5.0
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aifabric.lab.plugins.module_utils._flow.step_module import module_args, run_module


def main():
    run_module(AnsibleModule(**module_args()))


if __name__ == "__main__":
    main()
