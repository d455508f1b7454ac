"""Publish an event to a room: resolve destinations and write the outbox in one transaction."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from delivery.models import Delivery, Message
from delivery.outbox import relay
from rooms.models import EventType, Room
from subscriptions.models import Subscription

log = logging.getLogger("delivery.publish")

IDEMPOTENCY_WINDOW = timedelta(hours=24)


class PublishRejected(Exception):
    """The event cannot be published; `errors` names each bad field."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__(errors)
        self.errors = errors


@dataclass(frozen=True)
class Event:
    event_type: str
    event_version: str
    payload: Any
    correlation_id: str = ""
    idempotency_key: str | None = None


@dataclass(frozen=True)
class Published:
    message_id: str
    correlation_id: str
    destinations: list[dict[str, Any]] = field(default_factory=list)

    def as_reply(self) -> dict[str, Any]:
        return {"message_id": self.message_id, "correlation_id": self.correlation_id,
                "destinations": self.destinations}


def publish(room: Room, event: Event) -> Published:
    """Validate `event`, store it with one pending delivery per matching subscription, send after commit."""
    check_event(room, event)
    if event.idempotency_key and (earlier := find_idempotent(room, event.idempotency_key)):
        return earlier
    now = timezone.now()
    with transaction.atomic():
        message = Message.objects.create(
            room=room, event_type=event.event_type, event_version=event.event_version, payload=event.payload,
            correlation_id=event.correlation_id or str(uuid.uuid4()), idempotency_key=event.idempotency_key,
            created_at=now, expires_at=room.expires_at(now),
        )
        deliveries = Delivery.objects.bulk_create(
            Delivery(message=message, subscription=s, destination=s.destination, created_at=now)
            for s in matching_subscriptions(room, event)
        )
        ids = [d.pk for d in deliveries]
        transaction.on_commit(lambda: relay().submit(ids))
    log.info("published to %d destinations", len(deliveries),
             extra={"correlation_id": message.correlation_id, "message_id": str(message.id)})
    return published_reply(message, deliveries)


def check_event(room: Room, event: Event) -> None:
    """Raise PublishRejected if the room does not know the event type or the payload fails its schema."""
    event_type = EventType.objects.filter(room=room, name=event.event_type, version=event.event_version).first()
    if event_type is None:
        raise PublishRejected({"event_type": [
            f"room {room.name!r} has no event type {event.event_type!r} version {event.event_version!r}"
        ]})
    if errors := event_type.schema_errors(event.payload):
        raise PublishRejected({"payload": errors})


def matching_subscriptions(room: Room, event: Event) -> list[Subscription]:
    """Return the room's active subscriptions whose filter lets this event through."""
    active = Subscription.objects.filter(room=room, status=Subscription.Status.ACTIVE).order_by("pk")
    return [s for s in active if s.matches(event.event_type, event.event_version)]


def find_idempotent(room: Room, key: str) -> Published | None:
    """Return the reply of the message published with `key` in the last 24 h, if any."""
    message = (Message.objects.filter(room=room, idempotency_key=key,
                                      created_at__gte=timezone.now() - IDEMPOTENCY_WINDOW)
               .order_by("created_at").first())
    if message is None:
        return None
    return published_reply(message, message.deliveries.order_by("pk"))


def published_reply(message: Message, deliveries: Any) -> Published:
    return Published(
        message_id=str(message.id),
        correlation_id=message.correlation_id,
        destinations=[{"subscription_id": d.subscription_id, "destination": d.destination} for d in deliveries],
    )
