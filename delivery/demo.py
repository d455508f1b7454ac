"""The demo's seeded rooms and subscriptions, its built-in flaky receiver, and its traffic."""

from __future__ import annotations

import json
import os
import random
import secrets
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

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

ADMIN = "admin"
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
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


RECEIVER_PATH = "/demo/receiver/"


def receiver_url(base_url: str) -> str:
    return f"{base_url}{RECEIVER_PATH}"


def seed(base_url: str) -> None:
    """Create the demo's rooms, event types and subscriptions once; later, point them at this run's port."""
    if Room.objects.filter(name="orders").exists():
        point_receivers_at(base_url)
        return
    for name, event_types in EVENTS.items():
        room = Room.objects.create(name=name, description=f"Demo room: {name}", message_expiration_ms=600_000,
                                   delivery_delay_ms=500, delivery_delay_multiplier=2.0, delivery_attempts=3,
                                   max_delivery_delay_ms=10_000)
        for event_type, version in event_types:
            EventType.objects.create(room=room, name=event_type, version=version)
        Subscription.objects.create(room=room, name="flaky-receiver", type="push",
                                    push_url=receiver_url(base_url))
        Subscription.objects.create(room=room, name="receiver-that-is-down", type="push",
                                    push_url="http://127.0.0.1:9/down", delivery_attempts=1,
                                    delivery_delay_ms=200)
        Subscription.objects.create(room=room, name="pull-consumer", type="pull")


def point_receivers_at(base_url: str) -> int:
    """Point the subscriptions to the built-in receiver of an earlier run (on another port) at this one's."""
    moved = 0
    for subscription in Subscription.objects.filter(push_url__endswith=RECEIVER_PATH):
        parts = urlsplit(subscription.push_url)
        wanted = receiver_url(base_url)
        if parts.hostname in LOOPBACK and parts.path == RECEIVER_PATH and subscription.push_url != wanted:
            subscription.push_url = wanted
            subscription.save(update_fields=["push_url", "updated_at"])
            moved += 1
    return moved


def demo_login(saved_in: Path) -> tuple[str, str, bool]:
    """Return the admin's password and an admin API key, and whether they are the ones `saved_in` kept.

    The demo prints them at every start; keeping them in its saved state (beside the SQLite file,
    readable by this user only) means a restart leaves the login and the key working. When the file
    is missing or its values no longer work, new ones are made and saved.
    """
    try:
        saved = json.loads(saved_in.read_text())
    except (OSError, ValueError):
        saved = {}
    user = get_user_model().objects.filter(username=ADMIN).first()
    key = ApiKey.authenticate(str(saved.get("api_key", "")))
    if user and user.check_password(str(saved.get("password", ""))) and key is not None and key.is_admin:
        return saved["password"], saved["api_key"], True
    password, api_key = fresh_credentials()
    saved_in.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(saved_in, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as file:
        json.dump({"username": ADMIN, "password": password, "api_key": api_key}, file)
    return password, api_key, False


def fresh_credentials() -> tuple[str, str]:
    """Give the demo admin a new password and a new admin API key (revoking the last); return both."""
    password = secrets.token_urlsafe(12)
    user, _ = get_user_model().objects.get_or_create(
        username=ADMIN, defaults={"email": "admin@example.com", "is_staff": True, "is_superuser": True}
    )
    user.set_password(password)
    user.save()
    for old in ApiKey.objects.filter(name="demo", revoked_at__isnull=True):
        old.revoke()
    return password, ApiKey.issue("demo", is_admin=True)[1]


def release_sessions() -> int:
    """Free the push-session claims the last run left (its sessions ended with its process); return how many.

    A session enqueued but not started when the demo stopped keeps its claim for `claims.START_GRACE`:
    without this, this run's sessions for those subscriptions would wait that long. Only one demo
    runs on a saved state (the lock), so no live session is among them.
    """
    return Subscription.objects.exclude(session_token="").update(session_until=None, session_token="")


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
