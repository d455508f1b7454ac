"""Workflows on rooms and subscriptions that reach the broker and the push workers.

They live here, above rooms/ and subscriptions/, because they act on what delivery/ owns: deleting a
room or a subscription removes its queues from the broker and settles its deliveries; resuming a
push subscription starts its push session. The API and the console call these rather than the
models' own `delete` and `resume`.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import QuerySet

from delivery.push.claims import start_sessions
from delivery.subscription_teardown import retire_deliveries
from delivery.tasks import delete_queue
from rooms.models import Room
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
        _lock_against_claims(Subscription.objects.filter(pk=subscription_id))
        dead_lettered = retire_deliveries(subscription_id, f"subscription {subscription_id} was deleted")
        subscription.delete()
        # The frames left on the broker belong to settled deliveries: the queue goes with them.
        transaction.on_commit(lambda: delete_queue.delay(destination))
    return dead_lettered


@dataclass(frozen=True)
class RoomDeleted:
    id: int
    subscriptions_deleted: int
    messages_deleted: int

    @property
    def detail(self) -> str:
        return (f"room {self.id} is deleted with its event types, {self.subscriptions_deleted} subscription(s) "
                f"and {self.messages_deleted} message(s) and their log; nothing more will be delivered from it")


def delete_room(room: Room) -> RoomDeleted:
    """Delete a room and everything in it, then its subscriptions' queues on the broker."""
    room_id = room.pk
    queues = [subscription.destination for subscription in room.subscriptions.all()]
    with transaction.atomic():
        _lock_against_claims(Subscription.objects.filter(room_id=room_id))
        _, deleted = room.delete()
        # Frames left on the broker name deliveries that no longer exist: the queues go with them.
        transaction.on_commit(lambda: [delete_queue.delay(queue) for queue in queues])
    return RoomDeleted(
        id=room_id,
        subscriptions_deleted=deleted.get("subscriptions.Subscription", 0),
        messages_deleted=deleted.get("delivery.Message", 0),
    )


def _lock_against_claims(subscriptions: QuerySet[Subscription]) -> None:
    """Lock the subscriptions' rows (in id order) before deleting them and their push claims.

    A worker adds a push claim under its subscription's row lock (delivery/push/claims.py): holding the
    locks first, the delete sees every claim added before it and no claim can be added after it (the
    claimer then finds the row gone), so the claims' foreign key never stops the delete.
    """
    list(subscriptions.select_for_update().order_by("pk").values_list("pk", flat=True))
