"""A room holds at most DOVECOTE_MAX_EVENT_TYPES_PER_ROOM event types: one more is a 409 (API) or a form error (UI)."""

from __future__ import annotations

import pytest
from django.test import Client, override_settings

from rooms.models import ApiKey, Room
from tests.callers import call_api
from tests.factories import make_room

pytestmark = pytest.mark.django_db


@override_settings(DOVECOTE_MAX_EVENT_TYPES_PER_ROOM=2)
def test_a_room_key_cannot_add_event_types_beyond_the_quota(client: Client) -> None:
    room, other = make_room(), make_room()
    key = ApiKey.issue("tenant", rooms=[room, other])[1]

    def add(target: Room, name: str):
        return call_api(client, "post", f"/api/v1/rooms/{target.pk}/event-types/",
                        {"name": name, "schema": {"type": "object"}}, key)

    assert [add(room, f"type.{n}").status_code for n in range(2)] == [201, 201]
    refused = add(room, "type.2")
    assert refused.status_code == 409
    assert refused.json() == {"room": [(f"room {room.pk} already has 2 event types, the most a room may have "
                                        f"(DOVECOTE_MAX_EVENT_TYPES_PER_ROOM); delete one first")]}
    assert room.event_types.count() == 2
    assert add(other, "type.0").status_code == 201  # the quota is per room
    first = room.event_types.order_by("pk").first()
    assert call_api(client, "delete", f"/api/v1/rooms/{room.pk}/event-types/{first.pk}/", None, key).status_code == 204
    assert add(room, "type.2").status_code == 201


@override_settings(DOVECOTE_MAX_EVENT_TYPES_PER_ROOM=1)
def test_the_console_refuses_an_event_type_beyond_the_quota_in_the_apis_words(client: Client, member) -> None:
    client.force_login(member)
    room = make_room()
    assert client.post(f"/rooms/{room.pk}/event-types/", {"name": "a", "version": "1", "schema": ""}).status_code == 302
    response = client.post(f"/rooms/{room.pk}/event-types/", {"name": "b", "version": "1", "schema": ""})
    assert response.status_code == 200
    assert (f"Room {room.pk} already has 1 event types, the most a room may have (DOVECOTE_MAX_EVENT_TYPES_PER_ROOM); "
            f"delete one first.") in response.content.decode()
    assert list(room.event_types.values_list("name", flat=True)) == ["a"]
