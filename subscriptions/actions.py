"""Workflows on subscriptions that reach the delivery machinery."""

from __future__ import annotations

from django.db import transaction

from delivery.push.claims import start_sessions
from delivery.retire import retire_deliveries
from delivery.tasks import delete_queue
from subscriptions.models import Subscription


def resume_subscription(subscription: Subscription) -> None:
    """Make a subscription active again and, for push, start a session so queued messages flow."""
    subscription.resume()
    if subscription.type == Subscription.Type.PUSH:
        # After commit, so the worker that takes the session sees the subscription active.
        subscription_id = subscription.pk
        transaction.on_commit(lambda: start_sessions([subscription_id]))


def delete_subscription(subscription: Subscription) -> int:
    """Dead-letter what is still on its way, delete the subscription and its broker queue; return how many."""
    subscription_id = subscription.pk
    destination = subscription.destination
    with transaction.atomic():
        dead_lettered = retire_deliveries(subscription_id, f"subscription {subscription_id} was deleted")
        subscription.delete()
        # The frames left on the broker belong to settled deliveries: the queue goes with them.
        transaction.on_commit(lambda: delete_queue.delay(destination))
    return dead_lettered
