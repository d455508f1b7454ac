"""The publish path's rows as JSON (delivery/rows.py `_rows_json`) hold each value as its field prepares it.

A value whose field would prepare it into itself goes into the JSON as it is, without the field's
get_db_prep_save (`_as_stored`); every other value goes through it. These compare the JSON with one
built by every field's get_db_prep_save, for each table the publish path writes, with values of every
kind its columns hold (None, texts, numbers, booleans, UUIDs, aware datetimes, JSON payloads), and
check that a naive datetime is still made aware by its field, as the ORM does. The rows themselves are
built positionally (`Builder`): the same values as the keyword constructor's, defaults included.
"""

from __future__ import annotations

import json
import uuid
import warnings
from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.models import Model

from delivery import rows
from delivery.models import Delivery, Message, SendRecord

pytestmark = pytest.mark.django_db

WHEN = datetime(2026, 12, 5, 11, 30, 0, 123456, tzinfo=UTC)


def prepared_by_every_field(row_objects: list[Model], model: type[Model]) -> list[dict]:
    _, fields, _ = rows._statement(model)
    return [{str(field.column): json.loads(rows._ENCODER.encode(field.get_db_prep_save(getattr(row, field.attname),
                                                                                       connection)))
             for field in fields} for row in row_objects]


def as_written(row_objects: list[Model], model: type[Model]) -> list[dict]:
    _, fields, _ = rows._statement(model)
    return json.loads(rows._rows_json(row_objects, fields))


def typed(written: list[dict]) -> list[dict]:
    """Each value with its JSON type: 1 and true are equal in Python, not in a column."""
    return [{column: (type(value).__name__, value) for column, value in row.items()} for row in written]


def test_every_column_of_the_publish_path_is_written_as_its_field_prepares_it() -> None:
    message_id = uuid.uuid4()
    messages = [
        Message(id=message_id, room_id=7, event_type="order.created", event_version="1",
                payload={"order": 1, "note": 'say "hi"', "items": [1, 2.5, None, True]}, correlation_id="corr-1",
                idempotency_key=None, created_at=WHEN),
        Message(id=uuid.uuid4(), room_id=7, event_type="ünïcödé", event_version="", payload=["a", 1],
                correlation_id="", created_at=WHEN),
        Message(id=uuid.uuid4(), room_id=7, event_type="order.created", event_version="2", payload="text",
                correlation_id="c", created_at=WHEN),
    ]
    deliveries = [
        Delivery(id=5, message_id=message_id, subscription_id=3, destination="room-7::subscription-3",
                 created_at=WHEN, updated_at=WHEN),
        Delivery(id=6, message_id=message_id, subscription_id=None, destination="", status=Delivery.Status.HELD,
                 ordering_key="k", parks_key=True, attempts=2, next_attempt_at=WHEN, last_status_code=503,
                 last_error="boom", created_at=WHEN, updated_at=WHEN),
    ]
    sends = [SendRecord(delivery_id=5, kind=SendRecord.Kind.PUBLISH, destination="room-7::subscription-3", attempt=1,
                        delay_ms=0)]
    for row_objects, model in ((messages, Message), (deliveries, Delivery), (sends, SendRecord)):
        rows._stamp(row_objects, rows._statement(model)[1])
        expected = typed(prepared_by_every_field(row_objects, model))
        assert typed(as_written(row_objects, model)) == expected, model.__name__


def test_a_value_not_of_its_fields_own_type_is_still_prepared_by_the_field() -> None:
    naive = datetime(2026, 12, 5, 11, 30)  # noqa: DTZ001 - what the field makes aware
    message_id = uuid.uuid4()
    delivery = Delivery(message_id=str(message_id), subscription_id="3", destination="d", parks_key=1,
                        attempts=False, created_at=naive, updated_at=WHEN)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the naive datetime's warning, as from the ORM
        [written] = as_written([delivery], Delivery)
        [expected] = prepared_by_every_field([delivery], Delivery)
    assert typed([written]) == typed([expected])
    assert [written[c] for c in ("message_id", "subscription_id", "parks_key", "attempts")] == [
        str(message_id), 3, True, 0], written
    assert type(written["parks_key"]) is bool and type(written["attempts"]) is int, written
    assert written["created_at"].endswith("+00:00"), written["created_at"]


def test_rows_built_positionally_are_the_rows_the_keyword_constructor_builds() -> None:
    build = rows.Builder(Delivery, ("message_id", "subscription_id", "destination", "created_at"))
    message_id = uuid.uuid4()
    built = build(message_id, 3, "room-7::subscription-3", WHEN)
    expected = Delivery(message_id=message_id, subscription_id=3, destination="room-7::subscription-3",
                        created_at=WHEN)
    columns = [field.attname for field in Delivery._meta.concrete_fields]
    assert [getattr(built, c) for c in columns] == [getattr(expected, c) for c in columns]
    assert built._state.adding and built.pk is None


def test_a_builder_refuses_a_default_computed_per_row_and_an_unknown_column() -> None:
    with pytest.raises(ValueError, match=r"\['created_at'\]: a default computed per row must be given"):
        rows.Builder(Delivery, ("message_id", "destination"))
    with pytest.raises(ValueError, match=r"no column for \['subscription'\]"):
        rows.Builder(Delivery, ("message_id", "subscription", "created_at"))


def test_values_orjson_refuses_are_written_by_the_json_module_and_stored_as_sent() -> None:
    """orjson writes the rows' JSON (`rows._json`), but refuses an integer beyond 64 bits and a lone surrogate.

    The json module writes those documents instead, so a payload holding one is stored as it came (the
    big integer) or refused by PostgreSQL as before (the surrogate), not lost to an encoder's error.
    """
    from tests.factories import make_room

    big = {"order": 2**70, "negative": -(2**64), "items": [1, 2.5]}
    assert json.loads(rows._json([{"payload": big}])) == [{"payload": big}]
    lone = ["\ud800"]
    assert rows._json(lone) == rows._ENCODER.encode(lone) == '["\\ud800"]'

    room = make_room()
    message = Message(id=uuid.uuid4(), room_id=room.pk, event_type="order.created", event_version="1", payload=big,
                      correlation_id="corr-big", created_at=WHEN)
    rows.insert_messages([message])
    assert Message.objects.get(pk=message.pk).payload == big
