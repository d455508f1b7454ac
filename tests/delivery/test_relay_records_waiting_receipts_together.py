"""The relay's recorder writes the receipts that came while its last statement ran in one statement, each its own time.

After a slow receipt write (its backend waiting for a core, or for a row a claim holds), the batches of
receipts that piled up behind it are written together, as the relay's sender sends what waits for it in
one batch of frames: one statement more, not one per batch.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime

import pytest
from django.db import connection

from delivery import outbox, rows
from delivery.models import Delivery, SendRecord
from tests.database import other_connection
from tests.factories import make_delivery, make_message, make_room, make_subscription

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("live_services")]


def wait_for(condition: Callable[[], bool], what: Callable[[], str], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what()
        time.sleep(0.01)


def test_receipts_that_came_while_a_write_waited_are_written_in_one_statement_each_with_its_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the row lock that holds the first write back is PostgreSQL's")
    room = make_room()
    subscription = make_subscription(room, type="pull", push_url="")
    made = [make_delivery(make_message(room), subscription) for _ in range(4)]
    deliveries = list(Delivery.objects.filter(pk__in=[d.pk for d in made])
                      .select_related("message__room", "subscription__room").order_by("pk"))
    writes: list[list[tuple[int, datetime]]] = []
    sent: list[list[int]] = []
    queue_sends, send_frames = rows.queue_sends, outbox.send_frames

    def recording_writes(sends: Sequence[SendRecord], now: datetime) -> None:
        writes.append([(send.delivery_id, send.sent_at) for send in sends])
        queue_sends(sends, now)

    def recording_sends(batch: Sequence[Delivery]) -> list:
        confirmed = send_frames(batch)
        sent.append([delivery.pk for delivery, _ in confirmed])
        return confirmed

    monkeypatch.setattr(rows, "queue_sends", recording_writes)
    monkeypatch.setattr(outbox, "send_frames", recording_sends)
    holder = other_connection()  # holds the first delivery's row: the first receipt write waits for it
    holder.execute("SELECT id FROM delivery_delivery WHERE id = %s FOR NO KEY UPDATE", [deliveries[0].pk])
    relay = outbox.OutboxRelay()
    try:
        relay.submit(deliveries[:1])
        wait_for(lambda: len(writes) == 1, lambda: f"the first receipt write never started: {writes}")
        for index, delivery in enumerate(deliveries[1:], start=2):  # three batches, each sent on its own
            relay.submit([delivery])
            wait_for(lambda index=index: len(sent) == index, lambda: f"sent {sent}")
        assert len(writes) == 1, f"a receipt write ran while the first one waited: {writes}"
    finally:
        holder.rollback()
        holder.close()
    assert relay.wait_idle(30), f"the relay did not finish: writes {writes}"

    assert [[pk for pk, _ in write] for write in writes] == [[deliveries[0].pk], [d.pk for d in deliveries[1:]]]
    times = [at for _, at in writes[1]]
    assert times == sorted(times) and len(set(times)) == 3, f"each batch keeps its own receipt time: {times}"
    recorded = dict(SendRecord.objects.filter(delivery__in=deliveries).values_list("delivery_id", "sent_at"))
    assert recorded == dict(pk_at for write in writes for pk_at in write)
    assert set(Delivery.objects.filter(pk__in=[d.pk for d in deliveries]).values_list("status", flat=True)) == {
        Delivery.Status.QUEUED}
