"""Build model rows for tests with sensible defaults; keyword arguments override them."""

from __future__ import annotations

import itertools
import uuid
from datetime import timedelta
from typing import Any

from django.utils import timezone

from delivery.models import Delivery, Message, PushClaim
from rooms.models import EventType, Room
from subscriptions.models import Subscription

_serial = itertools.count(1)


def make_room(**fields: Any) -> Room:
    fields.setdefault("name", f"room-{next(_serial)}")
    return Room.objects.create(**fields)


def make_event_type(room: Room, **fields: Any) -> EventType:
    fields.setdefault("name", "order.created")
    fields.setdefault("version", "1")
    return EventType.objects.create(room=room, **fields)


def make_subscription(room: Room, **fields: Any) -> Subscription:
    fields.setdefault("name", f"subscription-{next(_serial)}")
    fields.setdefault("type", Subscription.Type.PUSH)
    if fields["type"] == Subscription.Type.PUSH:
        fields.setdefault("push_url", "http://127.0.0.1:9/hook")
    return Subscription.objects.create(room=room, **fields)


def make_message(room: Room, **fields: Any) -> Message:
    fields.setdefault("event_type", "order.created")
    fields.setdefault("event_version", "1")
    fields.setdefault("payload", {"order": next(_serial)})
    fields.setdefault("correlation_id", f"corr-{next(_serial)}")
    return Message.objects.create(room=room, **fields)


def make_delivery(message: Message, subscription: Subscription, **fields: Any) -> Delivery:
    fields.setdefault("destination", subscription.destination)
    return Delivery.objects.create(message=message, subscription=subscription, **fields)


def make_push_claim(subscription: Subscription) -> str:
    """Claim the subscription's one push session (in place of any other), as `claims.start_sessions` does; its token."""
    token = uuid.uuid4().hex
    PushClaim.objects.filter(subscription=subscription).delete()
    PushClaim.objects.create(subscription=subscription, token=token, until=timezone.now() + timedelta(seconds=5))
    return token
