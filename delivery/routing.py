"""Where a room's events go: its event types and subscriptions, cached per process.

Every publish needs them; reading them costs two queries. A process keeps them per room with
the room's `routing_version`, which every change of the room's event types or subscriptions
raises (rooms.models.Room.routing_changed); a publish reads the room anyway, and reads the rest
again only when its version moved. So a new subscription gets everything published after it was
made, as without the cache.

Paused and disabled subscriptions are destinations too: their deliveries are stored and their
frames wait on their queues (no push session consumes them, a pull is refused) until a resume, or
until the room's expiration expires them. Pausing never drops an event.

Payload filters (subscriptions/filters.py) are compiled here, once per routing version, so a
publish only runs each subscription's predicate on its event.

Event types are kept without their schemas: a room may have many, each up to
DOVECOTE_SCHEMA_MAX_BYTES, and every room a process publishes to is kept here. A type's schema is
read when an event of it is checked and no validator of it is kept, and the validators kept per
process hold at most DOVECOTE_SCHEMA_CACHE_BYTES of schemas (rooms/schemas.py, `VALIDATORS`).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from delivery.models import Message
from rooms.models import EventType, Room
from subscriptions.filters import FilterInvalid, Predicate, compile_filter, event_document
from subscriptions.models import Subscription

log = logging.getLogger("delivery.routing")


@dataclass(frozen=True, slots=True)
class Route:
    """A subscription (active, paused or disabled) with its payload filter compiled (None: no filter)."""

    subscription: Subscription
    predicate: Predicate | None


@dataclass(frozen=True)
class Routing:
    version: int
    event_types: dict[tuple[str, str], EventType]  # by (name, version)
    routes: tuple[Route, ...]  # of every subscription of the room, by id

    @property
    def subscriptions(self) -> tuple[Subscription, ...]:
        return tuple(route.subscription for route in self.routes)

    def subscriptions_for(self, message: Message, room: Room, *, only: int | None = None) -> list[Subscription]:
        """Return the subscriptions (or only the one with id `only`) whose filters `message` passes."""
        document = None
        chosen = []
        for route in self.routes:
            subscription = route.subscription
            if only is not None and subscription.pk != only:
                continue
            if not subscription.matches(message.event_type, message.event_version):
                continue
            if route.predicate is not None:
                if document is None:  # built once per event, and only when some subscription filters payloads
                    document = event_document(message.event_type, message.event_version, room.name,
                                              message.correlation_id, message.payload)
                if not route.predicate(document):
                    continue
            chosen.append(subscription)
        return chosen


_routings: dict[int, Routing] = {}
_lock = threading.Lock()


def routing(room: Room) -> Routing:
    """Return the room's event types and subscriptions as of `room.routing_version`."""
    with _lock:
        cached = _routings.get(room.pk)
    if cached is not None and cached.version == room.routing_version:
        return cached
    fresh = Routing(
        version=room.routing_version,  # read before them: a change meanwhile makes the next publish read again
        event_types={(t.name, t.version): t for t in EventType.objects.filter(room=room).defer("schema")},
        routes=tuple(Route(s, compiled_filter(s))
                     for s in Subscription.objects.filter(room=room).order_by("pk")),
    )
    with _lock:
        _routings[room.pk] = fresh
    return fresh


def compiled_filter(subscription: Subscription) -> Predicate | None:
    """Compile a subscription's payload filter (None: none).

    One that breaks today's rules (stored before a limit was lowered, or by hand) matches nothing and
    is logged, rather than failing every publish to the room.
    """
    try:
        return compile_filter(subscription.payload_filter)
    except FilterInvalid as invalid:
        log.error("subscription %s has an invalid payload filter: %s", subscription.pk, invalid)
        return lambda document: False
