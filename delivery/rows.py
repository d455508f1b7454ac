"""The publish path's bulk writes: each a single statement, its rows passed as one array per column.

Django's bulk_create compiles a statement whose size grows with the rows, field by field, which was
a fifth of the web process's CPU per publish (make bench PROFILE=1). On PostgreSQL these write the
same rows with `INSERT … SELECT * FROM unnest(%s::type[], …)`: one statement text per table, each
column's values prepared by its own field (`get_db_prep_save`, as the ORM does) and sent as an
array. Elsewhere (SQLite, the embedded demo) they are bulk_create.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from django.db import connection, models
from django.db.models import Model

from delivery.models import Delivery, Message, SendRecord


def insert_messages(messages: Sequence[Message]) -> None:
    _insert(Message, messages)


def insert_deliveries(deliveries: Sequence[Delivery]) -> None:
    """Insert deliveries, giving each its id."""
    _insert(Delivery, deliveries)


def insert_sends(sends: Sequence[SendRecord]) -> None:
    _insert(SendRecord, sends)


def _insert(model: type[Model], rows: Sequence[Model]) -> None:
    if not rows:
        return
    if connection.vendor != "postgresql":
        model._default_manager.bulk_create(rows)
        return
    sql, fields, returns_id = _statement(model)
    for row in rows:
        for field in fields:
            if isinstance(field, models.DateTimeField) and field.auto_now:
                field.pre_save(row, add=True)  # updated_at: as the ORM sets it
    columns = [[field.get_db_prep_save(getattr(row, field.attname), connection) for row in rows] for field in fields]
    with connection.cursor() as cursor:
        cursor.execute(sql, columns)
        if returns_id:
            pk = model._meta.pk.attname
            for row, (new_id,) in zip(rows, cursor.fetchall(), strict=True):
                setattr(row, pk, new_id)
    for row in rows:
        row._state.adding = False
        row._state.db = connection.alias


@cache
def _statement(model: type[Model]) -> tuple[str, list[models.Field], bool]:
    """The INSERT … SELECT FROM unnest statement of `model`, its columns' fields, and whether it returns the ids."""
    meta = model._meta
    generated = meta.pk is not None and isinstance(meta.pk, models.AutoField)
    fields = [field for field in meta.concrete_fields if not (generated and field is meta.pk)]
    names = ", ".join(connection.ops.quote_name(str(field.column)) for field in fields)
    arrays = ", ".join(f"%s::{field.db_type(connection)}[]" for field in fields)
    returning = f" RETURNING {connection.ops.quote_name(str(meta.pk.column))}" if generated else ""
    return f"INSERT INTO {meta.db_table} ({names}) SELECT * FROM unnest({arrays}){returning}", fields, generated
