"""max_per_second across two real worker processes, and a 429 with Retry-After slowing the whole subscription."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable

import pytest
from django.conf import settings
from django.test import Client

from delivery.actions import delete_subscription, resume_subscription
from delivery.models import Delivery
from delivery.push.rate import RateLimiter
from rooms.models import ApiKey, Room
from subscriptions.models import Subscription
from tests.factories import make_event_type, make_room, make_subscription
from tests.receiver import Receiver, Reply
from tests.workers import WorkerProcess

pytestmark = [pytest.mark.django_db(transaction=True)]


def publish_batch(client: Client, key: str, room: Room, count: int) -> None:
    body = {"messages": [{"event_type": "order.created", "event_version": "1", "payload": {"n": n}}
                         for n in range(count)]}
    response = client.post(f"/api/v1/rooms/{room.pk}/messages/batch/", json.dumps(body),
                           content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 202, response.content


def busiest_second(arrivals: list[float]) -> int:
    """The most arrivals within any one second (a sliding window starting at each arrival)."""
    arrivals = sorted(arrivals)
    busiest, start = 0, 0
    for end, at in enumerate(arrivals):
        while at - arrivals[start] >= 1.0:
            start += 1
        busiest = max(busiest, end - start + 1)
    return busiest


def test_a_subscription_limited_to_20_a_second_gets_no_more_in_any_second_from_two_workers(
        client: Client, receiver: Receiver, start_worker: Callable[..., WorkerProcess]) -> None:
    workers = [start_worker("pace-one"), start_worker("pace-two")]
    room = make_room()
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    subscription = make_subscription(room, push_url=receiver.url("/paced"), max_per_second=20, max_in_flight=10,
                                     status=Subscription.Status.PAUSED)

    # The backlog is published while the subscription is paused, then it is resumed: the receiver stamps
    # arrivals in this process, and publishing here while they came held its thread and bunched the stamps
    # (26 "in one second" once in CI, on a loaded machine).
    for _ in range(30):
        publish_batch(client, key, room, 10)
    resume_subscription(subscription)
    arrivals = [request.at for request in receiver.wait_for("/paced", 220, timeout=60)]
    delete_subscription(subscription)  # what is left is not waited for

    span = max(arrivals) - min(arrivals)
    print(f"max_per_second 20: {len(arrivals)} POSTs in {span:.1f} s, at most {busiest_second(arrivals)} in any second")
    assert len(arrivals) >= 220, f"only {len(arrivals)} of 300 POSTs in 60 s"
    assert busiest_second(arrivals) <= 20, busiest_second(arrivals)
    # It kept close to the limit, not far under it.
    assert (len(arrivals) - 1) / span >= 15, f"{len(arrivals)} POSTs in {span:.1f} s"
    sessions = [worker.log_path.read_text().count("delivery.tasks.deliver_push") for worker in workers]
    assert all(sessions), f"each worker should have run the subscription's session at least once: {sessions}"


@pytest.mark.usefixtures("worker")
def test_a_429_with_retry_after_pauses_the_whole_subscription(client: Client, receiver: Receiver) -> None:
    room = make_room(delivery_delay_ms=100, delivery_delay_multiplier=1, delivery_attempts=5)
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    url = receiver.script("/busy", lambda n: Reply(429, {"Retry-After": "3"}) if n == 1 else Reply(204))
    subscription = make_subscription(room, push_url=url, max_in_flight=1)

    publish_batch(client, key, room, 1)
    [first] = receiver.wait_for("/busy", 1)
    publish_batch(client, key, room, 4)  # other messages: they wait for the pause as well

    requests = receiver.wait_for("/busy", 6, timeout=20)
    assert len(requests) == 6
    assert min(r.at for r in requests[1:]) - first.at >= 3.0  # nothing at all went out during the pause
    subscription.refresh_from_db()
    assert subscription.throttled_until is not None
    deadline = time.monotonic() + 10
    while Delivery.objects.filter(subscription=subscription, status="delivered").count() < 5:
        assert time.monotonic() < deadline, "the five messages were not all recorded delivered"
        time.sleep(0.05)


@pytest.mark.parametrize("where", ["redis", "memory"])
def test_the_limiter_grants_a_batch_then_one_token_per_interval(where: str) -> None:
    async def take_all() -> list[tuple[int, float]]:
        limiter = RateLimiter(settings.DOVECOTE_CACHE_URL if where == "redis" else "locmem://")
        subscription_id = int(time.time() * 1000)  # a key no other test uses
        try:
            return [await limiter.take(subscription_id, 22, 5) for _ in range(12)]
        finally:
            await limiter.close()

    # At 22 a second: a token every 50 ms, two at a time (a batch is an 11th of the limit), reserved up to 1 s ahead.
    takes = asyncio.run(take_all())
    assert [granted for granted, _ in takes] == [2] * 11 + [0]
    for n, (_, wait_s) in enumerate(takes[:11]):
        assert 0.1 * n - 0.02 <= wait_s <= 0.1 * n + 0.001, (n, wait_s)
    assert 0 < takes[11][1] <= 0.1
