"""Numbers too large for a float meet multipleOf as a 400 or a 202, never a 500 (issue 23, item 8)."""

from __future__ import annotations

import pytest
from django.test import Client

from rooms.models import Room
from tests.callers import call_api
from tests.factories import make_room

pytestmark = pytest.mark.django_db

BIG = 10**3999  # 4,000 digits: a float holds at most about 10^308


def room_with_schema(client: Client, key: str, schema: dict) -> Room:
    room = make_room()
    reply = call_api(client, "post", f"/api/v1/rooms/{room.pk}/event-types/",
                     {"name": "order.created", "schema": {"properties": {"n": schema}}}, key)
    assert reply.status_code == 201, reply.content
    return room


def publish_raw(client: Client, key: str, room: Room, number_text: str):
    body = f'{{"event_type": "order.created", "event_version": "1", "payload": {{"n": {number_text}}}}}'
    return call_api(client, "post", f"/api/v1/rooms/{room.pk}/messages/", body, key)


@pytest.mark.parametrize(("multiple_of", "number", "accepted"), [
    (0.5, str(BIG), True),  # the 500: int / 0.5 overflowed
    (0.5, str(-BIG - 1), True),
    (0.3, str(BIG), False),  # 0.3 is not 3/10 in binary: no integer is a multiple of it
    (str(10**400), "1.5", False),  # float % a 401-digit integer overflowed
    (str(10**400), str(10**401), True),
    ("1e-300", "1e300", False),  # the quotient overflows to infinity
    ("3", "1e308", False),
])
def test_a_number_beyond_a_float_meets_multiple_of_exactly(client: Client, admin_key: str, multiple_of: object,
                                                           number: str, accepted: bool) -> None:
    room = make_room()
    schema_text = f'{{"name": "order.created", "schema": {{"properties": {{"n": {{"multipleOf": {multiple_of}}}}}}}}}'
    assert call_api(client, "post", f"/api/v1/rooms/{room.pk}/event-types/", schema_text,
                    admin_key).status_code == 201
    response = publish_raw(client, admin_key, room, number)
    assert response.status_code == (202 if accepted else 400), response.content[:300]
    if not accepted:
        [message] = response.json()["payload"]
        assert message.startswith("n: ") and "is not a multiple of" in message
        assert len(message) <= len("n: ") + 300  # cut short, not 4,000 digits


def test_an_integer_longer_than_python_reads_is_a_400_naming_it(client: Client, admin_key: str) -> None:
    room = room_with_schema(client, admin_key, {"multipleOf": 0.5})
    response = publish_raw(client, admin_key, room, "9" * 5000)
    assert response.status_code == 400
    assert "5000 digits is too long" in response.json()["detail"]
