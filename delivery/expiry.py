"""Expire deliveries whose message outlived its room's expiration before being delivered."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from delivery.models import Delivery
from delivery.settle import UNSETTLED

# An attempt under way at expiry may finish; one "under way" this long ago died with its worker.
ABANDONED_ATTEMPT = timedelta(minutes=10)


def expire_overdue() -> int:
    """Mark every unsettled delivery of an expired message `expired`; return how many."""
    now = timezone.now()
    return Delivery.objects.filter(
        Q(attempt_started_at__isnull=True) | Q(attempt_started_at__lt=now - ABANDONED_ATTEMPT),
        status__in=UNSETTLED, message__expires_at__lte=now,
    ).update(status=Delivery.Status.EXPIRED, attempt_started_at=None, next_attempt_at=None,
             last_error="expired before delivery", updated_at=now)
