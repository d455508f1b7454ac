"""Batch publish (all or nothing, by index) and idempotency keys (24 h, also under concurrent retries)."""

from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from delivery.models import Delivery, IdempotencyKey, Message
from tests.factories import make_event_type, make_room, make_subscription

EVENT = {"event_type": "order.created", "event_version": "1", "payload": {"order_id": 1}}


@pytest.fixture
def room():
    room = make_room()
    make_event_type(room, schema={"type": "object", "required": ["order_id"]})
    make_subscription(room)
    make_subscription(room, event_types=[{"name": "order.paid"}])
    return room


def post(client: Client, path: str, body: object, key: str):
    return client.post(path, json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")


@pytest.mark.django_db
def test_a_batch_answers_one_reply_per_message_in_order(client: Client, room, admin_key: str) -> None:
    body = {"messages": [{**EVENT, "correlation_id": f"c{i}"} for i in range(5)]}
    response = post(client, f"/api/v1/rooms/{room.pk}/messages/batch/", body, admin_key)
    assert response.status_code == 202
    replies = response.json()["messages"]
    assert [r["correlation_id"] for r in replies] == [f"c{i}" for i in range(5)]
    assert all(len(r["destinations"]) == 1 for r in replies)
    assert Message.objects.count() == 5 and Delivery.objects.count() == 5


@pytest.mark.django_db
def test_one_invalid_item_rejects_the_batch_naming_its_index(client: Client, room, admin_key: str) -> None:
    body = {"messages": [EVENT, EVENT, {**EVENT, "payload": {}}, {**EVENT, "event_version": "7"}, {"payload": 1}]}
    response = post(client, f"/api/v1/rooms/{room.pk}/messages/batch/", body, admin_key)
    assert response.status_code == 400
    errors = response.json()["messages"]
    assert list(errors) == ["2", "3", "4"]
    assert set(errors["4"]) == {"event_type", "event_version"}
    assert errors["2"] == {"payload": ["(root): 'order_id' is a required property"]}
    assert "no event type 'order.created' version '7'" in errors["3"]["event_type"][0]
    assert not Message.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("body", [{"messages": []}, {"messages": [EVENT] * 501}, {}])
def test_an_empty_oversized_or_missing_batch_is_400(client: Client, room, admin_key: str, body) -> None:
    response = post(client, f"/api/v1/rooms/{room.pk}/messages/batch/", body, admin_key)
    assert response.status_code == 400 and "messages" in response.json()


@pytest.mark.django_db
def test_the_same_key_within_24_hours_returns_the_first_reply_and_sends_nothing(
    client: Client, room, admin_key: str
) -> None:
    first = post(client, f"/api/v1/rooms/{room.pk}/messages/", {**EVENT, "idempotency_key": "k1"}, admin_key).json()
    again = post(client, f"/api/v1/rooms/{room.pk}/messages/",
                 {**EVENT, "idempotency_key": "k1", "payload": {"order_id": 2}}, admin_key).json()
    assert again == first
    assert Message.objects.count() == 1 and Delivery.objects.count() == 1


@pytest.mark.django_db
def test_a_key_older_than_24_hours_publishes_anew(client: Client, room, admin_key: str) -> None:
    first = post(client, f"/api/v1/rooms/{room.pk}/messages/", {**EVENT, "idempotency_key": "k1"}, admin_key).json()
    IdempotencyKey.objects.update(created_at=timezone.now() - timedelta(hours=25))
    later = post(client, f"/api/v1/rooms/{room.pk}/messages/", {**EVENT, "idempotency_key": "k1"}, admin_key).json()
    assert later["message_id"] != first["message_id"]


@pytest.mark.django_db
def test_keys_are_per_room(client: Client, room, admin_key: str) -> None:
    other = make_room()
    make_event_type(other)
    a = post(client, f"/api/v1/rooms/{room.pk}/messages/", {**EVENT, "idempotency_key": "k"}, admin_key).json()
    b = post(client, f"/api/v1/rooms/{other.pk}/messages/", {**EVENT, "idempotency_key": "k"}, admin_key).json()
    assert a["message_id"] != b["message_id"]


@pytest.mark.django_db
def test_a_key_repeated_inside_a_batch_is_published_once(client: Client, room, admin_key: str) -> None:
    body = {"messages": [{**EVENT, "idempotency_key": "k"}, {**EVENT, "idempotency_key": "k"}, EVENT]}
    replies = post(client, f"/api/v1/rooms/{room.pk}/messages/batch/", body, admin_key).json()["messages"]
    assert replies[0] == replies[1] and replies[2]["message_id"] != replies[0]["message_id"]
    assert Message.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_concurrent_retries_with_one_key_publish_once(room, admin_key: str) -> None:
    replies: list[dict] = []
    start = threading.Barrier(8)

    def retry() -> None:
        start.wait()
        try:
            response = post(Client(), f"/api/v1/rooms/{room.pk}/messages/", {**EVENT, "idempotency_key": "race"},
                            admin_key)
            replies.append(response.json() | {"status": response.status_code})
        finally:
            connection.close()

    threads = [threading.Thread(target=retry) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {r["status"] for r in replies} == {202}
    assert len({r["message_id"] for r in replies}) == 1
    assert Message.objects.count() == 1 and Delivery.objects.count() == 1
