"""Deleting a subscription (or its room) while a worker adds a push claim for it deletes both, never a 500."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from delivery.actions import delete_room, delete_subscription
from delivery.models import PushClaim
from rooms.models import Room
from subscriptions.models import Subscription
from tests.factories import make_room, make_subscription

pytestmark = pytest.mark.django_db(transaction=True)


def blocked_backends() -> int:
    """Count this database's sessions waiting for a lock."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       "AND wait_event_type = 'Lock'")
        return cursor.fetchone()[0]


def claim_while_deleting(subscription: Subscription, delete: Callable[[], object]) -> None:
    """Add a claim as a worker does (under the row lock), and commit it only once the delete waits for the lock."""
    locked, failures = threading.Event(), []

    def claimer() -> None:
        try:
            with transaction.atomic():
                Subscription.objects.select_for_update(no_key=True).filter(pk=subscription.pk).first()  # as claims.py
                PushClaim.objects.create(subscription_id=subscription.pk, token=uuid.uuid4().hex,
                                         until=timezone.now() + timedelta(seconds=15))
                locked.set()
                deadline = time.monotonic() + 30
                while blocked_backends() == 0:  # the delete has reached the lock: commit under its feet
                    if time.monotonic() > deadline:
                        failures.append("the delete never waited for the claimer's row lock")
                        break
                    time.sleep(0.01)
        finally:
            connections.close_all()

    thread = threading.Thread(target=claimer)
    thread.start()
    try:
        assert locked.wait(30), "the claimer never locked the subscription's row"
        delete()
    finally:
        thread.join(60)
    assert not failures, failures


def test_a_subscription_deleted_while_a_worker_claims_it_goes_with_its_claim() -> None:
    subscription = make_subscription(make_room())

    claim_while_deleting(subscription, lambda: delete_subscription(subscription))

    assert not Subscription.objects.filter(pk=subscription.pk).exists()
    assert not PushClaim.objects.filter(subscription_id=subscription.pk).exists()


def test_a_room_deleted_while_a_worker_claims_one_of_its_subscriptions_goes_with_it() -> None:
    room = make_room()
    subscription = make_subscription(room)

    claim_while_deleting(subscription, lambda: delete_room(room))

    assert not Room.objects.filter(pk=room.pk).exists()
    assert not PushClaim.objects.filter(subscription_id=subscription.pk).exists()
