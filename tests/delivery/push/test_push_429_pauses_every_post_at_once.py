"""A 429 with Retry-After pauses every POST of the subscription from the moment it is read.

A real receiver answers the first POST with `429, Retry-After: 3` and records when it answered
and when each POST arrived. The session holds two more messages, judged and waiting for their
turn (max_per_second 1): neither may leave before the pause ends, so they are withdrawn and
taken again after it, on their first attempt. The docs promise: no POST before that time.
"""

from __future__ import annotations

import time

import pytest
from django.test import Client

from delivery.models import Delivery, DeliveryAttempt
from rooms.models import ApiKey
from subscriptions.models import Subscription
from tests.delivery.push.test_subscription_pace import publish_batch
from tests.factories import make_event_type, make_room, make_subscription
from tests.receiver import Receiver, Reply

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("worker")]
RETRY_AFTER_S = 3


def test_no_post_of_the_subscription_arrives_before_the_429s_retry_after(client: Client, receiver: Receiver) -> None:
    room = make_room(delivery_delay_ms=100, delivery_delay_multiplier=1, delivery_attempts=5)
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    url = receiver.script("/busy", lambda n: Reply(429, {"Retry-After": str(RETRY_AFTER_S)}) if n == 1 else Reply(204))
    subscription = make_subscription(room, push_url=url, max_in_flight=3, max_per_second=1)

    publish_batch(client, key, room, 3)
    wait_for_delivered(subscription.pk, 3, receiver)

    [(number, answered_at), *_] = receiver.answered["/busy"]
    requests = receiver.requests("/busy")
    report = (f"429 answered at 0; POSTs arrived at {[round(r.at - answered_at, 3) for r in requests]} s "
              f"(attempts {[r.headers['X-Delivery-Attempt'] for r in requests]})")
    assert number == 1 and len(requests) == 4, report
    assert all(r.at >= answered_at + RETRY_AFTER_S for r in requests[1:]), report
    throttled = Subscription.objects.get(pk=subscription.pk).throttled_until
    assert throttled is not None, "the pause is on the row, for the sessions that come after"
    first = requests[0].headers["webhook-id"]
    others = sorted(DeliveryAttempt.objects.filter(delivery__subscription=subscription)
                    .exclude(delivery__message_id=first).values_list("attempt", "outcome"))
    assert others == [(1, "success"), (1, "success")], f"the held messages were not sent before: {others}; {report}"


def wait_for_delivered(subscription_id: int, count: int, receiver: Receiver, timeout: float = 40.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        rows = list(Delivery.objects.filter(subscription_id=subscription_id).values_list("status", "attempts"))
        if sum(status == "delivered" for status, _ in rows) == count:
            return
        arrivals = [round(r.at, 3) for r in receiver.requests("/busy")]
        assert time.monotonic() < deadline, f"not all delivered after {timeout} s: {rows}; arrivals {arrivals}"
        time.sleep(0.05)
