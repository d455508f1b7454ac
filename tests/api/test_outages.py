"""While PostgreSQL or the broker is unreachable, publish and pull answer 503 with Retry-After, not 500."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest
from django.db import close_old_connections, connection
from django.test import Client, override_settings

from delivery.publish import COMMITTER
from rooms.models import ApiKey
from tests.factories import make_event_type, make_room, make_subscription
from tests.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("live_services")]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def world():
    room = make_room()
    make_event_type(room)
    subscription = make_subscription(room, type="pull", push_url="")
    return room, subscription, ApiKey.issue("shop", rooms=[room])[1]


@pytest.fixture
def database_through_proxy() -> Iterator[TcpProxy]:
    """Point the database connections of this thread and of the publish group commit at a TCP proxy in front
    of PostgreSQL, to cut them (the settings are shared: each thread's next connection goes through it)."""
    settings_dict = connection.settings_dict
    saved = settings_dict["HOST"], settings_dict["PORT"]
    proxy = TcpProxy((saved[0] or "127.0.0.1", int(saved[1] or 5432)))
    connection.close()
    settings_dict["HOST"], settings_dict["PORT"] = "127.0.0.1", proxy.port
    COMMITTER.reconnect()
    yield proxy
    connection.close()
    settings_dict["HOST"], settings_dict["PORT"] = saved
    COMMITTER.reconnect()
    proxy.close()
    connection.ensure_connection()


def post(client: Client, key: str, path: str, body: dict):
    return client.post(path, json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")


def publish_body() -> dict:
    return {"event_type": "order.created", "event_version": "1", "payload": {"order_id": 1}}


def test_publish_and_pull_answer_503_while_the_database_is_down(client: Client, world,
                                                                 database_through_proxy: TcpProxy) -> None:
    room, subscription, key = world
    assert post(client, key, f"/api/v1/rooms/{room.pk}/messages/", publish_body()).status_code == 202

    database_through_proxy.cut()  # the connection in use dies, as when PostgreSQL restarts
    database_through_proxy.refusing = True  # and new ones fail until it is back
    for path, body in ((f"/api/v1/rooms/{room.pk}/messages/", publish_body()),
                       (f"/api/v1/rooms/{room.pk}/messages/batch/", {"messages": [publish_body()]}),
                       (f"/api/v1/subscriptions/{subscription.pk}/pull/", {"wait_ms": 0})):
        response = post(client, key, path, body)
        assert response.status_code == 503, (path, response.content)
        assert response["Retry-After"] == "5"
        assert response.json() == {"detail": "the database is unreachable; retry in a few seconds"}

    database_through_proxy.refusing = False
    close_old_connections()  # what every request of a real server starts with (Django's test client skips it)
    assert post(client, key, f"/api/v1/rooms/{room.pk}/messages/", publish_body()).status_code == 202


def test_pull_answers_503_while_the_broker_is_unreachable(client: Client, world) -> None:
    _, subscription, key = world
    with override_settings(STOMP_URL=f"stomp://dovecote:dovecote@127.0.0.1:{closed_port()}"):
        response = post(client, key, f"/api/v1/subscriptions/{subscription.pk}/pull/", {"wait_ms": 0})
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert response.json()["detail"] == "the message broker is unreachable; retry in a few seconds"


def test_publish_is_still_accepted_while_the_broker_is_unreachable(client: Client, world) -> None:
    room, _, key = world
    with override_settings(STOMP_URL=f"stomp://dovecote:dovecote@127.0.0.1:{closed_port()}"):
        # The outbox holds it (docs/contract.md#redelivery): nothing acknowledged is lost, so no 503 here.
        assert post(client, key, f"/api/v1/rooms/{room.pk}/messages/", publish_body()).status_code == 202
