"""Publish an event to a room: resolve destinations and write the outbox in one transaction."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from delivery import metrics, sequencing
from delivery.models import Delivery, IdempotencyKey, Message
from delivery.outbox import relay
from delivery.routing import routing
from rooms.models import EventType, Room
from rooms.schemas import check_budget
from subscriptions.models import Subscription

log = logging.getLogger("delivery.publish")

IDEMPOTENCY_WINDOW = timedelta(hours=24)


class PublishRejected(Exception):
    """The event cannot be published; `errors` names each bad field."""

    def __init__(self, errors: dict[str, Any]) -> None:
        super().__init__(errors)
        self.errors = errors


@dataclass(frozen=True)
class Event:
    event_type: str
    event_version: str
    payload: Any
    correlation_id: str = ""
    idempotency_key: str | None = None
    traceparent: str = ""  # the publish's W3C trace context, carried to the broker and the receivers
    ordering_key: str = ""


@dataclass(frozen=True)
class Published:
    message_id: str
    correlation_id: str
    destinations: list[dict[str, Any]] = field(default_factory=list)

    def as_reply(self) -> dict[str, Any]:
        return {"message_id": self.message_id, "correlation_id": self.correlation_id,
                "destination_count": len(self.destinations), "destinations": self.destinations}


def publish(room: Room, event: Event, *, only: Subscription | None = None) -> Published:
    """Check one event, then store it (see store); PublishRejected names each bad field.

    With `only`, the event goes to that subscription alone, if it matches (the console's test
    event; a paused subscription holds it until it is resumed).
    """
    if errors := events_errors(room, {0: event}):
        raise PublishRejected(errors["0"])
    return store(room, [event], only=only)[0]


def publish_many(room: Room, events: list[Event]) -> list[Published]:
    """Check every event, then store them all (see store); one bad event rejects the lot.

    PublishRejected's errors name each bad event by its index under `messages`, as the batch
    endpoint answers. Each event's schema is applied once, here.
    """
    if errors := events_errors(room, dict(enumerate(events))):
        raise PublishRejected({"messages": errors})
    return store(room, events)


def store(room: Room, events: list[Event], *, only: Subscription | None = None) -> list[Published]:
    """Store checked events, each with one pending delivery per subscription whose event types and payload filter
    it passes (none: one unroutable row); frames go after commit, to a paused or disabled subscription's
    queue too, where they wait for its resume. A delivery to an ordered subscription
    whose ordering key has an earlier one on its way is stored `held` instead (delivery/sequencing.py).

    An event whose idempotency key the room saw in the last 24 h is not stored again; its first
    reply is returned.
    """
    routes = routing(room)
    for subscription in routes.subscriptions:
        subscription.room = room  # the relay reads their retry settings
    only_id = None if only is None else only.pk
    now = timezone.now()
    with transaction.atomic():
        replies: list[Published | None] = [None] * len(events)
        fresh: list[tuple[int, Message, IdempotencyKey | None]] = []
        first_with_key: dict[str, int] = {}
        repeats: dict[int, int] = {}  # index -> index of the same key earlier in this batch
        for index, event in enumerate(events):
            if event.idempotency_key in first_with_key:
                repeats[index] = first_with_key[event.idempotency_key]
                continue
            if event.idempotency_key:
                first_with_key[event.idempotency_key] = index
            earlier, key = claim_idempotency_key(room, event.idempotency_key, now)
            if earlier is not None:
                replies[index] = published_reply(earlier, earlier.deliveries.order_by("pk"))
                continue
            message = Message(
                room=room, event_type=event.event_type, event_version=event.event_version, payload=event.payload,
                correlation_id=event.correlation_id or str(uuid.uuid4()), idempotency_key=event.idempotency_key,
                ordering_key=event.ordering_key, created_at=now, expires_at=room.expires_at(now),
                traceparent=event.traceparent,
            )
            fresh.append((index, message, key))
        Message.objects.bulk_create([message for _, message, _ in fresh])
        deliveries = [delivery for _, message, _ in fresh for delivery in
                      deliveries_of(message, routes.subscriptions_for(message, room, only=only_id), now)]
        sequencing.hold_behind(deliveries)
        deliveries = Delivery.objects.bulk_create(deliveries)
        for _, message, key in fresh:
            if key is not None:
                key.message = message
                key.save(update_fields=["message", "created_at"])
        sendable = [d for d in deliveries if d.status == Delivery.Status.PENDING]
        transaction.on_commit(lambda: relay().submit(sendable))
    room_label = metrics.room_label(room.pk)
    metrics.MESSAGES_PUBLISHED.labels(room_label).inc(len(fresh))
    unroutable = sum(1 for d in deliveries if d.status == Delivery.Status.UNROUTABLE)
    metrics.DELIVERIES_CREATED.labels(room_label).inc(len(deliveries) - unroutable)
    if unroutable:
        metrics.UNROUTABLE.labels(room_label).inc(unroutable)
    by_message: dict[uuid.UUID, list[Delivery]] = {}
    for delivery in deliveries:
        by_message.setdefault(delivery.message_id, []).append(delivery)
    for index, message, _ in fresh:
        reply = replies[index] = published_reply(message, by_message[message.id])
        log.info("published to %d destinations", len(reply.destinations),
                 extra={"correlation_id": message.correlation_id, "message_id": str(message.id)})
    for index, first in repeats.items():
        replies[index] = replies[first]
    return [reply for reply in replies if reply is not None]


def deliveries_of(message: Message, subscriptions: Sequence[Subscription], now: datetime) -> list[Delivery]:
    """One pending delivery per subscription the message matched, or, when it matched none, one unroutable row.

    The unroutable row (no subscription, no destination, never sent) keeps the message findable in
    the log by its status and correlation id until it is re-published (see republish).
    """
    matched = [Delivery(message=message, subscription=s, destination=s.destination, created_at=now,
                        ordering_key=message.ordering_key if s.is_ordered else "")
               for s in subscriptions]
    return matched or [Delivery(message=message, destination="", status=Delivery.Status.UNROUTABLE,
                                created_at=now)]


class RepublishRefused(Exception):
    """The message cannot be re-published; the text says why."""


def republish(message: Message) -> Published:
    """Send an unroutable message to the subscriptions it matches now; RepublishRefused says why not.

    Its unroutable row gives way to one pending delivery per match, in one transaction (the row is
    locked, so two re-publishes never both send it); the frames go after commit, as on publish.
    """
    room = Room.objects.get(pk=message.room_id)
    routes = routing(room)
    for subscription in routes.subscriptions:
        subscription.room = room  # the relay reads their retry settings
    now = timezone.now()
    with transaction.atomic():
        held = list(Delivery.objects.select_for_update().filter(message=message, status=Delivery.Status.UNROUTABLE))
        if not held:
            routed = Delivery.objects.filter(message=message).count()
            raise RepublishRefused(f"message {message.pk} is not unroutable: it went to {routed} destination(s); "
                                   f"replay its dead letters instead")
        deliveries = deliveries_of(message, routes.subscriptions_for(message, room), now)
        if deliveries[0].status == Delivery.Status.UNROUTABLE:
            raise RepublishRefused(f"message {message.pk} still matches no subscription of room "
                                   f"{room.name!r}: add one, or widen one's event types or payload filter, first")
        Delivery.objects.filter(pk__in=[row.pk for row in held]).delete()
        sequencing.hold_behind(deliveries)
        deliveries = Delivery.objects.bulk_create(deliveries)
        sendable = [d for d in deliveries if d.status == Delivery.Status.PENDING]
        transaction.on_commit(lambda: relay().submit(sendable))
    metrics.DELIVERIES_CREATED.labels(metrics.room_label(room.pk)).inc(len(deliveries))
    log.info("re-published to %d destinations", len(deliveries),
             extra={"correlation_id": message.correlation_id, "message_id": str(message.id)})
    return published_reply(message, deliveries)


def claim_idempotency_key(room: Room, key: str | None, now) -> tuple[Message | None, IdempotencyKey | None]:  # noqa: ANN001
    """Return the message published under `key` in the last 24 h, or claim the key for a new one.

    Runs inside the publish transaction: a concurrent request with the same key waits on the
    row (or on the unique index) until this one commits, then finds its message.
    """
    if not key:
        return None, None
    record, created = IdempotencyKey.objects.select_for_update().get_or_create(
        room=room, key=key, defaults={"created_at": now}
    )
    if not created and record.message_id and record.created_at >= now - IDEMPOTENCY_WINDOW:
        return record.message, None
    record.created_at = now  # new, or older than 24 h: the key starts afresh
    return None, record


def events_errors(room: Room, events: dict[int, Event]) -> dict[str, dict[str, list[str]]]:
    """Return what is wrong with each event, by index (events the room can take are left out)."""
    known = routing(room).event_types
    errors = {}
    with check_budget():  # the payloads of one publish share one budget of schema steps (rooms/schemas.py)
        for index, event in events.items():
            if problems := event_errors(room, known.get((event.event_type, event.event_version)), event):
                errors[str(index)] = problems
    return errors


def event_errors(room: Room, event_type: EventType | None, event: Event) -> dict[str, list[str]]:
    if problem := header_value_problem(event.correlation_id):
        # It travels as the X-Correlation-ID header of every push: refused now, not dead-lettered later.
        return {"correlation_id": [f"{problem}; it is sent as an HTTP header (X-Correlation-ID)"]}
    if event_type is None:
        return {"event_type": [
            f"room {room.name!r} has no event type {event.event_type!r} version {event.event_version!r}"
        ]}
    if errors := event_type.schema_errors(event.payload):
        return {"payload": errors}
    return {}


def published_reply(message: Message, deliveries: Any) -> Published:
    """The 202 reply: the message and the destinations it was sent to (an unroutable one: none)."""
    return Published(
        message_id=str(message.id),
        correlation_id=message.correlation_id,
        destinations=[{"subscription_id": d.subscription_id, "destination": d.destination} for d in deliveries
                      if d.status != Delivery.Status.UNROUTABLE],
    )


def header_value_problem(value: str) -> str:
    """Say what keeps `value` from being an HTTP header value (empty when nothing does)."""
    for index, char in enumerate(value):
        if not " " <= char <= "~":
            return f"character {index + 1} ({char!r}) is not printable ASCII"
    return ""
