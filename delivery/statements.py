"""The raw SQL of the push path's two busiest statements and their parameter builders (PostgreSQL).

Claiming every fresh attempt of a burst and recording successful attempts each take one
statement. `DeliveryManager.claim_fresh` and `record_delivered` (models.py) run them through
Django's connection, the push ledger (push/ledger.py) on its own; both fill the table names
from the models (`claim_fresh_sql`, `record_delivered_sql` there) and the parameters here.

Both reach their rows by id only. They lock the rows in id order, then test the state of the rows
as locked (`locked AS l`), never the delivery table's own status: a status condition on the table
lets PostgreSQL read the rows through an index that leads with the status instead of the primary
key, and its statistics often make that look cheapest (nearly every row is `delivered` when it last
analysed the table). That plan reads every unsettled delivery's entry, and the entries that the
versions of settled ones left behind until a vacuum: the cost of each claim grows with every
tenant's backlog. The relay's receipt statement (rows.queue_sends) is written the same way, and so is
every change DeliveryQuerySet.update makes to deliveries named by id.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from dovecote.pg_arrays import array


@dataclass(frozen=True, slots=True)
class FreshClaim:
    """A frame asking to start attempt `attempt` of a delivery (see DeliveryManager.claim_fresh)."""

    delivery_id: int
    attempt: int
    subscription_id: int
    message_id: uuid.UUID


# PostgreSQL: claim every fresh attempt of a burst and read back what the push path needs (the subscription's
# secret version too: a rotation counts from the next attempt), in one statement.
# Both lock their rows in id order first, as DeliveryQuerySet.update does (no deadlock between batches), and
# test the rows' state as locked (the module's text says why).
CLAIM_FRESH_SQL = """
WITH locked AS MATERIALIZED (
    SELECT id, status, attempts, subscription_id, message_id FROM {delivery}
     WHERE id = ANY(%(ids)s::bigint[]) ORDER BY id FOR NO KEY UPDATE)
UPDATE {delivery} AS d
   SET attempts = f.attempt, attempt_started_at = %(now)s, updated_at = %(now)s
  FROM locked AS l,
       unnest(%(ids)s::bigint[], %(attempts)s::int[], %(subscriptions)s::bigint[], %(messages)s::uuid[])
         AS f(id, attempt, subscription_id, message_id),
       {message} AS m, {subscription} AS s
 WHERE d.id = l.id AND f.id = l.id AND m.id = l.message_id AND s.id = l.subscription_id
   AND l.subscription_id = f.subscription_id AND l.message_id = f.message_id
   AND l.status = ANY(%(unsettled)s) AND l.attempts < f.attempt
   AND (m.expires_at IS NULL OR m.expires_at > %(now)s)
RETURNING d.id, d.status, d.subscription_id, d.message_id, d.destination, d.attempts, d.attempt_started_at,
          d.redelivery_count, d.replays, m.correlation_id, m.event_type, m.event_version, m.room_id, m.expires_at,
          m.created_at, m.traceparent, d.ordering_key, s.secret_version
"""


# PostgreSQL: record successful attempts (their timeline rows) and settle their deliveries, in one statement.
RECORD_DELIVERED_SQL = """
WITH locked AS MATERIALIZED (
    SELECT id, status FROM {delivery} WHERE id = ANY(%(ids)s::bigint[]) ORDER BY id FOR NO KEY UPDATE),
attempt_rows AS (
    INSERT INTO {attempts} (delivery_id, correlation_id, life, attempt, started_at, duration_ms, outcome,
                            status_code, error, next_delay_ms)
    SELECT f.id, f.correlation_id, f.life, f.attempt, f.started_at, f.duration_ms, 'success', f.code, '', NULL
      FROM unnest(%(ids)s::bigint[], %(correlations)s::text[], %(lives)s::int[], %(attempts)s::int[],
                  %(started)s::timestamptz[], %(durations)s::int[], %(codes)s::int[])
             AS f(id, correlation_id, life, attempt, started_at, duration_ms, code)
)
UPDATE {delivery} AS d
   SET status = 'delivered', attempt_started_at = NULL, next_attempt_at = NULL, lease_token = '',
       lease_expires_at = NULL, last_status_code = f.code, last_error = '', updated_at = %(now)s
  FROM locked AS l, unnest(%(ids)s::bigint[], %(codes)s::int[]) AS f(id, code)
 WHERE d.id = l.id AND f.id = l.id AND l.status = ANY(%(unsettled)s)
"""


def claim_params(claims: list[FreshClaim], now: datetime, unsettled: Sequence[str]) -> dict[str, Any]:
    """The parameters of CLAIM_FRESH_SQL for these claims (`unsettled`: Delivery.UNSETTLED)."""
    return {"now": now, "unsettled": list(unsettled),
            "ids": array([c.delivery_id for c in claims]), "attempts": array([c.attempt for c in claims]),
            "subscriptions": array([c.subscription_id for c in claims]),
            "messages": array([c.message_id for c in claims])}


def delivered_params(rows: list[tuple[Any, int, datetime, int, int | None]], now: datetime,
                     unsettled: Sequence[str]) -> dict[str, Any]:
    """The parameters of RECORD_DELIVERED_SQL for (delivery, attempt, start, duration ms, status code) rows."""
    return {"now": now, "unsettled": list(unsettled),
            "ids": array([d.pk for d, *_ in rows]), "correlations": array([d.message.correlation_id for d, *_ in rows]),
            "lives": array([d.replays + 1 for d, *_ in rows]), "attempts": array([attempt for _, attempt, *_ in rows]),
            "started": array([started for _, _, started, _, _ in rows]),
            "durations": array([duration for *_, duration, _ in rows]), "codes": array([code for *_, code in rows])}
