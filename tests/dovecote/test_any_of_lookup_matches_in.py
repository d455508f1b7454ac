"""`field__any_of` (dovecote/lookups.py) finds exactly the rows `field__in` finds, its values bound as one array.

The push engine's renewal names every subscription a worker holds each second through this lookup,
its values sent in PostgreSQL's text form of an array (dovecote/pg_arrays.py) and cast to the column's
type. These check ids (a primary key and a foreign key), texts with every character an array's text
treats specially, a set, a list and an empty list, against `__in` on the same rows.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from rooms.models import Room
from subscriptions.models import Subscription
from tests.factories import make_room, make_subscription

pytestmark = pytest.mark.django_db

NAMES = ["plain", "a,b", "{braced}", 'say "hi"', "back\\slash", "NULL", " padded ", "it's", "ünïcödé"]


def test_ids_and_texts_find_what_in_finds() -> None:
    rooms = [make_room(name=f"any-of {name}") for name in NAMES]
    subscriptions = [make_subscription(room) for room in rooms for _ in range(2)]
    some_rooms = [room.pk for room in rooms[::2]] + [10**15]  # and an id no row has
    names = [room.name for room in rooms[1::2]] + ["any-of missing"]

    for values, field in ((set(some_rooms), "pk"), (some_rooms, "pk"), (names, "name")):
        found = set(Room.objects.filter(**{f"{field}__any_of": values}).values_list("pk", flat=True))
        assert found == set(Room.objects.filter(**{f"{field}__in": values}).values_list("pk", flat=True)), values
        assert found, values
    by_room = set(Subscription.objects.filter(room_id__any_of=set(some_rooms)).values_list("pk", flat=True))
    assert by_room == {s.pk for s in subscriptions if s.room_id in some_rooms}
    assert not Room.objects.filter(pk__any_of=[]).exists()


def test_a_long_list_is_one_parameter() -> None:
    rooms = [make_room(name=f"any-of long {i}") for i in range(3)]
    ids = {room.pk for room in rooms} | set(range(10**12, 10**12 + 2000))
    with CaptureQueriesContext(connection) as queries:
        assert set(Room.objects.filter(pk__any_of=ids).values_list("pk", flat=True)) == {room.pk for room in rooms}
    [query] = queries.captured_queries
    assert "= ANY(" in query["sql"] and "::bigint[]" in query["sql"], query["sql"]
