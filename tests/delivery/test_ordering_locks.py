"""Ordering keys take a bounded number of PostgreSQL locks, whatever a publish holds (issue 23, item 4).

The attack: one advisory lock per (ordered subscription, ordering key) in one transaction, so a batch
of 500 distinct keys to a room with 20 ordered subscriptions asked for 10,000 locks and ran the
server's shared lock table out of memory, failing every tenant's transactions on the cluster.
"""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test import Client

from delivery.models import Delivery
from delivery.sequencing import LOCK_STRIPES, lock_keys
from rooms.models import ApiKey
from subscriptions.models import Subscription
from tests.callers import call_api
from tests.factories import make_event_type, make_room, make_subscription

pytestmark = pytest.mark.django_db(transaction=True)


def advisory_locks_held() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()")
        return cursor.fetchone()[0]


def test_a_transaction_holds_at_most_one_lock_per_stripe_whatever_the_keys() -> None:
    keys = [(subscription_id, f"key-{n}") for subscription_id in range(1, 41) for n in range(500)]
    with transaction.atomic():
        lock_keys(keys)
        held = advisory_locks_held()
    assert 0 < held <= LOCK_STRIPES, held
    assert advisory_locks_held() == 0  # transaction-scoped: gone at commit


def test_a_batch_of_500_keys_to_20_ordered_subscriptions_is_accepted_and_sequenced(client: Client) -> None:
    room = make_room()
    make_event_type(room)
    subscriptions = [make_subscription(room, type=Subscription.Type.PULL, ordering=Subscription.Ordering.ON)
                     for _ in range(20)]
    key = ApiKey.issue("batch", rooms=[room])[1]

    def publish(seq: int) -> None:
        body = {"messages": [{"event_type": "order.created", "event_version": "1", "ordering_key": f"k{n}",
                              "payload": {"n": n, "seq": seq}} for n in range(500)]}
        response = call_api(client, "post", f"/api/v1/rooms/{room.pk}/messages/batch/", body, key)
        assert response.status_code == 202, response.content[:500]

    publish(1)
    publish(2)  # every key is busy now: the second event of each waits behind the first
    deliveries = Delivery.objects.filter(subscription__in=subscriptions)
    by_status = {status: deliveries.filter(status=status).count() for status in ("pending", "queued", "held")}
    assert deliveries.count() == 2 * 500 * 20, by_status
    assert deliveries.filter(status=Delivery.Status.HELD).count() == 500 * 20, by_status
    assert deliveries.filter(status=Delivery.Status.HELD, message__payload__seq=1).count() == 0, by_status
