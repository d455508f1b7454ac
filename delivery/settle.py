"""Record the outcome of an attempt and settle its frame: delivered, retried, dead-lettered, expired.

Each function changes the broker first (a retry or dead-letter copy, confirmed by its receipt),
then the database, and acks the original frame last: a crash in between leaves the original on
the broker, and `push.prepare` recognises it as already handled when it comes back.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from delivery import frames
from delivery.broker import Broker
from delivery.models import Delivery, DeliveryAttempt, PublishedMessage
from delivery.retry import RetryPolicy
from delivery.transports import PushResult

log = logging.getLogger("delivery.settle")
Status = Delivery.Status
UNSETTLED = [s for s in Status.values if s not in Delivery.FINAL_STATUSES]
NO_LEASE = {"lease_token": "", "lease_expires_at": None}


def attempt_row(delivery: Delivery, attempt: int, started_at, result: PushResult,  # noqa: ANN001
                next_delay_ms: int | None = None) -> DeliveryAttempt:
    """Return the attempt row of the timeline (unsaved)."""
    return DeliveryAttempt(
        delivery=delivery, correlation_id=delivery.message.correlation_id, life=delivery.replays + 1,
        attempt=attempt, started_at=started_at, duration_ms=result.duration_ms,
        outcome=result.outcome, status_code=result.status_code, error=result.error, next_delay_ms=next_delay_ms,
    )


def log_attempt(delivery: Delivery, attempt: int, started_at, result: PushResult,  # noqa: ANN001
                next_delay_ms: int | None = None) -> None:
    """Write the attempt row of the timeline."""
    attempt_row(delivery, attempt, started_at, result, next_delay_ms).save(force_insert=True)


def mark_delivered(delivery: Delivery, attempt: int, started_at, result: PushResult) -> None:  # noqa: ANN001
    """Record a successful attempt."""
    mark_delivered_many([(delivery, attempt, started_at, result)])


def mark_delivered_many(successes: list[tuple[Delivery, int, datetime, PushResult]]) -> None:
    """Record successful attempts: their attempt rows in one INSERT, the deliveries in one UPDATE per status code."""
    by_code: dict[int | None, list[int]] = defaultdict(list)
    for delivery, _, _, result in successes:
        by_code[result.status_code].append(delivery.pk)
    with transaction.atomic():
        DeliveryAttempt.objects.bulk_create([attempt_row(*success) for success in successes])
        for status_code, delivery_ids in by_code.items():
            Delivery.objects.filter(pk__in=delivery_ids, status__in=UNSETTLED).update(
                status=Status.DELIVERED, attempt_started_at=None, next_attempt_at=None, **NO_LEASE,
                last_status_code=status_code, last_error="", updated_at=timezone.now(),
            )
    for delivery, attempt, _, _ in successes:
        log.debug("delivered", extra=_context(delivery, attempt))


def schedule_retry(
    broker: Broker, delivery: Delivery, body: bytes, attempt: int, delay_ms: int,
    policy: RetryPolicy, started_at, result: PushResult,  # noqa: ANN001
) -> None:
    """Send the copy of attempt + 1 with the broker's scheduled delay, then record the failure."""
    next_attempt = attempt + 1
    following = policy.delay_after(next_attempt) if policy.can_retry(next_attempt) else None
    broker.send(frames.frame_for(delivery, attempt=next_attempt, delay_ms=delay_ms,
                                 next_delay_ms=following, body=body))
    now = timezone.now()
    with transaction.atomic():
        log_attempt(delivery, attempt, started_at, result, next_delay_ms=delay_ms)
        record_send(delivery, PublishedMessage.Kind.RETRY, delivery.destination, next_attempt, delay_ms)
        # Only while `attempt` is current: a fast consumer may already have claimed the copy.
        Delivery.objects.filter(pk=delivery.pk, attempts=attempt, status__in=UNSETTLED).update(
            status=Status.RETRYING, attempt_started_at=None, next_attempt_at=now + timedelta(milliseconds=delay_ms),
            **NO_LEASE,
            last_status_code=result.status_code, last_error=result.error, updated_at=now,
        )
    log.info("retry scheduled in %d ms", delay_ms, extra=_context(delivery, attempt))


def dead_letter(
    broker: Broker, delivery: Delivery, body: bytes, attempt: int, reason: str,
    started_at=None, result: PushResult | None = None,  # noqa: ANN001
) -> None:
    """Move the message to the subscription's dead-letter queue and keep it for replay."""
    destination = delivery.subscription.dead_letter_destination
    broker.send(frames.frame_for(delivery, attempt=attempt, delay_ms=0, next_delay_ms=None,
                                 body=body, destination=destination))
    with transaction.atomic():
        if result is not None:
            log_attempt(delivery, attempt, started_at, result)
        record_send(delivery, PublishedMessage.Kind.DEAD_LETTER, destination, attempt, 0)
        Delivery.objects.filter(pk=delivery.pk, attempts=attempt, status__in=UNSETTLED).update(
            status=Status.DEAD_LETTERED, attempt_started_at=None, next_attempt_at=None, **NO_LEASE,
            last_status_code=result.status_code if result else None, last_error=reason,
            updated_at=timezone.now(),
        )
    log.warning("dead-lettered: %s", reason, extra=_context(delivery, attempt))


def expire(delivery: Delivery, attempt: int, started_at=None, result: PushResult | None = None) -> None:  # noqa: ANN001
    """Record that the message expired before it could be delivered."""
    with transaction.atomic():
        if result is not None:
            log_attempt(delivery, attempt, started_at, result)
        Delivery.objects.filter(pk=delivery.pk, status__in=UNSETTLED).update(
            status=Status.EXPIRED, attempt_started_at=None, next_attempt_at=None, **NO_LEASE,
            last_error=result.error if result else "expired before delivery", updated_at=timezone.now(),
        )
    log.info("expired", extra=_context(delivery, attempt))


def settle_failure(
    broker: Broker, delivery: Delivery, body: bytes, attempt: int, policy: RetryPolicy,
    started_at, result: PushResult, *, delay_ms: int | None = None,  # noqa: ANN001
) -> str:
    """Retry a failed attempt after the EBR delay (or `delay_ms`), or expire or dead-letter it; return the status."""
    if not policy.can_retry(attempt):
        reason = f"gave up after {attempt} attempt{'s' if attempt > 1 else ''}: {result.error}"
        dead_letter(broker, delivery, body, attempt, reason, started_at, result)
        return Status.DEAD_LETTERED
    if delay_ms is None:
        delay_ms = max(policy.delay_after(attempt), result.retry_after_ms or 0)
    expires_at = delivery.message.expires_at
    if expires_at is not None and timezone.now() + timedelta(milliseconds=delay_ms) >= expires_at:
        expire(delivery, attempt, started_at, result)
        return Status.EXPIRED
    schedule_retry(broker, delivery, body, attempt, delay_ms, policy, started_at, result)
    return Status.RETRYING


def record_crash(delivery: Delivery, attempt: int) -> int:
    """Log an attempt whose worker died before recording an outcome; return the crash count."""
    with transaction.atomic():
        DeliveryAttempt.objects.create(
            delivery=delivery, correlation_id=delivery.message.correlation_id, life=delivery.replays + 1,
            attempt=attempt, started_at=delivery.attempt_started_at,
            outcome=DeliveryAttempt.Outcome.CRASHED,
            error="the worker stopped before recording an outcome; the broker redelivered the message",
        )
        Delivery.objects.filter(pk=delivery.pk).update(
            redelivery_count=F("redelivery_count") + 1, attempt_started_at=timezone.now()
        )
    return delivery.redelivery_count + 1


def record_send(delivery: Delivery, kind: str, destination: str, attempt: int, delay_ms: int) -> None:
    PublishedMessage.objects.create(
        delivery=delivery, kind=kind, destination=destination, attempt=attempt, delay_ms=delay_ms,
        correlation_id=delivery.message.correlation_id,
    )


def _context(delivery: Delivery, attempt: int) -> dict[str, object]:
    return {"correlation_id": delivery.message.correlation_id, "delivery_id": delivery.pk,
            "message_id": str(delivery.message_id), "destination": delivery.destination, "attempt": attempt}
