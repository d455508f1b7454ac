"""The bad-input matrix: every API endpoint and UI form, fed what careless and hostile clients send.

Deep nesting, huge numbers, NaN and Infinity, wrong types, CR/LF in strings, oversize bodies and
unknown fields (refused, tests/api/test_unknown_fields_are_refused.py): no request may answer 5xx, and every 4xx
names what is wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client

from delivery.models import Delivery
from rooms.models import ApiKey
from tests.factories import make_delivery, make_event_type, make_message, make_room, make_subscription

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("live_services")]

DEEP = 100_000
HUGE_INT_TEXT = "9" * 5_000


@dataclass
class World:
    room: Any
    push: Any
    pull: Any
    key: str
    dead_message: str

    def fill(self, text: str) -> str:
        for name, value in (("room", self.room.pk), ("push", self.push.pk), ("pull", self.pull.pk),
                            ("message", self.dead_message)):
            text = text.replace(f"{{{name}}}", str(value))
        return text


@pytest.fixture
def world() -> World:
    room = make_room()
    make_event_type(room)
    push, pull = make_subscription(room), make_subscription(room, type="pull", push_url="")
    dead = make_delivery(make_message(room), push, status=Delivery.Status.DEAD_LETTERED)
    return World(room, push, pull, ApiKey.issue("matrix", is_admin=True)[1], str(dead.message_id))


EVENT = {"event_type": "order.created", "event_version": "1", "payload": {"order_id": 1}, "correlation_id": "c-1"}
# Every endpoint that reads a body, with a body it accepts.
BODIES: dict[tuple[str, str], dict] = {
    ("post", "/api/v1/rooms/"): {"name": "matrix-new", "description": "d", "delivery_delay_ms": 1000,
                                 "delivery_delay_multiplier": 2.0, "delivery_attempts": 3,
                                 "message_expiration_ms": 60_000, "max_delivery_delay_ms": 10_000},
    ("patch", "/api/v1/rooms/{room}/"): {"description": "d", "delivery_attempts": 2},
    ("post", "/api/v1/rooms/{room}/event-types/"): {"name": "order.paid", "version": "2",
                                                    "schema": {"type": "object"}},
    ("post", "/api/v1/rooms/{room}/subscriptions/"): {"name": "matrix-sub", "type": "pull", "max_in_flight": 5,
                                                      "timeout_ms": 1000, "delivery_attempts": 1},
    ("patch", "/api/v1/subscriptions/{push}/"): {"name": "renamed", "timeout_ms": 2000,
                                                 "event_types": [{"name": "order.created", "version": "1"}]},
    ("post", "/api/v1/rooms/{room}/messages/"): EVENT,
    ("post", "/api/v1/rooms/{room}/messages/batch/"): {"messages": [EVENT]},
    ("post", "/api/v1/subscriptions/{pull}/pull/"): {"max_messages": 1, "lease_ms": 1000, "wait_ms": 0},
    ("post", "/api/v1/subscriptions/{pull}/ack/"): {"ack_ids": ["1.token"]},
    ("post", "/api/v1/subscriptions/{pull}/nack/"): {"ack_ids": ["1.token"], "action": "retry", "delay_ms": 10},
    ("post", "/api/v1/subscriptions/{pull}/extend/"): {"ack_ids": ["1.token"], "lease_ms": 1000},
    ("post", "/api/v1/subscriptions/{push}/dead-letters/replay/"): {"message_ids": ["{message}"]},
    ("delete", "/api/v1/subscriptions/{push}/dead-letters/"): {"message_ids": ["{message}"]},
}
# Endpoints that read no body: whatever is sent must not break them.
NO_BODY = [("post", "/api/v1/subscriptions/{push}/pause/"), ("post", "/api/v1/subscriptions/{push}/resume/"),
           ("post", "/api/v1/subscriptions/{push}/rotate-secret/")]


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


# Whole bodies, as raw text.
RAW_BODIES = {
    "100,000-deep array": deep(DEEP),
    "100,000-deep object": '{"a":' * DEEP + "1" + "}" * DEEP,
    "NaN": '{"x": NaN}',
    "Infinity": '{"x": -Infinity}',
    "5,000-digit number": '{"x": ' + HUGE_INT_TEXT + "}",
    "1e400": '{"x": 1e400}',
    "a list": "[1, 2]",
    "a string": '"text"',
    "null": "null",
    "not JSON": "{oops",
    "not UTF-8": b'{"x": "\xff\xfe"}',
    "empty": "",
    "over 256 KiB": json.dumps({"x": "y" * 300_000}),
}
# Values put in place of each field of a body that is otherwise accepted.
FIELD_VALUES: dict[str, Any] = {
    "huge int": 10**30,
    "negative huge int": -(10**30),
    "20 digits": 99_999_999_999_999_999_999,
    "float": 1.5,
    "big float": 1e308,
    "string": "abc",
    "CR/LF": "line\r\nX-Injected: 1",
    "control": "\x00\x1b[2J",
    "list": [1, 2],
    "object": {"a": 1},
    "deep": nested(80),
    "null": None,
    "bool": True,
    "long string": "z" * 5_000,
    "huge id string": "9" * 150 + ".token",
}
RAW_FIELD_VALUES = {"NaN": "NaN", "Infinity": "Infinity", "1e400": "1e400", "5,000 digits": HUGE_INT_TEXT}


def send(client: Client, world: World, method: str, path: str, body: str | bytes) -> Any:
    if method == "get":
        return client.get(world.fill(path), HTTP_AUTHORIZATION=f"Bearer {world.key}")
    return getattr(client, method)(world.fill(path), body, content_type="application/json",
                                   HTTP_AUTHORIZATION=f"Bearer {world.key}")


def check(response: Any, case: str) -> None:
    """No 5xx; a 4xx says in its JSON body what is wrong."""
    assert response.status_code < 500, f"{case}: {response.status_code} {response.content[:300]!r}"
    if response.status_code >= 400 and response.status_code != 404:
        body = response.json()
        assert isinstance(body, dict) and body, f"{case}: {body!r}"
        assert all(value not in (None, "", [], {}) for value in body.values()), f"{case}: {body!r}"


def valid_body(world: World, method: str, path: str) -> dict:
    return json.loads(json.dumps(BODIES[(method, path)]).replace("{message}", world.dead_message))


@pytest.mark.parametrize(("method", "path"), list(BODIES) + NO_BODY, ids=lambda v: v)
def test_whole_bodies_that_are_not_what_the_endpoint_reads(client: Client, world: World, method: str,
                                                           path: str) -> None:
    for name, raw in RAW_BODIES.items():
        response = send(client, world, method, path, raw)
        check(response, f"{method} {path} with {name}")
        if name == "over 256 KiB":
            assert response.status_code == 413
        elif name in ("NaN", "Infinity", "5,000-digit number", "1e400") and (method, path) in BODIES:
            assert response.status_code == 400 and "JSON parse error" in response.json()["detail"]


@pytest.mark.parametrize(("method", "path"), list(BODIES), ids=lambda v: v)
def test_each_field_replaced_by_each_bad_value(client: Client, world: World, method: str, path: str) -> None:
    body = valid_body(world, method, path)
    targets = [(None, name) for name in body]
    if "messages" in body:
        targets += [(0, name) for name in body["messages"][0]]
    for index, field in targets:
        for label, value in FIELD_VALUES.items():
            mutated = json.loads(json.dumps(body))
            (mutated if index is None else mutated["messages"][index])[field] = value
            check(send(client, world, method, path, json.dumps(mutated)), f"{method} {path} {field}={label}")
        for label, raw in RAW_FIELD_VALUES.items():
            marker = json.dumps(body if index is None else body["messages"][index])
            text = json.dumps({**(body if index is None else body["messages"][index]), field: "@@"})
            text = text.replace('"@@"', raw)
            if index is not None:
                text = json.dumps({**body, "messages": ["@@"]}).replace('"@@"', text)
            response = send(client, world, method, path, text)
            check(response, f"{method} {path} {field}={label}")
            assert response.status_code == 400, (marker, label)


@pytest.mark.parametrize(("method", "path"), list(BODIES), ids=lambda v: v)
def test_unknown_fields_are_a_400_naming_them(client: Client, world: World, method: str, path: str) -> None:
    body = {**valid_body(world, method, path), "bogus": 1}
    response = send(client, world, method, path, json.dumps(body))
    check(response, f"{method} {path} with unknown fields")
    assert response.status_code == 400 and response.json()["bogus"][0].startswith("Unknown field"), response.json()


QUERIES = ["/api/v1/rooms/", "/api/v1/messages/", "/api/v1/rooms/{room}/event-types/",
           "/api/v1/rooms/{room}/subscriptions/", "/api/v1/subscriptions/{push}/dead-letters/",
           "/api/v1/reports/hourly/", "/api/v1/reports/errors/", "/api/v1/reports/latency/",
           "/api/v1/reports/retry-cost/", "/api/v1/reports/endpoints/", "/api/v1/reports/runs/"]
QUERY_VALUES = ["9" * 150, "9" * 20, "-1", "0", "1e400", "NaN", "abc", "a\r\nb", "\x00", "0001-01-01T00:00:00+14:00",
                "9999-12-31T23:59:59-14:00", "2026-13-45", "٣"]
QUERY_NAMES = ["room", "subscription", "status_code", "since", "until", "page", "page_size", "cursor", "ordering",
               "name", "search", "status", "type", "level", "by", "error", "correlation_id", "event_type"]


@pytest.mark.parametrize("path", QUERIES)
def test_query_parameters_of_every_list(client: Client, world: World, path: str) -> None:
    for name in QUERY_NAMES:
        for value in QUERY_VALUES:
            response = client.get(world.fill(path), {name: value}, HTTP_AUTHORIZATION=f"Bearer {world.key}")
            check(response, f"GET {path}?{name}={value!r}")


@pytest.mark.parametrize("path", ["/api/v1/rooms/{id}/", "/api/v1/subscriptions/{id}/", "/api/v1/rooms/{id}/messages/",
                                  "/api/v1/subscriptions/{id}/pull/", "/api/v1/messages/{id}/"])
@pytest.mark.parametrize("value", ["9" * 20, "9" * 150, "00000000000000000000001"])
def test_ids_in_paths_beyond_any_id_are_404(client: Client, world: World, path: str, value: str) -> None:
    method = "get" if path.endswith(("/{id}/",)) and "pull" not in path else "post"
    response = send(client, world, method, path.replace("{id}", value), "{}")
    assert response.status_code in (400, 404), (path, response.status_code, response.content[:200])


# The UI's forms, as a browser would post them (form-encoded), each field in turn replaced.
UI_FORMS: dict[str, tuple[str, dict[str, Any]]] = {
    "new room": ("/rooms/new/", {"name": "ui-room", "delivery_delay_ms": "1000", "delivery_delay_multiplier": "2",
                                 "delivery_attempts": "3", "message_expiration_ms": "", "max_delivery_delay_ms": ""}),
    "edit room": ("/rooms/{room}/edit/", {"name": "ui-room2", "delivery_delay_ms": "1000",
                                          "delivery_delay_multiplier": "2", "delivery_attempts": "3"}),
    "room preview": ("/rooms/preview/", {"delivery_delay_ms": "1000", "delivery_delay_multiplier": "2",
                                         "delivery_attempts": "3", "max_delivery_delay_ms": "",
                                         "message_expiration_ms": ""}),
    "event type": ("/rooms/{room}/event-types/", {"name": "ui.type", "version": "1", "schema": '{"type": "object"}'}),
    "new subscription": ("/rooms/{room}/subscriptions/new/", {"name": "ui-sub", "type": "pull", "max_in_flight": "1",
                                                              "timeout_ms": "1000", "event_types": "order.created"}),
    "subscription preview": ("/rooms/{room}/subscriptions/preview/", {"delivery_delay_ms": "10",
                                                                      "delivery_attempts": "2"}),
    "edit subscription": ("/subscriptions/{push}/edit/", {"name": "ui-sub2", "push_url": "http://127.0.0.1:9/x",
                                                         "max_in_flight": "1", "timeout_ms": "1000"}),
    "test event": ("/subscriptions/{push}/test-event/", {"payload": '{"a": 1}', "correlation_id": "c"}),
    "new api key": ("/api-keys/", {"name": "k", "rooms": "{room}"}),
    "dead letter action": ("/subscriptions/{push}/dead-letters/action/", {"choice": "replay:selected",
                                                                         "message_ids": "{message}"}),
}
UI_VALUES = ["9" * 30, "9" * 5_000, "-" + "9" * 30, "NaN", "Infinity", "-Infinity", "1e400", "a\r\nb", "\x00",
             "[" * 3_000 + "]" * 3_000, '{"a": NaN}', '{"a": Infinity}', "{" * 50, "z" * 5_000, "٣", ""]
UI_PAGES = ["/subscriptions/", "/messages/", "/reports/", "/rooms/", "/api-keys/", "/dead-letters/",
            "/subscriptions/{push}/dead-letters/"]
UI_QUERY_NAMES = ["room", "subscription", "type", "status", "q", "since", "until", "before", "after", "page",
                  "window", "error", "event_type"]


def check_page(response: Any, case: str) -> None:
    assert response.status_code < 500, f"{case}: {response.status_code}"
    assert response.status_code in (200, 302, 400, 403, 404, 405, 413), f"{case}: {response.status_code}"


@pytest.mark.parametrize("form", UI_FORMS)
def test_each_ui_form_field_replaced_by_each_bad_value(client: Client, owner, world: World, form: str) -> None:
    client.force_login(owner)
    path, data = UI_FORMS[form]
    data = {name: world.fill(value) for name, value in data.items()}
    for field in data:
        for value in UI_VALUES:
            response = client.post(world.fill(path), {**data, field: value})
            check_page(response, f"{form}: {field}={value[:20]!r}")
        response = client.post(world.fill(path), {**data, field: [data[field], "9" * 30]})  # a field given twice
        check_page(response, f"{form}: {field} twice")
    check_page(client.post(world.fill(path), {**data, "x": "y" * 300_000}), f"{form}: oversize")


def test_huge_ids_in_ui_forms_are_field_errors(client: Client, owner, world: World) -> None:
    client.force_login(owner)
    response = client.post("/api-keys/", {"name": "k", "rooms": "9" * 150})
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    response = client.post(f"/subscriptions/{world.push.pk}/test-event/", {"payload": '{"a": NaN}'})
    assert response.status_code == 200 and "NaN is not a JSON number" in response.content.decode()
    response = client.post(f"/subscriptions/{world.push.pk}/test-event/", {"payload": "[" * 3000 + "]" * 3000})
    assert response.status_code == 200 and "nested deeper than" in response.content.decode()


@pytest.mark.parametrize("page", UI_PAGES)
def test_every_ui_list_takes_any_query(client: Client, owner, world: World, page: str) -> None:
    client.force_login(owner)
    for name in UI_QUERY_NAMES:
        for value in UI_VALUES[:10]:
            check_page(client.get(world.fill(page), {name: value}), f"{page}?{name}={value[:20]!r}")
