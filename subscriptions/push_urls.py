"""Keep push deliveries away from the network Dovecote itself runs in (SSRF).

A push URL is checked when a subscription is written (`check_push_url`) and again for every
connection the push transport opens: its resolver (delivery/transports.py) resolves the host
once, checks every address with `checked_addresses`, and connects only to those, so a name
whose DNS answer changes between the check and the connection (DNS rebinding) cannot reach an
address that was not checked. Loopback, private, link-local, multicast, reserved, unspecified
and cloud-metadata addresses are refused unless `DOVECOTE_PUSH_ALLOW_HOSTS` names the host or a
network holding the address.
"""

from __future__ import annotations

import ipaddress
import socket
from functools import lru_cache
from urllib.parse import urlsplit

from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

METADATA_ADDRESSES = frozenset(ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254"))


class UnsafePushUrl(Exception):
    """A push URL Dovecote will not send to; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def check_push_url(url: str) -> None:
    """Raise UnsafePushUrl unless `url` is http(s) and every address its host resolves to may be reached."""
    host, port = parse_push_url(url)
    # An allowed name need not resolve yet.
    if host.lower() not in allow_list(tuple(settings.DOVECOTE_PUSH_ALLOW_HOSTS))[0]:
        checked_addresses(host, port)


def parse_push_url(url: str) -> tuple[str, int]:
    """Return the host and port of an http(s) URL; raise UnsafePushUrl for anything else."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise UnsafePushUrl(f"the scheme must be http or https, not {parts.scheme or 'none'!r}")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise UnsafePushUrl("the URL has no host")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise UnsafePushUrl("the port is not a number from 0 to 65535") from None
    return host, port


def checked_addresses(host: str, port: int) -> list[IPAddress]:
    """Resolve `host` and return its addresses if every one may be reached; raise UnsafePushUrl otherwise."""
    allowed_hosts, allowed_networks = allow_list(tuple(settings.DOVECOTE_PUSH_ALLOW_HOSTS))
    addresses = resolve(host, port)
    if host.lower() in allowed_hosts:
        return addresses
    for address in addresses:
        if any(address in network for network in allowed_networks):
            continue
        if kind := forbidden_kind(address):
            raise UnsafePushUrl(f"{host} resolves to {address}, a {kind} address")
    return addresses


def resolve(host: str, port: int) -> list[IPAddress]:
    """Return every address `host` resolves to (IPv4-mapped IPv6 read as IPv4); an address literal is itself."""
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return [literal.ipv4_mapped if isinstance(literal, ipaddress.IPv6Address) and literal.ipv4_mapped
                else literal]
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        raise UnsafePushUrl(f"{host} does not resolve ({error})") from None
    addresses = []
    for *_, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%")[0])  # drop an IPv6 zone id
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
            address = address.ipv4_mapped
        addresses.append(address)
    if not addresses:
        raise UnsafePushUrl(f"{host} does not resolve")
    return addresses


def forbidden_kind(address: IPAddress) -> str | None:
    """Name the kind of address a push may not reach, or None if it may."""
    checks = [
        (address in METADATA_ADDRESSES, "cloud metadata"),
        (address.is_unspecified, "unspecified"),
        (address.is_loopback, "loopback"),
        (address.is_link_local, "link-local"),
        (address.is_multicast, "multicast"),
        (address.is_reserved, "reserved"),
        (address.is_private, "private"),
        # The rest of the special-purpose ranges, e.g. 100.64.0.0/10, where some clouds keep metadata.
        (not address.is_global, "non-public"),
    ]
    return next((kind for refused, kind in checks if refused), None)


@lru_cache(maxsize=8)
def allow_list(entries: tuple[str, ...]) -> tuple[frozenset[str], tuple[Network, ...]]:
    """Split DOVECOTE_PUSH_ALLOW_HOSTS into host names and networks (an address is a /32 or /128)."""
    hosts, networks = set(), []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            hosts.add(entry.lower().rstrip("."))
    return frozenset(hosts), tuple(networks)
