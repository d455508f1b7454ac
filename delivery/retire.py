"""What happens to a subscription's messages when the subscription is deleted."""

from __future__ import annotations

from django.utils import timezone

from delivery.broker.shared import shared_broker
from delivery.models import Delivery
from delivery.settle import UNSETTLED

DRAIN_IDLE_S = 1.0


def retire_deliveries(subscription_id: int, reason: str) -> int:
    """Settle every unsettled delivery of a subscription as dead-lettered with `reason`; return how many."""
    return Delivery.objects.filter(subscription_id=subscription_id, status__in=UNSETTLED).update(
        status=Delivery.Status.DEAD_LETTERED, attempt_started_at=None, next_attempt_at=None,
        last_error=reason, updated_at=timezone.now(),
    )


def drain_destination(destination: str) -> int:
    """Ack whatever is left on a deleted subscription's queue; return how many frames it held."""
    drained = 0
    with shared_broker().consumer(destination, prefetch=500) as consumer:
        while (frame := consumer.receive(timeout=DRAIN_IDLE_S)) is not None:
            consumer.ack(frame)
            drained += 1
    return drained
