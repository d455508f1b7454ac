"""Where a room's events go: its event types and active subscriptions, cached per process.

Every publish needs them; reading them costs two queries. A process keeps them per room with
the room's `routing_version`, which every change of the room's event types or subscriptions
raises (rooms.models.Room.routing_changed); a publish reads the room anyway, and reads the rest
again only when its version moved. So a paused subscription gets nothing published after the
pause, and a new one everything published after it was made, as without the cache.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from rooms.models import EventType, Room
from subscriptions.models import Subscription


@dataclass(frozen=True)
class Routing:
    version: int
    event_types: dict[tuple[str, str], EventType]  # by (name, version)
    subscriptions: tuple[Subscription, ...]  # active, by id

    def subscriptions_for(self, event_type: str, event_version: str) -> list[Subscription]:
        return [s for s in self.subscriptions if s.matches(event_type, event_version)]


_routings: dict[int, Routing] = {}
_lock = threading.Lock()


def routing(room: Room) -> Routing:
    """Return the room's event types and active subscriptions as of `room.routing_version`."""
    with _lock:
        cached = _routings.get(room.pk)
    if cached is not None and cached.version == room.routing_version:
        return cached
    fresh = Routing(
        version=room.routing_version,  # read before them: a change meanwhile makes the next publish read again
        event_types={(t.name, t.version): t for t in EventType.objects.filter(room=room)},
        subscriptions=tuple(Subscription.objects.filter(room=room, status=Subscription.Status.ACTIVE)
                            .order_by("pk")),
    )
    with _lock:
        _routings[room.pk] = fresh
    return fresh
