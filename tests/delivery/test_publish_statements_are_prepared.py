"""The publish path's statements (delivery/rows.py) are prepared once per connection, not parsed and planned each time.

Django turns psycopg's prepared statements off on its connections unless OPTIONS give a
`prepare_threshold`; `_run`'s `prepare=True` was then silently ignored (dovecote/settings.py).
"""

from __future__ import annotations

import pytest
from django.db import connection

from delivery.models import Delivery
from delivery.publish import Event, publish
from rooms.models import Room
from tests.factories import make_event_type, make_room, make_subscription

pytestmark = pytest.mark.django_db


def prepared_statements(prefix: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements WHERE statement LIKE %s", [f"{prefix}%"])
        return [row[0] for row in cursor.fetchall()]


def test_a_publish_writes_its_rows_with_the_statement_prepared_by_the_first() -> None:
    room = make_room()
    make_event_type(room)
    make_subscription(room)
    room = Room.objects.get(pk=room.pk)
    for n in range(3):
        publish(room, Event(event_type="order.created", event_version="1", payload={"n": n}))

    assert Delivery.objects.filter(message__room=room).count() == 3
    assert len(prepared_statements("WITH fresh AS")) == 1, prepared_statements("")
