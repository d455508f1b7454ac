"""Bad input to the publish endpoint gets a clear error, and nothing is stored."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from delivery.models import Delivery, Message
from rooms.models import ApiKey
from tests.factories import make_event_type, make_room, make_subscription

pytestmark = pytest.mark.django_db

EVENT = {"event_type": "order.created", "event_version": "1", "payload": {"order_id": 1}}


@pytest.fixture
def room():
    room = make_room()
    make_event_type(room)
    return room


def post(client: Client, room_id: int, body: object, key: str | None, **extra: str):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"} if key else {}
    raw = body if isinstance(body, str) else json.dumps(body)
    return client.post(f"/api/v1/rooms/{room_id}/messages/", raw, content_type="application/json",
                       **headers, **extra)


def test_an_unknown_room_is_404(client: Client, admin_key: str) -> None:
    assert post(client, 999_999, EVENT, admin_key).status_code == 404


def test_a_missing_key_is_401_with_a_bearer_challenge(client: Client, room) -> None:
    response = post(client, room.pk, EVENT, None)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_a_wrong_key_is_401(client: Client, room) -> None:
    assert post(client, room.pk, EVENT, "dvc_not-a-real-key").status_code == 401


def test_a_revoked_key_is_401(client: Client, room) -> None:
    key, plaintext = ApiKey.issue("old", rooms=[room])
    key.revoke()
    assert post(client, room.pk, EVENT, plaintext).status_code == 401


def test_a_key_of_another_room_is_403(client: Client, room) -> None:
    other_key = ApiKey.issue("other", rooms=[make_room()])[1]
    response = post(client, room.pk, EVENT, other_key)
    assert response.status_code == 403
    assert f"room {room.pk}" in response.json()["detail"]


def test_an_unknown_event_type_or_version_is_400_naming_it(client: Client, room, admin_key: str) -> None:
    response = post(client, room.pk, {**EVENT, "event_version": "2"}, admin_key)
    assert response.status_code == 400
    assert "no event type 'order.created' version '2'" in response.json()["event_type"][0]


def test_a_body_that_is_not_json_is_400(client: Client, room, admin_key: str) -> None:
    response = post(client, room.pk, "{not json", admin_key)
    assert response.status_code == 400
    assert "JSON parse error" in response.json()["detail"]


def test_missing_fields_are_each_named(client: Client, room, admin_key: str) -> None:
    response = post(client, room.pk, {"event_type": "order.created"}, admin_key)
    assert response.status_code == 400
    assert set(response.json()) == {"event_version", "payload"}


def test_a_payload_failing_the_schema_is_400_naming_the_field(client: Client, admin_key: str) -> None:
    room = make_room()
    make_event_type(room, schema={"type": "object", "properties": {"order_id": {"type": "integer"}}})
    response = post(client, room.pk, {**EVENT, "payload": {"order_id": "one"}}, admin_key)
    assert response.status_code == 400
    assert response.json()["payload"] == ["order_id: 'one' is not of type 'integer'"]


def test_a_body_over_256_kib_is_413(client: Client, room, admin_key: str) -> None:
    response = post(client, room.pk, {**EVENT, "payload": {"blob": "x" * (256 * 1024)}}, admin_key)
    assert response.status_code == 413
    assert "limit is 262144 bytes" in response.json()["detail"]


def test_rejected_input_stores_nothing(client: Client, room, admin_key: str) -> None:
    make_subscription(room)
    post(client, room.pk, {**EVENT, "event_version": "9"}, admin_key)
    post(client, room.pk, {"payload": 1}, admin_key)
    assert not Message.objects.exists() and not Delivery.objects.exists()


def test_the_correlation_id_header_is_used_when_the_body_has_none(client: Client, room, admin_key: str) -> None:
    response = post(client, room.pk, EVENT, admin_key, HTTP_X_CORRELATION_ID="from-header")
    assert response.status_code == 202
    assert response.json()["correlation_id"] == "from-header"


def test_without_any_correlation_id_a_uuid_is_made(client: Client, room, admin_key: str) -> None:
    reply = post(client, room.pk, EVENT, admin_key).json()
    assert len(reply["correlation_id"]) == 36
