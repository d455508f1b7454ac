"""A process keeps its rooms' schemas within DOVECOTE_SCHEMA_CACHE_BYTES, however many large ones rooms hold."""

from __future__ import annotations

import json

import pytest
from django.test import Client, override_settings

from delivery.routing import routing
from rooms import schemas
from rooms.models import ApiKey, EventType, Room
from tests.callers import call_api
from tests.factories import make_room
from tests.schema_attacks import large_schema

pytestmark = pytest.mark.django_db

CACHE_BYTES = 256 * 1024


def publish(client: Client, key: str, room: Room, event_type: str, payload: object):
    body = {"event_type": event_type, "event_version": "1", "payload": payload}
    return call_api(client, "post", f"/api/v1/rooms/{room.pk}/messages/", body, key)


@override_settings(DOVECOTE_SCHEMA_CACHE_BYTES=CACHE_BYTES)
def test_the_validators_kept_stay_within_their_bound_after_many_large_schemas(client: Client) -> None:
    rooms = [make_room(), make_room()]
    key = ApiKey.issue("tenant", rooms=rooms)[1]
    for tag in range(24):  # 24 schemas of 60 KB: 1.4 MB of JSON, five times the bound
        reply = call_api(client, "post", f"/api/v1/rooms/{rooms[tag % 2].pk}/event-types/",
                         {"name": f"type.{tag}", "schema": large_schema(tag)}, key)
        assert reply.status_code == 201, reply.content[:300]
    schemas.VALIDATORS.clear()
    for tag in range(24):
        assert publish(client, key, rooms[tag % 2], f"type.{tag}", {"field_0": "ok"}).status_code == 202
        assert schemas.VALIDATORS.size_bytes <= CACHE_BYTES, (tag, schemas.VALIDATORS.size_bytes)
    assert 1 <= len(schemas.VALIDATORS) <= CACHE_BYTES // 60_000, len(schemas.VALIDATORS)
    # What routing keeps per room holds no schema: each is read when no validator of it is kept.
    for room in rooms:
        room.refresh_from_db()
        kept = routing(room).event_types.values()
        assert kept and all("schema" in event_type.get_deferred_fields() for event_type in kept)
    # The first schema was dropped long ago; it is read again, and still applied.
    response = publish(client, key, rooms[0], "type.0", {"field_0": 7})
    assert response.status_code == 400 and response.json()["payload"] == ["field_0: 7 is not of type 'string'"]


@override_settings(DOVECOTE_SCHEMA_CACHE_BYTES=64 * 1024)
def test_a_schema_larger_than_the_whole_bound_is_applied_but_not_kept(client: Client, admin_key: str) -> None:
    room = make_room()
    schema = large_schema(1, size_bytes=63_000)
    schema["properties"]["field_0"]["maxLength"] = 2
    assert len(json.dumps(schema, separators=(",", ":"))) < 65536
    with override_settings(DOVECOTE_SCHEMA_CACHE_BYTES=32 * 1024):
        reply = call_api(client, "post", f"/api/v1/rooms/{room.pk}/event-types/",
                         {"name": "big", "schema": schema}, admin_key)
        assert reply.status_code == 201
        schemas.VALIDATORS.clear()
        assert publish(client, admin_key, room, "big", {"field_0": "ok"}).status_code == 202
        assert publish(client, admin_key, room, "big", {"field_0": "too long"}).status_code == 400
        assert (len(schemas.VALIDATORS), schemas.VALIDATORS.size_bytes, schemas.VALIDATORS.misses) == (0, 0, 2)


def test_a_schema_changed_after_routing_read_its_type_is_applied_but_not_kept_under_the_old_digest(
        client: Client, admin_key: str) -> None:
    room = make_room()
    call_api(client, "post", f"/api/v1/rooms/{room.pk}/event-types/",
             {"name": "order.created", "schema": {"required": ["a"]}}, admin_key)
    schemas.VALIDATORS.clear()
    [event_type] = routing(room).event_types.values()  # read before the change below
    EventType.objects.filter(pk=event_type.pk).update(schema={"required": ["b"]})  # by hand: no new digest
    assert event_type.schema_errors({"a": 1}) == ["(root): 'b' is a required property"]
    assert len(schemas.VALIDATORS) == 0  # a type with the first schema elsewhere still gets the first schema
