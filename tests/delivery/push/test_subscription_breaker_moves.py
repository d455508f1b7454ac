"""A subscription's breaker, failure count and throttle move by compare-and-set: the sweep that disables a
long-open breaker, a probe, an operator's resume and two push sessions that cross never overwrite each
other (issue 27: `disable_by_breaker`, the failure count and the throttle were written unconditionally)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from delivery.push import session_breaker
from delivery.push.session import record_throttle
from subscriptions.models import BreakerTransition, Subscription
from tests.factories import make_room, make_subscription

pytestmark = pytest.mark.django_db

LONG_OPEN = "disabled: its circuit breaker had been open longer than 1 minute"


def opened_long_ago() -> Subscription:
    subscription = make_subscription(make_room(), breaker_disable_after_s=60)
    assert subscription.move_breaker("open", "5 consecutive attempts failed", now=timezone.now() - timedelta(hours=1),
                                     failures=5)
    return subscription


def row(subscription: Subscription) -> tuple[str, str, str]:
    fresh = Subscription.objects.get(pk=subscription.pk)
    return fresh.status, fresh.breaker_state, fresh.status_reason


def test_a_probe_that_closes_the_breaker_after_the_sweep_read_it_keeps_the_subscription_active() -> None:
    subscription = opened_long_ago()
    sweeps_view = Subscription.objects.get(pk=subscription.pk)  # the sweep read it open for an hour
    assert subscription.move_breaker("half_open", "the probe time came", now=timezone.now())
    assert subscription.move_breaker("closed", "attempt 6 succeeded (HTTP 204)", now=timezone.now())

    assert not sweeps_view.disable_by_breaker(LONG_OPEN, now=timezone.now())
    assert row(subscription) == ("active", "closed", "")
    assert [t.to_state for t in subscription.breaker_history()] == ["closed", "half_open", "open"]


def test_an_operators_resume_after_the_sweep_read_the_subscription_is_not_undone_by_it() -> None:
    subscription = opened_long_ago()
    sweeps_view = Subscription.objects.get(pk=subscription.pk)
    Subscription.objects.get(pk=subscription.pk).resume()  # the operator: half-open, the next attempt probes

    assert not sweeps_view.disable_by_breaker(LONG_OPEN, now=timezone.now())
    assert row(subscription) == ("active", "half_open", "")


def test_the_sweep_disables_a_breaker_still_open_as_it_read_it_and_records_why() -> None:
    subscription = opened_long_ago()
    sweeps_view = Subscription.objects.get(pk=subscription.pk)
    Subscription.objects.get(pk=subscription.pk).pause(by="by ann in the web UI")  # status only: the breaker is as read

    assert sweeps_view.disable_by_breaker(LONG_OPEN, now=timezone.now())
    assert row(subscription) == ("disabled", "open", LONG_OPEN)
    last = BreakerTransition.objects.filter(subscription=subscription).order_by("pk").last()
    assert last is not None and (last.from_state, last.to_state, last.reason) == ("open", "open", LONG_OPEN)


def test_two_sessions_add_their_failures_to_one_count_and_a_success_restarts_it() -> None:
    subscription = make_subscription(make_room())
    assert session_breaker.record_failures(subscription.pk, 4, False) == 4  # the session on one worker
    assert session_breaker.record_failures(subscription.pk, 3, False) == 7  # and on another: added, not overwritten
    assert session_breaker.record_failures(subscription.pk, 0, True) == 0  # a success restarts the count
    assert session_breaker.record_failures(subscription.pk, 2, False) == 2
    assert Subscription.objects.get(pk=subscription.pk).breaker_failures == 2


def test_a_shorter_retry_after_recorded_later_never_shortens_a_longer_pause() -> None:
    subscription = make_subscription(make_room())
    now = timezone.now()
    record_throttle(subscription.pk, now + timedelta(seconds=30))
    record_throttle(subscription.pk, now + timedelta(seconds=5))  # another session's 429, read later
    assert Subscription.objects.get(pk=subscription.pk).throttled_until == now + timedelta(seconds=30)
