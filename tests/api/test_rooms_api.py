"""/api/v1/rooms/ and /rooms/{id}/event-types/: who may do what, validation, conflicts, deletion."""

from __future__ import annotations

from typing import Any

import pytest
from django.forms.models import model_to_dict
from django.test import Client
from django.utils import timezone

from delivery.models import Delivery, Message
from delivery.tasks import delete_queue
from rooms.models import ApiKey, EventType, Room
from subscriptions.models import Subscription
from tests.callers import Caller, call_api
from tests.factories import make_delivery, make_event_type, make_message, make_room, make_subscription

pytestmark = pytest.mark.django_db

ROOM = {"name": "orders", "description": "order events", "message_expiration_ms": 3_600_000,
        "delivery_delay_ms": 1000, "delivery_delay_multiplier": 2.0, "delivery_attempts": 5,
        "max_delivery_delay_ms": 600_000}


@pytest.fixture
def drained(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The queues whose removal was enqueued (the Celery task is not run)."""
    queues: list[str] = []
    monkeypatch.setattr(delete_queue, "delay", queues.append)
    return queues


def room_state(room: Room) -> dict[str, Any] | None:
    fresh = Room.objects.filter(pk=room.pk).first()
    return model_to_dict(fresh) if fresh else None


# ---- who may call what ---------------------------------------------------------------------------

def test_creating_a_room_takes_an_admin_key(client: Client, caller: Caller) -> None:
    response = caller.call(client, "post", "/api/v1/rooms/", ROOM)
    assert response.status_code == caller.expected(201, room_key_may=False)
    assert Room.objects.filter(name="orders").exists() is (response.status_code == 201)


def test_listing_rooms_shows_each_key_only_its_rooms(client: Client, caller: Caller, api_room: Room) -> None:
    make_room(name="elsewhere")
    response = caller.call(client, "get", "/api/v1/rooms/")
    if caller.kind == "no key":
        assert response.status_code == 401
        return
    assert response.status_code == 200
    names = {row["name"] for row in response.json()["results"]}
    if caller.kind == "admin":
        assert names == set(Room.objects.values_list("name", flat=True)) and len(names) == 2
    elif caller.kind == "room key":
        assert names == {api_room.name}
    else:
        assert names == {ApiKey.objects.get(name="other").rooms.get().name}


@pytest.mark.parametrize(
    ("method", "body", "ok", "room_key_may"),
    [
        ("get", None, 200, True),
        ("patch", {"description": "changed"}, 200, False),
        ("delete", None, 200, False),
    ],
)
def test_a_room_is_read_by_its_keys_and_changed_or_deleted_by_admin_keys_only(
    client: Client, caller: Caller, api_room: Room, drained: list[str], method: str, body: object,
    ok: int, room_key_may: bool,
) -> None:
    before = room_state(api_room)
    response = caller.call(client, method, f"/api/v1/rooms/{api_room.pk}/", body)
    assert response.status_code == caller.expected(ok, room_key_may=room_key_may)
    if response.status_code != ok or method == "get":
        assert room_state(api_room) == before  # a refused call changes nothing


@pytest.mark.parametrize(
    ("method", "path", "body", "ok"),
    [
        ("post", "event-types/", {"name": "order.paid", "version": "2"}, 201),
        ("get", "event-types/", None, 200),
        ("get", "event-types/{et}/", None, 200),
        ("delete", "event-types/{et}/", None, 204),
    ],
)
def test_keys_of_the_room_manage_its_event_types(
    client: Client, caller: Caller, api_room: Room, method: str, path: str, body: object, ok: int
) -> None:
    event_type = api_room.event_types.get()
    url = f"/api/v1/rooms/{api_room.pk}/" + path.format(et=event_type.pk)
    before = list(EventType.objects.values())
    response = caller.call(client, method, url, body)
    assert response.status_code == caller.expected(ok)
    if response.status_code != ok or method == "get":
        assert list(EventType.objects.values()) == before


# ---- rooms ---------------------------------------------------------------------------------------

def test_a_created_room_replies_with_its_fields_id_and_address(client: Client, admin_key: str) -> None:
    reply = call_api(client, "post", "/api/v1/rooms/", ROOM, admin_key).json()
    room = Room.objects.get(name="orders")
    assert reply["id"] == room.pk and reply["address"] == f"room-{room.pk}"
    assert {k: reply[k] for k in ROOM} == ROOM


def test_a_new_room_takes_the_default_delivery_settings(client: Client, admin_key: str) -> None:
    reply = call_api(client, "post", "/api/v1/rooms/", {"name": "bare"}, admin_key).json()
    settings = (reply["delivery_delay_ms"], reply["delivery_delay_multiplier"], reply["delivery_attempts"])
    assert settings == (1000, 2.0, 5)
    assert reply["message_expiration_ms"] is None and reply["max_delivery_delay_ms"] is None


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, {"name"}),
        ({"name": "  "}, {"name"}),
        ({"name": "x" * 201}, {"name"}),
        ({"name": "r", "delivery_delay_ms": -1}, {"delivery_delay_ms"}),
        ({"name": "r", "delivery_delay_multiplier": 0.99}, {"delivery_delay_multiplier"}),
        ({"name": "r", "delivery_delay_multiplier": "nan"}, {"delivery_delay_multiplier"}),
        ({"name": "r", "delivery_delay_multiplier": 101}, {"delivery_delay_multiplier"}),
        ({"name": "r", "delivery_attempts": -1}, {"delivery_attempts"}),
        ({"name": "r", "delivery_attempts": 101}, {"delivery_attempts"}),
        ({"name": "r", "message_expiration_ms": -5}, {"message_expiration_ms"}),
        ({"name": "r", "max_delivery_delay_ms": -5}, {"max_delivery_delay_ms"}),
        ({"name": "r", "delivery_delay_ms": 5000, "max_delivery_delay_ms": 4999}, {"max_delivery_delay_ms"}),
        ({"name": "r", "delivery_delay_ms": -1, "delivery_attempts": "many"},
         {"delivery_delay_ms", "delivery_attempts"}),
    ],
)
def test_invalid_room_settings_are_400_naming_each_field(client: Client, admin_key: str, body: dict,
                                                        fields: set[str]) -> None:
    response = call_api(client, "post", "/api/v1/rooms/", body, admin_key)
    assert response.status_code == 400
    assert set(response.json()) == fields
    assert not Room.objects.exists()


@pytest.mark.parametrize("expiration", [0, None])
def test_an_expiration_of_zero_or_null_means_messages_never_expire(client: Client, admin_key: str,
                                                                   expiration: int | None) -> None:
    body = {"name": "forever", "message_expiration_ms": expiration}
    assert call_api(client, "post", "/api/v1/rooms/", body, admin_key).status_code == 201
    assert Room.objects.get(name="forever").expires_at(timezone.now()) is None


def test_a_cap_equal_to_the_delay_is_a_fixed_delay_and_allowed(client: Client, admin_key: str) -> None:
    body = {"name": "fixed", "delivery_delay_ms": 500, "max_delivery_delay_ms": 500}
    assert call_api(client, "post", "/api/v1/rooms/", body, admin_key).status_code == 201


def test_raising_the_delay_above_the_existing_cap_is_400(client: Client, admin_key: str) -> None:
    room = make_room(delivery_delay_ms=100, max_delivery_delay_ms=1000)
    response = call_api(client, "patch", f"/api/v1/rooms/{room.pk}/", {"delivery_delay_ms": 2000}, admin_key)
    assert response.status_code == 400
    assert "at least delivery_delay_ms (2000)" in response.json()["max_delivery_delay_ms"][0]


def test_a_taken_room_name_is_409_naming_the_name(client: Client, admin_key: str) -> None:
    make_room(name="orders")
    response = call_api(client, "post", "/api/v1/rooms/", ROOM, admin_key)
    assert response.status_code == 409
    assert response.json() == {"name": ["a room named 'orders' already exists"]}


def test_renaming_a_room_to_a_taken_name_is_409_and_keeping_its_own_name_is_fine(client: Client,
                                                                                 admin_key: str) -> None:
    make_room(name="taken")
    room = make_room(name="mine")
    path = f"/api/v1/rooms/{room.pk}/"
    assert call_api(client, "patch", path, {"name": "taken"}, admin_key).status_code == 409
    assert call_api(client, "patch", path, {"name": "mine", "description": "d"}, admin_key).status_code == 200


def test_invalid_input_is_reported_before_a_taken_name(client: Client, admin_key: str) -> None:
    make_room(name="orders")
    response = call_api(client, "post", "/api/v1/rooms/", {**ROOM, "delivery_delay_ms": -1}, admin_key)
    assert response.status_code == 400 and set(response.json()) == {"delivery_delay_ms"}


def test_patch_changes_only_the_fields_given(client: Client, admin_key: str) -> None:
    room = make_room(description="old", delivery_attempts=3)
    reply = call_api(client, "patch", f"/api/v1/rooms/{room.pk}/", {"description": "new"}, admin_key).json()
    assert (reply["description"], reply["delivery_attempts"]) == ("new", 3)


def test_put_is_not_offered(client: Client, admin_key: str) -> None:
    room = make_room()
    assert call_api(client, "put", f"/api/v1/rooms/{room.pk}/", ROOM, admin_key).status_code == 405


def test_new_room_delivery_settings_reach_the_retries_of_its_subscriptions(client: Client, admin_key: str) -> None:
    room = make_room(delivery_delay_ms=1000, delivery_delay_multiplier=2.0)
    subscription = make_subscription(room)
    assert subscription.retry_policy.delay_after(1) == 2000
    body = {"delivery_delay_ms": 300, "delivery_delay_multiplier": 3.0}
    assert call_api(client, "patch", f"/api/v1/rooms/{room.pk}/", body, admin_key).status_code == 200
    # A push session rereads its subscription and room every second, then schedules with this policy.
    subscription.refresh_from_db()
    subscription.room.refresh_from_db()
    assert subscription.retry_policy.delay_after(1) == 900


def test_rooms_are_filtered_ordered_and_paginated(client: Client, admin_key: str) -> None:
    for name in ("alpha", "beta", "gamma", "delta-orders"):
        make_room(name=name)
    assert [r["name"] for r in call_api(client, "get", "/api/v1/rooms/", None, admin_key).json()["results"]] == [
        "alpha", "beta", "delta-orders", "gamma"]
    searched = call_api(client, "get", "/api/v1/rooms/", {"search": "ORDERS"}, admin_key).json()["results"]
    assert [r["name"] for r in searched] == ["delta-orders"]
    exact = call_api(client, "get", "/api/v1/rooms/", {"name": "beta"}, admin_key).json()["results"]
    assert [r["name"] for r in exact] == ["beta"]
    first = call_api(client, "get", "/api/v1/rooms/", {"ordering": "-name", "page_size": "3"}, admin_key).json()
    assert [r["name"] for r in first["results"]] == ["gamma", "delta-orders", "beta"]
    rest = client.get(first["next"], HTTP_AUTHORIZATION=f"Bearer {admin_key}").json()
    assert [r["name"] for r in rest["results"]] == ["alpha"] and rest["next"] is None


def test_deleting_a_room_deletes_what_it_holds_and_drains_its_queues(
    client: Client, admin_key: str, drained: list[str], django_capture_on_commit_callbacks
) -> None:
    room = make_room()
    subscription = make_subscription(room)
    make_delivery(make_message(room), subscription, status="queued")
    with django_capture_on_commit_callbacks(execute=True):
        response = call_api(client, "delete", f"/api/v1/rooms/{room.pk}/", None, admin_key)
    assert response.status_code == 200
    assert response.json() == {
        "id": room.pk, "subscriptions_deleted": 1, "messages_deleted": 1,
        "detail": f"room {room.pk} is deleted with its event types, 1 subscription(s) and 1 message(s) "
                  "and their log; nothing more will be delivered from it",
    }
    assert not Room.objects.filter(pk=room.pk).exists()
    assert not Subscription.objects.exists() and not Message.objects.exists() and not Delivery.objects.exists()
    assert drained == [subscription.destination]


def test_a_deleted_rooms_key_no_longer_reaches_it(client: Client, admin_key: str, drained: list[str]) -> None:
    room = make_room()
    room_key = ApiKey.issue("room", rooms=[room])[1]
    call_api(client, "delete", f"/api/v1/rooms/{room.pk}/", None, admin_key)
    assert call_api(client, "get", f"/api/v1/rooms/{room.pk}/", None, room_key).status_code == 404
    assert call_api(client, "get", "/api/v1/rooms/", None, room_key).json()["results"] == []


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/v1/rooms/{missing}/"),
        ("patch", "/api/v1/rooms/{missing}/"),
        ("delete", "/api/v1/rooms/{missing}/"),
        ("get", "/api/v1/rooms/{missing}/event-types/"),
        ("post", "/api/v1/rooms/{missing}/event-types/"),
        ("get", "/api/v1/rooms/{room}/event-types/{missing}/"),
        ("delete", "/api/v1/rooms/{room}/event-types/{missing}/"),
        ("get", "/api/v1/rooms/{other}/event-types/{et}/"),  # an event type of another room
    ],
)
def test_unknown_ids_are_404(client: Client, admin_key: str, api_room: Room, method: str, path: str) -> None:
    url = path.format(missing=999_999_999, room=api_room.pk, other=make_room().pk,
                      et=api_room.event_types.get().pk)
    response = call_api(client, method, url, {"name": "x"} if method != "get" else None, admin_key)
    assert response.status_code == 404


@pytest.mark.parametrize("path", ["/api/v1/rooms/", "/api/v1/rooms/{room}/event-types/"])
def test_a_body_over_256_kib_is_413(client: Client, admin_key: str, api_room: Room, path: str) -> None:
    body = {"name": "big", "description": "x" * (256 * 1024), "schema": {"description": "x" * (256 * 1024)}}
    response = call_api(client, "post", path.format(room=api_room.pk), body, admin_key)
    assert response.status_code == 413


# ---- event types ---------------------------------------------------------------------------------

def test_an_event_type_version_defaults_to_1(client: Client, admin_key: str, api_room: Room) -> None:
    reply = call_api(client, "post", f"/api/v1/rooms/{api_room.pk}/event-types/", {"name": "order.paid"},
                     admin_key).json()
    assert (reply["room"], reply["name"], reply["version"], reply["schema"]) == (api_room.pk, "order.paid", "1", None)


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "objekt"}, "not a valid JSON Schema: type"),
        ({"properties": {"id": {"minimum": "zero"}}}, "not a valid JSON Schema: properties/id/minimum"),
        (True, "must be a JSON object"),
        ([], "must be a JSON object"),
    ],
)
def test_a_schema_that_is_not_a_json_schema_is_400_naming_schema(client: Client, admin_key: str, api_room: Room,
                                                                schema: object, message: str) -> None:
    body = {"name": "order.paid", "schema": schema}
    response = call_api(client, "post", f"/api/v1/rooms/{api_room.pk}/event-types/", body, admin_key)
    assert response.status_code == 400
    assert message in response.json()["schema"][0]


def test_a_nul_character_anywhere_in_a_body_is_400_naming_where(client: Client, admin_key: str,
                                                                api_room: Room) -> None:
    body = {"name": "order.paid", "schema": {"description": "a\x00b"}}
    response = call_api(client, "post", f"/api/v1/rooms/{api_room.pk}/event-types/", body, admin_key)
    assert response.status_code == 400
    assert "the string at schema/description holds a NUL character" in response.json()["detail"]


def test_a_schema_given_to_an_event_type_is_enforced_on_publish(client: Client, admin_key: str,
                                                               api_room: Room) -> None:
    schema = {"type": "object", "required": ["amount"], "properties": {"amount": {"type": "number"}}}
    body = {"name": "order.paid", "version": "2", "schema": schema}
    reply = call_api(client, "post", f"/api/v1/rooms/{api_room.pk}/event-types/", body, admin_key)
    assert reply.json()["schema"] == schema
    event = {"event_type": "order.paid", "event_version": "2", "payload": {"amount": "lots"}}
    response = call_api(client, "post", f"/api/v1/rooms/{api_room.pk}/messages/", event, admin_key)
    assert response.status_code == 400 and "payload" in response.json()


def test_a_taken_event_type_name_and_version_is_409(client: Client, admin_key: str, api_room: Room) -> None:
    path = f"/api/v1/rooms/{api_room.pk}/event-types/"
    response = call_api(client, "post", path, {"name": "order.created", "version": "1"}, admin_key)
    assert response.status_code == 409
    assert "already has event type 'order.created' version '1'" in response.json()["name"][0]
    assert call_api(client, "post", path, {"name": "order.created", "version": "2"}, admin_key).status_code == 201
    other = f"/api/v1/rooms/{make_room().pk}/event-types/"
    assert call_api(client, "post", other, {"name": "order.created", "version": "1"}, admin_key).status_code == 201


def test_event_types_are_listed_filtered_and_ordered(client: Client, admin_key: str, api_room: Room) -> None:
    make_event_type(api_room, name="order.created", version="2")
    make_event_type(api_room, name="order.paid")
    make_event_type(make_room(), name="elsewhere")
    path = f"/api/v1/rooms/{api_room.pk}/event-types/"
    listed = call_api(client, "get", path, None, admin_key).json()["results"]
    assert [(r["name"], r["version"]) for r in listed] == [("order.created", "1"), ("order.created", "2"),
                                                           ("order.paid", "1")]
    named = call_api(client, "get", path, {"name": "order.created", "version": "2"}, admin_key).json()["results"]
    assert [(r["name"], r["version"]) for r in named] == [("order.created", "2")]
    newest = call_api(client, "get", path, {"ordering": "-created_at"}, admin_key).json()["results"]
    assert newest[0]["name"] == "order.paid"


def test_a_deleted_event_type_can_no_longer_be_published(client: Client, admin_key: str, api_room: Room) -> None:
    event_type = api_room.event_types.get()
    path = f"/api/v1/rooms/{api_room.pk}/event-types/{event_type.pk}/"
    assert call_api(client, "delete", path, None, admin_key).status_code == 204
    event = {"event_type": "order.created", "event_version": "1", "payload": {}}
    assert call_api(client, "post", f"/api/v1/rooms/{api_room.pk}/messages/", event, admin_key).status_code == 400
