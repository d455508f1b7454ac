"""What happens to a subscription's messages when the subscription is deleted."""

from __future__ import annotations

from django.utils import timezone

from delivery.broker.shared import shared_broker
from delivery.models import Delivery


def retire_deliveries(subscription_id: int, reason: str) -> int:
    """Settle every unsettled (or held) delivery of a subscription as dead-lettered with `reason`; return how many."""
    return Delivery.objects.filter(subscription_id=subscription_id).mark_dead_lettered(
        reason, timezone.now(), including_held=True)


def delete_queue(destination: str) -> bool:
    """Remove a deleted subscription's queue from the broker, with every frame left on it, scheduled ones too."""
    return shared_broker().delete_queue(destination)
