# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: netns
short_description: Run tasks inside a named Linux network namespace on the controller
version_added: 0.1.0
description:
  - Every command of a host runs through C(ip netns exec NAME), so modules see the namespace's interfaces, routes,
    qdiscs and sockets. C(ip netns exec) also remounts C(/sys) for the namespace, which modules that read
    C(/sys/class/net) rely on (a bare C(setns) does not).
  - Files are transferred locally, because a namespace shares the controller's file system.
  - The namespace must exist (C(/run/netns/NAME)); a missing one makes the host unreachable with a message naming it.
    The C(aifabric.lab.netns_lab) role creates the embedded lab's namespaces.
  - Runs as the controller's user, which must be allowed to enter namespaces (root).
author:
  - aifabric.lab contributors (@aifabric)
extends_documentation_fragment:
  - ansible.builtin.connection_pipelining
options:
  netns_name:
    description:
      - The network namespace to run in, after O(netns_prefix). Defaults to the host's address, C(ansible_host), which
        Ansible sets to the inventory hostname (the delegated host's under C(delegate_to)).
    type: str
    vars:
      - name: ansible_netns_name
  netns_prefix:
    description:
      - Put before O(netns_name). Lets one inventory name its namespaces C(afl-worker1) while hosts stay C(worker1),
        and keeps working under C(delegate_to), where host variables templated with C(inventory_hostname) would
        resolve to the wrong host.
    type: str
    default: ""
    vars:
      - name: ansible_netns_prefix
  ip_executable:
    description: The C(ip) command (iproute2) used to enter the namespace.
    type: str
    default: ip
    vars:
      - name: ansible_netns_ip_executable
notes:
  - Namespace names may use letters, digits, C(.), C(_) and C(-) (at most 64 characters), like C(ip netns) itself.
seealso:
  - name: ip-netns(8)
    description: The command this plugin wraps.
    link: https://man7.org/linux/man-pages/man8/ip-netns.8.html
"""

import os
import shlex
import shutil

import ansible.constants as C
from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.connection.local import Connection as LocalConnection
from ansible.utils.display import Display
from ansible_collections.aifabric.lab.plugins.module_utils._netns_enter import NETNS_RUN_DIR, namespace_name, valid_name

display = Display()


def netns_command(ip_executable, name, cmd, shell):
    """The command line that runs ``cmd`` (a shell string) inside namespace ``name``."""
    return " ".join(shlex.quote(part) for part in (ip_executable, "netns", "exec", name, shell, "-c", cmd))


class Connection(LocalConnection):
    """Local execution inside a network namespace."""

    transport = "aifabric.lab.netns"
    has_pipelining = True

    def _netns(self):
        name = namespace_name(self.get_option("netns_prefix"),
                              self.get_option("netns_name") or self._play_context.remote_addr)
        if not valid_name(name):
            raise AnsibleConnectionFailure(
                "netns: %r is not a valid namespace name (letters, digits, '.', '_', '-'; at most 64 characters). "
                "Set ansible_netns_name for this host." % (name,))
        return name

    def _connect(self):
        name = self._netns()
        if not os.path.exists(os.path.join(NETNS_RUN_DIR, name)):
            raise AnsibleConnectionFailure(
                "netns: network namespace %r does not exist (no %s/%s). Bring the lab up first "
                "(role aifabric.lab.netns_lab, state=up) or set ansible_netns_name." % (name, NETNS_RUN_DIR, name))
        ip = self.get_option("ip_executable")
        if shutil.which(ip) is None:
            raise AnsibleConnectionFailure("netns: %r not found; install iproute2" % ip)
        if not self._connected:
            display.vvv("ESTABLISH NETNS CONNECTION INTO %s" % name, host=name)
        return super()._connect()

    def exec_command(self, cmd, in_data=None, sudoable=True):
        self._connect()
        shell = C.DEFAULT_EXECUTABLE.split()[0] if C.DEFAULT_EXECUTABLE else "/bin/sh"
        wrapped = netns_command(self.get_option("ip_executable"), self._netns(), cmd, shell)
        return super().exec_command(wrapped, in_data=in_data, sudoable=sudoable)
