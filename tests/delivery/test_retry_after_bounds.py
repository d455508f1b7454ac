"""A receiver's Retry-After is read within bounds: any length of digits or any date waits at most a day."""

from __future__ import annotations

import time

import pytest
from django.test import Client

from delivery.models import Delivery, DeliveryAttempt
from delivery.transports import MAX_RETRY_AFTER_MS, retry_after_ms
from rooms.models import ApiKey
from subscriptions.retry import RetryPolicy
from tests.delivery.push.test_push_delivery import publish
from tests.factories import make_event_type, make_room, make_subscription
from tests.receiver import Receiver, Reply

DAY_MS = 24 * 3600 * 1000


@pytest.mark.parametrize(("value", "expected"), [
    ("5", 5_000),
    ("9" * 20, MAX_RETRY_AFTER_MS),
    ("9" * 4_400, MAX_RETRY_AFTER_MS),
    ("Fri, 31 Dec 9999 23:59:59 GMT", MAX_RETRY_AFTER_MS),
    ("Thu, 01 Jan 1970 00:00:00 GMT", 0),
    ("soon", None),
    ("-5", None),
    ("1e400", None),
])
def test_retry_after_is_read_within_bounds(value: str, expected: int | None) -> None:
    assert MAX_RETRY_AFTER_MS == DAY_MS
    assert retry_after_ms(value) == expected


def test_the_retry_policy_caps_any_wait_it_is_asked_for() -> None:
    policy = RetryPolicy(delay_ms=1000, multiplier=2.0, attempts=3)
    assert policy.delay_after(1, at_least_ms=10**30) == 365 * 24 * 3600 * 1000
    assert policy.delay_after(1, at_least_ms=float("inf")) == 365 * 24 * 3600 * 1000
    assert policy.delay_after(1, at_least_ms=5_000) == 5_000
    assert policy.delay_after(1, at_least_ms=None) == 2_000


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("worker")
@pytest.mark.parametrize("digits", [20, 4_400])
def test_a_huge_retry_after_schedules_the_retry_a_day_later(client: Client, receiver: Receiver, digits: int) -> None:
    room = make_room(delivery_delay_ms=50, delivery_delay_multiplier=1, delivery_attempts=3)
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    subscription = make_subscription(room, push_url=receiver.script(
        "/busy", lambda n: Reply(503, {"Retry-After": "9" * digits})))

    message_id = publish(client, key, room.pk)["message_id"]

    receiver.wait_for("/busy", 1)
    deadline = time.monotonic() + 15
    while not DeliveryAttempt.objects.filter(delivery__message_id=message_id).exists():
        assert time.monotonic() < deadline, "the failed attempt was never recorded"
        time.sleep(0.05)
    [attempt] = DeliveryAttempt.objects.filter(delivery__message_id=message_id)
    assert (attempt.outcome, attempt.status_code, attempt.next_delay_ms) == ("failure", 503, DAY_MS)
    delivery = Delivery.objects.get(message_id=message_id, subscription=subscription)
    assert delivery.status == "retrying" and delivery.crashed_attempts == 0
    time.sleep(1.0)
    assert len(receiver.requests("/busy")) == 1  # no crash, no early retry
