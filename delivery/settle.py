"""Record the outcome of an attempt: delivered, retried, dead-lettered, expired, crashed.

Each function changes the broker first (a retry copy, confirmed by its receipt), then the
database; the caller acks the original frame last. A crash in between leaves the original on
the broker, and the frame rules (delivery/frame_rules.py) recognise it as already handled when
it comes back. A dead letter is held by PostgreSQL alone (the message and its delivery row,
replayable from there), so it needs no broker copy. Status changes go through the queryset
methods of `Delivery.objects` (delivery/models.py), the one writer of the state machine. A
settlement (delivered, dead-lettered, expired) releases the next event of its ordering key in
its own transaction (delivery/sequencing.py).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from delivery import frames, metrics, sequencing
from delivery.broker import Broker, BrokerError, SendFailed
from delivery.models import Delivery, DeliveryAttempt, DeliveryState, Retrying, SendRecord
from delivery.transports import PushResult
from subscriptions.retry import RetryPolicy

log = logging.getLogger("delivery.settle")
Status = Delivery.Status
# A delivery as a model instance, or as the lighter DeliveryState the push path reads.
DeliveryRecord = Delivery | DeliveryState
ATTEMPT_COLUMNS = ("delivery_id", "correlation_id", "life", "attempt", "started_at", "duration_ms", "outcome",
                   "status_code", "error", "next_delay_ms")


@dataclass(frozen=True)
class Success:
    """A successful attempt to record."""

    delivery: DeliveryRecord
    attempt: int
    started_at: datetime
    result: PushResult


@dataclass(frozen=True)
class Failure:
    """A failed attempt to settle: its delivery, the body to resend, and what the attempt came to."""

    delivery: DeliveryRecord
    body: bytes
    attempt: int
    started_at: datetime | None
    result: PushResult
    delay_ms: int | None = None  # instead of the EBR delay (a pull consumer's nack)

    @property
    def finished_at(self) -> datetime | None:
        """When the attempt ended: as the transport saw it, else its start + duration, if it has a start."""
        if self.result.finished_at is not None:
            return self.result.finished_at
        return self.started_at + timedelta(milliseconds=self.result.duration_ms) if self.started_at else None


def attempt_row(delivery: DeliveryRecord, attempt: int, started_at: datetime | None, result: PushResult,
                next_delay_ms: int | None = None) -> DeliveryAttempt:
    """Return the attempt row of the timeline (unsaved)."""
    return DeliveryAttempt(
        delivery_id=delivery.pk, correlation_id=delivery.message.correlation_id, life=delivery.replays + 1,
        attempt=attempt, started_at=started_at or timezone.now(), duration_ms=result.duration_ms,
        outcome=result.outcome, status_code=result.status_code, error=result.error, next_delay_ms=next_delay_ms,
    )


def log_attempt(delivery: DeliveryRecord, attempt: int, started_at: datetime | None, result: PushResult,
                next_delay_ms: int | None = None) -> None:
    """Write the attempt row of the timeline."""
    attempt_row(delivery, attempt, started_at, result, next_delay_ms).save(force_insert=True)


def record_successes(successes: list[Success]) -> None:
    """Record successful attempts: their attempt rows and their deliveries `delivered`, together.

    On PostgreSQL one statement does both (Delivery.objects.record_delivered); elsewhere one
    INSERT of the attempt rows and one UPDATE per status code, in a transaction.
    """
    now = timezone.now()
    rows = [(s.delivery, s.attempt, s.started_at, s.result.duration_ms, s.result.status_code) for s in successes]
    ordered = [s.delivery for s in successes if s.delivery.ordering_key]
    # With the release of the next event of each ordering key, when there is one (delivery/sequencing.py);
    # else the one statement alone, without a transaction's two more round trips.
    with transaction.atomic() if ordered else nullcontext():
        if not Delivery.objects.record_delivered(rows, now):
            by_code: dict[int | None, list[int]] = defaultdict(list)
            for success in successes:
                by_code[success.result.status_code].append(success.delivery.pk)
            with transaction.atomic():
                insert_attempts([(s.delivery, s.attempt, s.started_at, s.result, None) for s in successes])
                for status_code, delivery_ids in by_code.items():
                    Delivery.objects.filter(pk__in=delivery_ids).mark_delivered(status_code, now)
        sequencing.settled(ordered)
    for success in successes:
        log.debug("delivered", extra=_context(success.delivery, success.attempt))


def insert_attempts(rows: list[tuple[DeliveryRecord, int, datetime, PushResult, int | None]]) -> None:
    """Write attempt rows (delivery, attempt, start, result, next delay) in one executemany, without model instances.

    The push path records thousands of attempts a second; building a DeliveryAttempt for each costs more
    than the INSERT itself. psycopg sends the statements pipelined, in one round trip.
    """
    table = DeliveryAttempt._meta.db_table
    sql = (f"INSERT INTO {table} ({', '.join(ATTEMPT_COLUMNS)}) "
           f"VALUES ({', '.join(['%s'] * len(ATTEMPT_COLUMNS))})")
    adapt = connection.ops.adapt_datetimefield_value
    values = [(delivery.pk, delivery.message.correlation_id, delivery.replays + 1, attempt, adapt(started_at),
               result.duration_ms, str(result.outcome), result.status_code, result.error, next_delay_ms)
              for delivery, attempt, started_at, result, next_delay_ms in rows]
    with connection.cursor() as cursor:
        cursor.executemany(sql, values)


def settle_failures(broker: Broker, failures: list[Failure], policy: RetryPolicy) -> list[str | None]:
    """Settle failed attempts of one subscription: retry each after its delay, or expire or dead-letter it.

    Return each one's new status, or None where the broker did not confirm its copy (its
    original frame must then stay unacked, to come back). The retries are sent together.
    """
    statuses: list[str | None] = []
    retries: list[tuple[int, tuple[Failure, int]]] = []
    now = timezone.now()
    for f in failures:
        if not policy.can_retry(f.attempt):
            reason = f"gave up after {f.attempt} attempt{'s' if f.attempt > 1 else ''}: {f.result.error}"
            dead_letter(f.delivery, f.attempt, reason, f.started_at, f.result)
            statuses.append(Status.DEAD_LETTERED)
            continue
        delay_ms = f.delay_ms if f.delay_ms is not None else policy.delay_after(
            f.attempt, at_least_ms=f.result.retry_after_ms)
        expires_at = f.delivery.message.expires_at
        if expires_at is not None and now + timedelta(milliseconds=delay_ms) >= expires_at:
            expire(f.delivery, f.attempt, f.started_at, f.result)
            statuses.append(Status.EXPIRED)
            continue
        retries.append((len(statuses), (f, delay_ms)))
        statuses.append(None)
    confirmed = schedule_retries(broker, [retry for _, retry in retries], policy) if retries else set()
    for i, (index, _) in enumerate(retries):
        if i in confirmed:
            statuses[index] = Status.RETRYING
    return statuses


def settle_failure(broker: Broker, delivery: DeliveryRecord, body: bytes, attempt: int, policy: RetryPolicy,
                   started_at: datetime | None, result: PushResult, *, delay_ms: int | None = None) -> str:
    """Retry one failed attempt after the EBR delay (or `delay_ms`), or expire or dead-letter it; return the status."""
    [status] = settle_failures(broker, [Failure(delivery, body, attempt, started_at, result, delay_ms)], policy)
    if status is None:
        raise BrokerError(f"the broker did not confirm the copy of delivery {delivery.pk}")
    return status


def schedule_retries(broker: Broker, retries: list[tuple[Failure, int]], policy: RetryPolicy) -> set[int]:
    """Send the copies of the next attempts (all frames, then all receipts), then record the failures.

    Return the indices of `retries` the broker confirmed; only those are recorded (in one
    transaction). The others stay as they were: their original frames must not be acked.
    """
    def following(attempt: int) -> int | None:
        return policy.delay_after(attempt) if policy.can_retry(attempt) else None

    # The delay counts from the end of the failed attempt, not from when its failure is recorded.
    outgoing = [frames.frame_for(f.delivery, attempt=f.attempt + 1, delay_ms=delay, since=f.finished_at,
                                 next_delay_ms=following(f.attempt + 1), body=f.body) for f, delay in retries]
    try:
        broker.send_many(outgoing)
        confirmed = set(range(len(retries)))
    except SendFailed as error:
        log.warning("%d of %d retry copies unconfirmed: %s", len(retries) - len(error.confirmed), len(retries), error)
        confirmed = set(error.confirmed)
    except BrokerError as error:
        log.warning("broker unavailable, %d retry copies not sent: %s", len(retries), error)
        return set()
    sent = [retries[i] for i in sorted(confirmed)]
    now = timezone.now()
    with transaction.atomic():
        DeliveryAttempt.objects.bulk_create(
            attempt_row(f.delivery, f.attempt, f.started_at, f.result, next_delay_ms=delay) for f, delay in sent)
        SendRecord.objects.bulk_create(
            send_row(f.delivery, SendRecord.Kind.RETRY, f.delivery.destination, f.attempt + 1, delay)
            for f, delay in sent)
        Delivery.objects.mark_retrying(
            [Retrying(f.delivery.pk, f.attempt, (f.finished_at or now) + timedelta(milliseconds=delay),
                      f.result.status_code, f.result.error) for f, delay in sent], now)
    for f, delay in sent:
        metrics.RETRIES.labels(metrics.room_label(f.delivery.message.room_id)).inc()
        log.info("retry scheduled in %d ms", delay, extra=_context(f.delivery, f.attempt))
    return confirmed


def dead_letter(delivery: DeliveryRecord, attempt: int, reason: str, started_at: datetime | None = None,
                result: PushResult | None = None) -> None:
    """Settle the delivery as dead-lettered: kept in the database, listed, replayable."""
    with transaction.atomic():
        if result is not None:
            log_attempt(delivery, attempt, started_at, result)
        record_send(delivery, SendRecord.Kind.DEAD_LETTER, delivery.destination, attempt, 0)
        if Delivery.objects.filter(pk=delivery.pk).mark_dead_lettered(
                reason, timezone.now(), attempt=attempt, status_code=result.status_code if result else None):
            sequencing.park_or_release([delivery])
    metrics.DEAD_LETTERS.labels(metrics.room_label(delivery.message.room_id)).inc()
    log.warning("dead-lettered: %s", reason, extra=_context(delivery, attempt))


def expire(delivery: DeliveryRecord, attempt: int, started_at: datetime | None = None,
           result: PushResult | None = None) -> None:
    """Record that the message expired before it could be delivered."""
    with transaction.atomic():
        if result is not None:
            log_attempt(delivery, attempt, started_at, result)
        if Delivery.objects.filter(pk=delivery.pk).mark_expired(
                result.error if result else "expired before delivery", timezone.now()):
            sequencing.settled([delivery])
    metrics.EXPIRED.labels("attempt").inc()
    log.info("expired", extra=_context(delivery, attempt))


def record_crash(delivery: DeliveryRecord, attempt: int) -> int:
    """Log an attempt whose worker died before recording an outcome; return the crash count."""
    with transaction.atomic():
        DeliveryAttempt.objects.create(
            delivery_id=delivery.pk, correlation_id=delivery.message.correlation_id, life=delivery.replays + 1,
            attempt=attempt, started_at=delivery.attempt_started_at or timezone.now(),
            outcome=DeliveryAttempt.Outcome.CRASHED,
            error="the worker stopped before recording an outcome; the broker redelivered the message",
        )
        Delivery.objects.filter(pk=delivery.pk).mark_crashed(timezone.now())
    delivery.crashed_attempts += 1
    return delivery.crashed_attempts


def send_row(delivery: DeliveryRecord, kind: str, destination: str, attempt: int, delay_ms: int) -> SendRecord:
    """Return the published_messages row of a confirmed send (unsaved)."""
    return SendRecord(delivery_id=delivery.pk, kind=kind, destination=destination, attempt=attempt,
                            delay_ms=delay_ms, correlation_id=delivery.message.correlation_id)


def record_send(delivery: DeliveryRecord, kind: str, destination: str, attempt: int, delay_ms: int) -> None:
    send_row(delivery, kind, destination, attempt, delay_ms).save(force_insert=True)


def _context(delivery: DeliveryRecord, attempt: int) -> dict[str, object]:
    return {"correlation_id": delivery.message.correlation_id, "delivery_id": delivery.pk,
            "message_id": str(delivery.message_id), "subscription": delivery.subscription_id,
            "destination": delivery.destination, "attempt": attempt}
