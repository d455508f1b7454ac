"""Subscriptions whose circuit breaker stayed open too long are disabled (beat, every 30 s).

A breaker open (or probing, half-open) for longer than its `disable_after_s` (default 5 days)
disables its subscription with the reason. What it still had on its way stays as it was, frames
held on the broker, delivered by a resume (whose first attempt probes); or, where the subscription
chose `breaker_on_disable: dead_letter`, it is dead-lettered with the reason, replayable from there.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from delivery.subscription_teardown import retire_deliveries
from subscriptions.models import Subscription

log = logging.getLogger("delivery.breakers")


def disable_long_open(now: datetime | None = None) -> list[int]:
    """Disable the active push subscriptions whose breaker has been open longer than allowed; return their ids."""
    now = now or timezone.now()
    disabled = []
    candidates = Subscription.objects.select_related("room").filter(
        type=Subscription.Type.PUSH, status=Subscription.Status.ACTIVE, breaker_opened_at__isnull=False,
        breaker_state__in=[Subscription.Breaker.OPEN, Subscription.Breaker.HALF_OPEN])
    for subscription in candidates:
        opened = subscription.breaker_opened_at
        assert opened is not None
        limit = timedelta(seconds=subscription.breaker_policy.disable_after_s)
        if now - opened < limit:
            continue
        reason = (f"disabled on {now:%Y-%m-%d %H:%M:%S} UTC: its circuit breaker had been open since "
                  f"{opened:%Y-%m-%d %H:%M:%S} UTC, longer than {describe(limit)}; last error: "
                  f"{subscription.last_error or 'none recorded'}")
        with transaction.atomic():
            if not subscription.disable_by_breaker(reason, now=now):
                continue  # the breaker moved since it was read (a probe closed it, a resume): not disabled
            if subscription.breaker_on_disable == Subscription.OnDisable.DEAD_LETTER:
                count = retire_deliveries(subscription.pk, reason)
                log.warning("subscription %s: %d pending deliveries dead-lettered", subscription.pk, count)
        disabled.append(subscription.pk)
    return disabled


def describe(span: timedelta) -> str:
    """A span as an operator reads it: days, hours, minutes or seconds."""
    seconds = int(span.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds} s"
