"""Fairness on the real worker: a slow endpoint and a failing one do not take the others' delivery capacity."""

from __future__ import annotations

import json
import time

import pytest
from django.test import Client

from delivery.actions import delete_subscription
from delivery.models import Delivery
from rooms.models import ApiKey
from tests.factories import make_event_type, make_room, make_subscription
from tests.receiver import Receiver, Reply

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("worker")]
SLOW_S = 3.0


def delivered(subscription_id: int) -> int:
    return Delivery.objects.filter(subscription_id=subscription_id, status="delivered").count()


def test_a_healthy_subscription_is_delivered_in_full_while_a_slow_and_a_failing_one_hold_only_their_own(
        client: Client, receiver: Receiver) -> None:
    room = make_room(delivery_delay_ms=200, delivery_delay_multiplier=1, delivery_attempts=20)
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    slow = make_subscription(room, name="slow", max_in_flight=10, timeout_ms=10_000,
                             push_url=receiver.script("/slow", lambda n: Reply(204, delay_s=SLOW_S)))
    failing = make_subscription(room, name="failing", max_in_flight=10,
                                push_url=receiver.script("/failing", lambda n: Reply(500)))
    healthy = make_subscription(room, name="healthy", max_in_flight=10, push_url=receiver.url("/healthy"))

    for _ in range(2):  # 200 messages, each to all three
        body = {"messages": [{"event_type": "order.created", "event_version": "1", "payload": {"n": n}}
                             for n in range(100)]}
        response = client.post(f"/api/v1/rooms/{room.pk}/messages/batch/", json.dumps(body),
                               content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
        assert response.status_code == 202, response.content

    deadline = time.monotonic() + 60
    while delivered(healthy.pk) < 200:
        assert time.monotonic() < deadline, f"only {delivered(healthy.pk)} of 200 delivered to the healthy one"
        time.sleep(0.1)
    slow_done = delivered(slow.pk)
    try:
        # The slow endpoint had 200 messages at 10 at a time, each taking 3 s: it is still far from done,
        # and it never had more POSTs at once than its own max_in_flight.
        assert slow_done <= 100, slow_done
        assert receiver.most_active["/slow"] <= 10
        assert receiver.most_active["/failing"] <= 10
        assert len(receiver.requests("/healthy")) == 200
    finally:
        for subscription in (slow, failing):
            delete_subscription(subscription)
