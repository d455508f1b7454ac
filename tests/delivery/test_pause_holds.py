"""Pause holds: what is published to a paused subscription is kept, counted, and delivered in order on resume.

On the real broker, with a real worker (and beat) and a real receiver: nothing reaches a paused
subscription's receiver while an active one beside it gets everything; the API and the console count
what waits; a resume delivers it in publish order per ordering key; what expires meanwhile is
expired, not delivered; a pull from a paused subscription is refused until it is resumed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest
from django.test import Client

from delivery.models import Delivery
from rooms.models import ApiKey, Room
from subscriptions.models import Subscription
from tests.callers import call_api
from tests.factories import make_event_type, make_room, make_subscription
from tests.receiver import Receiver
from tests.workers import WorkerProcess

pytestmark = pytest.mark.django_db(transaction=True)

KEYS = ("a", "b", "c")
EVENTS = [(KEYS[n % len(KEYS)], n) for n in range(12)]  # (ordering key, sequence number), in publish order


def wait_until(condition: Callable[[], bool], what: str, progress: Callable[[], object], timeout: float = 60.0,
               worker: WorkerProcess | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}; saw {progress()}"
                                 + (f"\n{worker.tail()}" if worker else ""))
        time.sleep(0.1)


def publish(client: Client, key: str, room: Room, events: list[tuple[str, int]]) -> list[dict]:
    body = {"messages": [{"event_type": "order.created", "event_version": "1", "payload": {"key": k, "seq": n},
                          **({"ordering_key": k} if k else {})} for k, n in events]}
    response = call_api(client, "post", f"/api/v1/rooms/{room.pk}/messages/batch/", body, key)
    assert response.status_code == 202, response.content
    return response.json()["messages"]


def statuses(subscription: Subscription) -> dict[str, int]:
    rows = Delivery.objects.filter(subscription=subscription).values_list("status", flat=True)
    return {status: list(rows).count(status) for status in set(rows)}


def sequences(receiver: Receiver, path: str) -> list[tuple[str, int]]:
    return [(data["key"], data["seq"]) for data in (json.loads(r.body)["data"] for r in receiver.requests(path))]


def waiting(client: Client, key: str, subscription: Subscription) -> int:
    return call_api(client, "get", f"/api/v1/subscriptions/{subscription.pk}/", None, key).json()["waiting"]


def room_with_key(**settings: object) -> tuple[Room, str]:
    room = make_room(delivery_delay_ms=100, delivery_delay_multiplier=1.0, **settings)
    make_event_type(room)
    return room, ApiKey.issue("shop", rooms=[room])[1]


def test_events_published_while_paused_wait_and_a_resume_delivers_them_in_order_per_key(
    client: Client, staff_client: Client, receiver: Receiver, worker: WorkerProcess
) -> None:
    room, key = room_with_key()
    paused = make_subscription(room, push_url=receiver.url("/paused"), ordering=Subscription.Ordering.ON)
    make_subscription(room, push_url=receiver.url("/active"))  # active: shows the worker delivers meanwhile
    assert call_api(client, "post", f"/api/v1/subscriptions/{paused.pk}/pause/", None, key).status_code == 200

    replies = publish(client, key, room, EVENTS)

    assert all({"subscription_id": paused.pk, "destination": paused.destination} in reply["destinations"]
               for reply in replies)
    # On the broker: the first event of each key queued, the rest held behind it (ordering keys).
    wait_until(lambda: statuses(paused) == {"queued": len(KEYS), "held": len(EVENTS) - len(KEYS)},
               "the paused subscription's deliveries stored and queued", lambda: statuses(paused), worker=worker)
    # The worker is live (the active subscription gets every event), yet the paused one's receiver gets nothing.
    wait_until(lambda: len(receiver.requests("/active")) >= len(EVENTS), "the active subscription's deliveries",
               lambda: len(receiver.requests("/active")), worker=worker)
    assert receiver.requests("/paused") == []
    assert waiting(client, key, paused) == len(EVENTS)
    page = staff_client.get(f"/subscriptions/{paused.pk}/").content.decode()
    assert f'<strong id="waiting">{len(EVENTS)}</strong> events wait' in page

    assert call_api(client, "post", f"/api/v1/subscriptions/{paused.pk}/resume/", None, key).status_code == 200

    wait_until(lambda: statuses(paused) == {"delivered": len(EVENTS)}, "every waiting event delivered",
               lambda: (statuses(paused), sequences(receiver, "/paused")), worker=worker)
    received = sequences(receiver, "/paused")
    assert len(received) == len(EVENTS)  # once each: nothing held was taken for lost and sent again
    for ordering_key in KEYS:
        assert [seq for k, seq in received if k == ordering_key] == [seq for k, seq in EVENTS if k == ordering_key]
    assert waiting(client, key, paused) == 0


def test_an_event_that_expires_while_paused_is_expired_not_delivered(client: Client, receiver: Receiver,
                                                                     worker: WorkerProcess) -> None:
    room, key = room_with_key(message_expiration_ms=1000)
    subscription = make_subscription(room, push_url=receiver.url("/late"))
    subscription.pause(by="in a test")
    [expiring] = publish(client, key, room, [("", 1)])

    wait_until(lambda: statuses(subscription) == {"expired": 1}, "the held event expired",
               lambda: statuses(subscription), worker=worker)
    assert waiting(client, key, subscription) == 0
    Room.objects.filter(pk=room.pk).update(message_expiration_ms=None)  # the next event stays
    assert call_api(client, "post", f"/api/v1/subscriptions/{subscription.pk}/resume/", None, key).status_code == 200
    [later] = publish(client, key, room, [("", 2)])

    wait_until(lambda: Delivery.objects.get(message_id=later["message_id"]).status == "delivered",
               "the event published after the resume delivered", lambda: statuses(subscription), worker=worker)
    assert sequences(receiver, "/late") == [("", 2)]
    assert Delivery.objects.get(message_id=expiring["message_id"]).status == "expired"


def test_a_pull_from_a_paused_subscription_is_409_and_what_waits_is_pulled_after_the_resume(client: Client) -> None:
    room, key = room_with_key()
    subscription = make_subscription(room, type=Subscription.Type.PULL)
    subscription.pause(by="in a test")
    publish(client, key, room, [("", n) for n in range(3)])
    wait_until(lambda: statuses(subscription) == {"queued": 3}, "the events stored and queued",
               lambda: statuses(subscription))
    pull = f"/api/v1/subscriptions/{subscription.pk}/pull/"

    refused = call_api(client, "post", pull, {"max_messages": 10}, key)
    assert refused.status_code == 409 and "resume it to pull" in refused.json()["detail"]
    assert waiting(client, key, subscription) == 3

    call_api(client, "post", f"/api/v1/subscriptions/{subscription.pk}/resume/", None, key)
    pulled: list[int] = []
    deadline = time.monotonic() + 30
    while len(pulled) < 3 and time.monotonic() < deadline:
        reply = call_api(client, "post", pull, {"max_messages": 10, "wait_ms": 1000}, key)
        assert reply.status_code == 200, reply.content
        pulled += [message["payload"]["seq"] for message in reply.json()["messages"]]
    assert pulled == [0, 1, 2]
