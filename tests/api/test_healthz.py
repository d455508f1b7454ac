"""/healthz/ reports the database, the STOMP broker and the Celery broker, naming what is down.

Anyone sees whether it is up and what is down; staff users and admin keys also see each check's
timing and error. Checks run at most once every couple of seconds per process, on the shared broker
connection.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from django.test import Client, override_settings

from api import health
from delivery.broker import shared as shared_module
from rooms.models import ApiKey
from tests.services import redis_url, stomp_url

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_checks() -> Iterator[None]:
    health.RECENT.forget()
    yield
    health.RECENT.forget()


@pytest.fixture
def admin_header() -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {ApiKey.issue('ops', is_admin=True)[1]}"}


def closed_port() -> int:
    """Return a local port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_all_services_up_answers_200_with_each_state(client: Client, admin_header: dict[str, str]) -> None:
    with override_settings(STOMP_URL=stomp_url(), CELERY_BROKER_URL=redis_url()):
        response = client.get("/healthz/", **admin_header)
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["status"] == "ok" and body["down"] == []
    assert set(body["checks"]) == {"database", "broker", "celery_broker"}
    assert all(check["ok"] for check in body["checks"].values())


def test_a_stopped_stomp_broker_answers_503_naming_the_broker(client: Client, admin_header: dict[str, str]) -> None:
    port = closed_port()
    with override_settings(STOMP_URL=f"stomp://admin:admin@127.0.0.1:{port}", CELERY_BROKER_URL=redis_url()):
        response = client.get("/healthz/", **admin_header)
    assert response.status_code == 503
    body = response.json()
    assert body["down"] == ["broker"]
    assert f"127.0.0.1:{port}" in body["checks"]["broker"]["error"]


def test_a_stopped_celery_broker_answers_503_naming_it(client: Client) -> None:
    with override_settings(STOMP_URL=stomp_url(), CELERY_BROKER_URL=f"redis://127.0.0.1:{closed_port()}/0"):
        response = client.get("/healthz/")
    assert response.status_code == 503
    assert response.json()["down"] == ["celery_broker"]


def test_anonymous_callers_and_room_keys_see_no_error_text_or_timings(client: Client) -> None:
    port = closed_port()
    room_key = ApiKey.issue("room")[1]
    with override_settings(STOMP_URL=f"stomp://admin:secret@127.0.0.1:{port}", CELERY_BROKER_URL=redis_url()):
        for headers in ({}, {"HTTP_AUTHORIZATION": f"Bearer {room_key}"}, {"HTTP_AUTHORIZATION": "Bearer dvc_wrong"}):
            response = client.get("/healthz/", **headers)
            assert response.status_code == 503
            assert response.json() == {"status": "unavailable", "down": ["broker"]}


def test_a_staff_user_sees_the_details(client: Client, member) -> None:
    client.force_login(member)
    with override_settings(STOMP_URL=stomp_url(), CELERY_BROKER_URL=redis_url()):
        assert set(client.get("/healthz/").json()["checks"]) == {"database", "broker", "celery_broker"}


def test_many_calls_check_once_on_the_shared_connection(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    real_connect = shared_module.connect
    monkeypatch.setattr(shared_module, "connect", lambda url, **kw: opened.append(url) or real_connect(url, **kw))
    checked: list[str] = []
    monkeypatch.setitem(health.CHECKS, "celery_broker", lambda: checked.append("celery"))
    with override_settings(STOMP_URL=stomp_url(), CELERY_BROKER_URL=redis_url()):
        shared_module.shared_broker()  # this process's connection, as a web process has it
        opened.clear()
        assert {client.get("/healthz/").status_code for _ in range(50)} == {200}
    assert opened == []  # no new broker connection for any of them
    assert checked == ["celery"]  # one round of checks answered all 50


def test_healthz_takes_only_get(client: Client) -> None:
    assert client.post("/healthz/").status_code == 405
