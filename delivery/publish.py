"""Publish an event to a room: resolve destinations and write the outbox in one transaction."""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from delivery import metrics, rows, sequencing
from delivery.group_commit import GroupCommit
from delivery.models import Delivery, IdempotencyKey, Message
from delivery.outbox import relay
from delivery.routing import routing
from rooms.models import ApiKey, EventType, Room
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


def publish(room: Room, event: Event, *, only: Subscription | None = None, checked: Checked | None = None) -> Published:
    """Check one event, then store it (see store); PublishRejected names each bad field.

    With `only`, the event goes to that subscription alone, if it matches (the console's test
    event; a paused subscription holds it until it is resumed).
    """
    if errors := events_errors(room, {0: event}):
        raise PublishRejected(errors["0"])
    return store(room, [event], only=only, checked=checked)[0]


def publish_many(room: Room, events: list[Event], *, checked: Checked | None = None) -> list[Published]:
    """Check every event, then store them all (see store); one bad event rejects the lot.

    PublishRejected's errors name each bad event by its index under `messages`, as the batch
    endpoint answers. Each event's schema is applied once, here.
    """
    if errors := events_errors(room, dict(enumerate(events))):
        raise PublishRejected({"messages": errors})
    return store(room, events, checked=checked)


def store(room: Room, events: list[Event], *, only: Subscription | None = None,
          checked: Checked | None = None) -> list[Published]:
    """Store checked events, each with one pending delivery per subscription whose event types and payload filter
    it passes (none: one unroutable row); frames go after commit, to a paused or disabled subscription's
    queue too, where they wait for its resume. A delivery to an ordered subscription
    whose ordering key has an earlier one on its way is stored `held` instead (delivery/sequencing.py).

    The rows are written by the process's group commit (`COMMITTER`): this returns once their
    transaction committed. An event whose idempotency key the room saw in the last 24 h is not
    stored again; its first reply is returned. With `checked`, the API key and the room the caller
    read from its per-process caches are verified in that transaction; StaleCache if either changed.
    """
    routes = routing(room)
    for subscription in routes.subscriptions:
        subscription.room = room  # the relay reads their retry settings
    now = timezone.now()
    messages = [new_message(room, event, now) for event in events]
    only_id = None if only is None else only.pk
    write = StoreWrite(room, events, messages, [deliveries_of(message, routes.subscriptions_for(
        message, room, only=only_id), now) for message in messages], now, checked)
    stored = COMMITTER.commit(write)
    if stored is None:
        raise StaleCache(f"room {room.pk} or its API key changed since this process read them")
    fresh, deliveries, replies = stored
    room_label = metrics.room_label(room.pk)
    metrics.MESSAGES_PUBLISHED.labels(room_label).inc(len(fresh))
    unroutable = sum(1 for d in deliveries if d.status == Delivery.Status.UNROUTABLE)
    metrics.DELIVERIES_CREATED.labels(room_label).inc(len(deliveries) - unroutable)
    if unroutable:
        metrics.UNROUTABLE.labels(room_label).inc(unroutable)
    routed = Counter(d.message_id for d in deliveries if d.status != Delivery.Status.UNROUTABLE)
    for message in fresh:
        log.info("published to %d destinations", routed[message.id],
                 extra={"correlation_id": message.correlation_id, "message_id": str(message.id)})
    return replies


class StaleCache(Exception):
    """The API key or room a publish was checked against changed before its transaction: check it again."""


@dataclass(frozen=True)
class Checked:
    """What a publish was checked against, read from a process's caches: verified when its rows are written."""

    key_id: int
    key_is_admin: bool
    room_id: int
    routing_version: int
    room_updated_at: datetime


@dataclass(frozen=True)
class StoreWrite:
    """One publish's rows, built by its request's thread, for the group commit to write."""

    room: Room
    events: list[Event]
    messages: list[Message]
    deliveries: list[list[Delivery]]  # of each message, in order
    now: datetime
    checked: Checked | None


Stored = tuple[list[Message], list[Delivery], list[Published]]  # the new messages, their deliveries, every reply


def stale_checks(checks: Sequence[Checked]) -> set[Checked]:
    """Return those of `checks` whose key was revoked or lost the room, or whose room changed or is gone.

    One query for the whole group, inside its transaction, so a publish checked against a cached key
    and room is written only if they are still what it was checked against.
    """
    if not checks:
        return set()
    room_ids = sorted({check.room_id for check in checks})
    key_ids = sorted({check.key_id for check in checks})
    rooms, keys, grants = Room._meta.db_table, ApiKey._meta.db_table, ApiKey.rooms.through._meta.db_table
    rooms_in, keys_in = ", ".join(["%s"] * len(room_ids)), ", ".join(["%s"] * len(key_ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT 'room', id, routing_version, updated_at FROM {rooms} WHERE id IN ({rooms_in}) "
            f"UNION ALL SELECT 'key', id, NULL, NULL FROM {keys} WHERE id IN ({keys_in}) AND revoked_at IS NULL "
            f"UNION ALL SELECT 'grant', apikey_id, room_id, NULL FROM {grants} "
            f"WHERE apikey_id IN ({keys_in}) AND room_id IN ({rooms_in})",
            [*room_ids, *key_ids, *key_ids, *room_ids])
        found = cursor.fetchall()
    room_now = {row[1]: (row[2], as_datetime(row[3])) for row in found if row[0] == "room"}
    live_keys = {row[1] for row in found if row[0] == "key"}
    granted = {(row[1], row[2]) for row in found if row[0] == "grant"}
    return {check for check in checks
            if room_now.get(check.room_id) != (check.routing_version, check.room_updated_at)
            or check.key_id not in live_keys
            or not (check.key_is_admin or (check.key_id, check.room_id) in granted)}


def as_datetime(value: datetime | str) -> datetime:
    """A timestamp as a raw query returns it: a datetime (PostgreSQL), or SQLite's text of a UTC one."""
    return value if isinstance(value, datetime) else parse_datetime(value).replace(tzinfo=UTC)  # type: ignore[union-attr]


_MESSAGE = rows.Builder(Message, ("id", "room_id", "event_type", "event_version", "payload", "correlation_id",
                                   "idempotency_key", "ordering_key", "created_at", "expires_at", "traceparent"))
_DELIVERY = rows.Builder(Delivery, ("message_id", "subscription_id", "destination", "status", "ordering_key",
                                    "created_at"))


def new_message(room: Room, event: Event, now: datetime) -> Message:
    message = _MESSAGE(uuid.uuid4(), room.pk, event.event_type, event.event_version, event.payload,
                       event.correlation_id or str(uuid.uuid4()), event.idempotency_key, event.ordering_key, now,
                       room.expires_at(now), event.traceparent)
    message.room = room
    return message


def write_group(writes: Sequence[StoreWrite]) -> list[Stored | None]:
    """Write the rows of every publish of a group and commit them: None for a stale one.

    Every new message and delivery of the group is one statement that also verifies each publish's
    cached key and room (`write_rows`), committed on its own: the group's one round trip. A group that
    claims idempotency keys or has ordered deliveries takes row locks first, so all of it is then one
    transaction (as everything is on SQLite). When a check no longer holds, nothing is written: the stale
    publishes are found (stale_checks) and the group is written again without them.
    """
    stale: set[Checked] = set()
    while True:
        try:
            return _write_group(writes, stale)
        except _StaleGroup:
            found = stale_checks([write.checked for write in writes if write.checked is not None])
            if found <= stale:  # the statement and stale_checks disagree: a bug, never a loop
                raise RuntimeError("a cached key or room failed only the group statement's check") from None
            stale = found


class _StaleGroup(Exception):
    """A publish's cached key or room changed: nothing of the group was written."""


def _write_group(writes: Sequence[StoreWrite], stale: set[Checked]) -> list[Stored | None]:
    one_statement = connection.vendor == "postgresql" and not any(
        event.idempotency_key for write in writes for event in write.events) and not any(
        delivery.ordering_key for write in writes for deliveries in write.deliveries for delivery in deliveries)
    with nullcontext() if one_statement else transaction.atomic():
        outcomes: list[tuple[list[Message], dict[int, Published]] | None] = []
        new_messages: list[Message] = []
        new_deliveries: list[Delivery] = []
        claimed: list[tuple[Message, IdempotencyKey]] = []
        first_with_key: dict[tuple[int, str], tuple[Message, list[Delivery]]] = {}
        for write in writes:
            if write.checked is not None and write.checked in stale:
                outcomes.append(None)
                continue
            fresh: list[Message] = []
            answers: dict[int, Published] = {}  # index -> the reply of the key's earlier message
            for index, (event, message) in enumerate(zip(write.events, write.messages, strict=True)):
                key = event.idempotency_key
                if key and (write.room.pk, key) in first_with_key:  # the same key earlier in this group
                    answers[index] = published_reply(*first_with_key[(write.room.pk, key)])
                    continue
                earlier, record = claim_idempotency_key(write.room, key, write.now)
                if earlier is not None:
                    answers[index] = published_reply(earlier, earlier.deliveries.order_by("pk"))
                    continue
                if key:
                    first_with_key[(write.room.pk, key)] = (message, write.deliveries[index])
                if record is not None:
                    claimed.append((message, record))
                fresh.append(message)
                new_messages.append(message)
                new_deliveries.extend(write.deliveries[index])
            outcomes.append((fresh, answers))
        sequencing.hold_behind(new_deliveries)
        checks = [write.checked for write in writes if write.checked is not None and write.checked not in stale]
        if not write_rows(new_messages, new_deliveries, checks):
            raise _StaleGroup  # rolls back the group's transaction, if it has one
        for message, record in claimed:
            record.message = message
            record.save(update_fields=["message", "created_at"])
        sendable = [d for d in new_deliveries if d.status == Delivery.Status.PENDING]
        transaction.on_commit(lambda: relay().submit(sendable))  # at once, in autocommit
    return [None if outcome is None else stored_reply(write, *outcome)
            for write, outcome in zip(writes, outcomes, strict=True)]


def write_rows(messages: list[Message], deliveries: list[Delivery], checks: list[Checked]) -> bool:
    """Insert the messages and deliveries if every check still holds; False, with nothing written, if one does not."""
    if messages and connection.vendor == "postgresql":
        return rows.insert_checked(messages, deliveries, [
            (c.room_id, c.routing_version, c.room_updated_at, c.key_id, c.key_is_admin) for c in checks])
    if stale_checks(checks):  # SQLite (the embedded demo), or a group of idempotent replays only
        return False
    rows.insert_messages(messages)
    rows.insert_deliveries(deliveries)
    return True


def stored_reply(write: StoreWrite, fresh: list[Message], answers: dict[int, Published]) -> Stored:
    """One publish's new messages, their deliveries and its replies in the order of its events."""
    deliveries = [d for index in range(len(write.messages)) if index not in answers for d in write.deliveries[index]]
    replies = [answers[index] if index in answers else published_reply(message, write.deliveries[index])
               for index, message in enumerate(write.messages)]
    return fresh, deliveries, replies


def deliveries_of(message: Message, subscriptions: Sequence[Subscription], now: datetime) -> list[Delivery]:
    """One pending delivery per subscription the message matched, or, when it matched none, one unroutable row.

    The unroutable row (no subscription, no destination, never sent) keeps the message findable in
    the log by its status and correlation id until it is re-published (see republish).
    """
    if not subscriptions:
        unroutable = _DELIVERY(message.pk, None, "", Delivery.Status.UNROUTABLE, "", now)
        unroutable.message = message
        return [unroutable]
    deliveries = []
    for subscription in subscriptions:
        delivery = _DELIVERY(message.pk, subscription.pk, subscription.destination, Delivery.Status.PENDING,
                             message.ordering_key if subscription.is_ordered else "", now)
        delivery.message, delivery.subscription = message, subscription  # the relay reads both
        deliveries.append(delivery)
    return deliveries


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
        Delivery.objects.filter(pk__in=[row.pk for row in held]).discard_unroutable()
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


# The process's group commit of publishes (delivery/group_commit.py).
COMMITTER: GroupCommit[StoreWrite, Stored | None] = GroupCommit("publish-commit", write_group)
