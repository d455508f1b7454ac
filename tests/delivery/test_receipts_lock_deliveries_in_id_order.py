"""The relay's receipt write (rows.queue_sends) locks its deliveries in id order, as every multi-row UPDATE does.

A worker may claim a frame (CLAIM_FRESH_SQL, locking in id order) before the relay has recorded the
broker's receipt for it. `make bench` (14:05, --only retry) caught the two statements in a deadlock:
the receipt write locked the same rows in the order its plan met them, PostgreSQL broke the cycle
after deadlock_timeout (1 s), every retry due in that second was a second late and the worker's
session failed its batch and ended.
"""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from delivery import rows
from delivery.models import Delivery, SendRecord
from tests.database import other_connection
from tests.factories import make_delivery, make_message, make_room, make_subscription

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_receipt_write_waiting_on_one_delivery_has_not_locked_the_deliveries_after_it() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the statement under test is PostgreSQL's")
    room = make_room()
    subscription = make_subscription(room, type="pull", push_url="")
    first, second = (make_delivery(make_message(room), subscription) for _ in range(2))
    assert first.pk < second.pk
    # The first row's live version now lies after the second's in the table: a scan in table order
    # meets the second delivery first.
    Delivery.objects.filter(pk=first.pk).update(last_error="moved")
    sends = [SendRecord(delivery_id=d.pk, kind=SendRecord.Kind.PUBLISH, destination=d.destination, attempt=1,
                        delay_ms=0, correlation_id="c") for d in (second, first)]

    holder = other_connection()
    holder.execute("SELECT id FROM delivery_delivery WHERE id = %s FOR NO KEY UPDATE", [first.pk])
    recorded: list[BaseException | None] = []
    writer_pid: list[int] = []

    def record() -> None:
        try:
            with connection.cursor() as cursor:  # the plan that visits rows in table order
                cursor.execute("SELECT pg_backend_pid()")
                writer_pid.append(cursor.fetchone()[0])
                cursor.execute("SET enable_indexscan = off; SET enable_bitmapscan = off")
            rows.queue_sends(sends, timezone.now())
            recorded.append(None)
        except BaseException as error:  # noqa: BLE001 - the test reports it
            recorded.append(error)
        finally:
            connection.close()

    writer = threading.Thread(target=record)
    writer.start()
    watcher = other_connection(autocommit=True)  # pg_stat_activity is read afresh in each transaction
    try:
        deadline = time.monotonic() + 30
        waiting = None
        while time.monotonic() < deadline:
            with watcher.cursor() as probe:
                probe.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s",
                              [writer_pid[0] if writer_pid else 0])
                row = probe.fetchone()
                waiting = row[0] if row else None
            if waiting == "Lock":
                break
            time.sleep(0.02)
        assert waiting == "Lock", f"the receipt write never waited for the first delivery's lock (saw {waiting!r})"
        # Waiting on the first delivery, it must not hold the second: a claim locking both in id order
        # would otherwise wait on it while it waits on the claim.
        try:
            holder.execute("SELECT id FROM delivery_delivery WHERE id = %s FOR NO KEY UPDATE NOWAIT", [second.pk])
        except psycopg.errors.LockNotAvailable:
            pytest.fail("the receipt write locked the second delivery before the first: not in id order")
    finally:
        watcher.close()
        holder.rollback()
        holder.close()
        writer.join(30)
    assert recorded == [None], recorded
    assert set(Delivery.objects.filter(pk__in=[first.pk, second.pk]).values_list("status", flat=True)) == {
        Delivery.Status.QUEUED}
