"""Payload filters: each operator, nesting, missing paths and JSON types, through the real publish path."""

from __future__ import annotations

import html

import pytest
from django.test import Client

from delivery import routing as routing_module
from delivery.models import Delivery
from rooms.models import Room
from subscriptions import filters
from subscriptions.models import Subscription
from tests.callers import call_api
from tests.factories import make_event_type, make_room, make_subscription

pytestmark = pytest.mark.django_db

PAYLOAD = {
    "total": 120, "ratio": 0.5, "country": "FR", "vip": True, "note": None, "placed_at": "2026-11-23T10:00:00Z",
    "customer": {"id": "cus_42", "tier": "gold", "address": {"city": "Lyon"}},
    "items": [{"sku": "A-1", "qty": 2}, {"sku": "B-7", "qty": 1}],
}

# (filter, whether an order.created v1 event with PAYLOAD and correlation id "vip-7" in room "orders" passes it)
MATRIX = [
    ({"data": {"country": "FR"}}, True),
    ({"data": {"country": "DE"}}, False),
    ({"data": {"country": {"$eq": "FR"}}}, True),
    ({"data": {"total": 120.0}}, True),  # numbers compare as numbers
    ({"data": {"total": "120"}}, False),  # a string is not a number
    ({"data": {"vip": 1}}, False),  # a boolean is not a number
    ({"data": {"vip": True}}, True),
    ({"data": {"note": None}}, True),  # present and null
    ({"data": {"absent": None}}, False),  # missing is not null
    ({"data": {"country": {"$neq": "DE"}}}, True),
    ({"data": {"country": {"$neq": "FR"}}}, False),
    ({"data": {"absent": {"$neq": "FR"}}}, False),  # every operator but $exist is false on a missing field
    ({"$not": {"data": {"absent": "FR"}}}, True),  # "absent or different"
    ({"data": {"total": {"$gt": 119}}}, True),
    ({"data": {"total": {"$gt": 120}}}, False),
    ({"data": {"total": {"$gte": 120}}}, True),
    ({"data": {"total": {"$lt": 120}}}, False),
    ({"data": {"total": {"$lte": 120}}}, True),
    ({"data": {"ratio": {"$gt": 0.25, "$lt": 0.75}}}, True),  # two operators on one field: both
    ({"data": {"total": {"$gt": "100"}}}, False),  # a number is not ordered against a string
    ({"data": {"country": {"$gt": 5}}}, False),
    ({"data": {"placed_at": {"$gte": "2026-11-23T00:00:00Z"}}}, True),  # strings by code point
    ({"data": {"placed_at": {"$lt": "2026-11-23T00:00:00Z"}}}, False),
    ({"data": {"absent": {"$lt": 5}}}, False),
    ({"data": {"country": {"$in": ["DE", "FR"]}}}, True),
    ({"data": {"country": {"$in": ["DE", "IT"]}}}, False),
    ({"data": {"total": {"$in": [120.0, 7]}}}, True),
    ({"data": {"vip": {"$in": [1, "true"]}}}, False),
    ({"data": {"customer": {"$in": ["gold"]}}}, False),  # an object is in no list of values
    ({"data": {"customer": {"id": {"$startsWith": "cus_"}}}}, True),
    ({"data": {"customer": {"id": {"$startsWith": "acct_"}}}}, False),
    ({"data": {"total": {"$startsWith": "12"}}}, False),  # only strings start with anything
    ({"data": {"note": {"$exist": True}}}, True),  # null is there
    ({"data": {"absent": {"$exist": True}}}, False),
    ({"data": {"absent": {"$exist": False}}}, True),
    ({"data": {"customer": {"address": {"city": "Lyon"}}}}, True),  # nested fields
    ({"data": {"customer": {"address": {"zip": {"$exist": False}}}}}, True),
    ({"data": {"total": {"cents": {"$exist": True}}}}, False),  # a field of a number is missing
    ({"data": {"items": {"1": {"sku": "B-7"}}}}, True),  # an index into a list
    ({"data": {"items": {"2": {"$exist": True}}}}, False),
    ({"data": {"items": {"sku": "A-1"}}}, False),  # a name into a list is missing
    ({"data": {"country": "FR", "total": {"$gt": 500}}}, False),  # sibling keys: and
    ({"$and": [{"data": {"country": "FR"}}, {"data": {"vip": True}}]}, True),
    ({"$and": [{"data": {"country": "FR"}}, {"data": {"vip": False}}]}, False),
    ({"$or": [{"data": {"country": "DE"}}, {"data": {"total": {"$gte": 100}}}]}, True),
    ({"$or": [{"data": {"country": "DE"}}, {"data": {"total": {"$gte": 1000}}}]}, False),
    ({"$not": {"data": {"country": "FR"}}}, False),
    ({"data": {"$or": [{"country": "DE"}, {"customer": {"tier": "gold"}}]}}, True),  # connectives at a field
    ({"data": {"total": {"$not": {"$lt": 100}}}}, True),
    ({"$or": [{"$and": [{"data": {"vip": True}}, {"$not": {"data": {"country": {"$in": ["FR"]}}}}]},
              {"$not": {"$or": [{"data": {"total": {"$lt": 50}}}, {"data": {"absent": {"$exist": True}}}]}}]}, True),
    ({"type": "order.created", "version": "1"}, True),  # the event's attributes
    ({"type": {"$startsWith": "order.ship"}}, False),
    ({"version": {"$in": ["2", "3"]}}, False),
    ({"correlation_id": {"$startsWith": "vip-"}}, True),
    ({"room": "orders"}, True),
    ({"room": "returns"}, False),
]


@pytest.fixture
def room() -> Room:
    room = make_room(name="orders")
    make_event_type(room)
    return room


def publish(client: Client, room: Room, key: str, payload: object = PAYLOAD, correlation_id: str = "vip-7") -> dict:
    event = {"event_type": "order.created", "event_version": "1", "payload": payload,
             "correlation_id": correlation_id}
    response = call_api(client, "post", f"/api/v1/rooms/{room.pk}/messages/", event, key)
    assert response.status_code == 202, response.content
    return response.json()


@pytest.mark.parametrize(("spec", "expected"), MATRIX, ids=[str(i) for i in range(len(MATRIX))])
def test_a_publish_reaches_a_filtered_subscription_only_when_the_event_passes(client: Client, room: Room,
                                                                           admin_key: str, spec: dict,
                                                                           expected: bool) -> None:
    created = call_api(client, "post", f"/api/v1/rooms/{room.pk}/subscriptions/",
                       {"name": "filtered", "type": "pull", "filter": spec}, admin_key)
    assert created.status_code == 201, created.content
    assert created.json()["filter"] == spec
    reply = publish(client, room, admin_key)
    assert reply["destination_count"] == (1 if expected else 0)
    statuses = list(Delivery.objects.filter(message_id=reply["message_id"]).values_list("status", flat=True))
    assert statuses == (["pending"] if expected else ["unroutable"])  # a non-matching event takes no queue space


def test_only_the_subscriptions_whose_filters_pass_get_the_event(client: Client, room: Room, admin_key: str) -> None:
    big = make_subscription(room, type="pull", payload_filter={"data": {"total": {"$gte": 100}}})
    make_subscription(room, type="pull", payload_filter={"data": {"total": {"$lt": 100}}})
    everything = make_subscription(room, type="pull")
    reply = publish(client, room, admin_key)
    assert sorted(d["subscription_id"] for d in reply["destinations"]) == [big.pk, everything.pk]


def test_batch_publish_filters_each_event(client: Client, room: Room, admin_key: str) -> None:
    make_subscription(room, type="pull", payload_filter={"data": {"total": {"$gte": 100}}})
    events = [{"event_type": "order.created", "event_version": "1", "payload": {"total": total}}
              for total in (50, 150, 99, 100)]
    reply = call_api(client, "post", f"/api/v1/rooms/{room.pk}/messages/batch/", {"messages": events}, admin_key)
    assert [m["destination_count"] for m in reply.json()["messages"]] == [0, 1, 0, 1]


def test_a_filter_is_compiled_once_per_routing_version_not_per_event(client: Client, room: Room, admin_key: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = []
    real = routing_module.compile_filter
    monkeypatch.setattr(routing_module, "compile_filter", lambda spec: compiled.append(spec) or real(spec))
    subscription = make_subscription(room, type="pull", payload_filter={"data": {"total": {"$gte": 100}}})
    for _ in range(5):
        publish(client, room, admin_key)
    assert len(compiled) == 1
    subscription.payload_filter = {"data": {"total": {"$gte": 1000}}}
    subscription.save()  # raises the room's routing version
    assert publish(client, room, admin_key)["destination_count"] == 0
    assert len(compiled) == 2


def test_a_stored_filter_that_breaks_the_rules_matches_nothing_and_publish_still_works(
    client: Client, room: Room, admin_key: str
) -> None:
    make_subscription(room, type="pull", payload_filter={"data": {"total": {"$regex": ".*"}}})  # not via the API
    good = make_subscription(room, type="pull")
    reply = publish(client, room, admin_key)
    assert [d["subscription_id"] for d in reply["destinations"]] == [good.pk]


# -- validation: each fault named by its JSON path ---------------------------------------------------------

DEEP: dict = {"data": {}}
_node = DEEP["data"]
for _ in range(8):
    _node["x"] = {}
    _node = _node["x"]
_node["y"] = 1

FAULTS = [
    ([], "$: a filter is a JSON object (or null for none), not a list"),
    ({}, "$: an empty object matches everything; leave it out (null: no filter)"),
    ({"data": {"total": {"$gt": True}}}, "$.data.total.$gt: $gt takes a number or a string, not a boolean"),
    ({"data": {"total": {"$lte": None}}}, "$.data.total.$lte: $lte takes a number or a string, not null"),
    ({"data": {"x": {"$regex": "a"}}}, "$.data.x.$regex: unknown operator '$regex' (known: "),
    ({"data": {"x": {"$startswith": "a"}}},  # the same but for case comes first
     "$.data.x.$startswith: unknown operator '$startswith'; did you mean \"$startsWith\"?"),
    ({"data": {"x": {"$exists": True}}}, "$.data.x.$exists: unknown operator '$exists'; did you mean \"$exist\"?"),
    ({"payload": {"total": 1}},
     ("$.payload: the event has no field 'payload' (its fields: type, version, room, correlation_id, data; the "
     "payload is under data)")),
    ({"$not": {"Data": {"x": 1}}}, "$.$not.Data: the event has no field 'Data'; did you mean \"data\"?"),
    ({"$or": [{"correlationid": "c"}]},
     "$.$or[0].correlationid: the event has no field 'correlationid'; did you mean \"correlation_id\"?"),
    ({"$or": []}, "$.$or: $or takes a non-empty list of objects, not a list"),
    ({"$and": {"data": {"x": 1}}}, "$.$and: $and takes a non-empty list of objects, not an object"),
    ({"$or": [{"data": {"x": 1}}, 5]}, "$.$or[1]: expected an object of fields and operators, not a number"),
    ({"$not": "x"}, "$.$not: expected an object of fields and operators, not a string"),
    ({"$eq": 1}, "$.$eq: compare a field of the event"),
    ({"data": {"tags": ["a"]}}, "$.data.tags: a list is not a value to equal"),
    ({"data": {"x": {"$in": [1, {"a": 1}]}}}, "$.data.x.$in[1]: $in takes strings, numbers, booleans or null"),
    ({"data": {"x": {"$in": []}}}, "$.data.x.$in: $in takes a non-empty list of values"),
    ({"data": {"x": {"$in": list(range(101))}}}, "$.data.x.$in: $in has 101 values, over the limit of 100"),
    ({"data": {"x": {"$startsWith": 1}}}, "$.data.x.$startsWith: $startsWith takes a string, not a number"),
    ({"data": {"order-id": {"$exist": 1}}}, '$.data["order-id"].$exist: $exist takes true or false, not a number'),
    ({"data": {"x": {"$eq": {"a": 1}}}}, "$.data.x.$eq: $eq takes a string, number, boolean or null, not an object"),
    (DEEP, "$.data.x.x.x.x.x.x.x: nested deeper than 8 objects"),
    ({"data": {f"f{i}": i for i in range(64)}}, "$: the filter has 65 fields and operators, over the limit of 64"),
    ({"data": {"x": "a" * 5000}}, "$: the filter is 5017 bytes of JSON, over the limit of 4096"),
]


@pytest.mark.parametrize(("spec", "problem"), FAULTS, ids=[str(i) for i in range(len(FAULTS))])
def test_a_bad_filter_is_refused_naming_the_bad_node(spec: object, problem: str) -> None:
    problems = filters.filter_problems(spec)
    assert any(p.startswith(problem) for p in problems), problems


def test_the_api_refuses_a_bad_filter_with_400_naming_its_path(client: Client, room: Room, admin_key: str) -> None:
    body = {"name": "bad", "type": "pull", "filter": {"data": {"total": {"$gt": True}, "x": {"$nope": 1}}}}
    response = call_api(client, "post", f"/api/v1/rooms/{room.pk}/subscriptions/", body, admin_key)
    assert response.status_code == 400
    assert response.json() == {"filter": ["$.data.total.$gt: $gt takes a number or a string, not a boolean",
                                          ("$.data.x.$nope: unknown operator '$nope' (known: $eq, $neq, $gt, $gte, "
                                          "$lt, $lte, $in, $startsWith, $exist, $and, $or, $not)")]}
    assert not Subscription.objects.filter(name="bad").exists()


def test_the_api_changes_and_removes_a_filter(client: Client, room: Room, admin_key: str) -> None:
    subscription = make_subscription(room, type="pull", payload_filter={"data": {"total": {"$gte": 100}}})
    path = f"/api/v1/subscriptions/{subscription.pk}/"
    assert call_api(client, "patch", path, {"filter": {"data": {"country": "DE"}}}, admin_key).status_code == 200
    assert publish(client, room, admin_key)["destination_count"] == 0
    assert call_api(client, "patch", path, {"filter": None}, admin_key).json()["filter"] is None
    assert publish(client, room, admin_key)["destination_count"] == 1


# -- the console -----------------------------------------------------------------------------------------

def test_the_console_saves_a_filter_and_names_a_bad_one(staff_client: Client, room: Room) -> None:
    form = {"name": "big-orders", "type": "pull", "max_in_flight": 10, "timeout_ms": 10000}
    bad = staff_client.post(f"/rooms/{room.pk}/subscriptions/new/",
                            {**form, "payload_filter": '{"data": {"total": {"$gte": "x", "$between": 1}}}'})
    assert bad.status_code == 200
    assert "$.data.total.$between: unknown operator" in bad.content.decode()
    staff_client.post(f"/rooms/{room.pk}/subscriptions/new/",
                      {**form, "payload_filter": '{"data": {"total": {"$gte": 100}}}'})
    assert Subscription.objects.get(name="big-orders").payload_filter == {"data": {"total": {"$gte": 100}}}


@pytest.mark.parametrize(("sample", "verdict"), [
    ('{"total": 120}', "match"),
    ('{"total": 80}', "no-match"),
    ('{"total": ', "invalid"),
    ("", "empty"),
])
def test_the_console_says_live_whether_a_sample_event_would_match(staff_client: Client, room: Room, sample: str,
                                                                  verdict: str) -> None:
    response = staff_client.post(f"/rooms/{room.pk}/subscriptions/filter-check/",
                                 {"payload_filter": '{"data": {"total": {"$gte": 100}}}', "sample_payload": sample,
                                  "event_types": ["order.created"]}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert f'data-verdict="{verdict}"' in response.content.decode()


def test_the_live_check_names_a_fault_of_the_filter(staff_client: Client, room: Room) -> None:
    response = staff_client.post(f"/rooms/{room.pk}/subscriptions/filter-check/",
                                 {"payload_filter": '{"data": {"total": {"$gte": true}}}', "sample_payload": "{}"})
    body = response.content.decode()
    assert 'data-verdict="invalid"' in body and "$.data.total.$gte: $gte takes a number or a string" in body


def test_the_console_suggests_the_operator_meant_in_the_filter_box(staff_client: Client, room: Room) -> None:
    response = staff_client.post(f"/rooms/{room.pk}/subscriptions/filter-check/",
                                 {"payload_filter": '{"data": {"country": {"$startswith": "F"}}}',
                                  "sample_payload": '{"country": "FR"}', "event_types": ["order.created"]},
                                 HTTP_HX_REQUEST="true")
    page = html.unescape(response.content.decode())
    assert 'data-verdict="invalid"' in page
    assert """unknown operator '$startswith'; did you mean "$startsWith"?""" in page, page


def test_the_console_names_the_sample_field_a_filter_field_is_a_near_miss_of(staff_client: Client,
                                                                             room: Room) -> None:
    response = staff_client.post(f"/rooms/{room.pk}/subscriptions/filter-check/",
                                 {"payload_filter": '{"data": {"customer": {"Tier": "gold"}, "totl": {"$gte": 100}}}',
                                  "sample_payload": '{"total": 120, "customer": {"tier": "gold"}}',
                                  "event_types": ["order.created"]}, HTTP_HX_REQUEST="true")
    page = html.unescape(response.content.decode())
    assert 'data-verdict="no-match"' in page
    assert """$.data.customer.Tier: the sample has no field 'Tier'; did you mean "tier"?""" in page, page
    assert """$.data.totl: the sample has no field 'totl'; did you mean "total"?""" in page, page
