"""/healthz/ reports the database, the STOMP broker and the Celery broker, naming what is down."""

from __future__ import annotations

import socket

import pytest
from django.test import Client, override_settings

from tests.services import redis_url, stomp_url

pytestmark = pytest.mark.django_db


def closed_port() -> int:
    """Return a local port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_all_services_up_answers_200_with_each_state(client: Client) -> None:
    with override_settings(STOMP_URL=stomp_url(), CELERY_BROKER_URL=redis_url()):
        response = client.get("/healthz/")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["status"] == "ok" and body["down"] == []
    assert set(body["checks"]) == {"database", "broker", "celery_broker"}
    assert all(check["ok"] for check in body["checks"].values())


def test_a_stopped_stomp_broker_answers_503_naming_the_broker(client: Client) -> None:
    port = closed_port()
    with override_settings(STOMP_URL=f"stomp://admin:admin@127.0.0.1:{port}", CELERY_BROKER_URL=redis_url()):
        response = client.get("/healthz/")
    assert response.status_code == 503
    body = response.json()
    assert body["down"] == ["broker"]
    assert f"127.0.0.1:{port}" in body["checks"]["broker"]["error"]


def test_a_stopped_celery_broker_answers_503_naming_it(client: Client) -> None:
    with override_settings(STOMP_URL=stomp_url(), CELERY_BROKER_URL=f"redis://127.0.0.1:{closed_port()}/0"):
        response = client.get("/healthz/")
    assert response.status_code == 503
    assert response.json()["down"] == ["celery_broker"]


def test_healthz_takes_only_get(client: Client) -> None:
    assert client.post("/healthz/").status_code == 405
