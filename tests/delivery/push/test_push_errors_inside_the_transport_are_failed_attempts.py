"""An exception inside the push transport is a recorded failed attempt, never a wedged session.

The transport's guarantee (delivery/transports.py): every failure comes back as a value. Here its
HTTP client raises an error nobody expected on the first POST; the push session (in this process,
on the real broker and database) records that attempt as failed, frees its slot, delivers the
next message, and ends, so the subscription's queue can be deleted.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from django.test import Client

from delivery import transports
from delivery.broker import QueueInUse
from delivery.broker.shared import shared_broker
from delivery.http1 import Http1Client, Response
from delivery.models import Delivery, DeliveryAttempt
from delivery.push.engine import PushEngine
from delivery.subscription_teardown import delete_queue
from rooms.models import ApiKey
from subscriptions.models import Subscription
from tests.factories import make_event_type, make_push_claim, make_room, make_subscription
from tests.receiver import Receiver

pytestmark = pytest.mark.django_db(transaction=True)  # the relay's and the push engine's threads read the rows


class FailingOnce(Http1Client):
    """The real client, except that its first POST raises what no caller expects."""

    failed = 0

    async def post(self, url: str, headers: dict[str, str], body: bytes) -> Response:
        if FailingOnce.failed == 0:
            FailingOnce.failed += 1
            raise RuntimeError("a bug inside the transport")
        return await super().post(url, headers, body)


def run_session(subscription: Subscription) -> int:
    """Run one push session for the subscription in this process, as a worker's engine would; return what it settled."""
    token = make_push_claim(subscription)
    engine = PushEngine()
    engine.session_budget_s, engine.session_idle_s = 30.0, 1.0
    try:
        return engine.run_session(subscription.pk, token, timeout=30)
    finally:
        engine.stop(timeout=10)


def run_sessions_until_settled(subscription: Subscription, count: int, timeout: float = 45.0) -> list[int]:
    """Run sessions one after another until `count` messages are settled; what each settled.

    A session ends after a second with nothing to do; on a loaded machine the broker's next frame
    can come later than that, and the next session (as a worker's would) takes it up.
    """
    settled: list[int] = []
    deadline = time.monotonic() + timeout
    while sum(settled) < count:
        assert time.monotonic() < deadline, f"sessions settled {settled} of {count} messages in {timeout} s"
        settled.append(run_session(subscription))
    return settled


def publish_two(client: Client, key: str, room_id: int) -> list[str]:
    body: dict[str, Any] = {"messages": [{"event_type": "order.created", "event_version": "1", "payload": {"n": n}}
                                         for n in range(2)]}
    response = client.post(f"/api/v1/rooms/{room_id}/messages/batch/", json.dumps(body),
                           content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 202, response.content
    ids = [reply["message_id"] for reply in response.json()["messages"]]
    deadline = time.monotonic() + 15
    while Delivery.objects.filter(message_id__in=ids, status="pending").exists():
        assert time.monotonic() < deadline, "the relay did not send the messages"
        time.sleep(0.05)
    return ids


def test_an_error_inside_the_transport_is_recorded_as_a_failed_attempt_and_frees_its_slot(
        client: Client, receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transports, "Http1Client", FailingOnce)
    FailingOnce.failed = 0
    room = make_room(delivery_attempts=0)
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    subscription = make_subscription(room, push_url=receiver.url("/hook"), max_in_flight=1)
    message_ids = publish_two(client, key, room.pk)

    settled = run_sessions_until_settled(subscription, 2)  # each returns only once every slot is free

    deliveries = {d.status: d for d in Delivery.objects.filter(message_id__in=message_ids)}
    assert sorted(deliveries) == ["dead_lettered", "delivered"], deliveries
    [failed] = DeliveryAttempt.objects.filter(delivery=deliveries["dead_lettered"])
    assert failed.outcome == DeliveryAttempt.Outcome.CONNECTION_ERROR
    assert failed.error == "unexpected error: RuntimeError: a bug inside the transport"
    assert sum(settled) == 2 and len(receiver.requests("/hook")) == 1, (settled, receiver.requests("/hook"))
    delete_once_unused(subscription.destination)  # the session's consumer is gone with it
    assert shared_broker().queues(subscription.destination) == []


def delete_once_unused(destination: str, timeout: float = 15.0) -> None:
    """Delete the queue; Artemis drops a closed consumer a moment after its UNSUBSCRIBE."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            assert delete_queue(destination) is True
            return
        except QueueInUse:
            assert time.monotonic() < deadline, f"{destination} still has a consumer after {timeout} s"
            time.sleep(0.2)
