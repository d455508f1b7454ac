"""A room's retention (`retention_ms`, null: DOVECOTE_RETENTION) is set through the API and the console,
within its bounds (1 hour .. 3650 days); a value outside them is refused naming the field and the bounds."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client

from rooms.models import Room
from rooms.rules import MAX_RETENTION_MS, MIN_RETENTION_MS
from tests.callers import call_api
from tests.factories import make_room

pytestmark = pytest.mark.django_db

DAY_MS = 24 * 3600 * 1000


def test_a_room_without_retention_keeps_messages_the_default_time(client: Client, admin_key: str, settings) -> None:
    settings.DOVECOTE_RETENTION = 3 * 24 * 3600
    reply = call_api(client, "post", "/api/v1/rooms/", {"name": "orders"}, admin_key)
    assert reply.status_code == 201, reply.content
    assert reply.json()["retention_ms"] is None
    assert Room.objects.get(name="orders").effective_retention == timedelta(days=3)


def test_a_rooms_retention_is_set_and_read_in_ms(client: Client, admin_key: str) -> None:
    reply = call_api(client, "post", "/api/v1/rooms/", {"name": "orders", "retention_ms": 30 * DAY_MS}, admin_key)
    assert reply.status_code == 201, reply.content
    room_id = reply.json()["id"]
    assert call_api(client, "get", f"/api/v1/rooms/{room_id}/", None, admin_key).json()["retention_ms"] == 30 * DAY_MS
    assert Room.objects.get(pk=room_id).effective_retention == timedelta(days=30)
    reply = call_api(client, "patch", f"/api/v1/rooms/{room_id}/", {"retention_ms": None}, admin_key)
    assert reply.status_code == 200 and reply.json()["retention_ms"] is None


@pytest.mark.parametrize(("value", "words"), [
    (MIN_RETENTION_MS - 1, f"greater than or equal to {MIN_RETENTION_MS}"),
    (MAX_RETENTION_MS + 1, f"less than or equal to {MAX_RETENTION_MS}"),
    ("a week", "A valid integer is required"),
])
def test_a_retention_out_of_bounds_is_a_400_naming_the_field(client: Client, admin_key: str, value: object,
                                                              words: str) -> None:
    reply = call_api(client, "post", "/api/v1/rooms/", {"name": "orders", "retention_ms": value}, admin_key)
    assert reply.status_code == 400, reply.content
    assert words in " ".join(reply.json()["retention_ms"]), reply.json()
    assert not Room.objects.exists()


def test_the_api_schema_documents_the_bounds(client: Client) -> None:
    schema = client.get("/api/v1/schema/", {"format": "json"}).json()
    field = schema["components"]["schemas"]["Room"]["properties"]["retention_ms"]
    assert (field["minimum"], field["maximum"], field["nullable"]) == (MIN_RETENTION_MS, MAX_RETENTION_MS, True)


def test_the_console_room_form_sets_the_retention_and_the_room_page_shows_it(staff_client: Client) -> None:
    room = make_room(name="orders")
    fields = {"name": "orders", "delivery_delay_ms": "500", "delivery_delay_multiplier": "2",
              "delivery_attempts": "4", "retention_ms": str(2 * DAY_MS)}
    assert 'name="retention_ms"' in staff_client.get(f"/rooms/{room.pk}/edit/").content.decode()

    refused = staff_client.post(f"/rooms/{room.pk}/edit/", {**fields, "retention_ms": "1000"})
    assert "retention_ms" in refused.context["form"].errors

    assert staff_client.post(f"/rooms/{room.pk}/edit/", fields).status_code == 302
    room.refresh_from_db()
    assert room.retention_ms == 2 * DAY_MS
    page = staff_client.get(f"/rooms/{room.pk}/").content.decode()
    assert "Retention" in page and "2 days" in page, page
