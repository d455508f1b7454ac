"""The circuit breaker on the real worker, broker and a real receiver that fails, recovers and fails again."""

from __future__ import annotations

import itertools
import json
import time
from collections import Counter
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from delivery.actions import resume_subscription
from delivery.long_open_breakers import disable_long_open
from delivery.models import Delivery, DeliveryAttempt
from rooms.models import ApiKey, Room
from subscriptions.models import BreakerTransition, Subscription
from tests.factories import make_delivery, make_event_type, make_message, make_room, make_subscription
from tests.receiver import Receiver, Reply

pytestmark = [pytest.mark.django_db(transaction=True)]
PROBE_DELAY_MS = 1000
LATE_S = 1.5  # a probe may come this much after its time (the session looks at least every second)


class Endpoint:
    """A receiver path that fails (500) while `down`, and answers 204 otherwise."""

    def __init__(self, receiver: Receiver, path: str) -> None:
        self.down = True
        self.path = path
        self.url = receiver.script(path, lambda n: Reply(500 if self.down else 204))


def publish(client: Client, key: str, room: Room, count: int) -> list[str]:
    ids = []
    for n in range(count):
        response = client.post(f"/api/v1/rooms/{room.pk}/messages/",
                               json.dumps({"event_type": "order.created", "event_version": "1", "payload": {"n": n}}),
                               content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
        assert response.status_code == 202, response.content
        ids.append(response.json()["message_id"])
    return ids


def wait_until(predicate, timeout: float = 30.0, what: str = "the condition", seen=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.05)
    raise AssertionError(f"{what} did not happen in {timeout} s" + (f"; seen: {seen()}" if seen else ""))


def transitions(subscription: Subscription) -> list[tuple[str, str]]:
    rows = BreakerTransition.objects.filter(subscription=subscription).order_by("pk")  # as recorded
    return [(row.from_state, row.to_state) for row in rows]


@pytest.mark.usefixtures("worker")
def test_the_breaker_opens_probes_on_its_schedule_closes_and_opens_again_losing_nothing(
        client: Client, receiver: Receiver) -> None:
    room = make_room(delivery_delay_ms=200, delivery_delay_multiplier=1, delivery_attempts=50)
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    endpoint = Endpoint(receiver, "/breaker")
    subscription = make_subscription(room, push_url=endpoint.url, max_in_flight=1, breaker_failure_threshold=3,
                                     breaker_failure_ratio=0, breaker_probe_delay_ms=PROBE_DELAY_MS)

    first = publish(client, key, room, 5)

    # closed → open after 3 consecutive failed attempts: nothing is attempted until the first probe.
    wait_until(lambda: transitions(subscription) == [("closed", "open")], what="the breaker opening")
    opened = BreakerTransition.objects.get(subscription=subscription)
    assert opened.reason.startswith("3 consecutive attempts failed, the last: HTTP 500")
    assert opened.delivery_id is not None and opened.attempt is not None
    assert len(receiver.requests("/breaker")) == 3

    # Two probes fail: open → half-open → open, twice, each probe after the doubled delay.
    wait_until(lambda: len(transitions(subscription)) >= 5, what="two failed probes")
    endpoint.down = False
    wait_until(lambda: transitions(subscription)[-1] == ("half_open", "closed"), what="the breaker closing")
    for message_id in first:
        wait_until(lambda m=message_id: Delivery.objects.get(message_id=m).status == "delivered",
                   what=f"delivery of {message_id}")
    assert transitions(subscription) == [("closed", "open"), ("open", "half_open"), ("half_open", "open"),
                                         ("open", "half_open"), ("half_open", "open"), ("open", "half_open"),
                                         ("half_open", "closed")]
    rows = list(BreakerTransition.objects.filter(subscription=subscription).order_by("at", "pk"))
    requests = receiver.requests("/breaker")
    probes = requests[3:6]  # every request after the first three is a probe until the breaker closed
    assert [r.headers["X-Delivery-Attempt"] != "" for r in probes] == [True] * 3
    for n, reopen in enumerate([rows[0], rows[2], rows[4]]):
        due = reopen.at + timedelta(milliseconds=PROBE_DELAY_MS * 2 ** n)
        assert rows[1 + 2 * n].at >= due  # half-open no sooner than its probe time
        assert rows[1 + 2 * n].at <= due + timedelta(seconds=LATE_S)
    gaps = [later.at - earlier.at for earlier, later in itertools.pairwise(probes)]
    assert all(gap >= (PROBE_DELAY_MS * 2 ** (n + 1)) / 1000 - 0.05 for n, gap in enumerate(gaps)), gaps
    assert rows[-1].reason.startswith("attempt") and "succeeded (HTTP 204)" in rows[-1].reason
    assert rows[2].reason.startswith("the probe failed: HTTP 500")

    # Nothing was lost, and holding counted no attempt: each delivery's attempts are the POSTs it got.
    posts = Counter(r.headers["webhook-id"] for r in receiver.requests("/breaker"))
    for delivery in Delivery.objects.filter(subscription=subscription):
        assert delivery.attempts == posts[str(delivery.message_id)]
        assert DeliveryAttempt.objects.filter(delivery=delivery).count() == posts[str(delivery.message_id)]

    # It fails again: the breaker opens again, from closed, with a fresh count.
    endpoint.down = True
    second = publish(client, key, room, 3)
    wait_until(lambda: transitions(subscription)[-1] == ("closed", "open"), what="the breaker opening again")
    subscription.refresh_from_db()
    assert subscription.breaker_state == "open" and subscription.breaker_probes == 0
    assert subscription.breaker_next_probe_at is not None

    # Open longer than allowed: the subscription is disabled with the reason; its deliveries wait.
    assert disable_long_open(timezone.now() + timedelta(days=5, seconds=1)) == [subscription.pk]
    subscription.refresh_from_db()
    assert subscription.status == "disabled" and "its circuit breaker had been open since" in subscription.status_reason
    assert "longer than 5 days" in subscription.status_reason
    assert Delivery.objects.filter(message_id__in=second, status__in=["queued", "retrying"]).count() == 3

    # Resume: half-open, the first attempt probes, then everything held is delivered.
    endpoint.down = False
    resume_subscription(subscription)
    for message_id in second:
        wait_until(lambda m=message_id: Delivery.objects.get(message_id=m).status == "delivered",
                   what=f"delivery of {message_id} after the resume")
    # The probe's success is recorded as the breaker's transition after its delivery's row says delivered.
    wait_until(lambda: transitions(subscription)[-1] == ("half_open", "closed"),
               what="the breaker closing after the resume", seen=lambda: transitions(subscription))
    assert transitions(subscription)[-3:] == [("open", "open"), ("open", "half_open"), ("half_open", "closed")], \
        transitions(subscription)


def test_a_subscription_disabled_by_its_breaker_can_dead_letter_what_it_had_on_its_way() -> None:
    room = make_room()
    subscription = make_subscription(room, breaker_on_disable="dead_letter", breaker_disable_after_s=60)
    pending = make_delivery(make_message(room), subscription, status="retrying", attempts=4)
    opened_at = timezone.now()
    assert subscription.move_breaker("open", "5 consecutive attempts failed", now=opened_at, failures=5)

    assert disable_long_open(opened_at + timedelta(seconds=59)) == []
    assert disable_long_open(opened_at + timedelta(seconds=60)) == [subscription.pk]

    subscription.refresh_from_db()
    pending.refresh_from_db()
    assert subscription.status == "disabled" and "longer than 1 minute" in subscription.status_reason
    assert pending.status == "dead_lettered" and pending.last_error == subscription.status_reason


def test_a_breaker_closes_after_an_outage_with_its_count_and_probes_forgotten() -> None:
    subscription = make_subscription(make_room(breaker_probe_delay_ms=500))
    now = timezone.now()
    assert subscription.move_breaker("open", "failed", now=now, failures=10)
    assert subscription.breaker_next_probe_at == now + timedelta(milliseconds=500)
    assert subscription.move_breaker("half_open", "probe time", now=now)
    assert subscription.move_breaker("open", "the probe failed", now=now)
    assert subscription.breaker_probes == 1 and subscription.breaker_next_probe_at == now + timedelta(seconds=1)
    stale = Subscription.objects.get(pk=subscription.pk)
    assert subscription.move_breaker("half_open", "probe time", now=now)
    assert not stale.move_breaker("half_open", "probe time", now=now)  # moved meanwhile: not recorded twice
    assert subscription.move_breaker("closed", "attempt 3 succeeded", now=now)
    subscription.refresh_from_db()
    assert (subscription.breaker_state, subscription.breaker_failures, subscription.breaker_probes) == ("closed", 0, 0)
    assert subscription.breaker_opened_at is None and subscription.breaker_next_probe_at is None
    assert len(subscription.breaker_history()) == 5


@pytest.mark.usefixtures("worker")
def test_the_failure_count_reaches_the_row_within_a_second_and_the_next_session_goes_on_from_it(
        client: Client, receiver: Receiver) -> None:
    room = make_room(delivery_attempts=0)  # each event fails once and is dead-lettered: no retries in the count
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    endpoint = Endpoint(receiver, "/count")
    subscription = make_subscription(room, push_url=endpoint.url, max_in_flight=1, breaker_failure_threshold=5,
                                     breaker_failure_ratio=0)

    publish(client, key, room, 3)
    wait_until(lambda: Delivery.objects.filter(subscription=subscription, status="dead_lettered").count() == 3,
               what="three dead letters")
    # The session keeps the count in memory and writes it at most once a second: the row has it soon after.
    failed_at = time.monotonic()
    wait_until(lambda: Subscription.objects.get(pk=subscription.pk).breaker_failures == 3, timeout=3,
               what="the count of 3 on the row")
    assert time.monotonic() - failed_at < 2.5
    assert transitions(subscription) == []

    time.sleep(6)  # past the test worker's session budget (DOVECOTE_PUSH_SESSION_SECONDS=5): that session ended
    publish(client, key, room, 2)
    # A new session starts from the row's 3: two more failures make the 5 that open the breaker.
    wait_until(lambda: transitions(subscription) == [("closed", "open")], what="the breaker opening")
    reason = BreakerTransition.objects.get(subscription=subscription).reason
    assert reason.startswith("5 consecutive attempts failed"), reason
