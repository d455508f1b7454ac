"""Push URLs may not reach Dovecote's own network (SSRF), checked on write and before every POST.

These tests replace DNS (socket.getaddrinfo) so they need no network: `check_push_url` is a pure
function of the URL, what the host resolves to, and DOVECOTE_PUSH_ALLOW_HOSTS.
"""

from __future__ import annotations

import ipaddress
import socket

import pytest
from django.test import override_settings

from delivery.models import DeliveryAttempt
from delivery.transports import PushRequest, post_once
from subscriptions.push_urls import UnsafePushUrl, check_push_url


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """A fake resolver: map host names to addresses; unknown names do not resolve."""
    records: dict[str, list[str]] = {}

    def getaddrinfo(host: str, port: int, *args: object, **kwargs: object) -> list[tuple]:
        addresses = [host] if _is_address(host) else records.get(host)
        if not addresses:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
                for a in addresses]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return records


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.9", "private"),
        ("192.168.1.1", "private"),
        ("fd12:3456::1", "private"),
        ("169.254.169.254", "cloud metadata"),
        ("fd00:ec2::254", "cloud metadata"),
        ("169.254.10.10", "link-local"),
        ("fe80::1", "link-local"),
        ("224.0.0.251", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("240.0.0.1", "reserved"),
        ("100.100.100.200", "non-public"),
    ],
)
@override_settings(DOVECOTE_PUSH_ALLOW_HOSTS=[])
def test_a_host_resolving_to_an_internal_address_is_refused_naming_it(dns: dict, address: str, kind: str) -> None:
    dns["hooks.example"] = [address]
    with pytest.raises(UnsafePushUrl) as refused:
        check_push_url("https://hooks.example/in")
    expected = address.removeprefix("::ffff:")
    assert refused.value.reason.startswith(f"hooks.example resolves to {expected}, a {kind} address; ")
    assert "DOVECOTE_PUSH_ALLOW_HOSTS" in refused.value.reason


@override_settings(DOVECOTE_PUSH_ALLOW_HOSTS=[])
def test_a_public_address_is_allowed(dns: dict) -> None:
    dns["hooks.example"] = ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"]
    check_push_url("https://hooks.example:8443/in?x=1")


@override_settings(DOVECOTE_PUSH_ALLOW_HOSTS=[])
def test_one_internal_address_among_public_ones_is_enough_to_refuse(dns: dict) -> None:
    dns["hooks.example"] = ["93.184.216.34", "10.0.0.5"]
    with pytest.raises(UnsafePushUrl, match=r"10\.0\.0\.5, a private address"):
        check_push_url("http://hooks.example/")


@override_settings(DOVECOTE_PUSH_ALLOW_HOSTS=[])
def test_an_address_literal_is_checked_too(dns: dict) -> None:
    with pytest.raises(UnsafePushUrl, match=r"127.0.0.1 resolves to 127.0.0.1, a loopback address"):
        check_push_url("http://127.0.0.1:8000/")
    with pytest.raises(UnsafePushUrl, match="a loopback address"):
        check_push_url("http://[::1]/")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://hooks.example/x", "the scheme must be http or https, not 'ftp'"),
        ("file:///etc/passwd", "the scheme must be http or https, not 'file'"),
        ("//hooks.example/x", "the scheme must be http or https, not 'none'"),
        ("http:///x", "the URL has no host"),
        ("http://hooks.example:99999/", "the port is not a number from 0 to 65535"),
        ("http://nowhere.example/", "nowhere.example does not resolve"),
    ],
)
def test_urls_that_are_not_plain_http_to_a_real_host_are_refused(dns: dict, url: str, reason: str) -> None:
    dns["hooks.example"] = ["93.184.216.34"]
    with pytest.raises(UnsafePushUrl) as refused:
        check_push_url(url)
    assert refused.value.reason.startswith(reason)


@override_settings(DOVECOTE_PUSH_ALLOW_HOSTS=["10.0.0.0/8", "127.0.0.1", "Receiver.Internal"])
def test_the_allow_list_admits_networks_addresses_and_host_names(dns: dict) -> None:
    dns["queue.corp"] = ["10.20.30.40"]
    check_push_url("http://queue.corp/in")
    check_push_url("http://127.0.0.1:9/in")
    check_push_url("http://receiver.internal./in")  # allowed by name: not even resolved
    dns["db.corp"] = ["192.168.0.10"]
    with pytest.raises(UnsafePushUrl, match=r"192\.168\.0\.10, a private address"):
        check_push_url("http://db.corp/")


@override_settings(DOVECOTE_PUSH_ALLOW_HOSTS=["127.0.0.1:8080", "receiver.internal:9000", "[::1]:8443",
                                              "10.0.0.0/8:443"])
def test_an_allow_list_entry_with_a_port_opens_that_port_only(dns: dict) -> None:
    check_push_url("http://127.0.0.1:8080/in")
    check_push_url("http://receiver.internal:9000/in")
    check_push_url("https://[::1]:8443/in")
    dns["queue.corp"] = ["10.20.30.40"]
    check_push_url("https://queue.corp/in")  # 443
    refused = {
        "http://127.0.0.1:6379/": "127.0.0.1 resolves to 127.0.0.1, a loopback address",
        "http://127.0.0.1/": "127.0.0.1 resolves to 127.0.0.1, a loopback address",
        "http://[::1]:8080/": "::1 resolves to ::1, a loopback address",
        "http://queue.corp:5432/": "queue.corp resolves to 10.20.30.40, a private address",
    }
    for url, reason in refused.items():
        with pytest.raises(UnsafePushUrl) as error:
            check_push_url(url)
        assert error.value.reason.startswith(reason), (url, error.value.reason)
        assert "DOVECOTE_PUSH_ALLOW_HOSTS" in error.value.reason  # the refusal names the setting that allows it
    dns["receiver.internal"] = ["10.1.1.1"]
    with pytest.raises(UnsafePushUrl, match="private address"):
        check_push_url("http://receiver.internal:9001/in")  # the name's entry opens 9000 only


@pytest.mark.parametrize("entry", ["127.0.0.1:http", "hooks:0", "hooks:70000", "[::1]:x"])
def test_an_allow_list_entry_with_a_bad_port_stops_the_settings(monkeypatch: pytest.MonkeyPatch, entry: str) -> None:
    from dovecote.env import ConfigError, env_allow_hosts

    monkeypatch.setenv("DOVECOTE_PUSH_ALLOW_HOSTS", f"10.0.0.0/8,{entry}")
    with pytest.raises(ConfigError, match="has a port that is not a number from 1 to 65535"):
        env_allow_hosts("DOVECOTE_PUSH_ALLOW_HOSTS")


@override_settings(DOVECOTE_PUSH_ALLOW_HOSTS=[])
def test_the_transport_refuses_an_unsafe_url_at_delivery_time_without_sending(dns: dict) -> None:
    # The name passed the check when the subscription was written, then its DNS record changed.
    dns["hooks.example"] = ["10.9.8.7"]
    request = PushRequest(url="http://hooks.example/in", body=b"{}", message_id="m-1", correlation_id="c-1",
                          attempt=1, signing_secret="whsec_" + "A" * 44, timeout_ms=200)
    result = post_once(request)
    assert result.outcome == DeliveryAttempt.Outcome.FAILURE and result.status_code is None
    assert result.error.startswith("push URL refused: hooks.example resolves to 10.9.8.7, a private address; ")
    assert not result.ok
