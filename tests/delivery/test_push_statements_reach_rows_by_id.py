"""The statements every delivery passes through reach their rows by id, whatever PostgreSQL's statistics say.

The relay's receipt (rows.queue_sends), the claim (CLAIM_FRESH_SQL) and the record of a success
(RECORD_DELIVERED_SQL) each name their deliveries by id. With a status condition on the delivery
table, PostgreSQL could read them through an index that leads with the status instead: when it last
analysed the table nearly every delivery was `delivered`, so reading "every queued delivery" looked
cheapest. That plan reads every unsettled delivery of every tenant, and the dead entries of settled
ones until a vacuum, for each statement: `make bench`'s fan-out claims took 1.6 ms a statement in its
first run and 2.6 ms in its third, as those entries grew. Here the table is analysed while all its
deliveries are delivered, then a backlog it does not know of appears, and each statement's plan
(EXPLAIN, never run) must touch the delivery table through its primary key alone.

The same holds for every change DeliveryQuerySet makes to deliveries it names by id (the claim of
an attempt, a success, a retry, a dead letter: `update` locks them by id and tests the locked rows).
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from django.db import connection, transaction
from django.utils import timezone

from delivery import rows
from delivery.models import Delivery, Message, Retrying, SendRecord, claim_fresh_sql, record_delivered_sql
from delivery.statements import FreshClaim, claim_params, delivered_params
from tests.factories import make_delivery, make_message, make_room, make_subscription

pytestmark = pytest.mark.django_db

SETTLED = 4000  # deliveries analysed as delivered
BACKLOG = 400  # then queued, unknown to the statistics
PRIMARY_KEY = "delivery_delivery_pkey"


def copies(model: type[Message] | type[Delivery], template_id: Any, n: int, set_sql: dict[str, str]) -> None:
    """Insert n copies of one row of `model`, with the columns in `set_sql` computed by SQL (`g`: 1..n)."""
    table = model._meta.db_table
    columns = [f.column for f in model._meta.concrete_fields if not (model is Delivery and f.primary_key)]
    values = [set_sql.get(column, f"t.{column}") for column in columns]
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {table} ({', '.join(columns)}) SELECT {', '.join(values)} "
                       f"FROM {table} AS t, generate_series(1, {n}) AS g WHERE t.id = %s", [template_id])


@pytest.fixture
def backlog() -> list[Delivery]:
    """A delivery table analysed with SETTLED delivered rows, then BACKLOG rows queued; the backlog's deliveries."""
    if connection.vendor != "postgresql":
        pytest.skip("the statements under test are PostgreSQL's")
    subscription = make_subscription(make_room())
    template = make_delivery(make_message(subscription.room), subscription, status=Delivery.Status.DELIVERED)
    message_id = "('00000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid"  # the g-th copy's message
    copies(Message, template.message_id, SETTLED + BACKLOG, {"id": message_id, "correlation_id": "'settled-' || g"})
    copies(Delivery, template.pk, SETTLED + BACKLOG, {"message_id": message_id})
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE delivery_delivery, delivery_message")
    queued = list(Delivery.objects.filter(subscription=subscription).exclude(pk=template.pk).order_by("-pk")[:BACKLOG])
    Delivery.objects.filter(pk__in=[d.pk for d in queued]).update(status=Delivery.Status.QUEUED)
    return queued


def delivery_indexes() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'delivery_delivery'")
        return {name for (name,) in cursor.fetchall()}


def plan_of(sql: str, params: Any) -> list[dict[str, Any]]:
    """The nodes of the statement's plan (EXPLAIN: not run), its parameters bound by the server as the ledger's are."""
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute("EXPLAIN (FORMAT JSON) " + sql, params)
        (plan,) = cursor.fetchone()
    nodes: list[dict[str, Any]] = []

    def walk(node: dict[str, Any]) -> None:
        nodes.append(node)
        for child in node.get("Plans", []):
            walk(child)

    walk(plan[0]["Plan"])
    return nodes


def assert_by_primary_key(nodes: list[dict[str, Any]]) -> None:
    ours = delivery_indexes()
    used = {node["Index Name"] for node in nodes if node.get("Index Name") in ours}
    scans = [node["Node Type"] for node in nodes
             if node.get("Relation Name") == "delivery_delivery" and node["Node Type"] == "Seq Scan"]
    shown = [(node["Node Type"], node.get("Relation Name"), node.get("Index Name")) for node in nodes]
    assert used == {PRIMARY_KEY} and not scans, f"the delivery table is read through {used} {scans}: {shown}"


def test_the_relays_receipt_reaches_its_deliveries_by_id(backlog: list[Delivery], monkeypatch) -> None:
    sends = [SendRecord(delivery_id=d.pk, kind=SendRecord.Kind.PUBLISH, destination=d.destination, attempt=1,
                        delay_ms=0, correlation_id="c") for d in backlog[:16]]
    statements: list[tuple[str, Any]] = []
    monkeypatch.setattr(rows, "_run", lambda sql, params: statements.append((sql, params)) or [(0,)] * len(sends))
    rows.queue_sends(sends, timezone.now())
    assert len(statements) == 1
    assert_by_primary_key(plan_of(*statements[0]))


def test_the_claim_reaches_its_deliveries_by_id(backlog: list[Delivery]) -> None:
    claims = [FreshClaim(d.pk, 1, d.subscription_id, d.message_id) for d in backlog[:16]]
    assert_by_primary_key(plan_of(claim_fresh_sql(), claim_params(claims, timezone.now(), Delivery.UNSETTLED)))


def test_the_record_of_a_success_reaches_its_deliveries_by_id(backlog: list[Delivery]) -> None:
    now = timezone.now()
    successes = [(state, 1, now, 12, 200) for state in Delivery.objects.filter(pk__in=[d.pk for d in backlog[:16]])
                 .states().values()]
    assert_by_primary_key(plan_of(record_delivered_sql(), delivered_params(successes, now, Delivery.UNSETTLED)))


BY_ID = {
    "claim_attempt": lambda ids, now: Delivery.objects.filter(pk__in=ids).claim_attempt(2, now),
    "mark_delivered": lambda ids, now: Delivery.objects.filter(pk__in=ids).mark_delivered(200, now),
    "mark_retrying": lambda ids, now: Delivery.objects.mark_retrying(
        [Retrying(pk, 0, now, 500, "HTTP 500") for pk in ids], now),
    "mark_dead_lettered": lambda ids, now: Delivery.objects.filter(pk=ids[0]).mark_dead_lettered(
        "gone", now, attempt=0),
    "withdraw_attempt": lambda ids, now: Delivery.objects.filter(pk=ids[0]).withdraw_attempt(0, now, now),
}


@pytest.mark.parametrize("change", BY_ID)
def test_a_change_of_deliveries_named_by_id_reaches_them_by_id(backlog: list[Delivery], change: str) -> None:
    ids = [d.pk for d in backlog[:16]]
    updates: list[tuple[str, Any]] = []

    def keep_updates(execute, sql, params, many, context):
        if "UPDATE" in sql:
            updates.append((sql, params))
        return execute(sql, params, many, context)

    with transaction.atomic(), connection.execute_wrapper(keep_updates):
        changed = BY_ID[change](ids, timezone.now())
        transaction.set_rollback(True)
    assert updates, f"{change} ran no UPDATE"
    for sql, params in updates:
        assert_by_primary_key(plan_of(sql, params))
    expected = 0 if change == "withdraw_attempt" else 1 if change == "mark_dead_lettered" else len(ids)
    assert changed == expected, f"{change} changed {changed} rows, not {expected}"
