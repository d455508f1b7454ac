"""Retention: which messages may leave PostgreSQL, and their removal with every row that hangs off them.

A message is *removable* when, in this order:
1. it is older than its room's retention (`Room.effective_retention`: `retention_ms`, else DOVECOTE_RETENTION);
2. every delivery of it is settled for good: delivered, acked, expired, unroutable (it matched no
   subscription; nothing will be sent), or a dead letter its owner purged. A dead letter still in the
   dead letters, and anything pending, queued, retrying, leased or held, keeps the message;
3. no idempotency key of it is younger than the idempotency window (24 h): removing the message
   would let the same key publish it again.
A message without deliveries has nothing left to deliver: it is removable by rule 1 alone.

Nothing is removed here before it is archived: the archive job (analytics/archive.py) pages through
`removable_messages`, writes them to Parquet, then calls `remove`, which locks the rows, checks the
rules again (a re-publish may have routed an unroutable message meanwhile) and deletes the message,
its deliveries, their attempts and sends and its idempotency keys in the caller's transaction.
The paging is keyset on (created_at, id) within a room, on the index `message_room_recent`.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection

from delivery.models import Delivery, DeliveryAttempt, IdempotencyKey, Message, SendRecord
from delivery.publish import IDEMPOTENCY_WINDOW
from rooms.models import Room

SETTLED_FOR_GOOD = (Delivery.Status.DELIVERED, Delivery.Status.ACKED, Delivery.Status.EXPIRED,
                    Delivery.Status.UNROUTABLE)

# Rules 2 and 3 on a message `m` (SQL, so the page and the re-check under lock read the same rule).
KEPT = """
    EXISTS (SELECT 1 FROM {delivery} d WHERE d.message_id = m.id
            AND NOT (d.status = ANY(%(settled)s) OR (d.status = 'dead_lettered' AND d.purged_at IS NOT NULL)))
    OR EXISTS (SELECT 1 FROM {keys} k WHERE k.message_id = m.id AND k.created_at >= %(keys_since)s)
"""

REMOVABLE_PAGE = """
SELECT m.id, m.created_at FROM {message} m
 WHERE m.room_id = %(room)s AND m.created_at < %(cutoff)s
   AND m.created_at >= %(after_at)s AND (m.created_at > %(after_at)s OR m.id > %(after_id)s)
   AND NOT ({kept})
 ORDER BY m.created_at, m.id
 LIMIT %(limit)s
"""

STILL_KEPT = """
SELECT m.id FROM {message} m WHERE m.id = ANY(%(ids)s::uuid[]) AND ({kept})
"""

EPOCH = datetime.fromisoformat("1970-01-01T00:00:00+00:00")
NIL = uuid.UUID(int=0)


@dataclass(frozen=True)
class Page:
    """Where a room's page of removable messages starts: after (created_at, id)."""

    after_at: datetime = EPOCH
    after_id: uuid.UUID = NIL


# The earliest and latest time any of the messages' rows carries (publish, send, attempt, delivery change):
# every report hour their rows count in lies between (analytics/jobs/archive.py reads a batch only for those).
SPAN = """
SELECT min(at), max(at) FROM (
    SELECT created_at AS at FROM {message} WHERE id = ANY(%(ids)s::uuid[])
    UNION ALL SELECT updated_at FROM {deliveries} WHERE id = ANY(%(deliveries)s)
    UNION ALL SELECT started_at FROM {attempts} WHERE delivery_id = ANY(%(deliveries)s)
    UNION ALL SELECT sent_at FROM {sends} WHERE delivery_id = ANY(%(deliveries)s)
) AS stamps
"""


@dataclass(frozen=True)
class Removed:
    """How many rows one removal deleted, per table, and the span of their times."""

    messages: int
    deliveries: int
    attempts: int
    sends: int
    keys: int
    first_at: datetime | None = None
    last_at: datetime | None = None

    @property
    def rows(self) -> int:
        return self.messages + self.deliveries + self.attempts + self.sends + self.keys


def kept_sql() -> str:
    return KEPT.format(delivery=Delivery._meta.db_table, keys=IdempotencyKey._meta.db_table)


def rule_params(now: datetime) -> dict[str, Any]:
    return {"settled": [str(status) for status in SETTLED_FOR_GOOD], "keys_since": now - IDEMPOTENCY_WINDOW}


def removable_messages(room: Room, now: datetime, page: Page, limit: int) -> list[tuple[uuid.UUID, datetime]]:
    """Return up to `limit` removable messages of `room` (id, created_at) after `page`, oldest first."""
    sql = REMOVABLE_PAGE.format(message=Message._meta.db_table, kept=kept_sql())
    params = {**rule_params(now), "room": room.pk, "cutoff": now - room.effective_retention, "limit": limit,
              "after_at": page.after_at, "after_id": page.after_id}
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


def remove(message_ids: Sequence[uuid.UUID], now: datetime) -> Removed | None:
    """Delete these messages and every row hanging off them; None (nothing deleted) if one is no longer removable.

    Runs in the caller's transaction. The messages and their deliveries are locked first (deliveries
    in id order, as every writer of deliveries locks them), so no writer changes them between the
    check and the delete.
    """
    ids = list(message_ids)
    list(Message.objects.filter(pk__in=ids).order_by("pk").select_for_update().values_list("pk"))
    deliveries = list(Delivery.objects.filter(message_id__in=ids).order_by("pk").select_for_update()
                      .values_list("pk", flat=True))
    with connection.cursor() as cursor:
        cursor.execute(STILL_KEPT.format(message=Message._meta.db_table, kept=kept_sql()),
                       {**rule_params(now), "ids": ids})
        if cursor.fetchone() is not None:
            return None
    tables = {name: model._meta.db_table for name, model in
              [("attempts", DeliveryAttempt), ("sends", SendRecord), ("deliveries", Delivery)]}
    with connection.cursor() as cursor:
        cursor.execute(SPAN.format(message=Message._meta.db_table, **tables), {"ids": ids, "deliveries": deliveries})
        first_at, last_at = cursor.fetchone()
        counts = {}
        for name, table in tables.items():  # children first: the foreign keys are checked at each statement
            column = "id" if name == "deliveries" else "delivery_id"
            cursor.execute(f"DELETE FROM {table} WHERE {column} = ANY(%s)", [deliveries])
            counts[name] = cursor.rowcount
        cursor.execute(f"DELETE FROM {IdempotencyKey._meta.db_table} WHERE message_id = ANY(%s::uuid[])", [ids])
        counts["keys"] = cursor.rowcount
        cursor.execute(f"DELETE FROM {Message._meta.db_table} WHERE id = ANY(%s::uuid[])", [ids])
        counts["messages"] = cursor.rowcount
    return Removed(**counts, first_at=first_at, last_at=last_at)
