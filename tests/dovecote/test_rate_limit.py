"""Requests over DOVECOTE_API_RATE per API key get 429 with Retry-After; the counters live in Redis."""

from __future__ import annotations

import secrets
import subprocess
import sys
import time

import pytest
import redis
from django.conf import settings
from django.test import Client, override_settings

from dovecote.env import ConfigError, env_rate
from dovecote.throttling import ApiKeyRateThrottle
from rooms.models import ApiKey
from tests.callers import call_api

pytestmark = pytest.mark.django_db



@pytest.fixture
def minute() -> int:
    """The start of a whole minute no earlier run used: key ids repeat between runs, windows do not."""
    return 60 * (int(time.time()) // 60 + 1 + secrets.randbelow(10**9))


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch, minute: int) -> list[float]:
    """The throttle's time, set by the test: clock[0] in unix seconds, 10 s into `minute`."""
    now = [minute + 10.0]
    monkeypatch.setattr(ApiKeyRateThrottle, "clock", staticmethod(lambda: now[0]))
    return now


def fresh_key() -> str:
    return ApiKey.issue("limited", is_admin=True)[1]


def list_rooms(client: Client, key: str | None) -> int:
    return call_api(client, "get", "/api/v1/rooms/", None, key).status_code


@override_settings(DOVECOTE_API_RATE="3/min")
def test_requests_over_the_rate_are_429_with_retry_after(client: Client, clock: list[float], minute: int) -> None:
    key = fresh_key()
    assert [list_rooms(client, key) for _ in range(3)] == [200, 200, 200]
    clock[0] = minute + 45.2
    response = call_api(client, "get", "/api/v1/rooms/", None, key)
    assert response.status_code == 429
    assert response["Retry-After"] == "15"
    assert "Expected available in 15 seconds" in response.json()["detail"]


@override_settings(DOVECOTE_API_RATE="3/min")
def test_the_next_window_admits_requests_again(client: Client, clock: list[float], minute: int) -> None:
    key = fresh_key()
    assert [list_rooms(client, key) for _ in range(4)] == [200, 200, 200, 429]
    clock[0] = minute + 60.0
    assert list_rooms(client, key) == 200


@override_settings(DOVECOTE_API_RATE="2/min")
def test_the_limit_is_counted_per_key(client: Client, clock: list[float]) -> None:
    busy, quiet = fresh_key(), fresh_key()
    assert [list_rooms(client, busy) for _ in range(3)] == [200, 200, 429]
    assert list_rooms(client, quiet) == 200


@override_settings(DOVECOTE_API_RATE="2/s")
def test_every_endpoint_is_limited_not_only_lists(client: Client, clock: list[float]) -> None:
    key = fresh_key()
    for _ in range(2):
        call_api(client, "post", "/api/v1/rooms/", {"name": ""}, key)
    response = call_api(client, "post", "/api/v1/rooms/", {"name": "late"}, key)
    assert response.status_code == 429 and response["Retry-After"] == "1"


def test_the_counters_are_kept_in_the_redis_shared_by_every_process(client: Client, clock: list[float]) -> None:
    cache = settings.CACHES["default"]
    assert cache["BACKEND"] == "django.core.cache.backends.redis.RedisCache"
    key = fresh_key()
    list_rooms(client, key)
    key_id = ApiKey.authenticate(key).pk
    server = redis.Redis.from_url(cache["LOCATION"])
    window = int(clock[0] // 60)
    assert server.get(f"dovecote:1:throttle:key-{key_id}:60:{window}") == b"1"


@override_settings(
    DOVECOTE_API_RATE="1/min",
    CACHES={"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                        "LOCATION": "redis://127.0.0.1:1/0"}},
)
def test_an_unreachable_cache_lets_requests_through(client: Client) -> None:
    key = fresh_key()
    assert [list_rooms(client, key) for _ in range(3)] == [200, 200, 200]


@pytest.mark.parametrize("rate", ["lots", "0/min", "5/fortnight", "5 per minute", "-1/s"])
def test_a_bad_rate_is_refused_naming_the_variable(monkeypatch: pytest.MonkeyPatch, rate: str) -> None:
    monkeypatch.setenv("DOVECOTE_API_RATE", rate)
    with pytest.raises(ConfigError, match=f"DOVECOTE_API_RATE={rate!r} is not a rate"):
        env_rate("DOVECOTE_API_RATE", "6000/min")


def test_a_bad_rate_stops_the_process() -> None:
    code = "import django; django.setup()"
    env = {"DJANGO_SETTINGS_MODULE": "dovecote.settings", "DOVECOTE_HTTPS": "false", "DOVECOTE_API_RATE": "fast",
           "DOVECOTE_ENV_FILE": "", "PATH": ""}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert result.returncode != 0 and "DOVECOTE_API_RATE='fast' is not a rate" in result.stderr


@pytest.mark.parametrize(
    ("env", "backend"),
    [
        ({}, "locmem.LocMemCache"),
        ({"CELERY_BROKER_URL": "redis://127.0.0.1:6379/4"}, "redis.RedisCache"),
        ({"CELERY_BROKER_URL": "amqp://guest@127.0.0.1//"}, "locmem.LocMemCache"),
        ({"DOVECOTE_CACHE_URL": "redis://cache.internal:6379/2"}, "redis.RedisCache"),
    ],
)
def test_the_cache_is_redis_whenever_one_is_configured(env: dict[str, str], backend: str) -> None:
    code = "from django.conf import settings; print(settings.CACHES['default']['BACKEND'])"
    # No services file (a checkout's names a Redis): only `env` configures the cache.
    full_env = {"DJANGO_SETTINGS_MODULE": "dovecote.settings", "DOVECOTE_HTTPS": "false", "DOVECOTE_ENV_FILE": "",
                "PATH": "", **env}
    result = subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True, text=True, check=False)
    assert result.stdout.strip() == f"django.core.cache.backends.{backend}", result.stderr


@override_settings(DOVECOTE_API_RATE="3000/min")
def test_two_processes_reserving_ahead_never_let_a_client_past_the_limit(monkeypatch: pytest.MonkeyPatch,
                                                                         minute: int) -> None:
    """Each web process reserves requests of the window in Redis (throttling.Leases) and spends them locally."""
    from dovecote import throttling

    processes = [throttling.Leases(), throttling.Leases()]
    increments = []
    counted = throttling._count_request
    monkeypatch.setattr(throttling, "_count_request",
                        lambda key, period, requests=1: increments.append(requests) or counted(key, period, requests))
    client_id = f"key-test-{secrets.token_hex(4)}"
    allowed = 0
    for index in range(3200):
        monkeypatch.setattr(throttling, "LEASES", processes[index % 2])
        allowed += throttling.count_against_rate(client_id, minute + 1.0)[0]
    assert 3000 - 2 * 30 <= allowed <= 3000, allowed  # refused early by at most each process's last reservation
    assert len(increments) < 400, f"{len(increments)} round trips to Redis for 3200 requests: {increments[:40]}"
    assert max(increments) == 30  # a hundredth of the limit
    # a new window starts again at one request
    monkeypatch.setattr(throttling, "LEASES", processes[0])
    assert throttling.count_against_rate(client_id, minute + 61.0)[0]
    assert increments[-1] == 1


@override_settings(DOVECOTE_API_RATE="150/min")
def test_a_limit_under_200_is_counted_request_by_request(monkeypatch: pytest.MonkeyPatch, minute: int) -> None:
    from dovecote import throttling

    monkeypatch.setattr(throttling, "LEASES", throttling.Leases())
    client_id = f"key-test-{secrets.token_hex(4)}"
    verdicts = [throttling.count_against_rate(client_id, minute + 1.0)[0] for _ in range(151)]
    assert verdicts == [True] * 150 + [False]
