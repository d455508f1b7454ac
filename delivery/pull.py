"""Pull delivery: consumers lease messages over the API, then ack, nack or extend the leases.

Leases live in the database. `pull` takes frames off the broker, writes each lease on its
delivery row (status `leased`, a token, an expiry) and only then acks the frame: from that
moment the database holds the message. An `ack_id` is `{delivery id}.{token}`: single use and
bound to its subscription. A lease that runs out counts as a failed attempt and is redelivered
after the EBR delay (or dead-lettered) by `expire_leases`, which beat runs every second.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from delivery import frames, metrics, sequencing, settle
from delivery.attempts import Arrival, Attempt, start_attempts
from delivery.broker import BrokerError, ReceivedMessage
from delivery.broker.shared import shared_broker
from delivery.models import Delivery, DeliveryAttempt, DeliveryState
from delivery.transports import PushResult
from dovecote.inputs import read_id
from subscriptions.models import Subscription

log = logging.getLogger("delivery.pull")
Status = Delivery.Status
Outcome = DeliveryAttempt.Outcome

FIRST_FRAME_MIN_WAIT_S = 0.1  # even wait_ms=0 gives the broker one round trip to hand frames over
MORE_FRAMES_WAIT_S = 0.02  # after the first frame, take what is already there
EXPIRY_BATCH = 200
CLAIM_FOR = timedelta(seconds=60)


@dataclass(frozen=True)
class Lease:
    ack_id: str
    delivery: Delivery | DeliveryState
    attempt: int
    lease_expires_at: datetime
    payload: Any  # the event's payload, as the frame carries it


@dataclass
class Settled:
    """Which ack ids an ack, nack or extend applied to, and why the others failed."""

    done: list[str]
    failed: list[dict[str, str]]


def pull(subscription: Subscription, *, max_messages: int, lease_ms: int, wait_ms: int) -> list[Lease]:
    """Lease up to `max_messages`, waiting up to `wait_ms` for the first one.

    The reply's size is capped too: once the leased bodies add up to DOVECOTE_PULL_REPLY_MAX_BYTES
    no more are taken (one is always taken); frames received but not taken go back to the queue.
    """
    broker = shared_broker()
    leases: list[Lease] = []
    size, max_bytes = 0, settings.DOVECOTE_PULL_REPLY_MAX_BYTES
    deadline = time.monotonic() + max(wait_ms / 1000, FIRST_FRAME_MIN_WAIT_S)
    with broker.consumer(subscription.destination, prefetch=max_messages) as consumer:
        full = False
        while len(leases) < max_messages and not full:  # frames judged stale or expired make room for more
            received: list[ReceivedMessage] = []
            taken = size
            while len(leases) + len(received) < max_messages:
                wait_s = MORE_FRAMES_WAIT_S if leases or received else max(0.0, deadline - time.monotonic())
                if (frame := consumer.receive(timeout=wait_s)) is None:
                    break
                if (leases or received) and taken + len(frame.body) > max_bytes:
                    full = True  # unacked: the broker hands it out again
                    break
                received.append(frame)
                taken += len(frame.body)
            if not received:
                break
            attempts = start_attempts(broker, [Arrival(subscription, consumer, frame) for frame in received])
            for attempt in attempts:
                if attempt is not None:
                    leases.append(lease(attempt, lease_ms))
                    size += len(attempt.frame.body)
    return leases


def lease(attempt: Attempt, lease_ms: int) -> Lease:
    """Write the lease of a started attempt on its delivery, then ack its frame: the database holds it now."""
    token = secrets.token_urlsafe(24)
    now = timezone.now()
    expires_at = now + timedelta(milliseconds=lease_ms)
    Delivery.objects.filter(pk=attempt.delivery.pk).mark_leased(attempt.attempt, token, expires_at, now)
    attempt.arrival.consumer.ack(attempt.frame)
    payload = json.loads(attempt.frame.body).get("data")
    return Lease(f"{attempt.delivery.pk}.{token}", attempt.delivery, attempt.attempt, expires_at, payload)


def ack(subscription: Subscription, ack_ids: list[str]) -> Settled:
    """Settle leased messages as `acked`."""
    result = Settled([], [])
    for ack_id, delivery in leased(subscription, ack_ids, result):
        now = timezone.now()
        with transaction.atomic():
            updated = Delivery.objects.filter(pk=delivery.pk).mark_acked(delivery.lease_token, now)
            if updated:
                settle.log_attempt(delivery, delivery.attempts, delivery.attempt_started_at,
                                   PushResult(Outcome.SUCCESS, _ms_since(delivery.attempt_started_at, now)))
                sequencing.settled([delivery])
        if updated:
            metrics.DELIVERED.labels(metrics.room_label(subscription.room_id), "pull").inc()
        record(result, ack_id, updated)
    return result


def nack(subscription: Subscription, ack_ids: list[str], *, action: str, delay_ms: int | None) -> Settled:
    """Give leased messages back: `retry` after the EBR delay (or `delay_ms`), or `dead_letter` now."""
    result = Settled([], [])
    broker = shared_broker()
    for ack_id, delivery in leased(subscription, ack_ids, result):
        # Clearing the token claims the lease: a concurrent ack or nack of the same id now fails.
        claimed = Delivery.objects.filter(pk=delivery.pk).take_lease(delivery.lease_token)
        if not claimed:
            record(result, ack_id, 0)
            continue
        outcome = PushResult(Outcome.NACKED, _ms_since(delivery.attempt_started_at, timezone.now()),
                             error=f"nacked by the consumer ({action})")
        body = frames.envelope(delivery.message)
        try:
            if action == "dead_letter":
                settle.dead_letter(delivery, delivery.attempts, "dead-lettered by the consumer",
                                   delivery.attempt_started_at, outcome)
            else:
                settle.settle_failure(broker, delivery, body, delivery.attempts, subscription.retry_policy,
                                      delivery.attempt_started_at, outcome, delay_ms=delay_ms)
        except BrokerError:
            # The lease stays (without a token): when it runs out, expire_leases redelivers it.
            log.exception("nack: broker unavailable; delivery %s is retried when its lease runs out", delivery.pk)
        record(result, ack_id, 1)
    return result


def extend(subscription: Subscription, ack_ids: list[str], *, lease_ms: int) -> Settled:
    """Push the leases' deadlines to `lease_ms` from now."""
    result = Settled([], [])
    for ack_id, delivery in leased(subscription, ack_ids, result):
        updated = Delivery.objects.filter(pk=delivery.pk).extend_lease(
            delivery.lease_token, timezone.now() + timedelta(milliseconds=lease_ms))
        record(result, ack_id, updated)
    return result


def expire_leases() -> int:
    """Count every lease that ran out as a failed attempt: retry it after the EBR delay, or dead-letter it."""
    ids = claim_expired_leases()
    if not ids:
        return 0  # beat's every second, nearly always: no second query built for no rows
    broker = shared_broker()
    expired = Delivery.objects.select_related("message__room", "subscription__room").filter(pk__in=ids)
    for delivery in expired:
        outcome = PushResult(Outcome.LEASE_EXPIRED, _ms_since(delivery.attempt_started_at, timezone.now()),
                             error="the lease ran out before the consumer acked")
        settle.settle_failure(broker, delivery, frames.envelope(delivery.message), delivery.attempts,
                              delivery.subscription.retry_policy, delivery.attempt_started_at, outcome)
    return len(expired)


def claim_expired_leases() -> list[int]:
    """Take leases that ran out, so no ack, nack or other sweeper acts on them meanwhile."""
    now = timezone.now()
    return Delivery.objects.claim_expired_leases(now, now + CLAIM_FOR, EXPIRY_BATCH)


def leased(subscription: Subscription, ack_ids: list[str], result: Settled) -> list[tuple[str, Delivery]]:
    """Return (ack id, delivery) for the ids that name a live lease of this subscription."""
    parsed = {}
    for ack_id in ack_ids:
        delivery_id, _, token = ack_id.partition(".")
        if (pk := read_id(delivery_id)) is not None and token:
            parsed[ack_id] = (pk, token)
        else:
            result.failed.append({"ack_id": ack_id, "error": "not an ack id"})
    rows = Delivery.objects.select_related("message__room").in_bulk([pk for pk, _ in parsed.values()])
    found = []
    for ack_id, (pk, token) in parsed.items():
        delivery = rows.get(pk)
        if delivery and delivery.subscription_id == subscription.pk and delivery.status == Status.LEASED \
                and token and secrets.compare_digest(delivery.lease_token, token):
            delivery.subscription = subscription
            found.append((ack_id, delivery))
        else:
            result.failed.append({"ack_id": ack_id, "error": "unknown, already used, or its lease ran out"})
    return found


def record(result: Settled, ack_id: str, updated: int) -> None:
    if updated:
        result.done.append(ack_id)
    else:
        result.failed.append({"ack_id": ack_id, "error": "unknown, already used, or its lease ran out"})


def _ms_since(started: datetime | None, now: datetime) -> int:
    return max(0, int((now - started).total_seconds() * 1000)) if started else 0
