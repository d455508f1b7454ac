"""A schema that would cost too much to keep or apply is refused when the event type is made, naming the limit."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from rooms.models import Room
from tests.callers import call_api
from tests.factories import make_room
from tests.schema_attacks import doubling_schema, large_schema

pytestmark = pytest.mark.django_db


def add_event_type(client: Client, key: str, room: Room, schema: object, name: str = "order.created"):
    return call_api(client, "post", f"/api/v1/rooms/{room.pk}/event-types/", {"name": name, "schema": schema}, key)


def test_references_that_double_per_level_are_refused_before_any_payload_is_checked(
        client: Client, admin_key: str) -> None:
    room = make_room()
    schema = doubling_schema(15)  # the attack: ≈ 1 KB, 8 s to create, 0.7 s per publish
    assert len(json.dumps(schema)) < 1200
    response = add_event_type(client, admin_key, room, schema)
    assert response.status_code == 400, response.content
    [message] = response.json()["schema"]
    # The cost check names its limit; it runs before the sample payloads are checked against the schema.
    assert "DOVECOTE_SCHEMA_MAX_EXPANDED" in message and "more than 10000 subschemas" in message, message
    assert not room.event_types.exists()


def test_references_that_double_a_few_times_are_accepted(client: Client, admin_key: str) -> None:
    assert add_event_type(client, admin_key, make_room(), doubling_schema(6)).status_code == 201


def test_a_definition_shared_by_many_properties_and_a_recursive_schema_are_accepted(
        client: Client, admin_key: str) -> None:
    room = make_room()
    address = {"type": "object", "properties": {key: {"type": "string"} for key in ("street", "city", "zip")}}
    shared = {"$defs": {"address": address},
              "properties": {f"address_{i}": {"$ref": "#/$defs/address"} for i in range(100)}}
    tree = {"properties": {"value": {"type": "integer"}, "left": {"$ref": "#"}, "right": {"$ref": "#"}}}
    assert add_event_type(client, admin_key, room, shared, "shared").status_code == 201
    assert add_event_type(client, admin_key, room, tree, "tree").status_code == 201


def test_a_schema_over_the_size_limit_is_refused_naming_it(client: Client, admin_key: str) -> None:
    schema = large_schema(1, size_bytes=70_000)
    response = add_event_type(client, admin_key, make_room(), schema)
    assert response.status_code == 400
    [message] = response.json()["schema"]
    assert "DOVECOTE_SCHEMA_MAX_BYTES" in message and "65536" in message, message


def test_a_schema_with_too_many_subschemas_is_refused_naming_the_limit(client: Client, admin_key: str) -> None:
    schema = {"properties": {f"p{i}": {} for i in range(2100)}}
    response = add_event_type(client, admin_key, make_room(), schema)
    assert response.status_code == 400
    [message] = response.json()["schema"]
    assert "2101 subschemas" in message and "DOVECOTE_SCHEMA_MAX_SUBSCHEMAS" in message, message


def test_the_console_refuses_a_costly_schema_in_the_apis_words(client: Client, admin_key: str, member) -> None:
    room = make_room()
    api_message = add_event_type(client, admin_key, room, doubling_schema(15)).json()["schema"][0]
    client.force_login(member)
    response = client.post(f"/rooms/{room.pk}/event-types/",
                           {"name": "x", "version": "1", "schema": json.dumps(doubling_schema(15))})
    assert response.status_code == 200
    assert api_message[1:] in response.content.decode().replace("&#x27;", "'")
    assert not room.event_types.exists()
