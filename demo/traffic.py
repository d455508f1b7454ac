"""The demo's traffic: a thread that publishes random events to the seeded rooms."""

from __future__ import annotations

import random
import threading
import time

from django.db import close_old_connections

from delivery.publish import Event, publish_many
from demo.seed import EVENTS
from rooms.models import Room


def publish_forever(stop: threading.Event, per_second: float = 3.0) -> None:
    """Publish random demo events until `stop` is set."""
    rooms = {room.name: room for room in Room.objects.filter(name__in=EVENTS)}
    serial = 0
    while not stop.wait(1 / per_second):
        name = random.choice(list(rooms))
        event_type, version = random.choice(EVENTS[name])
        serial += 1
        try:
            publish_many(rooms[name], [Event(event_type, version, {"demo": serial, "amount": random.randint(1, 500)})])
        finally:
            close_old_connections()
    time.sleep(0)
