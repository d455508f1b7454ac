"""Retention picks only messages past their room's retention whose every delivery settled for good
(delivered, acked, expired, unroutable, purged dead letter), and removes them with every row hanging off them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from delivery import retention
from delivery.models import Delivery, DeliveryAttempt, IdempotencyKey, Message, SendRecord
from tests.factories import make_delivery, make_message, make_room, make_subscription

pytestmark = pytest.mark.django_db

Status = Delivery.Status
DAY = timedelta(days=1)


def removable_ids(room, now) -> set:
    return {message_id for message_id, _ in retention.removable_messages(room, now, retention.Page(), 1000)}


def old_message(room, statuses: list[str], age: timedelta = 10 * DAY, **delivery_fields) -> Message:
    message = make_message(room, created_at=timezone.now() - age)
    for status in statuses:
        make_delivery(message, make_subscription(room), status=status, **delivery_fields)
    return message


def test_only_old_messages_whose_every_delivery_settled_for_good_are_removable(settings) -> None:
    settings.DOVECOTE_RETENTION = 7 * 24 * 3600
    room = make_room()
    now = timezone.now()
    removable = {
        "delivered and acked": old_message(room, [Status.DELIVERED, Status.ACKED]),
        "expired": old_message(room, [Status.EXPIRED]),
        "unroutable": old_message(room, [Status.UNROUTABLE]),
        "purged dead letter": old_message(room, [Status.DEAD_LETTERED], purged_at=now - 9 * DAY),
    }
    kept = {
        "young": old_message(room, [Status.DELIVERED], age=6 * DAY),
        "dead letter": old_message(room, [Status.DELIVERED, Status.DEAD_LETTERED]),
        **{status: old_message(room, [Status.DELIVERED, status]) for status in
           (Status.PENDING, Status.QUEUED, Status.RETRYING, Status.LEASED, Status.HELD)},
    }
    found = removable_ids(room, now)
    assert found == {m.pk for m in removable.values()}, (
        f"kept wrongly: {[n for n, m in removable.items() if m.pk not in found]}, "
        f"removable wrongly: {[n for n, m in kept.items() if m.pk in found]}")


def test_a_room_retention_overrides_the_default(settings) -> None:
    settings.DOVECOTE_RETENTION = 7 * 24 * 3600
    short, default = make_room(retention_ms=2 * 3600 * 1000), make_room()
    now = timezone.now()
    three_hours = old_message(short, [Status.DELIVERED], age=timedelta(hours=3))
    one_hour = old_message(short, [Status.DELIVERED], age=timedelta(hours=1))
    elsewhere = old_message(default, [Status.DELIVERED], age=timedelta(hours=3))
    assert removable_ids(short, now) == {three_hours.pk}
    assert one_hour.pk not in removable_ids(short, now)
    assert removable_ids(default, now) == set(), elsewhere


def test_a_message_whose_idempotency_key_is_still_honoured_is_kept(settings) -> None:
    room = make_room(retention_ms=3600 * 1000)
    now = timezone.now()
    message = old_message(room, [Status.DELIVERED], age=timedelta(hours=3))
    key = IdempotencyKey.objects.create(room=room, key="k-1", message=message, created_at=message.created_at)
    assert removable_ids(room, now) == set()
    IdempotencyKey.objects.filter(pk=key.pk).update(created_at=now - timedelta(hours=25))
    assert removable_ids(room, now) == {message.pk}


def test_pages_go_oldest_first_and_resume_after_the_last_one() -> None:
    room = make_room(retention_ms=3600 * 1000)
    now = timezone.now()
    messages = [old_message(room, [Status.DELIVERED], age=timedelta(hours=10 - i)) for i in range(5)]
    first = retention.removable_messages(room, now, retention.Page(), 2)
    rest = retention.removable_messages(room, now, retention.Page(first[-1][1], first[-1][0]), 10)
    assert [m for m, _ in first + rest] == [m.pk for m in messages]


def test_remove_deletes_a_message_with_its_deliveries_attempts_sends_and_keys() -> None:
    room = make_room(retention_ms=3600 * 1000)
    now = timezone.now()
    gone = old_message(room, [Status.DELIVERED, Status.EXPIRED])
    stays = old_message(room, [Status.DELIVERED])
    for message in (gone, stays):
        for delivery in message.deliveries.all():
            DeliveryAttempt.objects.create(delivery=delivery, correlation_id="c", attempt=1, outcome="success")
            SendRecord.objects.create(delivery=delivery, kind="publish", destination=delivery.destination,
                                            attempt=1, correlation_id="c")
        IdempotencyKey.objects.create(room=room, key=f"k-{message.pk}", message=message,
                                      created_at=now - timedelta(days=2))
    with transaction.atomic():
        removed = retention.remove([gone.pk], now)
    assert removed is not None
    assert (removed.messages, removed.deliveries, removed.attempts, removed.sends, removed.keys) == (1, 2, 2, 2, 1)
    assert removed.first_at == gone.created_at and removed.last_at >= gone.created_at
    assert not Message.objects.filter(pk=gone.pk).exists()
    assert Delivery.objects.filter(message=stays).count() == 1
    assert DeliveryAttempt.objects.filter(delivery__message=stays).count() == 1
    assert SendRecord.objects.filter(delivery__message=stays).count() == 1
    assert IdempotencyKey.objects.filter(message=stays).count() == 1


def test_remove_deletes_nothing_when_a_message_is_no_longer_removable() -> None:
    room = make_room(retention_ms=3600 * 1000)
    now = timezone.now()
    settled = old_message(room, [Status.DELIVERED])
    replayed = old_message(room, [Status.DELIVERED, Status.PENDING])  # e.g. a re-publish routed it meanwhile
    with transaction.atomic():
        assert retention.remove([settled.pk, replayed.pk], now) is None
    assert Message.objects.filter(pk__in=[settled.pk, replayed.pk]).count() == 2
    assert Delivery.objects.filter(message__in=[settled, replayed]).count() == 3
