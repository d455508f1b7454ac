"""After a 410 Gone, no POST of the subscription starts until it is resumed, and nothing is lost.

A real receiver answers the first POST with 410 and records when each POST arrives. Meanwhile
the session holds two more messages, judged and waiting for their turn (max_per_second 1), and
the first message's retry comes due 100 ms after the 410. None of them
may be POSTed: the session stops the moment it reads the 410, withdraws what it had not sent
yet, and ends. Once resumed, every message is delivered, the held ones on their first attempt.
"""

from __future__ import annotations

import time

import pytest
from django.test import Client
from django.utils import timezone

from delivery.models import Delivery, DeliveryAttempt, PushClaim
from rooms.models import ApiKey
from subscriptions.models import Subscription
from tests.delivery.push.test_subscription_pace import publish_batch
from tests.factories import make_event_type, make_room, make_subscription
from tests.receiver import Receiver, Reply

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("worker")]


def test_no_post_of_a_subscription_starts_after_its_410_until_it_is_resumed(
        client: Client, receiver: Receiver) -> None:
    room = make_room(delivery_delay_ms=100, delivery_delay_multiplier=1, delivery_attempts=5)
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    # The 410 comes at once: the next token is 1.1 s away, so the held messages are judged, waiting
    # to be POSTed, when it is read (a slower 410 would let them start first, as they may).
    url = receiver.script("/gone", lambda n: Reply(410) if n == 1 else Reply(204))
    subscription = make_subscription(room, push_url=url, max_in_flight=3, max_per_second=1)

    publish_batch(client, key, room, 3)
    [gone] = receiver.wait_for("/gone", 1)
    first = Delivery.objects.get(subscription=subscription, message_id=gone.headers["webhook-id"])
    wait_until_stopped(first, since=gone.at, receiver=receiver)

    arrivals = [round(r.at - gone.at, 3) for r in receiver.requests("/gone")]
    assert arrivals == [0.0], f"POSTs after the 410 (s after the first): {arrivals}"
    subscription.refresh_from_db()
    assert subscription.status == "disabled" and "410 Gone" in subscription.status_reason
    statuses = sorted(Delivery.objects.filter(subscription=subscription).values_list("status", "attempts"))
    assert statuses == [("queued", 0), ("queued", 0), ("retrying", 1)], statuses  # held, not lost nor counted

    response = client.post(f"/api/v1/subscriptions/{subscription.pk}/resume/", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 200, response.content
    wait_for_delivered(subscription.pk, 3)
    attempts = sorted(DeliveryAttempt.objects.filter(delivery__subscription=subscription)
                      .exclude(delivery=first).values_list("attempt", "outcome"))
    assert attempts == [(1, "success"), (1, "success")], attempts


def wait_until_stopped(first: Delivery, *, since: float, receiver: Receiver, timeout: float = 30.0) -> None:
    """Wait until the subscription is disabled, its session has ended, and the retry of the 410 is past due.

    From then on nothing can POST: no session runs for a disabled subscription.
    """
    deadline = time.monotonic() + timeout
    while True:
        subscription = Subscription.objects.get(pk=first.subscription_id)
        first.refresh_from_db()
        retry_past = first.next_attempt_at is not None and first.next_attempt_at < timezone.now()
        session = PushClaim.objects.filter(subscription=subscription).first()
        if subscription.status == "disabled" and session is None and retry_past:
            return
        arrivals = [round(r.at - since, 3) for r in receiver.requests("/gone")]
        assert time.monotonic() < deadline, (
            f"not stopped after {timeout} s: status {subscription.status}, session {session}, "
            f"the 410's delivery {first.status} due {first.next_attempt_at}; arrivals {arrivals}")
        time.sleep(0.05)


def wait_for_delivered(subscription_id: int, count: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        rows = list(Delivery.objects.filter(subscription_id=subscription_id).values_list("status", "attempts"))
        if sum(status == "delivered" for status, _ in rows) == count:
            return
        assert time.monotonic() < deadline, f"not all delivered after {timeout} s: {rows}"
        time.sleep(0.05)

