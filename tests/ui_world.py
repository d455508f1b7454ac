"""A small world of rows for the web UI's tests: a room, its subscriptions, messages in every state."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from delivery.models import Delivery, DeliveryAttempt, Message
from rooms.models import ApiKey, Room
from subscriptions.models import Subscription
from tests.factories import make_delivery, make_event_type, make_message, make_room, make_subscription

Status = Delivery.Status


@dataclass
class World:
    room: Room
    push: Subscription
    pull: Subscription
    delivered: Message
    dead: Message
    retrying: Message
    key: ApiKey


def build_world() -> World:
    """Make a room with a push and a pull subscription, and a delivered, a dead-lettered and a retrying message."""
    room = make_room(name="orders", delivery_delay_ms=1000, delivery_delay_multiplier=2.0, delivery_attempts=3)
    make_event_type(room)
    make_event_type(room, name="order.paid")
    push = make_subscription(room, name="billing", push_url="http://127.0.0.1:9/hook")
    pull = make_subscription(room, name="warehouse", type=Subscription.Type.PULL,
                             event_types=[{"name": "order.created", "version": "1"}])
    now = timezone.now()
    delivered = make_message(room, correlation_id="order-1", payload={"order": 1})
    ok = make_delivery(delivered, push, status=Status.DELIVERED, attempts=2)
    add_attempt(ok, 1, "failure", 500, "HTTP 500", next_delay_ms=2000, at=now - timedelta(seconds=30))
    add_attempt(ok, 2, "success", 204, "", at=now - timedelta(seconds=28))
    make_delivery(delivered, pull, status=Status.ACKED, attempts=1)
    dead = make_message(room, correlation_id="order-2", payload={"order": 2})
    gone = make_delivery(dead, push, status=Status.DEAD_LETTERED, attempts=4,
                         last_error="gave up after 4 attempts: HTTP 503")
    add_attempt(gone, 4, "failure", 503, "HTTP 503", at=now - timedelta(seconds=10))
    push.record_error("HTTP 503")
    retrying = make_message(room, correlation_id="order-3", payload={"order": 3})
    waiting = make_delivery(retrying, push, status=Status.RETRYING, attempts=1,
                            next_attempt_at=now + timedelta(seconds=2))
    add_attempt(waiting, 1, "timeout", None, "timed out after 10000 ms", next_delay_ms=2000, at=now)
    key, _ = ApiKey.issue("shop", rooms=[room])
    return World(room, push, pull, delivered, dead, retrying, key)


def add_attempt(delivery: Delivery, attempt: int, outcome: str, status_code: int | None, error: str, *,
                next_delay_ms: int | None = None, at: datetime | None = None) -> DeliveryAttempt:
    return DeliveryAttempt.objects.create(
        delivery=delivery, correlation_id=delivery.message.correlation_id, attempt=attempt, outcome=outcome,
        status_code=status_code, error=error, next_delay_ms=next_delay_ms, duration_ms=12,
        started_at=at or timezone.now(),
    )
