"""Two push sessions of one subscription (on two workers) count failures into one breaker and open it once."""

from __future__ import annotations

import pytest
from django.utils import timezone

from delivery.push import session_breaker
from subscriptions.models import BreakerTransition, Subscription
from tests.factories import make_room, make_subscription

pytestmark = [pytest.mark.django_db]


def count(counter: session_breaker.OutcomeCounter, *failed: bool) -> None:
    for one in failed:
        counter.count(one, window_s=60, now=0.0)


def write(subscription: Subscription, counter: session_breaker.OutcomeCounter) -> int:
    """What a session's write of its count does (session.py's `_write_failures`), on this database."""
    taken = counter.take_unwritten()
    row = session_breaker.record_failures(subscription.pk, *taken)
    counter.written(row, taken)
    return row


def test_the_failures_of_two_sessions_add_up_on_the_row_and_each_session_judges_by_the_sum() -> None:
    subscription = make_subscription(make_room())
    one, two = session_breaker.OutcomeCounter(0), session_breaker.OutcomeCounter(0)

    count(one, True, True, True)
    count(two, True, True)
    assert write(subscription, one) == 3
    assert write(subscription, two) == 5  # not 2: the second write adds, it does not overwrite
    count(one, True)
    assert one.failures == 4 and write(subscription, one) == 6
    assert two.failures == 5  # as of its write; its next write brings the rest


def test_a_success_in_either_session_restarts_the_count_from_the_failures_after_it() -> None:
    subscription = make_subscription(make_room())
    one, two = session_breaker.OutcomeCounter(0), session_breaker.OutcomeCounter(0)
    count(one, True, True, True, True)
    assert write(subscription, one) == 4

    count(two, True, False, True)  # a failure, a success, a failure
    assert write(subscription, two) == 1
    count(one, True)
    assert write(subscription, one) == 2


def test_a_failed_write_keeps_its_failures_for_the_next() -> None:
    subscription = make_subscription(make_room())
    counter = session_breaker.OutcomeCounter(0)
    count(counter, True, True)
    taken = counter.take_unwritten()
    counter.written(-1, taken)  # the database did not answer
    count(counter, True)
    assert write(subscription, counter) == 3


def test_two_sessions_opening_the_breaker_at_once_open_it_once() -> None:
    subscription = make_subscription(make_room())
    # Each session holds its own copy of the subscription, both closed.
    seen_by = [Subscription.objects.get(pk=subscription.pk) for _ in range(2)]
    move = session_breaker.Move(Subscription.Breaker.OPEN, "5 consecutive attempts failed")

    opened = [session_breaker.record_move(copy, move, failures=5) for copy in seen_by]

    assert opened == [True, False]
    transitions = list(BreakerTransition.objects.filter(subscription=subscription).values_list("to_state", flat=True))
    assert transitions == ["open"], transitions
    subscription.refresh_from_db()
    assert subscription.breaker_state == "open" and subscription.breaker_probes == 0
    assert subscription.breaker_opened_at is not None and subscription.breaker_opened_at <= timezone.now()
