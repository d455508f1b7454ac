"""Rows that make the pages look like a working day: an hour of traffic, retries, dead letters, keys."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from delivery.models import Delivery, DeliveryAttempt, Message
from delivery.retry import RetryPolicy
from rooms.models import ApiKey, EventType, Room
from subscriptions.models import Subscription

Status = Delivery.Status
DELAYS = RetryPolicy(delay_ms=2000, multiplier=1.5, attempts=5, max_delay_ms=60_000)  # the orders room's


@dataclass
class Scenery:
    orders: Room
    billing: Subscription
    crm: Subscription
    warehouse: Subscription
    retrying: Message
    dead: Message


def build_scenery(seed: int = 7) -> Scenery:
    """Create two rooms, four subscriptions and about an hour of deliveries in every state."""
    rng = random.Random(seed)
    orders = Room.objects.create(name="orders", description="Order lifecycle events from the shop",
                                 message_expiration_ms=3_600_000, delivery_delay_ms=2000,
                                 delivery_delay_multiplier=1.5, delivery_attempts=5, max_delivery_delay_ms=60_000)
    payments = Room.objects.create(name="payments", description="Captures and refunds", delivery_attempts=3)
    for room, types in ((orders, [("order.created", "1"), ("order.paid", "1"), ("order.shipped", "2")]),
                        (payments, [("payment.captured", "1")])):
        EventType.objects.bulk_create(EventType(room=room, name=n, version=v) for n, v in types)
    EventType.objects.filter(room=orders, name="order.created").update(schema={
        "type": "object", "required": ["order_id"], "properties": {"order_id": {"type": "integer"}}})
    billing = Subscription.objects.create(room=orders, name="billing", type="push",
                                          push_url="https://billing.example.com/hooks/dovecote",
                                          event_types=[{"name": "order.paid"}, {"name": "order.created", "version": "1"}])
    crm = Subscription.objects.create(room=orders, name="crm-sync", type="push", push_url="https://crm.example.com/in",
                                      delivery_attempts=2, last_error="HTTP 503: Service Unavailable",
                                      last_error_at=timezone.now() - timedelta(minutes=2))
    warehouse = Subscription.objects.create(room=orders, name="warehouse", type="pull",
                                            event_types=[{"name": "order.paid", "version": "1"}])
    Subscription.objects.create(room=payments, name="ledger", type="push", push_url="https://ledger.example.com/events",
                                status="paused", status_reason="paused for maintenance")
    retrying, dead = traffic(orders, billing, crm, rng)
    ApiKey.issue("shop backend", rooms=[orders, payments])
    ApiKey.issue("ops admin", is_admin=True)
    ApiKey.issue("old integration", rooms=[payments])[0].revoke()
    return Scenery(orders, billing, crm, warehouse, retrying, dead)


def traffic(room: Room, billing: Subscription, crm: Subscription, rng: random.Random) -> tuple[Message, Message]:
    """An hour of messages: billing mostly delivered at once, crm failing often; return a retrying and a dead one."""
    now = timezone.now()
    messages, deliveries, attempts = [], [], []
    for i in range(240):
        at = now - timedelta(seconds=rng.uniform(5, 3590))
        message = Message(id=uuid.uuid4(), room=room, event_type=rng.choice(["order.created", "order.paid"]),
                          event_version="1", payload={"order_id": 1000 + i, "total": rng.randint(5, 400)},
                          correlation_id=f"order-{1000 + i}", created_at=at, expires_at=at + timedelta(hours=1))
        messages.append(message)
        for subscription, failure_rate in ((billing, 0.08), (crm, 0.45)):
            delivery = Delivery(message=message, subscription=subscription, destination=subscription.destination,
                                created_at=at)
            failures = 0
            while rng.random() < failure_rate and failures < 3:
                failures += 1
            dead = subscription is crm and failures == 3
            delivery.status = Status.DEAD_LETTERED if dead else Status.DELIVERED
            delivery.attempts = failures + (0 if dead else 1)
            delivery.last_error = "gave up after 3 attempts: HTTP 503" if dead else ""
            deliveries.append(delivery)
            attempts.extend(timeline(delivery, at, failures, dead, rng))
    # Ids follow publish time, as they do when messages arrive one after another.
    messages.sort(key=lambda m: m.created_at)
    deliveries.sort(key=lambda d: d.message.created_at)
    Message.objects.bulk_create(messages)
    created = Delivery.objects.bulk_create(deliveries)
    for attempt in attempts:
        attempt.delivery_id = attempt.delivery.pk
    DeliveryAttempt.objects.bulk_create(attempts)
    Delivery.objects.filter(pk__in=[d.pk for d in created]).update(updated_at=now - timedelta(minutes=1))
    newest = max(messages, key=lambda m: m.created_at)
    retrying = Delivery.objects.get(message=newest, subscription=crm)
    retrying.status, retrying.attempts, retrying.next_attempt_at = Status.RETRYING, 1, now + timedelta(seconds=3)
    retrying.save()
    retrying.attempt_log.all().delete()
    DeliveryAttempt.objects.create(delivery=retrying, correlation_id=newest.correlation_id, attempt=1,
                                   started_at=now - timedelta(seconds=2), duration_ms=10_003, outcome="timeout",
                                   error="timed out after 10000 ms", next_delay_ms=3000)
    dead = Delivery.objects.filter(subscription=crm, status=Status.DEAD_LETTERED).select_related("message").first()
    return newest, dead.message


def timeline(delivery: Delivery, at: datetime, failures: int, dead: bool,
             rng: random.Random) -> list[DeliveryAttempt]:
    rows, started = [], at + timedelta(milliseconds=rng.randint(20, 90))
    for number in range(1, failures + 1):
        last = dead and number == failures
        rows.append(DeliveryAttempt(delivery=delivery, correlation_id=delivery.message.correlation_id, attempt=number,
                                    started_at=started, duration_ms=rng.randint(40, 300), outcome="failure",
                                    status_code=503, error="HTTP 503: Service Unavailable",
                                    next_delay_ms=None if last else DELAYS.delay_after(number)))
        started += timedelta(milliseconds=DELAYS.delay_after(number))
    if not dead:
        rows.append(DeliveryAttempt(delivery=delivery, correlation_id=delivery.message.correlation_id,
                                    attempt=failures + 1, started_at=started, duration_ms=rng.randint(30, 180),
                                    outcome="success", status_code=204))
    return rows
