"""Workflows on rooms that reach into other apps."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from delivery.tasks import delete_queue
from rooms.models import Room


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
        _, deleted = room.delete()
        # Frames left on the broker name deliveries that no longer exist: the queues go with them.
        transaction.on_commit(lambda: [delete_queue.delay(queue) for queue in queues])
    return RoomDeleted(
        id=room_id,
        subscriptions_deleted=deleted.get("subscriptions.Subscription", 0),
        messages_deleted=deleted.get("delivery.Message", 0),
    )
