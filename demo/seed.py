"""The demo's rooms, subscriptions and login, seeded once, and what each restart does to them."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from urllib.parse import urlsplit

from django.contrib.auth import get_user_model

from delivery import watchdog
from delivery.models import Delivery, PushClaim
from demo.receiver import RECEIVER_PATH, receiver_url
from rooms.models import ApiKey, EventType, Room
from subscriptions.models import Subscription

ADMIN = "admin"
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
EVENTS = {
    "orders": [("order.created", "1"), ("order.paid", "1"), ("order.shipped", "2")],
    "payments": [("payment.captured", "1"), ("payment.refunded", "1")],
}


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
    return PushClaim.objects.all().delete()[0]


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
