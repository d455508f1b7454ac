"""Keep push deliveries away from the network Dovecote itself runs in (SSRF).

A push URL is checked when a subscription is written (`check_push_url`) and again for every
connection the push transport opens: its resolver (delivery/transports.py) resolves the host
once, checks every address with `checked_addresses`, and connects only to those, so a name
whose DNS answer changes between the check and the connection (DNS rebinding) cannot reach an
address that was not checked. Loopback, private, link-local, multicast, reserved, unspecified
and cloud-metadata addresses are refused unless `DOVECOTE_PUSH_ALLOW_HOSTS` names the host or a
network holding the address: an entry `host`, `address` or `network/bits` opens every port of it, an
entry with a port (`host:8080`, `127.0.0.1:8080`, `[::1]:8080`, `10.0.0.0/8:443`) only that port.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
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
    if not allow_list(tuple(settings.DOVECOTE_PUSH_ALLOW_HOSTS)).admits_name(host, port):
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
    allowed = allow_list(tuple(settings.DOVECOTE_PUSH_ALLOW_HOSTS))
    addresses = resolve(host, port)
    if allowed.admits_name(host, port):
        return addresses
    for address in addresses:
        if allowed.admits_address(address, port):
            continue
        if kind := forbidden_kind(address):
            raise UnsafePushUrl(f"{host} resolves to {address}, a {kind} address; an operator can allow it "
                                f"(or only port {port} of it) with DOVECOTE_PUSH_ALLOW_HOSTS")
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


@dataclass(frozen=True)
class AllowEntry:
    """One entry of DOVECOTE_PUSH_ALLOW_HOSTS: a host name or a network, and the one port it opens (None: all)."""

    host: str | None
    network: Network | None
    port: int | None

    def opens(self, port: int) -> bool:
        return self.port is None or self.port == port


@dataclass(frozen=True)
class AllowList:
    entries: tuple[AllowEntry, ...]

    def admits_name(self, host: str, port: int) -> bool:
        """Say whether an entry names `host` (any address it resolves to) with `port` open."""
        name = host.lower().rstrip(".")
        return any(entry.host == name and entry.opens(port) for entry in self.entries)

    def admits_address(self, address: IPAddress, port: int) -> bool:
        """Say whether an entry's network holds `address` with `port` open."""
        return any(entry.network is not None and address in entry.network and entry.opens(port)
                   for entry in self.entries)


@lru_cache(maxsize=8)
def allow_list(entries: tuple[str, ...]) -> AllowList:
    """Read DOVECOTE_PUSH_ALLOW_HOSTS: names and networks (an address is a /32 or /128), each with an optional port."""
    return AllowList(tuple(parse_allow_entry(entry) for entry in entries))


def parse_allow_entry(entry: str) -> AllowEntry:
    """Read `host`, `address`, `network/bits`, or any of them with `:port` (`[v6 address]:port` for IPv6).

    Raises ValueError naming the entry when its port is not a number from 1 to 65535.
    """
    target, port = entry.strip(), None
    if target.startswith("[") and "]:" in target:  # [::1]:8080
        target, _, port_text = target[1:].partition("]:")
        port = _allowed_port(entry, port_text)
    elif target.count(":") == 1:  # host:port, 1.2.3.4:port, 10.0.0.0/8:port; more colons: an IPv6 address alone
        target, _, port_text = target.partition(":")
        port = _allowed_port(entry, port_text)
    target = target.strip("[]")
    try:
        return AllowEntry(None, ipaddress.ip_network(target, strict=False), port)
    except ValueError:
        return AllowEntry(target.lower().rstrip("."), None, port)


def _allowed_port(entry: str, text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"DOVECOTE_PUSH_ALLOW_HOSTS entry {entry!r}: the port must be a number from 1 to 65535")
    return int(text)
