# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the inventory says about a lab host, read in one place (the netns lab's builder and the experiment's plan
read the same ``lab_address`` the same way)."""

from __future__ import annotations

import ipaddress

__all__ = ["InventoryError", "lab_address"]


class InventoryError(ValueError):
    """An inventory value that cannot be used; the message names the host, the variable and the fix."""


def lab_address(hostvars, host, network=None):
    """The host's ``lab_address`` (``198.18.0.11``, or ``198.18.0.11/24``) as an ``ipaddress`` address. With
    ``network`` (the lab subnet) the address must lie in it, and a prefix length, when given, must be the subnet's."""
    value = (hostvars.get(host) or {}).get("lab_address")
    if not value:
        raise InventoryError("host %s has no lab_address; set it in the inventory (e.g. %s)"
                             % (host, network.network_address + 11 if network else "198.18.0.11"))
    try:
        iface = ipaddress.ip_interface(str(value))
    except ValueError:
        raise InventoryError("host %s: lab_address %r is not an IP address" % (host, value)) from None
    if network is not None:
        if iface.ip not in network:
            raise InventoryError("host %s: lab_address %s is outside lab_subnet %s" % (host, iface.ip, network))
        if "/" in str(value) and iface.network.prefixlen != network.prefixlen:
            raise InventoryError("host %s: lab_address %s has prefix length /%d but lab_subnet %s is /%d; give the "
                                 "address alone" % (host, value, iface.network.prefixlen, network,
                                                    network.prefixlen))
    return iface.ip
