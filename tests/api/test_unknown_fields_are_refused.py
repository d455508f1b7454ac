"""Every JSON body of the API refuses a field it does not know: a 400 naming it, and the field meant.

A misspelled field used to be ignored: `"filters"` made a subscription that took every event,
`PATCH {"delivery_attemps": 1}` answered 200 and changed nothing. The table below holds one request
per endpoint that reads a body; a test checks that it covers every such operation of the schema.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from django.forms.models import model_to_dict
from django.test import Client

from delivery.models import Delivery, Message
from rooms.models import EventType, Room
from subscriptions.models import Subscription
from tests.callers import call_api
from tests.factories import make_delivery, make_event_type, make_message, make_room, make_subscription
from tests.schema_validation import served_schema

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("live_services")]

EVENT = {"event_type": "order.created", "event_version": "1", "payload": {"order_id": 1}}


def meant(field: str) -> list[str]:
    return [f'Unknown field. Did you mean "{field}"?']


@dataclass(frozen=True)
class Typo:
    """A request to `path` (as the schema writes it) whose body carries one unknown field, and the 400 it gets."""

    method: str
    path: str
    body: dict[str, Any]
    errors: dict[str, Any]
    subscription: str = "push"  # which subscription `{subscription_id}` stands for

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


TYPOS = [
    Typo("post", "/api/v1/rooms/", {"name": "new", "delay_ms": 500}, {"delay_ms": meant("delivery_delay_ms")}),
    Typo("patch", "/api/v1/rooms/{room_id}/", {"delivery_attemps": 1},
         {"delivery_attemps": meant("delivery_attempts")}),
    Typo("post", "/api/v1/rooms/{room_id}/event-types/", {"name": "order.paid", "shema": {"type": "object"}},
         {"shema": meant("schema")}),
    Typo("post", "/api/v1/rooms/{room_id}/subscriptions/",
         {"name": "big", "type": "pull", "filters": {"data": {"total": {"$gte": 100}}}}, {"filters": meant("filter")}),
    Typo("patch", "/api/v1/subscriptions/{subscription_id}/", {"delivery_attemps": 1},
         {"delivery_attemps": meant("delivery_attempts")}),
    Typo("post", "/api/v1/rooms/{room_id}/messages/", {**EVENT, "correlationId": "c-1"},
         {"correlationId": meant("correlation_id")}),
    Typo("post", "/api/v1/rooms/{room_id}/messages/batch/", {"messages": [EVENT], "mesages": []},
         {"mesages": meant("messages")}),
    Typo("post", "/api/v1/subscriptions/{subscription_id}/pull/", {"max_message": 5},
         {"max_message": meant("max_messages")}, subscription="pull"),
    Typo("post", "/api/v1/subscriptions/{subscription_id}/ack/", {"ack_ids": ["1.token"], "lease_ms": 1000},
         {"lease_ms": ["Unknown field. The fields are: ack_ids."]}, subscription="pull"),
    Typo("post", "/api/v1/subscriptions/{subscription_id}/nack/", {"ack_ids": ["1.token"], "delay": 10},
         {"delay": meant("delay_ms")}, subscription="pull"),
    Typo("post", "/api/v1/subscriptions/{subscription_id}/extend/", {"ack_ids": ["1.token"], "lease": 1000},
         {"lease": meant("lease_ms")}, subscription="pull"),
    Typo("post", "/api/v1/subscriptions/{subscription_id}/dead-letters/replay/", {"all": True, "message_id": []},
         {"message_id": meant("message_ids")}),
    Typo("post", "/api/v1/subscriptions/{subscription_id}/dead-letters/purge/", {"all": True, "ALL": True},
         {"ALL": meant("all")}),
    Typo("delete", "/api/v1/subscriptions/{subscription_id}/dead-letters/", {"all": True, "messageIds": []},
         {"messageIds": meant("message_ids")}),
    Typo("post", "/api/v1/subscriptions/{subscription_id}/parked-keys/release/",
         {"ordering_key": "k", "ordering_keys": ["k"]}, {"ordering_keys": meant("ordering_key")}),
    Typo("post", "/api/v1/subscriptions/{subscription_id}/rotate-secret/", {"overlap_second": 0},
         {"overlap_second": meant("overlap_seconds")}),
]


@pytest.fixture
def room() -> Room:
    room = make_room(name="orders")
    make_event_type(room)
    return room


@pytest.fixture
def subscriptions(room: Room) -> dict[str, Subscription]:
    push = make_subscription(room, name="billing", ordering=Subscription.Ordering.PARK)
    make_delivery(make_message(room), push, status=Delivery.Status.DEAD_LETTERED)
    return {"push": push, "pull": make_subscription(room, name="audit", type="pull", push_url="")}


def path_of(typo: Typo, room: Room, subscriptions: dict[str, Subscription]) -> str:
    return typo.path.format(room_id=room.pk, subscription_id=subscriptions[typo.subscription].pk)


def everything() -> list[Any]:
    """What a request could have changed: every room, event type, subscription, message and delivery."""
    return [[model_to_dict(row) for row in model.objects.order_by("pk")]
            for model in (Room, EventType, Subscription, Message, Delivery)]


@pytest.mark.parametrize("typo", TYPOS, ids=str)
def test_an_unknown_field_is_a_400_naming_it_and_the_field_meant(client: Client, admin_key: str, room: Room,
                                                                   subscriptions: dict, typo: Typo) -> None:
    before = everything()
    response = call_api(client, typo.method, path_of(typo, room, subscriptions), typo.body, admin_key)
    assert response.status_code == 400, response.content
    assert response.json() == typo.errors
    assert everything() == before, "a refused request changed something"


@pytest.mark.parametrize("typo", TYPOS, ids=str)
def test_the_same_body_without_the_unknown_field_is_accepted(client: Client, admin_key: str, room: Room,
                                                               subscriptions: dict, typo: Typo) -> None:
    body = {name: value for name, value in typo.body.items() if name not in typo.errors}
    response = call_api(client, typo.method, path_of(typo, room, subscriptions), body, admin_key)
    assert response.status_code < 400 or response.status_code == 409, response.content  # 409: no parked key


def test_every_operation_that_reads_a_body_is_in_the_table() -> None:
    operations = {(method, path) for path, methods in served_schema()["paths"].items()
                  for method, operation in methods.items() if "requestBody" in operation}
    deprecated_delete = ("delete", "/api/v1/subscriptions/{subscription_id}/dead-letters/")  # its body is undocumented
    assert operations | {deprecated_delete} == {(typo.method, typo.path) for typo in TYPOS}


def test_the_errors_of_the_other_fields_are_named_beside_the_unknown_one(client: Client, admin_key: str,
                                                                           room: Room) -> None:
    response = call_api(client, "post", f"/api/v1/rooms/{room.pk}/subscriptions/",
                        {"type": "pul", "Name": "x"}, admin_key)
    assert response.status_code == 400
    assert response.json() == {"name": ["This field is required."], "type": ['"pul" is not a valid choice.'],
                               "Name": meant("name")}


def test_a_misspelled_field_of_an_event_type_filter_is_named_by_its_index(client: Client, admin_key: str,
                                                                           room: Room) -> None:
    body = {"name": "billing", "type": "pull",
            "event_types": [{"name": "order.created"}, {"name": "order.created", "verison": "1"}]}
    response = call_api(client, "post", f"/api/v1/rooms/{room.pk}/subscriptions/", body, admin_key)
    assert response.status_code == 400
    assert response.json() == {"event_types": {"1": {"verison": meant("version")}}}
    assert not Subscription.objects.exists()


def test_a_batch_names_the_index_of_the_item_with_an_unknown_field(client: Client, admin_key: str,
                                                                   room: Room) -> None:
    body = {"messages": [EVENT, EVENT, {**EVENT, "idempotencyKey": "k-1"}, {**EVENT, "payload_": {}}]}
    response = call_api(client, "post", f"/api/v1/rooms/{room.pk}/messages/batch/", body, admin_key)
    assert response.status_code == 400
    assert response.json() == {"messages": {"2": {"idempotencyKey": meant("idempotency_key")},
                                            "3": {"payload_": meant("payload")}}}
    assert not Message.objects.exists()


def test_a_field_with_no_near_miss_is_named_with_the_fields_there_are(client: Client, admin_key: str,
                                                                      subscriptions: dict) -> None:
    response = call_api(client, "post", f"/api/v1/subscriptions/{subscriptions['pull'].pk}/pull/",
                        {"bogus": 1}, admin_key)
    assert response.status_code == 400
    assert response.json() == {"bogus": ["Unknown field. The fields are: lease_ms, max_messages, wait_ms."]}


@pytest.mark.parametrize("kind", ["push", "pull"])
def test_a_subscription_read_and_sent_back_whole_is_accepted(client: Client, admin_key: str, subscriptions: dict,
                                                             kind: str) -> None:
    """Read-only fields (`id`, `status`, `breaker`, …) are the reply's own: sending them back changes nothing."""
    path = f"/api/v1/subscriptions/{subscriptions[kind].pk}/"
    read = call_api(client, "get", path, None, admin_key).json()
    response = call_api(client, "patch", path, {**read, "status": "paused", "id": 999}, admin_key)
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "active" and response.json()["id"] == read["id"]
    assert Subscription.objects.get(pk=read["id"]).status == Subscription.Status.ACTIVE


def test_a_room_read_and_sent_back_whole_is_accepted(client: Client, admin_key: str, room: Room) -> None:
    path = f"/api/v1/rooms/{room.pk}/"
    read = call_api(client, "get", path, None, admin_key).json()
    response = call_api(client, "patch", path, read, admin_key)
    assert response.status_code == 200, response.content
    assert {k: v for k, v in response.json().items() if k != "updated_at"} == {
        k: v for k, v in read.items() if k != "updated_at"}


def test_an_event_type_given_as_a_string_is_told_the_shape(client: Client, admin_key: str, room: Room) -> None:
    body = {"name": "billing", "type": "pull", "event_types": ["order.created"]}
    response = call_api(client, "post", f"/api/v1/rooms/{room.pk}/subscriptions/", body, admin_key)
    assert response.status_code == 400
    assert response.json() == {"event_types": {"0": {"non_field_errors": [
        'Each event type is an object {"name": …, "version": …} (version optional); got a string "order.created".'
    ]}}}


def test_a_batch_item_that_is_not_an_object_is_told_the_shape(client: Client, admin_key: str, room: Room) -> None:
    response = call_api(client, "post", f"/api/v1/rooms/{room.pk}/messages/batch/",
                        {"messages": [EVENT, 7]}, admin_key)
    assert response.status_code == 400
    assert response.json() == {"messages": {"1": {"non_field_errors": [
        ('Expected an object {"event_type": …, "event_version": …, "payload": …, "correlation_id": …, …}; '
         "got the number 7.")
    ]}}}


def test_the_schema_says_request_bodies_take_no_other_fields() -> None:
    schemas = served_schema()["components"]["schemas"]
    for name in ("RoomRequest", "PatchedSubscriptionRequest", "PublishRequest", "EventTypeFilterRequest"):
        assert schemas[name]["additionalProperties"] is False, name
    assert "additionalProperties" not in schemas["Subscription"]  # replies stay open to new fields
    assert json.dumps(schemas["FieldErrors"]).count("Unknown field") >= 1
