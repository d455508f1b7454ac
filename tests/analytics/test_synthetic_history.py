"""generate_traffic: synthetic history consistent with what the delivery workers write."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command

from analytics import synthetic_history
from delivery.models import Delivery, DeliveryAttempt, SendRecord
from subscriptions.models import Subscription

pytestmark = pytest.mark.django_db

END = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


@pytest.fixture
def history() -> synthetic_history.Summary:
    return synthetic_history.generate(600, 1, seed=5, end=END)


def test_every_delivery_is_published_once_and_ends_in_a_status_the_workers_use(history) -> None:
    deliveries = Delivery.objects.all()
    assert history.deliveries == deliveries.count() > history.messages == 600
    publishes = Counter(SendRecord.objects.filter(kind="publish").values_list("delivery_id", flat=True))
    assert set(publishes.values()) == {1} and len(publishes) == history.deliveries
    assert set(history.statuses) <= set(Delivery.Status.values)
    assert {"delivered", "acked", "expired", "dead_lettered"} <= set(history.statuses)
    assert not deliveries.filter(status="pending").exists()
    first = SendRecord.objects.order_by("sent_at").first().sent_at
    last = max(SendRecord.objects.order_by("-sent_at").first().sent_at,
               DeliveryAttempt.objects.order_by("-started_at").first().started_at)
    assert END - timedelta(days=1) <= first and last <= END


def test_failed_attempts_are_retried_after_the_subscription_s_ebr_delay(history) -> None:
    policies = {s.pk: s.retry_policy for s in Subscription.objects.select_related("room")}
    retries = {(s.delivery_id, s.attempt): s for s in SendRecord.objects.filter(kind="retry")}
    checked = 0
    for attempt in DeliveryAttempt.objects.exclude(next_delay_ms=None).select_related("delivery"):
        policy = policies[attempt.delivery.subscription_id]
        send = retries[(attempt.delivery_id, attempt.attempt + 1)]
        assert send.delay_ms == attempt.next_delay_ms
        if attempt.status_code not in (429, 503):  # those may wait longer (Retry-After)
            assert attempt.next_delay_ms == policy.delay_after(attempt.attempt)
            checked += 1
        assert policy.can_retry(attempt.attempt)
    assert checked > 50
    assert len(retries) == DeliveryAttempt.objects.exclude(next_delay_ms=None).count()


def test_dead_letters_and_expiries_follow_the_last_allowed_attempt(history) -> None:
    by_delivery = defaultdict(list)
    for attempt in DeliveryAttempt.objects.exclude(outcome="crashed").order_by("started_at"):
        by_delivery[attempt.delivery_id].append(attempt)
    dead = Delivery.objects.filter(status="dead_lettered").select_related("subscription__room")
    assert dead
    for delivery in dead:
        assert delivery.sends.filter(kind="dead_letter", destination=delivery.subscription.destination)
        last = by_delivery[delivery.pk][-1]
        assert last.outcome != "success" and last.next_delay_ms is None
        assert not delivery.subscription.retry_policy.can_retry(last.attempt) or "poison" in delivery.last_error
    for delivery in Delivery.objects.filter(status="expired").select_related("message"):
        assert delivery.updated_at >= delivery.message.expires_at or by_delivery[delivery.pk][-1].next_delay_ms is None


def test_subscriptions_differ_in_failure_rate_and_are_created_paused(history) -> None:
    rates = {}
    for subscription in Subscription.objects.all():
        outcomes = Counter(DeliveryAttempt.objects.filter(delivery__subscription=subscription)
                           .values_list("outcome", flat=True))
        rates[subscription.name] = 1 - outcomes["success"] / sum(outcomes.values())
        assert subscription.status == Subscription.Status.PAUSED
    assert rates["crm-sync"] > 0.3 > rates["warehouse"]
    codes = set(DeliveryAttempt.objects.exclude(status_code=None).values_list("status_code", flat=True))
    assert {500, 502, 503, 429} <= codes


def test_a_second_run_adds_to_the_same_rooms(history) -> None:
    subscriptions = Subscription.objects.count()
    again = synthetic_history.generate(100, 1, seed=5, end=END)
    assert Subscription.objects.count() == subscriptions
    assert Delivery.objects.count() == history.deliveries + again.deliveries


def test_the_command_prints_what_it_wrote(capsys) -> None:
    call_command("generate_traffic", "--messages", "50", "--days", "0.5", "--seed", "3")
    out = capsys.readouterr().out
    assert out.startswith("50 messages, ") and " attempts in " in out
