"""Failed sign-ins are limited per client address: passwords on the UI and the admin, and API keys."""

from __future__ import annotations

import secrets
import time

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings

from dovecote.throttling import FailureLimit
from rooms.models import ApiKey

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def clock_standing_mid_window(monkeypatch: pytest.MonkeyPatch) -> float:
    """Stand the limits' clock in the middle of a quarter hour no run used (so of its minutes too).

    The failures are counted in fixed windows: a test whose requests straddled a window's end (cc99,
    at 01:00 UTC) had its count split in two and the request it expected refused was let through.
    """
    now = 900.0 * (int(time.time()) // 900 + 1 + secrets.randbelow(10**9)) + 450.0
    monkeypatch.setattr(FailureLimit, "clock", staticmethod(lambda: now))
    return now


def fresh_address() -> str:
    """An address no earlier run used (the counters live in Redis, which no rollback undoes)."""
    return f"10.{secrets.randbelow(250)}.{secrets.randbelow(250)}.{secrets.randbelow(250) + 1}"


@pytest.fixture
def operator(django_user_model: type[User]) -> User:
    return django_user_model.objects.create_user("operator", password="right-pass-1", is_staff=True)


def log_in(client: Client, address: str, password: str, path: str = "/login/"):
    return client.post(path, {"username": "operator", "password": password}, REMOTE_ADDR=address)


@override_settings(DOVECOTE_LOGIN_FAILURE_RATE="5/15min")
def test_after_too_many_wrong_passwords_even_the_right_one_is_refused(client: Client, operator: User) -> None:
    address = fresh_address()
    assert [log_in(client, address, f"wrong-{n}").status_code for n in range(5)] == [200] * 5
    refused = log_in(client, address, "right-pass-1")
    assert refused.status_code == 429
    assert "Too many failed sign-ins from your address" in refused.content.decode()
    assert "_auth_user_id" not in client.session
    # Another address is not held back by this one's failures.
    assert log_in(client, fresh_address(), "right-pass-1").status_code == 302


@override_settings(DOVECOTE_LOGIN_FAILURE_RATE="5/15min")
def test_failures_on_other_accounts_never_lock_an_operator_out(client: Client, operator: User) -> None:
    """Behind one proxy everyone shares an address: a stranger guessing other accounts must not block this one."""
    address = fresh_address()
    for n in range(10):
        client.post("/login/", {"username": f"stranger{n % 2}", "password": "nope"}, REMOTE_ADDR=address)
    assert client.post("/login/", {"username": "stranger0", "password": "nope"}, REMOTE_ADDR=address).status_code == 429
    assert log_in(client, address, "right-pass-1").status_code == 302


@override_settings(DOVECOTE_LOGIN_FAILURE_RATE="3/15min")
def test_the_admin_login_is_limited_too(client: Client, operator: User) -> None:
    address = fresh_address()
    for n in range(3):
        log_in(client, address, f"wrong-{n}", "/admin/login/")
    refused = log_in(client, address, "right-pass-1", "/admin/login/")
    assert "Too many failed sign-ins" in refused.content.decode() and "_auth_user_id" not in client.session


@override_settings(DOVECOTE_API_KEY_FAILURE_RATE="10/min")
def test_after_too_many_bad_api_keys_the_address_gets_429_for_wrong_keys_only(client: Client) -> None:
    address = fresh_address()
    codes = [client.get("/api/v1/rooms/", HTTP_AUTHORIZATION=f"Bearer dvc_guess{n}", REMOTE_ADDR=address).status_code
             for n in range(10)]
    assert codes == [401] * 10
    throttled = client.get("/api/v1/rooms/", HTTP_AUTHORIZATION="Bearer dvc_guess-again", REMOTE_ADDR=address)
    assert throttled.status_code == 429 and int(throttled["Retry-After"]) >= 1
    assert "too many failed API keys from this address" in throttled.json()["detail"]
    malformed = client.get("/api/v1/rooms/", HTTP_AUTHORIZATION="Basic abc", REMOTE_ADDR=address)
    assert malformed.status_code == 429


@override_settings(DOVECOTE_API_KEY_FAILURE_RATE="20/min")
def test_a_right_key_is_never_refused_for_a_strangers_failures_from_the_same_address(client: Client) -> None:
    """The attack: 21 wrong keys from an address (or through one proxy), then the admin's key from it."""
    address = fresh_address()
    admin_key = ApiKey.issue("admin", is_admin=True)[1]
    codes = [client.get("/api/v1/rooms/", HTTP_AUTHORIZATION=f"Bearer dvc_wrong{n}", REMOTE_ADDR=address).status_code
             for n in range(21)]
    assert codes == [401] * 20 + [429], codes
    right = client.get("/api/v1/rooms/", HTTP_AUTHORIZATION=f"Bearer {admin_key}", REMOTE_ADDR=address)
    assert right.status_code == 200, right.content
    # /healthz/'s details for admin keys follow the same rule.
    details = client.get("/healthz/", HTTP_AUTHORIZATION=f"Bearer {admin_key}", REMOTE_ADDR=address)
    assert "checks" in details.json(), details.content


@override_settings(DOVECOTE_API_KEY_FAILURE_RATE="2/min", DOVECOTE_TRUSTED_PROXIES=1)
def test_behind_a_trusted_proxy_the_forwarded_address_counts_not_what_the_client_claims(client: Client) -> None:
    proxy, caller = fresh_address(), fresh_address()
    for _ in range(2):  # the client varies the X-Forwarded-For it sends; the proxy appends the real address
        client.get("/api/v1/rooms/", HTTP_AUTHORIZATION="Bearer dvc_guess", REMOTE_ADDR=proxy,
                   HTTP_X_FORWARDED_FOR=f"{fresh_address()}, {caller}")
    blocked = client.get("/api/v1/rooms/", HTTP_AUTHORIZATION="Bearer dvc_guess", REMOTE_ADDR=proxy,
                         HTTP_X_FORWARDED_FOR=f"{fresh_address()}, {caller}")
    assert blocked.status_code == 429
