"""The push statements' arrays go to PostgreSQL as text (delivery/statements.py `array`) and come back as they were.

psycopg adapted each list in Python, element by element; the claim and record statements now send
PostgreSQL's text form of each array, cast by the statement. These check that every kind of value
they carry survives it, through the server's own array input, on both kinds of cursor that run them
(the ledger's server-side binding, Django's client-side), and that a correlation id with every
character an array's text treats specially is recorded as it was published.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone

import psycopg
import pytest
from django.db import connection
from django.utils import timezone as django_timezone

from delivery.models import Delivery, DeliveryAttempt
from delivery.statements import FreshClaim
from dovecote.pg_arrays import array
from tests.factories import make_delivery, make_message, make_room, make_subscription

pytestmark = pytest.mark.django_db

# Quotes, backslashes, commas, braces, spaces at either end, the word NULL, nothing at all, non-ASCII.
TEXTS = ["plain", "", "NULL", "null", "a,b", "{braced}", 'say "hi"', "back\\slash", "\\", '"', " padded ",
         "it's", "ünïcödé", "tab\there"]
MOMENTS = [datetime(2026, 11, 29, 7, 0, 0, 123456, tzinfo=UTC),
           datetime(2026, 1, 1, 0, 0, tzinfo=timezone(timedelta(hours=5, minutes=30)))]
CASES = [("text", TEXTS), ("bigint", [1, 0, -5, 2**63 - 1, None]), ("int", [200, None, 503]),
         ("uuid", [uuid.uuid4(), uuid.UUID(int=0)]), ("timestamptz", MOMENTS), ("bigint", []),
         ("boolean", [True, False, None])]


@pytest.mark.parametrize(("kind", "values"), CASES, ids=[f"{kind}[{len(values)}]" for kind, values in CASES])
def test_each_kind_of_value_reads_back_as_it_was_on_both_kinds_of_cursor(kind: str, values: list[object]) -> None:
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as server_side:  # the ledger's binding
        server_side.execute(f"SELECT %s::{kind}[]", [array(values)], prepare=True)
        assert server_side.fetchone()[0] == values
    with connection.cursor() as client_side:  # Django's, as Delivery.objects.claim_fresh runs it
        client_side.execute(f"SELECT %s::{kind}[]", [array(values)])
        assert client_side.fetchone()[0] == values


def test_a_value_with_no_array_form_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match="no array element form for a float"):
        array([1, 2.5])
    with pytest.raises(TypeError, match="no array element form for a bytes"):
        array([b"raw"])
    with pytest.raises(ValueError, match="naive datetime"):
        array([datetime(2026, 11, 29, 7, 0, tzinfo=UTC).replace(tzinfo=None)])


def test_a_success_keeps_a_correlation_id_full_of_array_syntax() -> None:
    subscription = make_subscription(make_room())
    tricky = ['id "quoted", {braced}', "back\\slash,NULL", " NULL "]
    deliveries = [make_delivery(make_message(subscription.room, correlation_id=correlation_id), subscription)
                  for correlation_id in tricky]
    now = django_timezone.now()

    claimed = Delivery.objects.claim_fresh(
        [FreshClaim(d.pk, 1, subscription.pk, d.message_id) for d in deliveries], now)
    assert claimed is not None and set(claimed) == {d.pk for d in deliveries}
    assert Delivery.objects.record_delivered(
        [(claimed[d.pk], 1, now, 12, 204 if i else None) for i, d in enumerate(deliveries)], now)

    attempts = {a.delivery_id: a for a in DeliveryAttempt.objects.filter(delivery__in=deliveries)}
    for index, delivery in enumerate(deliveries):
        attempt = attempts[delivery.pk]
        assert (attempt.correlation_id, attempt.started_at, attempt.duration_ms, attempt.status_code) == (
            tricky[index], now, 12, 204 if index else None), attempt.__dict__
        assert Delivery.objects.get(pk=delivery.pk).status == Delivery.Status.DELIVERED
