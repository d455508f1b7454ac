"""The publish path's bulk writes: each a single statement, its rows passed as one JSON document.

Django's bulk_create compiles a statement whose size grows with the rows, field by field, which was
a fifth of the web process's CPU per publish (make bench PROFILE=1). On PostgreSQL these write the
same rows with `INSERT … SELECT … FROM json_populate_recordset(NULL::table, %s::json)`: one statement
text per table, prepared once per connection, each value prepared by its own field
(`get_db_prep_save`, as the ORM does) and the rows sent as one JSON array of objects keyed by column,
which PostgreSQL reads with each column's own input function. Sent as one array per column instead
(`unnest(%s::type[], …)`), psycopg adapted the 30 arrays of a lone publish in Python, element by
element: a lone publish's parameters (one message, two deliveries) took 496 µs that way and 140 µs as
JSON in the same scratch script, and single publishes went 20–23 % faster (docs/benchmarks.md, "The
web's log records and the publish statement's parameters"). The document is written by orjson, the json
module only for what orjson refuses (`_json`). Elsewhere (SQLite, the embedded demo) they are bulk_create.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import date, datetime
from decimal import Decimal
from functools import cache
from typing import Any

import orjson
import psycopg
from django.db import DEFAULT_DB_ALIAS, connection, connections, models, transaction
from django.db.models import Model
from psycopg.types.json import Json, Jsonb

from delivery.models import Delivery, Message, SendRecord
from dovecote.pg_arrays import array
from rooms.models import ApiKey, Room


class Builder[M: Model]:
    """New rows of a model built positionally, as Model.from_db builds the rows it reads.

    A model's keyword __init__ looks up every field's default and sets each related object through its
    descriptor: 16 µs a delivery, 13 µs a message (a fifth of the web's CPU in `PROFILE=1 BENCH_ARGS="--only
    batch" make bench`, 2026-12-05); positionally, 5 µs. `given` names the attributes (a foreign key's
    `…_id`) each call passes, in that order; every other field takes its default, computed once here, so a
    field whose default is computed per row (a callable) must be given.
    """

    def __init__(self, model: type[M], given: Sequence[str]) -> None:
        fields = model._meta.concrete_fields
        position = {field.attname: i for i, field in enumerate(fields)}
        if unknown := [name for name in given if name not in position]:
            raise ValueError(f"{model.__name__} has no column for {unknown}")
        if per_row := [field.name for field in fields
                       if field.attname not in given and field.has_default() and callable(field.default)]:
            raise ValueError(f"{model.__name__}'s {per_row}: a default computed per row must be given")
        self.model = model
        self.positions = [position[name] for name in given]
        self.defaults = [None if field.attname in given else field.get_default() for field in fields]

    def __call__(self, *values: object) -> M:
        row = self.defaults.copy()
        for position, value in zip(self.positions, values, strict=True):
            row[position] = value
        return self.model(*row)


def insert_messages(messages: Sequence[Message]) -> None:
    _insert(Message, messages)


def insert_deliveries(deliveries: Sequence[Delivery]) -> None:
    """Insert deliveries, giving each its id."""
    _insert(Delivery, deliveries)


def insert_sends(sends: Sequence[SendRecord]) -> None:
    _insert(SendRecord, sends)


def queue_sends(sends: Sequence[SendRecord], now: datetime) -> None:
    """Record the broker's receipts for first sends: each send's row, and its delivery pending → queued.

    The move is DeliveryQuerySet.mark_queued's; on PostgreSQL both are one statement, committed on
    its own (the relay's recorder writes a batch of receipts in one round trip).
    """
    if not sends:
        return
    if connection.vendor != "postgresql":
        with transaction.atomic():
            Delivery.objects.filter(pk__in=[send.delivery_id for send in sends]).mark_queued(now)
            insert_sends(sends)
        return
    sql, fields, _ = _statement(SendRecord)
    # The rows are locked in id order first, as every multi-row UPDATE of deliveries does
    # (DeliveryQuerySet.update, delivery/statements.py): a worker claims a frame that reached it before
    # its receipt was recorded, and two statements locking the same rows in different orders deadlock.
    # The status is tested on the rows as locked, not on the table, so the rows are reached by id whatever
    # PostgreSQL's statistics say (delivery/statements.py says why).
    table = Delivery._meta.db_table
    locked = f"SELECT id, status FROM {table} WHERE id = ANY(%s::bigint[]) ORDER BY id FOR NO KEY UPDATE"
    queued = (f"UPDATE {table} AS d SET status = %s, claimed_until = NULL, updated_at = %s "
              f"FROM locked AS l WHERE d.id = l.id AND l.status = %s")
    _stamp(sends, fields)
    ids = _run(f"WITH locked AS MATERIALIZED ({locked}), queued AS ({queued}) {sql}", [
        array([send.delivery_id for send in sends]), Delivery.Status.QUEUED, now, Delivery.Status.PENDING,
        _rows_json(sends, fields)])
    for row, (new_id,) in zip(sends, ids, strict=True):
        row.pk = new_id
    _added(sends)


# What a publish was checked against, from a process's caches: room id, routing version, room updated_at,
# API key id, whether the key is an admin key (delivery.publish.Checked).
Check = tuple[int, int, datetime, int, bool]
CHECK_COLUMNS = ("room", "version", "updated", "key", "admin")


def insert_checked(messages: Sequence[Message], deliveries: Sequence[Delivery], checks: Sequence[Check]) -> bool:
    """Insert messages and their deliveries in one statement if every check still holds; False (nothing written) if not.

    PostgreSQL only (delivery.publish falls back to its query and two inserts elsewhere). A check holds
    when its room still has that routing version and updated_at, its key is not revoked, and the key
    is an admin key or still names the room. Every message has at least one delivery row, so the
    statement returns no id exactly when it wrote nothing.
    """
    sql, message_fields, delivery_fields = _checked_statement()
    _stamp(messages, message_fields)
    _stamp(deliveries, delivery_fields)
    checked = [dict(zip(CHECK_COLUMNS, check, strict=True)) for check in checks]
    ids = _run(sql, [_json(checked), _rows_json(messages, message_fields),
                     _rows_json(deliveries, delivery_fields)])
    if not ids:
        return False
    for row, (new_id,) in zip(deliveries, ids, strict=True):
        row.pk = new_id
    _added([*messages, *deliveries])
    return True


def _insert(model: type[Model], rows: Sequence[Model]) -> None:
    if not rows:
        return
    if connection.vendor != "postgresql":
        model._default_manager.bulk_create(rows)
        return
    sql, fields, returns_id = _statement(model)
    _stamp(rows, fields)
    ids = _run(sql, [_rows_json(rows, fields)])
    if returns_id:
        pk = model._meta.pk.attname
        for row, (new_id,) in zip(rows, ids, strict=True):
            setattr(row, pk, new_id)
    _added(rows)


def _run(sql: str, params: Sequence[object]) -> list[tuple[Any, ...]]:
    """Execute on this thread's connection with server-side binding, and return the rows it returns.

    Django's cursors bind parameters on the client, quoting every array into the statement's text, and
    PostgreSQL parses and plans that text each time; here the arrays go as parameters of a statement
    prepared once per connection (which needs the connection's `prepare_threshold`, dovecote/settings.py:
    Django's default, None, turns `prepare=True` into a no-op). Errors are Django's, as from its own cursors.
    """
    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, params, prepare=True)
        return cursor.fetchall() if cursor.description is not None else []


def _stamp(rows: Sequence[Model], fields: list[models.Field]) -> None:
    for row in rows:
        for field in fields:
            if isinstance(field, models.DateTimeField) and field.auto_now:
                field.pre_save(row, add=True)  # updated_at: as the ORM sets it


def _rows_json(rows: Sequence[Model], fields: list[models.Field]) -> str:
    """The rows as a JSON array of objects keyed by column, each value as its field prepares it for the database.

    A value the field would prepare into itself (`_as_stored`) goes as it is: calling each field's
    get_db_prep_save was 20 µs a delivery row, 4 ms of a publish to 200 subscriptions.
    """
    db = connections[DEFAULT_DB_ALIAS]  # once: `connection` looks up this thread's at every use
    columns = [(str(field.column), field.attname, field, _as_stored(field)) for field in fields]
    return _json([{column: value if type(value := getattr(row, attname)) in as_is
                   else field.get_db_prep_save(value, db)
                   for column, attname, field, as_is in columns} for row in rows])


def _json(document: object) -> str:
    """`document` as JSON text for PostgreSQL to read.

    orjson writes it in a quarter of the json module's time (200 message rows of the bench's events:
    2.40 → 0.59 ms; 200 delivery rows: 2.03 → 0.49 ms). What orjson refuses (an integer beyond 64 bits, a
    string holding a lone surrogate) the json module writes, so PostgreSQL reads the same values, or refuses
    the same ones, either way. A value neither writes by itself goes through `_json_value` in both. orjson
    writes a NaN or an infinity as null where the json module (allow_nan=False) refuses it; none reaches
    here, as every JSON document Dovecote reads refuses them (dovecote/inputs.py).
    """
    try:
        return orjson.dumps(document, default=_json_value).decode()
    except orjson.JSONEncodeError:
        return _ENCODER.encode(document)


_INTEGERS = frozenset({int})
# Fields (by exact class) that prepare values of these exact types into themselves on PostgreSQL, and None
# into None; a UUID stays a UUID (PostgreSQL has the type), which the JSON encoder writes as its text.
_AS_STORED: dict[type[models.Field], frozenset[type]] = {
    models.CharField: frozenset({str}), models.TextField: frozenset({str}), models.BooleanField: frozenset({bool}),
    models.IntegerField: _INTEGERS, models.PositiveIntegerField: _INTEGERS,
    models.PositiveSmallIntegerField: _INTEGERS, models.SmallIntegerField: _INTEGERS,
    models.BigIntegerField: _INTEGERS, models.PositiveBigIntegerField: _INTEGERS, models.AutoField: _INTEGERS,
    models.BigAutoField: _INTEGERS,
    models.UUIDField: frozenset({uuid.UUID}), models.DateTimeField: frozenset(),
}


def _as_stored(field: models.Field) -> frozenset[type]:
    """The exact types of the values `field` prepares into themselves (none for a field not in _AS_STORED)."""
    target = field.target_field if isinstance(field, models.ForeignKey) else field
    kinds = _AS_STORED.get(type(target))
    return frozenset() if kinds is None else kinds | {type(None)}


def _json_value(value: object) -> object:
    """A prepared value json cannot write by itself, as the text its column's input function reads."""
    if isinstance(value, datetime | date):
        return value.isoformat()  # a datetime is aware (USE_TZ): its offset is written
    if isinstance(value, uuid.UUID | Decimal):
        return str(value)
    if isinstance(value, Json | Jsonb):  # a JSONField's value: written as JSON, not as a string
        return value.obj
    raise TypeError(f"no JSON form for a prepared {type(value).__name__} value")


_ENCODER = json.JSONEncoder(default=_json_value, allow_nan=False, separators=(",", ":"))


def _added(rows: Sequence[Model]) -> None:
    for row in rows:
        row._state.adding = False
        row._state.db = connection.alias


@cache
def _checked_statement() -> tuple[str, list[models.Field], list[models.Field]]:
    """insert_checked's statement: the checks, then both inserts, each on the checks' verdict."""
    quote = connection.ops.quote_name
    message_sql, message_fields, _ = _statement(Message)
    delivery_sql, delivery_fields, _ = _statement(Delivery)
    types = [Room._meta.pk.db_type(connection), Room._meta.get_field("routing_version").db_type(connection),
             Room._meta.get_field("updated_at").db_type(connection), ApiKey._meta.pk.db_type(connection), "boolean"]
    columns = ", ".join(f"{name} {kind}" for name, kind in zip(CHECK_COLUMNS, types, strict=True))
    rooms, keys, grants = Room._meta.db_table, ApiKey._meta.db_table, ApiKey.rooms.through._meta.db_table
    fresh = (
        f"SELECT coalesce(bool_and("
        f"EXISTS (SELECT 1 FROM {rooms} r WHERE r.id = c.room AND r.routing_version = c.version "
        f"AND r.{quote('updated_at')} = c.updated) "
        f"AND EXISTS (SELECT 1 FROM {keys} k WHERE k.id = c.key AND k.revoked_at IS NULL) "
        f"AND (c.admin OR EXISTS (SELECT 1 FROM {grants} g WHERE g.apikey_id = c.key AND g.room_id = c.room))"
        f"), true) AS ok FROM json_to_recordset(%s::json) AS c({columns})"
    )
    holds = " WHERE (SELECT ok FROM fresh)"
    insert_messages = message_sql + holds
    insert_deliveries = delivery_sql.replace(" RETURNING ", holds + " RETURNING ")
    return (f"WITH fresh AS ({fresh}), messages AS ({insert_messages}) {insert_deliveries}",
            message_fields, delivery_fields)


@cache
def _statement(model: type[Model]) -> tuple[str, list[models.Field], bool]:
    """The INSERT … SELECT FROM unnest statement of `model`, its columns' fields, and whether it returns the ids."""
    meta = model._meta
    generated = meta.pk is not None and isinstance(meta.pk, models.AutoField)
    fields = [field for field in meta.concrete_fields if not (generated and field is meta.pk)]
    names = ", ".join(connection.ops.quote_name(str(field.column)) for field in fields)
    returning = f" RETURNING {connection.ops.quote_name(str(meta.pk.column))}" if generated else ""
    sql = (f"INSERT INTO {meta.db_table} ({names}) SELECT {names} "
           f"FROM json_populate_recordset(NULL::{meta.db_table}, %s::json){returning}")
    return sql, fields, generated
