"""Checking payloads against their schemas runs within a budget of steps per publish: no payload runs away."""

from __future__ import annotations

import threading

import pytest
from django.test import Client

from rooms.models import Room
from tests.callers import Response, call_api
from tests.factories import make_event_type, make_room
from tests.schema_attacks import BRANCHING_RECURSION, doubling_schema, nested

pytestmark = pytest.mark.django_db


def publish(client: Client, key: str, room: Room, payload: object):
    body = {"event_type": "order.created", "event_version": "1", "payload": payload}
    return call_api(client, "post", f"/api/v1/rooms/{room.pk}/messages/", body, key)


def publish_batch(client: Client, key: str, room: Room, payloads: list[object]):
    body = {"messages": [{"event_type": "order.created", "event_version": "1", "payload": p} for p in payloads]}
    return call_api(client, "post", f"/api/v1/rooms/{room.pk}/messages/batch/", body, key)


def assert_over_budget(response: Response) -> None:
    assert response.status_code == 400, response.content
    [message] = response.json()["payload"]
    assert "DOVECOTE_SCHEMA_CHECK_STEPS" in message and "more than 250000 steps" in message, message


def test_a_schema_whose_recursion_branches_is_accepted_but_a_deep_payload_is_refused_within_the_budget(
        client: Client, admin_key: str) -> None:
    room = make_room()
    reply = call_api(client, "post", f"/api/v1/rooms/{room.pk}/event-types/",
                     {"name": "order.created", "schema": BRANCHING_RECURSION}, admin_key)
    assert reply.status_code == 201, reply.content  # its cost depends on the payload: nothing to refuse yet
    assert publish(client, admin_key, room, nested(5)).status_code == 202
    assert_over_budget(publish(client, admin_key, room, nested(40)))  # 2^40 checks without the budget


def test_a_costly_schema_stored_before_the_limits_refuses_payloads_within_the_budget(
        client: Client, admin_key: str) -> None:
    room = make_room()
    make_event_type(room, schema=doubling_schema(20))  # as if made before the cost check existed
    assert_over_budget(publish(client, admin_key, room, {}))


def test_the_payloads_of_a_batch_share_one_budget(client: Client, admin_key: str) -> None:
    room = make_room()
    make_event_type(room, schema=BRANCHING_RECURSION)
    payload = nested(12)  # about 8,000 steps: one is cheap, 500 are not
    assert publish(client, admin_key, room, payload).status_code == 202
    response = publish_batch(client, admin_key, room, [payload] * 500)
    assert response.status_code == 400, response.content
    errors = response.json()["messages"]
    assert "0" not in errors and "499" in errors, sorted(errors, key=int)[:5]
    assert "DOVECOTE_SCHEMA_CHECK_STEPS" in errors["499"]["payload"][0]


def test_a_large_ordinary_payload_fits_the_budget(client: Client, admin_key: str) -> None:
    room = make_room()
    line = {"type": "object", "required": ["sku", "qty"],
            "properties": {"sku": {"type": "string", "pattern": "^[A-Z]+$"}, "qty": {"type": "integer", "minimum": 1},
                           "note": {"type": "string"}}}
    make_event_type(room, schema={"type": "object", "required": ["id", "lines"],
                                  "properties": {"id": {"type": "integer"}, "lines": {"type": "array", "items": line}}})
    payload = {"id": 1, "lines": [{"sku": "ABC", "qty": 2, "note": "gift"} for _ in range(5000)]}  # ≈ 200 KB
    assert publish(client, admin_key, room, payload).status_code == 202


@pytest.mark.django_db(transaction=True)  # the publish runs in a thread, on its own connection
def test_unique_items_over_a_mixed_array_is_checked_in_linear_time(client: Client, admin_key: str) -> None:
    room = make_room()
    make_event_type(room, schema={"properties": {"tags": {"uniqueItems": True}}})
    tags = [n if n % 2 else str(n) for n in range(30_000)]  # numbers and strings do not sort: every pair, before
    replies: list[int] = []

    def publish_tags() -> None:
        replies.append(publish(client, admin_key, room, {"tags": tags}).status_code)

    worker = threading.Thread(target=publish_tags, daemon=True)
    worker.start()
    worker.join(timeout=30)  # pairwise, this took minutes
    assert not worker.is_alive(), "the publish is still comparing items after 30 s"
    assert replies == [202]
    response = publish(client, admin_key, room, {"tags": [*tags, 7.0]})  # 7 is item 7; 7.0 equals it
    assert response.status_code == 400
    assert response.json()["payload"] == ["tags: has non-unique elements: items 7 and 30000 are equal"]


@pytest.mark.parametrize(("items", "unique"), [
    ([1, True], True), ([0, False], True), ([1, "1"], True), ([{"a": 1, "b": [2]}, {"b": [2.0], "a": 1.0}], False),
    ([[1, True], [1, 1]], True), ([None, None], False),
])
def test_unique_items_follows_json_schemas_equality(client: Client, admin_key: str, items: list, unique: bool) -> None:
    room = make_room()
    make_event_type(room, schema={"uniqueItems": True})
    assert publish(client, admin_key, room, items).status_code == (202 if unique else 400)


def test_the_walk_of_unevaluated_properties_is_paid_from_the_budget(client: Client, admin_key: str) -> None:
    room = make_room()
    closed = {"unevaluatedProperties": False, "allOf": [{}] * 1500}  # each use walks the 1,500 subschemas
    schema = {"$defs": {"closed": closed}, "items": {"anyOf": [{"$ref": "#/$defs/closed"}] * 5}}
    reply = call_api(client, "post", f"/api/v1/rooms/{room.pk}/event-types/",
                     {"name": "order.created", "schema": schema}, admin_key)
    assert reply.status_code == 201, reply.content  # 7,500 subschemas with references followed: within the limit
    assert publish(client, admin_key, room, [{}]).status_code == 202
    assert_over_budget(publish(client, admin_key, room, [{"a": 1}] * 10_000))  # 75 million visits unbudgeted


def test_a_payload_that_breaks_its_schema_everywhere_names_the_first_hundred_errors(
        client: Client, admin_key: str) -> None:
    room = make_room()
    make_event_type(room, schema={"items": {"type": "string"}})
    response = publish(client, admin_key, room, [0] * 50_000)
    assert response.status_code == 400
    errors = response.json()["payload"]
    assert len(errors) == 101 and errors[0] == "0: 0 is not of type 'string'", errors[:2]
    assert errors[-1] == "(and more: the first 100 errors are shown)"
