"""The raw SQL of the push path's two busiest statements, their parameter builders, and the JSON rows form.

Claiming every fresh attempt of a burst and recording successful attempts each take one
statement, its rows sent as one JSON text (`encode_rows`, as the publish path's inserts send
theirs, delivery/rows.py). `DeliveryManager.claim_fresh` and `record_delivered` (models.py) run
them through Django's connection, the push ledger (push/ledger.py) on its own; both fill the
table names from the models (`claim_fresh_sql`, `record_delivered_sql` there) and the parameters here.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from psycopg.types.json import Json, Jsonb


@dataclass(frozen=True, slots=True)
class FreshClaim:
    """A frame asking to start attempt `attempt` of a delivery (see DeliveryManager.claim_fresh)."""

    delivery_id: int
    attempt: int
    subscription_id: int
    message_id: uuid.UUID


# PostgreSQL: claim every fresh attempt of a burst and read back what the push path needs (the subscription's
# secret version too: a rotation counts from the next attempt), in one statement.
# Both lock their rows in id order first, as DeliveryQuerySet.update does (no deadlock between batches).
CLAIM_FRESH_SQL = """
WITH f AS (SELECT * FROM json_to_recordset(%(claims)s::json)
                      AS f(id bigint, attempt int, subscription_id bigint, message_id uuid)),
locked AS (SELECT id FROM {delivery} WHERE id IN (SELECT id FROM f) ORDER BY id FOR NO KEY UPDATE)
UPDATE {delivery} AS d
   SET attempts = f.attempt, attempt_started_at = %(now)s, updated_at = %(now)s
  FROM f, {message} AS m, {subscription} AS s
 WHERE d.id = f.id AND m.id = d.message_id AND s.id = d.subscription_id AND d.id IN (SELECT id FROM locked)
   AND d.subscription_id = f.subscription_id AND d.message_id = f.message_id
   AND d.status = ANY(%(unsettled)s) AND d.attempts < f.attempt
   AND (m.expires_at IS NULL OR m.expires_at > %(now)s)
RETURNING d.id, d.status, d.subscription_id, d.message_id, d.destination, d.attempts, d.attempt_started_at,
          d.redelivery_count, d.replays, m.correlation_id, m.event_type, m.event_version, m.room_id, m.expires_at,
          m.created_at, m.traceparent, d.ordering_key, s.secret_version
"""


# PostgreSQL: record successful attempts (their timeline rows) and settle their deliveries, in one statement.
RECORD_DELIVERED_SQL = """
WITH f AS (SELECT * FROM json_to_recordset(%(rows)s::json)
                      AS f(id bigint, correlation_id text, life int, attempt int, started_at timestamptz,
                           duration_ms int, code int)),
locked AS (SELECT id FROM {delivery} WHERE id IN (SELECT id FROM f) ORDER BY id FOR NO KEY UPDATE),
attempt_rows AS (
    INSERT INTO {attempts} (delivery_id, correlation_id, life, attempt, started_at, duration_ms, outcome,
                            status_code, error, next_delay_ms)
    SELECT f.id, f.correlation_id, f.life, f.attempt, f.started_at, f.duration_ms, 'success', f.code, '', NULL
      FROM f
)
UPDATE {delivery} AS d
   SET status = 'delivered', attempt_started_at = NULL, next_attempt_at = NULL, lease_token = '',
       lease_expires_at = NULL, last_status_code = f.code, last_error = '', updated_at = %(now)s
  FROM f
 WHERE d.id = f.id AND d.status = ANY(%(unsettled)s) AND d.id IN (SELECT id FROM locked)
"""


def claim_params(claims: list[FreshClaim], now: datetime, unsettled: Sequence[str]) -> dict[str, Any]:
    """The parameters of CLAIM_FRESH_SQL for these claims (`unsettled`: Delivery.UNSETTLED)."""
    return {"now": now, "unsettled": list(unsettled), "claims": encode_rows(
        {"id": c.delivery_id, "attempt": c.attempt, "subscription_id": c.subscription_id,
         "message_id": str(c.message_id)} for c in claims)}


def delivered_params(rows: list[tuple[Any, int, datetime, int, int | None]], now: datetime,
                     unsettled: Sequence[str]) -> dict[str, Any]:
    """The parameters of RECORD_DELIVERED_SQL for (delivery, attempt, start, duration ms, status code) rows."""
    return {"now": now, "unsettled": list(unsettled), "rows": encode_rows(
        {"id": d.pk, "correlation_id": d.message.correlation_id, "life": d.replays + 1, "attempt": attempt,
         "started_at": started, "duration_ms": duration, "code": code}
        for d, attempt, started, duration, code in rows)}


def encode_rows(rows: Iterable[Mapping[str, object]]) -> str:
    """Rows as the JSON text a bulk statement reads with `json_to_recordset` or `json_populate_recordset`.

    One text parameter, read by PostgreSQL with each column's own input function: psycopg adapts a
    list parameter in Python element by element, which cost more than the statement's round trip
    (docs/benchmarks.md). A datetime is written with its offset (aware, USE_TZ), a UUID or Decimal as
    its text, a JSONField's prepared value as JSON.
    """
    return _ENCODER.encode(list(rows))


def _json_value(value: object) -> object:
    """A value json cannot write by itself, as the text its column's input function reads."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, uuid.UUID | Decimal):
        return str(value)
    if isinstance(value, Json | Jsonb):  # a JSONField's prepared value: written as JSON, not as a string
        return value.obj
    raise TypeError(f"no JSON form for a {type(value).__name__} value")


_ENCODER = json.JSONEncoder(default=_json_value, allow_nan=False, separators=(",", ":"))
