"""The core path end to end: publish over the API → broker → Celery worker → signed POST."""

from __future__ import annotations

import itertools
import json
import time

import pytest
from django.test import Client
from standardwebhooks.webhooks import Webhook

from delivery.models import Delivery, DeliveryAttempt, SendRecord
from rooms.models import ApiKey
from tests.factories import make_event_type, make_room, make_subscription
from tests.receiver import Receiver, Reply, always, failing_then

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("worker")]


def publish(client: Client, key: str, room_id: int, **body) -> dict:
    body.setdefault("event_type", "order.created")
    body.setdefault("event_version", "1")
    body.setdefault("payload", {"order_id": 42})
    response = client.post(f"/api/v1/rooms/{room_id}/messages/", json.dumps(body),
                           content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 202, response.content
    return response.json()


def wait_for_status(message_id: str, subscription_id: int, status: str, timeout: float = 20.0) -> Delivery:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        delivery = Delivery.objects.get(message_id=message_id, subscription_id=subscription_id)
        if delivery.status == status:
            return delivery
        time.sleep(0.05)
    raise AssertionError(f"delivery is {delivery.status!r} after {timeout} s, not {status!r}")


def test_an_event_reaches_each_matching_push_subscriber_once_signed(client: Client, receiver: Receiver) -> None:
    room = make_room()
    make_event_type(room)
    make_event_type(room, name="order.paid")
    key = ApiKey.issue("shop", rooms=[room])[1]
    everything = make_subscription(room, push_url=receiver.url("/all"))
    created_only = make_subscription(room, push_url=receiver.url("/created"),
                                     event_types=[{"name": "order.created", "version": "1"}])
    make_subscription(room, push_url=receiver.url("/paid"), event_types=[{"name": "order.paid"}])

    reply = publish(client, key, room.pk, correlation_id="order-42")

    assert sorted(d["subscription_id"] for d in reply["destinations"]) == sorted([everything.pk, created_only.pk])
    for subscription, path in ((everything, "/all"), (created_only, "/created")):
        wait_for_status(reply["message_id"], subscription.pk, "delivered")
        [request] = receiver.requests(path)
        headers = {k.lower(): v for k, v in request.headers.items()}
        Webhook(subscription.signing_secret).verify(request.body, headers)
        assert headers["webhook-id"] == reply["message_id"]
        assert headers["x-correlation-id"] == "order-42"
        assert headers["x-delivery-attempt"] == "1"
        envelope = json.loads(request.body)
        assert envelope["data"] == {"order_id": 42} and envelope["room"] == room.name
        assert envelope["type"] == "order.created" and envelope["version"] == "1"
    time.sleep(0.5)
    assert receiver.requests("/paid") == [] and len(receiver.requests("/all")) == 1
    assert SendRecord.objects.filter(kind="publish").count() == 2


def test_a_receiver_failing_twice_is_delivered_on_the_third_attempt(client: Client, receiver: Receiver) -> None:
    room = make_room(delivery_delay_ms=100, delivery_delay_multiplier=2, delivery_attempts=5)
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    subscription = make_subscription(room, push_url=receiver.script("/flaky", failing_then(2)))

    reply = publish(client, key, room.pk)

    delivery = wait_for_status(reply["message_id"], subscription.pk, "delivered")
    assert delivery.attempts == 3
    requests = receiver.requests("/flaky")
    assert [r.headers["X-Delivery-Attempt"] for r in requests] == ["1", "2", "3"]
    assert len({r.headers["webhook-id"] for r in requests}) == 1
    outcomes = list(DeliveryAttempt.objects.filter(delivery=delivery).values_list("attempt", "outcome", "status_code"))
    assert outcomes == [(1, "failure", 500), (2, "failure", 500), (3, "success", 204)]


def test_backoff_gaps_follow_the_ebr_rule_then_the_message_is_dead_lettered(
    client: Client, receiver: Receiver
) -> None:
    room = make_room(delivery_delay_ms=200, delivery_delay_multiplier=2, delivery_attempts=3)
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    subscription = make_subscription(room, push_url=receiver.script("/down", always(500)))

    reply = publish(client, key, room.pk)

    delivery = wait_for_status(reply["message_id"], subscription.pk, "dead_lettered")
    arrivals = [r.at for r in receiver.requests("/down")]
    assert len(arrivals) == 4
    gaps_ms = [round((later - earlier) * 1000) for earlier, later in itertools.pairwise(arrivals)]
    for observed, expected in zip(gaps_ms, [400, 800, 1600], strict=True):
        assert abs(observed - expected) <= 250, gaps_ms
    timeline = list(DeliveryAttempt.objects.filter(delivery=delivery).values_list("attempt", "next_delay_ms"))
    assert timeline == [(1, 400), (2, 800), (3, 1600), (4, None)]
    assert "gave up after 4 attempts" in delivery.last_error
    assert SendRecord.objects.filter(delivery=delivery, kind="dead_letter").count() == 1


def test_a_subscription_override_beats_the_rooms_settings(client: Client, receiver: Receiver) -> None:
    room = make_room(delivery_delay_ms=60_000, delivery_delay_multiplier=3, delivery_attempts=9)
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    subscription = make_subscription(room, push_url=receiver.script("/down", always(503)),
                                     delivery_delay_ms=100, delivery_delay_multiplier=1, delivery_attempts=2)

    reply = publish(client, key, room.pk)

    delivery = wait_for_status(reply["message_id"], subscription.pk, "dead_lettered")
    timeline = list(DeliveryAttempt.objects.filter(delivery=delivery).values_list("attempt", "next_delay_ms"))
    assert timeline == [(1, 100), (2, 100), (3, None)]


def test_the_cap_bounds_the_delay(client: Client, receiver: Receiver) -> None:
    room = make_room(delivery_delay_ms=100, delivery_delay_multiplier=10, delivery_attempts=2,
                     max_delivery_delay_ms=300)
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    subscription = make_subscription(room, push_url=receiver.script("/down", always(500)))

    reply = publish(client, key, room.pk)

    delivery = wait_for_status(reply["message_id"], subscription.pk, "dead_lettered")
    delays = list(DeliveryAttempt.objects.filter(delivery=delivery).values_list("next_delay_ms", flat=True))
    assert delays == [300, 300, None]


def test_zero_attempts_means_a_single_try(client: Client, receiver: Receiver) -> None:
    room = make_room(delivery_attempts=0)
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    subscription = make_subscription(room, push_url=receiver.script("/down", always(500)))

    reply = publish(client, key, room.pk)

    delivery = wait_for_status(reply["message_id"], subscription.pk, "dead_lettered")
    assert delivery.attempts == 1 and len(receiver.requests("/down")) == 1
    assert "gave up after 1 attempt: HTTP 500" in delivery.last_error


def test_an_unexpired_retry_is_never_attempted_after_expiry(client: Client, receiver: Receiver) -> None:
    room = make_room(message_expiration_ms=1000, delivery_delay_ms=300, delivery_delay_multiplier=2,
                     delivery_attempts=10)
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    subscription = make_subscription(room, push_url=receiver.script("/down", always(500)))

    reply = publish(client, key, room.pk)

    delivery = wait_for_status(reply["message_id"], subscription.pk, "expired")
    time.sleep(1.5)
    expires_at = delivery.message.expires_at
    attempts = DeliveryAttempt.objects.filter(delivery=delivery)
    assert attempts.exists()
    assert all(a.started_at < expires_at for a in attempts)
    assert len(receiver.requests("/down")) == attempts.count()


def test_retry_after_on_429_delays_the_next_attempt(client: Client, receiver: Receiver) -> None:
    room = make_room(delivery_delay_ms=50, delivery_delay_multiplier=1, delivery_attempts=3)
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    subscription = make_subscription(
        room, push_url=receiver.script("/busy", lambda n: Reply(429, {"Retry-After": "1"}) if n == 1 else Reply(204))
    )

    reply = publish(client, key, room.pk)

    wait_for_status(reply["message_id"], subscription.pk, "delivered")
    first, second = receiver.requests("/busy")
    assert second.at - first.at >= 1.0


def test_410_gone_disables_the_subscription_with_the_reason(client: Client, receiver: Receiver) -> None:
    room = make_room(delivery_delay_ms=50)
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    subscription = make_subscription(room, push_url=receiver.script("/gone", always(410)))

    reply = publish(client, key, room.pk)

    receiver.wait_for("/gone", 1)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        subscription.refresh_from_db()
        if subscription.status == "disabled":
            break
        time.sleep(0.05)
    assert subscription.status == "disabled" and "410 Gone" in subscription.status_reason
    time.sleep(1.0)
    assert len(receiver.requests("/gone")) == 1
    assert Delivery.objects.get(message_id=reply["message_id"]).status == "retrying"


def test_no_more_than_max_in_flight_posts_run_at_once(client: Client, receiver: Receiver) -> None:
    room = make_room()
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    slow = receiver.script("/slow", lambda n: Reply(204, delay_s=0.3))
    subscription = make_subscription(room, push_url=slow, max_in_flight=3)

    replies = [publish(client, key, room.pk) for _ in range(9)]

    for reply in replies:
        wait_for_status(reply["message_id"], subscription.pk, "delivered")
    assert len(receiver.requests("/slow")) == 9
    assert receiver.most_active["/slow"] == 3
