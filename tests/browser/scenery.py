"""Rows that make the pages look like a working day: an hour of traffic, retries, dead letters, keys, and a
week of report rows."""

from __future__ import annotations

import math
import random
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from analytics.models import ErrorReport, HourlyReport, LatencyReport, ReportRun, RetryCostReport
from delivery.models import Delivery, DeliveryAttempt, Message
from dovecote import heartbeats
from dovecote.error_text import readable
from rooms.models import ApiKey, EventType, Room
from subscriptions.models import Subscription
from subscriptions.retry import RetryPolicy
from tests.report_rows import error_row, hourly_row, latency_row, retry_cost_row

Status = Delivery.Status
# What a receiver behind Apache httpd answers while it is down, as the push transport stores it: its words.
UNAVAILABLE = readable("HTTP 503: <!DOCTYPE HTML PUBLIC \"-//IETF//DTD HTML 2.0//EN\">\n<html><head>\n"
                        "<title>503 Service Unavailable</title>\n</head><body>\n<h1>Service Unavailable</h1>\n"
                        "<p>The server is temporarily unable to service your\nrequest due to maintenance "
                        "downtime or capacity\nproblems. Please try again later.</p>\n<hr>\n"
                        "<address>Apache/2.4.62 (Debian) Server at crm.example.com Port 443</address>\n</body></html>")
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
                                          event_types=[{"name": "order.paid"},
                                                       {"name": "order.created", "version": "1"}])
    crm = Subscription.objects.create(room=orders, name="crm-sync", type="push", push_url="https://crm.example.com/in",
                                      delivery_attempts=2, last_error=UNAVAILABLE,
                                      last_error_at=timezone.now() - timedelta(minutes=2))
    warehouse = Subscription.objects.create(room=orders, name="warehouse", type="pull",
                                            event_types=[{"name": "order.paid", "version": "1"}])
    ledger = Subscription.objects.create(room=payments, name="ledger", type="push",
                                         push_url="https://ledger.example.com/events", status="paused",
                                         status_reason="paused for maintenance")
    retrying, dead = traffic(orders, billing, crm, rng)
    report_history([billing, crm, warehouse, ledger], rng)
    ApiKey.issue("shop backend", rooms=[orders, payments])
    ApiKey.issue("ops admin", is_admin=True)
    ApiKey.issue("old integration", rooms=[payments])[0].revoke()
    for role, name in (("worker", "celery@dovecote-1"), ("beat", "dovecote-1")):  # the dashboard's process cards
        heartbeats.record(role, name)
    return Scenery(orders, billing, crm, warehouse, retrying, dead)


def traffic(room: Room, billing: Subscription, crm: Subscription, rng: random.Random) -> tuple[Message, Message]:
    """An hour of messages: billing mostly delivered at once, crm failing often; return a retrying and a dead one."""
    now = timezone.now()
    messages, deliveries, attempts = [], [], []
    for i in range(240):
        at = now - timedelta(seconds=rng.uniform(5, 3500))  # inside the dashboard's window (59 whole minutes)
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
            delivery.last_error = f"gave up after 3 attempts: {UNAVAILABLE}" if dead else ""
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
    for delivery in created:  # settled a moment after publishing (the dashboard counts them by this time)
        delivery.updated_at = min(delivery.created_at + timedelta(seconds=2 * delivery.attempts + 1), now)
    Delivery.objects.bulk_update(created, ["updated_at"])
    newest = max(messages, key=lambda m: m.created_at)
    retrying = Delivery.objects.get(message=newest, subscription=crm)
    retrying.status, retrying.attempts, retrying.next_attempt_at = Status.RETRYING, 2, now + timedelta(seconds=2.5)
    retrying.last_status_code, retrying.last_error = 503, UNAVAILABLE
    retrying.save()
    retrying.attempt_log.all().delete()
    DeliveryAttempt.objects.create(delivery=retrying, correlation_id=newest.correlation_id, attempt=1,
                                   started_at=now - timedelta(seconds=15.2), duration_ms=10_003, outcome="timeout",
                                   error="timed out after 10000 ms", next_delay_ms=DELAYS.delay_after(1))
    DeliveryAttempt.objects.create(delivery=retrying, correlation_id=newest.correlation_id, attempt=2,
                                   started_at=now - timedelta(seconds=2.2), duration_ms=212, outcome="failure",
                                   status_code=503, error=UNAVAILABLE, next_delay_ms=DELAYS.delay_after(2))
    dead = Delivery.objects.filter(subscription=crm, status=Status.DEAD_LETTERED).select_related("message").first()
    return newest, dead.message


def timeline(delivery: Delivery, at: datetime, failures: int, dead: bool,
             rng: random.Random) -> list[DeliveryAttempt]:
    rows, started = [], at + timedelta(milliseconds=rng.randint(20, 90))
    for number in range(1, failures + 1):
        last = dead and number == failures
        rows.append(DeliveryAttempt(delivery=delivery, correlation_id=delivery.message.correlation_id, attempt=number,
                                    started_at=started, duration_ms=rng.randint(40, 300), outcome="failure",
                                    status_code=503, error=UNAVAILABLE,
                                    next_delay_ms=None if last else DELAYS.delay_after(number)))
        started += timedelta(milliseconds=DELAYS.delay_after(number))
    if not dead:
        rows.append(DeliveryAttempt(delivery=delivery, correlation_id=delivery.message.correlation_id,
                                    attempt=failures + 1, started_at=started, duration_ms=rng.randint(30, 180),
                                    outcome="success", status_code=204))
    return rows


# Per subscription: publishes per busy hour, share delivered, latency p50 (ms), errors (outcome, code, share).
PROFILES = {
    "billing": (120, 0.995, 140, [("failure", 502, 0.6), ("timeout", None, 0.4)]),
    "crm-sync": (120, 0.86, 900, [("failure", 503, 0.7), ("failure", 500, 0.2), ("timeout", None, 0.1)]),
    "warehouse": (60, 0.97, 2_500, [("lease_expired", None, 0.7), ("nacked", None, 0.3)]),
    "ledger": (40, 0.999, 90, [("connection_error", None, 1.0)]),
}


def report_history(subscriptions: list[Subscription], rng: random.Random, days: int = 7) -> None:
    """Write a week of report rows up to the last complete hour (busier around 14:00, a crm outage), and a run."""
    newest = timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
    hourly, latency, errors, costs = [], [], [], []
    for hour in (newest - timedelta(hours=n) for n in range(days * 24)):
        load = 0.3 + 0.7 * math.exp(-(((hour.hour - 14) / 5) ** 2))
        for s in subscriptions:
            busy, success, p50, failures = PROFILES[s.name]
            if s.name == "crm-sync" and newest - hour in (timedelta(hours=50), timedelta(hours=51)):
                success = 0.35  # the outage
            published = max(1, round(busy * load * rng.uniform(0.85, 1.15)))
            delivered = round(published * success)
            lost, failed = published - delivered, round(published * (1 - success) * 3) + rng.randint(0, 2)
            hourly.append(hourly_row(s.room_id, s.pk, hour, published=published, delivered=delivered,
                                     attempts=delivered + failed, failed_attempts=failed, retried=failed - lost,
                                     dead_lettered=lost - lost // 3, expired=lost // 3,
                                     delivered_attempts=delivered + failed - lost))
            slow = p50 * (1 + load) * rng.uniform(0.9, 1.1)
            latency.append(latency_row("subscription", s.room_id, s.pk, hour,
                                       (round(slow), round(slow * 3.5), round(slow * (9 if success < 0.9 else 5))),
                                       delivered=delivered, duration_p95_ms=round(p50 * 2.2 * rng.uniform(0.9, 1.1))))
            errors += [error_row(s.room_id, s.pk, hour, outcome, code, round(failed * share))
                       for outcome, code, share in failures if round(failed * share)]
            costs.append(retry_cost_row(s.room_id, s.pk, hour, publishes=published, retries=failed - lost,
                                        dead_letters=lost - lost // 3, rechecks=int(rng.random() < 0.03),
                                        replays=int(s.name == "crm-sync" and rng.random() < 0.1),
                                        retry_delay_ms=(failed - lost) * 9_000, retry_attempts=failed))
        for room_id in {s.room_id for s in subscriptions}:
            rows = [row for row in latency[-len(subscriptions):] if row.room_id == room_id]
            latency.append(latency_row("room", room_id, None, hour, tuple(
                round(sorted(getattr(r, f"latency_{p}_ms") for r in rows)[len(rows) // 2])
                for p in ("p50", "p95", "p99")),
                delivered=sum(r.delivered for r in rows)))
    for model, rows in ((HourlyReport, hourly), (LatencyReport, latency), (ErrorReport, errors),
                        (RetryCostReport, costs)):
        model.objects.bulk_create(rows)
    started = timezone.now() - timedelta(minutes=55)
    ReportRun.objects.create(mode="incremental", status="succeeded", progress=100, stage="done", started_at=started,
                             finished_at=started + timedelta(seconds=48), hours_processed=2, rows_written=64)
