"""Rooms in the web UI: list, create, edit the delivery settings, event types, delete."""

from __future__ import annotations

import pytest
from django.test import Client

from rooms.models import EventType, Room
from tests.factories import make_event_type, make_room, make_subscription

pytestmark = pytest.mark.django_db

ROOM_FIELDS = {"name": "orders", "description": "shop events", "delivery_delay_ms": "500",
               "delivery_delay_multiplier": "2", "delivery_attempts": "4", "max_delivery_delay_ms": "",
               "message_expiration_ms": "60000"}


def test_the_list_shows_each_room_with_its_counts(staff_client: Client) -> None:
    room = make_room(name="orders")
    make_event_type(room)
    make_subscription(room)
    make_subscription(room)
    make_room(name="payments")

    response = staff_client.get("/rooms/")

    counts = {room.name: (room.event_type_count, room.subscription_count) for room in response.context["page"]}
    assert counts == {"orders": (1, 2), "payments": (0, 0)}
    assert "orders" in response.content.decode() and "payments" in response.content.decode()


def test_a_new_room_is_created_with_its_delivery_settings(staff_client: Client) -> None:
    response = staff_client.post("/rooms/new/", ROOM_FIELDS)

    room = Room.objects.get(name="orders")
    assert response.status_code == 302 and response["Location"] == f"/rooms/{room.pk}/"
    assert (room.delivery_delay_ms, room.delivery_delay_multiplier, room.delivery_attempts) == (500, 2.0, 4)
    assert room.max_delivery_delay_ms is None and room.message_expiration_ms == 60_000
    assert "Room orders created" in staff_client.get(response["Location"]).content.decode()


@pytest.mark.parametrize(("change", "field", "message"), [
    ({"name": ""}, "name", "This field is required."),
    ({"delivery_delay_multiplier": "0.5"}, "delivery_delay_multiplier", "greater than or equal to 1"),
    ({"delivery_delay_multiplier": "nan"}, "delivery_delay_multiplier", "Enter a"),
    ({"delivery_attempts": "101"}, "delivery_attempts", "less than or equal to 100"),
    ({"max_delivery_delay_ms": "100"}, "max_delivery_delay_ms", "Must be at least the delay (500 ms)"),
])
def test_a_bad_room_is_refused_with_the_error_beside_its_field(staff_client: Client, change: dict, field: str,
                                                               message: str) -> None:
    response = staff_client.post("/rooms/new/", {**ROOM_FIELDS, **change})

    assert response.status_code == 200
    assert message in response.content.decode()
    assert field in response.context["form"].errors
    assert not Room.objects.exists()


def test_a_taken_room_name_is_refused(staff_client: Client) -> None:
    make_room(name="orders")
    response = staff_client.post("/rooms/new/", ROOM_FIELDS)
    assert "Room with this Name already exists." in response.content.decode()
    assert Room.objects.count() == 1


def test_editing_a_room_changes_its_settings(staff_client: Client) -> None:
    room = make_room(name="orders")
    form = staff_client.get(f"/rooms/{room.pk}/edit/")
    assert 'value="orders"' in form.content.decode()

    response = staff_client.post(f"/rooms/{room.pk}/edit/", {**ROOM_FIELDS, "delivery_attempts": "0"})

    assert response.status_code == 302
    room.refresh_from_db()
    assert room.delivery_attempts == 0 and room.delivery_delay_ms == 500


def test_the_room_page_shows_event_types_subscriptions_and_the_schedule(staff_client: Client) -> None:
    room = make_room(name="orders", delivery_delay_ms=1000, delivery_delay_multiplier=2, delivery_attempts=2)
    make_event_type(room, name="order.created", schema={"type": "object"})
    make_subscription(room, name="billing")

    html = staff_client.get(f"/rooms/{room.pk}/").content.decode()

    assert "order.created" in html and "JSON Schema" in html and "billing" in html
    assert "+2 s" in html and "+6 s" in html and "dead-lettered" in html


def test_an_event_type_is_added_to_the_room(staff_client: Client) -> None:
    room = make_room()
    response = staff_client.post(f"/rooms/{room.pk}/event-types/",
                                 {"name": "order.paid", "version": "2", "schema": '{"type": "object"}'})

    assert response.status_code == 302
    event_type = EventType.objects.get(room=room)
    assert (event_type.name, event_type.version, event_type.schema) == ("order.paid", "2", {"type": "object"})


@pytest.mark.parametrize(("fields", "message"), [
    ({"name": "order.created", "version": "1", "schema": ""}, "This room already has order.created version 1."),
    ({"name": "x", "version": "1", "schema": "{not json"}, "Enter a valid JSON."),
    ({"name": "x", "version": "1", "schema": "[1]"}, "Must be a JSON object"),
    ({"name": "x", "version": "1", "schema": '{"type": 12}'}, "Not a valid JSON Schema"),
    ({"name": "", "version": "1", "schema": ""}, "This field is required."),
])
def test_a_bad_event_type_shows_the_room_again_with_the_error(staff_client: Client, fields: dict,
                                                              message: str) -> None:
    room = make_room()
    make_event_type(room, name="order.created", version="1")

    response = staff_client.post(f"/rooms/{room.pk}/event-types/", fields)

    assert response.status_code == 200
    assert message in response.content.decode()
    assert EventType.objects.filter(room=room).count() == 1


def test_deleting_a_room_asks_first_then_removes_it(staff_client: Client) -> None:
    room = make_room(name="orders")
    make_subscription(room)

    confirm = staff_client.get(f"/rooms/{room.pk}/delete/")
    assert "Delete room orders?" in confirm.content.decode() and Room.objects.filter(pk=room.pk).exists()

    response = staff_client.post(f"/rooms/{room.pk}/delete/")
    assert response.status_code == 302 and response["Location"] == "/rooms/"
    assert not Room.objects.filter(pk=room.pk).exists()


def test_an_unknown_room_is_404(staff_client: Client) -> None:
    assert staff_client.get("/rooms/999999999/").status_code == 404


def test_a_rooms_breaker_defaults_are_edited_and_kept_when_left_empty(staff_client: Client) -> None:
    room = make_room(name="breakers")
    form = staff_client.get(f"/rooms/{room.pk}/edit/").content.decode()
    assert 'name="breaker_failure_threshold"' in form and 'placeholder="10"' in form

    response = staff_client.post(f"/rooms/{room.pk}/edit/", {
        "name": "breakers", "delivery_delay_ms": 1000, "delivery_delay_multiplier": 2, "delivery_attempts": 5,
        "breaker_failure_threshold": 4, "breaker_failure_ratio": "", "breaker_probe_delay_ms": 250})

    assert response.status_code == 302
    room.refresh_from_db()
    assert (room.breaker_failure_threshold, room.breaker_probe_delay_ms) == (4, 250)
    assert (room.breaker_failure_ratio, room.breaker_window_s) == (0.5, 60)  # left empty: kept
