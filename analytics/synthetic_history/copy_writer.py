"""COPY rows into the log tables: the columns the simulation fills, every other column at its default."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection, models
from django.db.backends.utils import CursorWrapper

MESSAGE_COLUMNS = ["id", "room_id", "event_type", "event_version", "payload", "correlation_id", "idempotency_key",
                   "created_at", "expires_at"]
DELIVERY_COLUMNS = ["id", "message_id", "subscription_id", "destination", "status", "attempts", "next_attempt_at",
                    "attempt_started_at", "redelivery_count", "replays", "last_status_code", "last_error",
                    "created_at", "updated_at"]
SEND_COLUMNS = ["delivery_id", "kind", "destination", "attempt", "delay_ms", "correlation_id", "sent_at"]
ATTEMPT_COLUMNS = ["delivery_id", "correlation_id", "life", "attempt", "started_at", "duration_ms", "outcome",
                   "status_code", "error", "next_delay_ms"]


class CopyTable:
    """COPY rows into a model's table: the columns given, plus every other column at its default.

    Built from the model, so a column added later with a plain default needs no change here.
    """

    def __init__(self, model: type[models.Model], columns: list[str]) -> None:
        fields = {f.column: f for f in model._meta.concrete_fields}
        if unknown := set(columns) - set(fields):
            raise ValueError(f"{model._meta.db_table} has no column {sorted(unknown)}")
        rest = [f for column, f in fields.items() if column not in columns and not f.primary_key]
        if dynamic := [f.name for f in rest if f.has_default() and callable(f.default)]:
            raise ValueError(f"generate_traffic does not fill {model._meta.db_table}.{dynamic}")
        self.defaults = tuple(f.get_db_prep_save(f.get_default(), connection) for f in rest)
        names = ", ".join(columns + [f.column for f in rest])
        self.sql = f"COPY {model._meta.db_table} ({names}) FROM STDIN"

    def write(self, cursor: CursorWrapper, rows: Iterable[tuple]) -> None:
        defaults = self.defaults
        with cursor.copy(self.sql) as copy:
            for row in rows:
                copy.write_row(row + defaults)
