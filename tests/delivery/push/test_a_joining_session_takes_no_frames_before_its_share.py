"""A session joining a hot subscription subscribes to its queue only once it has a share of `max_in_flight`, and a
session left alone grows its share only once its claim row says so.

Its share is 0 until the subscription's other sessions have shrunk to make room (claims.share, reported at
their renewals). It used to subscribe at once: the broker handed it a prefetch of frames that then waited in
its inbox, one or two seconds, while the other sessions could have delivered them (`make bench`'s push figure
with two workers: the last of 3,000 queued messages 2 s late, 989 deliveries/s where one worker did 2,986).
"""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.test import Client
from django.utils import timezone

from delivery.broker.shared import shared_broker
from delivery.models import Delivery, PushClaim
from delivery.push import claims
from delivery.push.engine import PushEngine
from delivery.push.session import PushSession
from rooms.models import ApiKey
from tests.delivery.push.test_quiet_sessions_sleep_until_they_end import wait_until
from tests.factories import make_event_type, make_room, make_subscription
from tests.receiver import Receiver

pytestmark = pytest.mark.django_db(transaction=True)  # the relay's and the push engine's threads read the rows

MESSAGES = 5


def test_a_joining_session_leaves_the_frames_on_the_broker_until_the_others_make_room(
        client: Client, receiver: Receiver) -> None:
    room = make_room()
    make_event_type(room)
    key = ApiKey.issue("shop", rooms=[room])[1]
    subscription = make_subscription(room, push_url=receiver.url("/joined"), max_in_flight=8)
    # The session already running on another worker, sized for itself alone (it has not shrunk yet), and this
    # engine's claim as `claims.join_hot` makes it: sized for two.
    other = PushClaim.objects.create(subscription=subscription, token=uuid.uuid4().hex, sized_for=1,
                                     until=timezone.now() + timedelta(seconds=120))
    joining = uuid.uuid4().hex
    PushClaim.objects.create(subscription=subscription, token=joining, sized_for=2,
                             until=timezone.now() + timedelta(seconds=5))
    for n in range(MESSAGES):
        response = client.post(f"/api/v1/rooms/{room.pk}/messages/", json.dumps(
            {"event_type": "order.created", "event_version": "1", "payload": {"n": n}}),
            content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
        assert response.status_code == 202, response.content
    queued = Delivery.objects.filter(subscription=subscription, status="queued")
    wait_until(lambda: queued.count() == MESSAGES, lambda: f"{queued.count()} of {MESSAGES} on the broker")

    engine = PushEngine()
    try:
        engine.start_session(subscription.pk, joining)
        mine = PushClaim.objects.filter(subscription=subscription, token=engine.token)
        adopted_until = None

        def renewed() -> bool:  # adopted, then renewed at least once: the session has looked at its share
            nonlocal adopted_until
            until = mine.values_list("until", flat=True).first()
            if until is not None and adopted_until is None:
                adopted_until = until
            return until is not None and adopted_until is not None and until > adopted_until

        wait_until(renewed, lambda: f"claims {list(PushClaim.objects.filter(subscription=subscription).values())}")
        session = engine.sessions[subscription.pk]
        stats = shared_broker().queues(subscription.destination)
        assert (session.share, len(session.inbox)) == (0, 0), (session.share, len(session.inbox))
        assert [(queue.messages, queue.consumers) for queue in stats] == [(MESSAGES, 0)], stats
        assert receiver.requests("/joined") == []

        PushClaim.objects.filter(pk=other.pk).update(sized_for=2)  # the other session has shrunk to its half
        receiver.wait_for("/joined", MESSAGES, timeout=30)
        assert session.share == 8 // 2
    finally:
        engine.stop(timeout=10)
        PushClaim.objects.filter(pk=other.pk).delete()


def test_a_session_left_alone_grows_its_share_only_once_its_row_says_it_is_sized_for_one() -> None:
    """A session joining reads the others' rows (sized_for) to size itself: a session whose partner ended may
    not take the whole of `max_in_flight` while its row still says it fits a half, or the two ran 13 POSTs for
    a `max_in_flight` of 9 (test_a_hot_subscription_is_delivered_by_every_worker.py)."""
    room = make_room()
    subscription = make_subscription(room, push_url="http://127.0.0.1:9/hook", max_in_flight=9)
    session = PushSession(SimpleNamespace(), subscription.pk, "token")  # type: ignore[arg-type]
    session.subscription, session.sessions, session.share = subscription, 2, 4
    session.in_flight = 4
    assert session.report().sized_for == 2  # what this renewal writes on its row

    session.refreshed(claims.Held(None, None, 1, 9))  # the same renewal finds the partner gone
    assert (session.sessions, session.share) == (1, 4)

    assert session.report().sized_for == 1  # the next renewal writes that its POSTs fit a share sized for one
    session.refreshed(claims.Held(None, None, 1, 9))
    assert (session.sessions, session.share) == (1, 9)
