"""The transactional outbox: send committed deliveries to the broker and mark them queued.

The publish transaction writes `pending` deliveries; after commit, the in-process relay
sends them (all frames, then all receipts) and marks the confirmed ones `queued`, with a
`published_messages` row each, while it sends the next ones. Whatever is still pending after a
grace period (broker down, process died after commit) is claimed and sent by `sweep_pending`, run periodically by beat.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import InterfaceError, OperationalError, close_old_connections, connection
from django.db.models import Count, Min
from django.utils import timezone
from opentelemetry.trace import Span, SpanKind, StatusCode

from delivery import frames, rows
from delivery.broker import BrokerError, OutgoingMessage, SendFailed
from delivery.broker.shared import shared_broker
from delivery.models import Delivery, SendRecord
from dovecote import tracing

log = logging.getLogger("delivery.outbox")

PENDING_GRACE = timedelta(seconds=5)
CLAIM_FOR = timedelta(seconds=60)
SWEEP_BATCH = 500
CONNECTION_CHECK_S = 5.0  # how often the recorder checks its database connection (CONN_MAX_AGE, health)

# Called with the deliveries the relay has just queued (delivery/apps.py starts their push sessions).
_queued_listeners: list[Callable[[list[Delivery]], object]] = []


def on_queued(listener: Callable[[list[Delivery]], object]) -> None:
    """Have `listener` called with every batch of deliveries the relay queues."""
    if listener not in _queued_listeners:
        _queued_listeners.append(listener)


def send_pending(delivery_ids: Sequence[int]) -> list[int]:
    """Send the given deliveries that are still pending (the sweeper's path); return the ids confirmed."""
    deliveries = list(
        Delivery.objects.filter(pk__in=delivery_ids, status=Delivery.Status.PENDING)
        .select_related("message__room", "subscription__room")
        .order_by("pk")
    )
    return [delivery.pk for delivery in send(deliveries)]


def send(deliveries: Sequence[Delivery]) -> list[Delivery]:
    """Send the frames of pending deliveries (all, then all receipts), mark the confirmed ones queued.

    `deliveries` come with their message, room and subscription loaded. Return those the broker confirmed.
    """
    confirmed = [delivery for delivery, _ in send_frames(deliveries)]
    mark_queued(confirmed)
    return confirmed


def send_frames(deliveries: Sequence[Delivery]) -> list[tuple[Delivery, OutgoingMessage]]:
    """Send each delivery's `next_frame` (all, then all receipts); return those confirmed, with frames."""
    if not deliveries:
        return []
    bodies: dict[object, bytes] = {}  # one envelope per message: the deliveries of a fan-out share it

    def body_of(delivery: Delivery) -> bytes:
        if (body := bodies.get(delivery.message_id)) is None:
            body = bodies[delivery.message_id] = frames.envelope(delivery.message)
        return body

    outgoing = [next_frame(delivery, body=body_of(delivery)) for delivery in deliveries]
    spans = [send_span(delivery) for delivery in deliveries] if tracing.enabled() else []
    confirmed = _send_many(deliveries, outgoing)
    if spans:
        sent = {id(delivery) for delivery, _ in confirmed}
        for delivery, span in zip(deliveries, spans, strict=True):
            if id(delivery) not in sent:
                span.set_status(StatusCode.ERROR, "the broker did not confirm the send")
            span.end()
    return confirmed


def _send_many(deliveries: Sequence[Delivery],
               outgoing: list[OutgoingMessage]) -> list[tuple[Delivery, OutgoingMessage]]:
    try:
        shared_broker().send_many(outgoing)
        return list(zip(deliveries, outgoing, strict=True))
    except SendFailed as error:
        log.warning("outbox: %d of %d sends unconfirmed: %s", len(deliveries) - len(error.confirmed),
                    len(deliveries), error)
        return [(deliveries[i], outgoing[i]) for i in error.confirmed]
    except BrokerError as error:
        log.warning("outbox: broker unavailable, %d deliveries not sent: %s", len(deliveries), error)
        return []


def send_span(delivery: Delivery) -> Span:
    """A producer span for sending the delivery's frame, in its message's trace (ended by the caller)."""
    return tracing.tracer().start_span(
        "send", context=tracing.context_of(delivery.message.traceparent), kind=SpanKind.PRODUCER,
        attributes={"messaging.system": "activemq", "messaging.operation.type": "send",
                    "messaging.destination.name": delivery.destination,
                    "dovecote.correlation_id": delivery.message.correlation_id,
                    "dovecote.message_id": str(delivery.message_id), "dovecote.delivery_id": delivery.pk})


def frame_attempt(delivery: Delivery) -> int:
    """Return the attempt a new frame of this delivery carries.

    The next one (`attempts` + 1: 1 for a new or replayed delivery), or, while an attempt is
    recorded as under way, that same attempt: the frame rules (delivery/frame_rules.py) then
    recognise an attempt whose worker died (the poison counter) instead of starting a new one,
    and a frame below `attempts` would be dropped as a stale copy.
    """
    return delivery.attempts if delivery.attempt_started_at is not None else delivery.attempts + 1


def next_frame(delivery: Delivery, now: datetime | None = None, body: bytes | None = None) -> OutgoingMessage:
    """Build the frame of a delivery's current attempt, held by the broker until the attempt is due.

    `body` is its message's envelope (`frames.envelope`), when the caller has it already.
    """
    attempt = frame_attempt(delivery)
    policy = delivery.subscription.retry_policy if delivery.subscription else None
    next_delay = policy.delay_after(attempt) if policy and policy.can_retry(attempt) else None
    due, now = delivery.next_attempt_at, now or timezone.now()
    delay_ms = max(0, int((due - now).total_seconds() * 1000)) if due else 0
    return frames.frame_for(delivery, attempt=attempt, delay_ms=delay_ms, next_delay_ms=next_delay,
                            body=body if body is not None else frames.envelope(delivery.message))


_SEND = rows.Builder(SendRecord, ("delivery_id", "kind", "destination", "attempt", "correlation_id", "sent_at"))


def mark_queued(deliveries: Iterable[Delivery], confirmed_at: datetime | None = None) -> None:
    """Record confirmed sends of pending deliveries: pending → queued, and one published_messages row each.

    `confirmed_at` (default: now) is when the broker's receipts came: each send row's `sent_at`.
    """
    mark_batches_queued([(list(deliveries), confirmed_at or timezone.now())])


def mark_batches_queued(batches: Sequence[tuple[Sequence[Delivery], datetime]]) -> None:
    """`mark_queued` for several batches of receipts in one statement, each send row with its own batch's time."""
    sends = [
        _SEND(d.pk, SendRecord.Kind.REPLAY if d.replays else SendRecord.Kind.PUBLISH, d.destination,
              frame_attempt(d), d.message.correlation_id, confirmed_at)
        for deliveries, confirmed_at in batches for d in deliveries
    ]
    if not sends:
        return
    rows.queue_sends(sends, max(confirmed_at for _, confirmed_at in batches))
    for deliveries, _ in batches if log.isEnabledFor(logging.DEBUG) else ():
        for delivery in deliveries:
            log.debug("queued", extra={"correlation_id": delivery.message.correlation_id,
                                      "delivery_id": delivery.pk, "destination": delivery.destination})


@dataclass(frozen=True)
class Backlog:
    """What the outbox holds: deliveries written and not yet confirmed by the broker, and the oldest one's age."""

    pending: int
    oldest_age_s: float  # 0 when there is none


def backlog(now: datetime | None = None) -> Backlog:
    """Read the outbox's backlog in one query (the status-and-age index)."""
    now = now or timezone.now()
    found = Delivery.objects.filter(status=Delivery.Status.PENDING).aggregate(count=Count("pk"),
                                                                              oldest=Min("created_at"))
    oldest = found["oldest"]
    return Backlog(found["count"], max(0.0, (now - oldest).total_seconds()) if oldest else 0.0)


def claim_stale_pending(limit: int = SWEEP_BATCH) -> list[int]:
    """Claim pending deliveries older than the grace period that no other sweeper holds."""
    now = timezone.now()
    return Delivery.objects.claim_stale_pending(now - PENDING_GRACE, now, now + CLAIM_FOR, limit)


def sweep_pending() -> int:
    """Send every stale pending delivery; return how many the broker confirmed."""
    sent = 0
    while ids := claim_stale_pending():
        confirmed = send_pending(ids)
        sent += len(confirmed)
        if len(confirmed) < len(ids):
            release_claims(set(ids) - set(confirmed))
            break  # the broker is refusing; the next sweep tries again
    return sent


def release_claims(delivery_ids: Iterable[int]) -> None:
    """Let the next sweep take these deliveries at once."""
    Delivery.objects.filter(pk__in=list(delivery_ids)).release_claims()


class OutboxRelay:
    """Two background threads that send deliveries as their transactions commit, and record the receipts.

    It is handed the Delivery objects the transaction wrote (message, room and subscription
    loaded), so sending them costs no query. The sender writes a batch's frames and waits for their
    receipts, then hands the confirmed ones to the recorder and goes on with the next batch while
    the recorder marks them queued (`mark_queued` only updates rows still pending): a batch's frames
    never wait for the last batch's database write. The recorder writes every batch waiting for it
    in one statement, as the sender sends every delivery waiting for it in one batch.
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Delivery] = queue.SimpleQueue()
        self._confirmed: queue.SimpleQueue[tuple[list[Delivery], int, datetime]] = queue.SimpleQueue()
        self._unfinished = 0  # deliveries submitted and not yet recorded (or given up to the sweeper)
        self._idle = threading.Condition()
        threading.Thread(target=self._send, name="outbox-relay", daemon=True).start()
        threading.Thread(target=self._record, name="outbox-recorder", daemon=True).start()

    def submit(self, deliveries: Iterable[Delivery]) -> None:
        for delivery in deliveries:
            with self._idle:
                self._unfinished += 1
            self._queue.put(delivery)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until every delivery submitted so far is recorded or given up; False if `timeout` s passed first."""
        with self._idle:
            return self._idle.wait_for(lambda: self._unfinished == 0, timeout)

    def _send(self) -> None:
        while True:
            batch = [self._queue.get()]
            while len(batch) < SWEEP_BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            confirmed: list[Delivery] = []
            try:
                confirmed = [delivery for delivery, _ in send_frames(batch)]
            except Exception:
                log.exception("outbox relay: batch of %d failed; the sweeper will send them", len(batch))
            self._confirmed.put((confirmed, len(batch), timezone.now()))

    def _record(self) -> None:
        checked = 0.0
        while True:
            waiting = self._waiting_receipts()
            batches = [(confirmed, confirmed_at) for confirmed, _, confirmed_at in waiting if confirmed]
            confirmed = [delivery for deliveries, _ in batches for delivery in deliveries]
            try:
                if confirmed:
                    if time.monotonic() - checked > CONNECTION_CHECK_S:  # not per batch: the check is a round trip
                        close_old_connections()
                        checked = time.monotonic()
                    try:
                        mark_batches_queued(batches)
                    except (OperationalError, InterfaceError):  # dropped since the last check: once more, anew
                        connection.close()
                        mark_batches_queued(batches)
                    for listener in _queued_listeners:
                        listener(confirmed)
            except Exception:
                log.exception("outbox relay: %d sends not recorded; the sweeper will send them again", len(confirmed))
            finally:
                with self._idle:
                    self._unfinished -= sum(count for _, count, _ in waiting)
                    self._idle.notify_all()

    def _waiting_receipts(self) -> list[tuple[list[Delivery], int, datetime]]:
        """The next batch of receipts and those that came while the last statement ran, up to SWEEP_BATCH deliveries.

        Written in one statement, as the sender sends what waits in one batch of frames: after a slow
        statement (a backend waiting for a core), the receipts that piled up behind it cost one more, not one each.
        """
        waiting = [self._confirmed.get()]
        size = len(waiting[0][0])
        while size < SWEEP_BATCH:
            try:
                batch = self._confirmed.get_nowait()
            except queue.Empty:
                break
            waiting.append(batch)
            size += len(batch[0])
        return waiting


_relay: OutboxRelay | None = None
_relay_lock = threading.Lock()


def running_relay() -> OutboxRelay | None:
    """Return this process's relay if it was started, without starting one."""
    return _relay


def relay() -> OutboxRelay:
    """Return this process's relay, starting it on first use."""
    global _relay
    with _relay_lock:
        if _relay is None:
            _relay = OutboxRelay()
        return _relay
