"""The test event's payload box starts with a sample the event type's schema accepts, or `{}` beside the schema."""

from __future__ import annotations

import json
import re
from html import unescape
from typing import Any

import pytest
from django.test import Client

from delivery.models import Message
from rooms import samples
from tests.factories import make_event_type, make_room, make_subscription

pytestmark = pytest.mark.django_db

ORDER = {
    "type": "object",
    "required": ["order_id", "total", "currency", "placed_at", "lines", "customer"],
    "additionalProperties": False,
    "properties": {
        "order_id": {"type": "integer", "minimum": 1000},
        "total": {"type": "number", "exclusiveMinimum": 0},
        "currency": {"enum": ["EUR", "USD"]},
        "placed_at": {"type": "string", "format": "date-time"},
        "lines": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/line"}},
        "customer": {"type": ["string", "null"], "minLength": 6, "maxLength": 8},
        "note": {"type": "string"},
    },
    "$defs": {"line": {"type": "object", "required": ["sku", "quantity"],
                       "properties": {"sku": {"type": "string", "examples": ["SKU-1"]},
                                      "quantity": {"type": "integer", "minimum": 1, "maximum": 5}}}},
}


def payload_box(html: str) -> Any:
    textarea = re.search(r'<textarea name="payload"[^>]*>(.*?)</textarea>', html, re.DOTALL)
    return json.loads(unescape(textarea.group(1)))


def test_the_box_starts_with_a_sample_the_schema_accepts_and_it_publishes(staff_client: Client) -> None:
    room = make_room()
    event_type = make_event_type(room, schema=ORDER)
    subscription = make_subscription(room)

    html = staff_client.get(f"/subscriptions/{subscription.pk}/").content.decode()
    payload = payload_box(html)

    assert payload == {"order_id": 1000, "total": 1, "currency": "EUR", "placed_at": "2026-01-01T00:00:00Z",
                       "lines": [{"sku": "SKU-1", "quantity": 1}], "customer": "testxx"}
    assert event_type.schema_errors(payload) == []
    assert 'id="test-event-schema"' in html and "must satisfy the schema of order.created v1" in html
    response = staff_client.post(f"/subscriptions/{subscription.pk}/test-event/",
                                 {"payload": json.dumps(payload), "correlation_id": "sample-1"})
    assert response.status_code == 302 and Message.objects.get(correlation_id="sample-1").payload == payload


def test_a_schema_no_sample_satisfies_starts_from_an_empty_object_and_the_error_names_the_schema(
        staff_client: Client) -> None:
    room = make_room()
    make_event_type(room, schema={"type": "object", "required": ["code"],
                                  "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"}}})
    subscription = make_subscription(room)

    assert payload_box(staff_client.get(f"/subscriptions/{subscription.pk}/").content.decode()) == {}
    html = staff_client.post(f"/subscriptions/{subscription.pk}/test-event/", {"payload": "{}"}).content.decode()

    assert "Not valid for the schema of order.created v1: (root): &#x27;code&#x27; is a required property" in html
    assert not Message.objects.exists()


def test_an_event_type_without_a_schema_keeps_the_plain_sample(staff_client: Client) -> None:
    room = make_room()
    make_event_type(room)
    subscription = make_subscription(room)

    html = staff_client.get(f"/subscriptions/{subscription.pk}/").content.decode()

    assert payload_box(html) == {"test": True} and 'id="test-event-schema"' not in html


@pytest.mark.parametrize(("schema", "expected"), [
    ({"type": "integer", "exclusiveMaximum": 0}, -1),
    ({"type": "number", "minimum": 2.5, "maximum": 3}, 2.5),
    ({"type": "string", "maxLength": 2}, "te"),
    ({"const": "fixed"}, "fixed"),
    ({"anyOf": [{"type": "boolean"}, {"type": "string"}]}, True),
    ({"$ref": "https://example.com/elsewhere"}, None),
])
def test_a_sample_keeps_within_the_bounds_it_can_read(schema: dict, expected: Any) -> None:
    assert samples.sample(schema) == expected


def test_a_schema_that_refers_to_itself_gives_a_bounded_sample() -> None:
    value = samples.sample({"type": "object", "required": ["next"], "properties": {"next": {"$ref": "#"}}})
    assert 1 < json.dumps(value).count("next") <= samples.MAX_DEPTH
