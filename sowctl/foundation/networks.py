"""IP networks as an operator names them (``sowctl serve --webhook-allow-network CIDR``).

Here rather than with the webhook destination rules (``services.webhook_destinations``),
so reading ``serve``'s options at start-up loads no domain module.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from sowctl.foundation.errors import quoted

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(values: Iterable[str]) -> tuple[Network, ...]:
    """The networks of ``--webhook-allow-network`` (``10.0.0.0/8``, ``127.0.0.1``, ``::1/128``);
    ValueError naming the value that is none."""
    networks = []
    for value in values:
        try:
            networks.append(ipaddress.ip_network(value.strip(), strict=False))
        except ValueError:
            raise ValueError(f"{quoted(value)} is not an IP network such as 10.0.0.0/8 or ::1/128") from None
    return tuple(networks)
