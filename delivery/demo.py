"""The demo's seeded rooms and subscriptions, its built-in flaky receiver, and its traffic."""

from __future__ import annotations

import random
import secrets
import threading
import time

from django.contrib.auth import get_user_model
from django.db import close_old_connections
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from delivery import watchdog
from delivery.models import Delivery
from delivery.publish import Event, publish_many
from rooms.models import ApiKey, EventType, Room
from subscriptions.models import Subscription

FAILURE_RATE = 0.25
EVENTS = {
    "orders": [("order.created", "1"), ("order.paid", "1"), ("order.shipped", "2")],
    "payments": [("payment.captured", "1"), ("payment.refunded", "1")],
}


@csrf_exempt
@require_POST
def receiver(request: HttpRequest) -> HttpResponse:
    """A webhook receiver that fails about one attempt in four, so retries show."""
    if random.random() < FAILURE_RATE:
        response = HttpResponse("demo receiver: simulated failure\n", status=random.choice([500, 502, 503]))
        response._has_been_logged = True  # a simulated failure is not a server error worth a log line
        return response
    return HttpResponse(status=204)


def seed(base_url: str) -> None:
    """Create the demo's rooms, event types and subscriptions, once."""
    if Room.objects.filter(name="orders").exists():
        return
    for name, event_types in EVENTS.items():
        room = Room.objects.create(name=name, description=f"Demo room: {name}", message_expiration_ms=600_000,
                                   delivery_delay_ms=500, delivery_delay_multiplier=2.0, delivery_attempts=3,
                                   max_delivery_delay_ms=10_000)
        for event_type, version in event_types:
            EventType.objects.create(room=room, name=event_type, version=version)
        Subscription.objects.create(room=room, name="flaky-receiver", type="push",
                                    push_url=f"{base_url}/demo/receiver/")
        Subscription.objects.create(room=room, name="receiver-that-is-down", type="push",
                                    push_url="http://127.0.0.1:9/down", delivery_attempts=1,
                                    delivery_delay_ms=200)
        Subscription.objects.create(room=room, name="pull-consumer", type="pull")


def fresh_credentials() -> tuple[str, str]:
    """Give the demo admin a new password and a new admin API key (revoking the last); return both."""
    password = secrets.token_urlsafe(12)
    user, _ = get_user_model().objects.get_or_create(
        username="admin", defaults={"email": "admin@example.com", "is_staff": True, "is_superuser": True}
    )
    user.set_password(password)
    user.save()
    for old in ApiKey.objects.filter(name="demo", revoked_at__isnull=True):
        old.revoke()
    return password, ApiKey.issue("demo", is_admin=True)[1]


def resend_lost_frames() -> int:
    """Send again, at their current attempt, the frames the in-memory broker held when the demo last stopped.

    That broker keeps nothing across a restart, so every delivery `queued` or `retrying` lost its
    frame (a retry keeps its due time). Leases live in the database and pending deliveries are
    the outbox sweeper's: neither needs a frame now.
    """
    lost = (Delivery.objects.select_related("message__room", "subscription__room")
            .filter(status__in=[Delivery.Status.QUEUED, Delivery.Status.RETRYING], subscription__isnull=False)
            .order_by("pk"))
    return watchdog.resend(list(lost), "the in-memory broker kept nothing when the demo last stopped")


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
