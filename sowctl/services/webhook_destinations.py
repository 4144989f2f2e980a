"""Where the webhooks of a sandbox's organization may be delivered: public addresses only,
and the networks the operator allows (``sowctl serve --webhook-allow-network CIDR``).

On a shared ``sowctl serve`` a CI job's sandbox admin token may subscribe webhooks and read
their delivery log, which keeps the start of each answer. Delivered anywhere, that would let
any job read what the server's own network answers: the cloud metadata service
(169.254.169.254), services bound to loopback, the private network. So a subscription of a
sandbox's organization (whoever makes it: that sandbox's token reads its log) may only name a
host whose every address is public, and the dispatcher checks again at every delivery, on
the one address it then connects to (``pin``): a name that resolved to a public address when
the subscription was made may resolve to a private one later (DNS rebinding).

Subscriptions of other organizations (the server-wide admin token's, local mode's) are not
held to this: a local integrator points webhooks at a receiver on localhost.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from sowctl.foundation.errors import InvalidInput, quoted
from sowctl.foundation.networks import Network

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

ALLOW_OPTION = "sowctl serve --webhook-allow-network"
# IPv6 addresses that carry an IPv4 one the packets end up at: NAT64's well-known prefix
# (the IPv4-mapped ::ffff:0:0/96 and 6to4's 2002::/16 are read by ``ipaddress`` itself).
NAT64 = ipaddress.ip_network("64:ff9b::/96")


def embedded_ipv4(address: Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one stands for (IPv4-mapped, NAT64, 6to4), if any."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address.sixtofour


def address_class(address: Address) -> str | None:
    """Why ``address`` is no public one ("loopback", "private"...); None when it is public."""
    inner = embedded_ipv4(address)
    if inner is not None:
        found = address_class(inner)
        return f"{found} (IPv4 {inner} inside IPv6)" if found else None
    checks = (
        (address.is_unspecified, "unspecified"),
        (address.is_loopback, "loopback"),
        (address.is_link_local, "link-local (the cloud metadata service's range)"),
        (address.is_multicast, "multicast"),
        (address.is_reserved, "reserved"),
        (address.is_private, "private"),
        (not address.is_global, "non-public"),
    )
    return next((name for matched, name in checks if matched), None)


def refusal(address: Address, allowed: Sequence[Network]) -> str | None:
    """Why a sandbox's webhook may not reach ``address``: its kind ("loopback", "private"...);
    None when it may (a public address, or one in a network the operator allows)."""
    inner = embedded_ipv4(address)
    if any(address in network or (inner is not None and inner in network) for network in allowed):
        return None
    return address_class(address)


def resolve(host: str, port: int) -> list[Address]:
    """Every address ``host`` resolves to, in the resolver's order (an IP literal: itself);
    OSError when it resolves to none."""
    literal = ip_literal(host)
    if literal is not None:
        return [literal]
    found: list[Address] = []
    for *_, sockaddr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in found:
            found.append(address)
    if not found:
        raise OSError(f"{host} has no address")
    return found


def ip_literal(host: str) -> Address | None:
    """The address ``host`` spells (``127.0.0.1``, ``::1``); None for a host name."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def host_and_port(url: str) -> tuple[str, int]:
    """The host and port an http(s) URL checked by ``webhooks.check_url`` connects to."""
    parts = urlsplit(url)
    return parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)


def first_refusal(host: str, addresses: Sequence[Address], allowed: Sequence[Network]) -> str | None:
    """Why ``host`` may not be reached at one of ``addresses``; None when every one may."""
    for address in addresses:
        kind = refusal(address, allowed)
        if kind is not None:
            described = f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} address"
            if ip_literal(host) is not None:
                return f"{address} is {described}"
            return f"{host} resolves to {address}, {described}"
    return None


def check_destination(url: str, allowed: Sequence[Network], field: str = "url") -> None:
    """Refuse (400 naming ``field``) a sandbox's webhook URL whose host is, or resolves to, an
    address it may not reach; a host that resolves to nothing is refused too."""
    host, port = host_and_port(url)
    try:
        reason = first_refusal(host, resolve(host, port), allowed)
    except (OSError, UnicodeError):
        raise InvalidInput.for_field(
            field, f"the host {quoted(host)} does not resolve to an address, so it cannot be checked"
        ) from None
    if reason is not None:
        raise InvalidInput.for_field(
            field,
            f"{reason}; a sandbox's webhooks may reach public addresses only "
            f"(the server's operator may allow networks with {ALLOW_OPTION} CIDR)",
        )


@dataclass(frozen=True)
class Pinned:
    """Where one delivery connects: ``addresses`` (all checked), or why it must not (``refused``)."""

    addresses: tuple[Address, ...] = ()
    refused: str | None = None


def pin(url: str, allowed: Sequence[Network]) -> Pinned:
    """Resolve the URL's host once and check every address: the delivery connects to these
    addresses only, never to what a second lookup might answer."""
    host, port = host_and_port(url)
    try:
        addresses = resolve(host, port)
    except (OSError, UnicodeError):
        return Pinned(refused=f"refused: the host {host} does not resolve to an address")
    reason = first_refusal(host, addresses, allowed)
    if reason is not None:
        return Pinned(refused=f"refused: {reason}; a sandbox's webhooks may reach public addresses only")
    return Pinned(tuple(addresses))
