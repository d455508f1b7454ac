"""Push delivery: a session drains one subscription's queue with at most `max_in_flight` POSTs.

A session is a Celery task (`delivery.tasks.deliver_push`) that holds the subscription's claim
(`session_token`, `session_until`), so one session per subscription runs at a time whatever the
number of workers. It receives frames with a prefetch of `max_in_flight`, POSTs them from a
thread pool (HTTP only; the database is touched by the session thread alone), settles each
outcome, and ends when its time budget is spent, when it has been idle with no retry due soon,
or when the subscription stops being active. Frames it has not acked return to the queue.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from delivery import frames, settle
from delivery.broker import Broker, BrokerError, Consumer, ReceivedMessage
from delivery.broker.shared import shared_broker
from delivery.frames import FrameInfo
from delivery.models import Delivery, PublishedMessage
from delivery.transports import PushRequest, PushResult, PushTransport
from rooms.models import Room
from subscriptions.models import Subscription

log = logging.getLogger("delivery.push")
Status = Delivery.Status

START_GRACE = timedelta(seconds=15)  # how long an enqueued session may wait for a worker
CLAIM_TTL = timedelta(seconds=5)  # a running session renews its claim every REFRESH_S; a dead one lapses
IDLE_EXIT_S = 2.0
LOOKAHEAD = timedelta(seconds=5)  # keep a session alive for retries due this soon
CRASH_GRACE = timedelta(seconds=5)  # beyond timeout_ms, before an unfinished attempt counts as crashed
POISON_LIMIT = 3  # attempts whose worker died, before the message is dead-lettered
REFRESH_S = 1.0  # how often a session renews its claim and rereads its subscription


# Set when the worker shuts down: sessions stop taking frames, finish the POSTs under way, and end.
stopping = threading.Event()


def session_budget() -> timedelta:
    return timedelta(seconds=settings.DOVECOTE_PUSH_SESSION_SECONDS)


# ---- starting sessions -------------------------------------------------------------------------

def start_sessions(subscription_ids: Iterable[int]) -> list[int]:
    """Enqueue a session for each active push subscription that has none; return those started."""
    from delivery.tasks import deliver_push

    started = []
    for subscription_id in set(subscription_ids):
        token = uuid.uuid4().hex
        now = timezone.now()
        claimed = (
            Subscription.objects.filter(pk=subscription_id, type=Subscription.Type.PUSH,
                                        status=Subscription.Status.ACTIVE)
            .filter(Q(session_until__isnull=True) | Q(session_until__lt=now))
            .update(session_token=token, session_until=now + START_GRACE)
        )
        if claimed:
            deliver_push.delay(subscription_id, token)
            started.append(subscription_id)
    return started


def start_sessions_for_deliveries(deliveries: Iterable[Delivery]) -> list[int]:
    """Start sessions for the push subscriptions of these deliveries (loaded with their subscription)."""
    push = Subscription.Type.PUSH
    return start_sessions({delivery.subscription_id for delivery in deliveries
                           if delivery.subscription is not None and delivery.subscription.type == push})


def subscriptions_with_due_work(now: datetime | None = None) -> list[int]:
    """Return active push subscriptions with queued deliveries or retries due within the lookahead."""
    now = now or timezone.now()
    due = Q(status=Status.QUEUED) | Q(status=Status.RETRYING, next_attempt_at__lte=now + LOOKAHEAD)
    return list(
        Delivery.objects.filter(due, subscription__type=Subscription.Type.PUSH,
                                subscription__status=Subscription.Status.ACTIVE)
        .values_list("subscription_id", flat=True).distinct()
    )


# ---- one session ---------------------------------------------------------------------------------

@dataclass
class InFlight:
    delivery: Delivery
    frame: ReceivedMessage
    attempt: int
    started_at: datetime


def run_session(subscription_id: int, token: str, *, budget: timedelta | None = None) -> int:
    """Run one push session if `token` still holds the claim; return the frames it settled."""
    budget = budget or session_budget()
    if not renew_claim(subscription_id, token):
        return 0  # another session took over
    subscription = Subscription.objects.select_related("room").get(pk=subscription_id)
    try:
        session = PushSession(subscription, shared_broker(), token)
        settled = session.run(time.monotonic() + budget.total_seconds())
    finally:
        Subscription.objects.filter(pk=subscription_id, session_token=token).update(
            session_until=None, session_token=""
        )
    if subscription_id in subscriptions_with_due_work():
        start_sessions([subscription_id])
    return settled


def renew_claim(subscription_id: int, token: str) -> bool:
    """Extend this session's claim; False if another session holds it now."""
    return bool(Subscription.objects.filter(pk=subscription_id, session_token=token).update(
        session_until=timezone.now() + CLAIM_TTL
    ))


class PushSession:
    """Drain one subscription's queue until the budget is spent or nothing is left to do soon."""

    def __init__(self, subscription: Subscription, broker: Broker, token: str) -> None:
        self.subscription = subscription
        self.broker = broker
        self.token = token
        self.lost_claim = False
        self.in_flight: dict[Future[PushResult], InFlight] = {}
        self.settled = 0
        self._refreshed = time.monotonic()

    def run(self, deadline: float) -> int:
        width = self.subscription.max_in_flight
        transport = PushTransport()
        consumer = self.broker.consumer(self.subscription.destination, prefetch=width)
        try:
            with ThreadPoolExecutor(max_workers=width, thread_name_prefix="push") as pool:
                self._loop(consumer, pool, transport, deadline)
        finally:
            consumer.close()
            transport.close()
        return self.settled

    def _loop(self, consumer: Consumer, pool: ThreadPoolExecutor, transport: PushTransport,
              deadline: float) -> None:
        last_activity = time.monotonic()
        width = self.subscription.max_in_flight
        while True:
            accepting = time.monotonic() < deadline and not stopping.is_set() and self._still_active()
            if accepting:
                arrived: list[ReceivedMessage] = []
                while len(self.in_flight) + len(arrived) < width and self._still_active():
                    frame = consumer.receive(timeout=0.0 if arrived or self.in_flight else 0.2)
                    if frame is None:
                        break
                    last_activity = time.monotonic()
                    arrived.append(frame)
                if arrived:
                    self._start(consumer, pool, transport, arrived)
            if self.in_flight:
                if not accepting:
                    self._still_active()  # keep the claim while draining
                done, _ = wait(self.in_flight, timeout=0.01, return_when=FIRST_COMPLETED)
                if done:
                    self._finish(consumer, [(self.in_flight.pop(future), future.result()) for future in done])
                    last_activity = time.monotonic()
                continue
            if not accepting:
                return
            if time.monotonic() - last_activity > IDLE_EXIT_S and not self._retry_due_soon():
                return

    def _still_active(self) -> bool:
        if time.monotonic() - self._refreshed >= REFRESH_S:
            self.lost_claim = not renew_claim(self.subscription.pk, self.token)
            try:
                self.subscription.refresh_from_db()
                self.subscription.room.refresh_from_db()
            except (Subscription.DoesNotExist, Room.DoesNotExist):
                self.lost_claim = True  # deleted while the session ran: its queue is being drained
            self._refreshed = time.monotonic()
        return self.subscription.is_active and not self.lost_claim

    def _retry_due_soon(self) -> bool:
        return Delivery.objects.filter(
            subscription=self.subscription, status=Status.RETRYING,
            next_attempt_at__lte=timezone.now() + LOOKAHEAD,
        ).exists()

    def _start(self, consumer: Consumer, pool: ThreadPoolExecutor, transport: PushTransport,
               received: list[ReceivedMessage]) -> None:
        """Judge a burst of frames together and POST the attempts they start."""
        try:
            jobs, settled = prepare_burst(self.subscription, self.broker, consumer, received)
        except BrokerError:
            log.exception("push: broker error while preparing %d frames", len(received))
            return  # unacked frames come back; what was claimed is recognised as an unfinished attempt
        self.settled += settled
        for job in jobs:
            message = job.delivery.message
            request = PushRequest(
                url=self.subscription.push_url, body=job.frame.body, message_id=str(message.id),
                correlation_id=message.correlation_id, attempt=job.attempt,
                signing_secret=self.subscription.signing_secret, timeout_ms=self.subscription.timeout_ms,
            )
            self.in_flight[pool.submit(transport.post, request)] = job

    def _finish(self, consumer: Consumer, finished: list[tuple[InFlight, PushResult]]) -> None:
        """Settle the POSTs that finished together: the successes in one transaction, the failures' copies together."""
        successes = [(job, result) for job, result in finished if result.ok]
        failures = [(job, result) for job, result in finished if not result.ok]
        # On a broker error the originals stay unacked and come back; `prepare` recognises them.
        if successes:
            try:
                record_successes(consumer, successes)
                self.settled += len(successes)
            except BrokerError:
                log.exception("push: broker error while acking %d deliveries", len(successes))
        if failures:
            try:
                self.settled += record_failures(self.subscription, self.broker, consumer, failures)
            except BrokerError:
                log.exception("push: broker error while settling %d failed deliveries", len(failures))


# ---- the state rules of a frame ------------------------------------------------------------------

CLAIM = "claim"  # judge(): the frame starts a new attempt, if the claim on its delivery succeeds


def prepare(subscription: Subscription, broker: Broker, consumer: Consumer,
            frame: ReceivedMessage) -> InFlight | None:
    """Decide what to do with one frame: start its attempt, or settle it now (return None)."""
    jobs, _ = prepare_burst(subscription, broker, consumer, [frame])
    return jobs[0] if jobs else None


def prepare_burst(subscription: Subscription, broker: Broker, consumer: Consumer,
                  received: list[ReceivedMessage]) -> tuple[list[InFlight], int]:
    """Decide what to do with frames that arrived together; return the attempts to start and the frames settled.

    One SELECT reads every frame's delivery and one conditional UPDATE per attempt number claims the
    new attempts, so a burst of frames costs two queries, not two per frame. A second frame of the
    same delivery in the burst is judged afterwards, against what the first one changed.
    """
    parsed, settled = [], 0
    for frame in received:
        try:
            parsed.append((frame, FrameInfo.of(frame)))
        except ValueError:
            log.error("push: dropping a frame without Dovecote headers on %s", frame.destination)
            consumer.ack(frame)
            settled += 1
    deliveries = load_deliveries(subscription, {info.delivery_id for _, info in parsed})
    now = timezone.now()
    jobs: list[InFlight] = []
    claims: dict[int, list[tuple[ReceivedMessage, Delivery]]] = defaultdict(list)
    seen: set[int] = set()
    again = []
    for frame, info in parsed:
        if info.delivery_id in seen:
            again.append(frame)
            continue
        seen.add(info.delivery_id)
        delivery = deliveries.get(info.delivery_id)
        verdict = judge(subscription, broker, consumer, frame, delivery, info.attempt, now)
        if verdict == CLAIM:
            claims[info.attempt].append((frame, delivery))
        elif verdict is None:
            settled += 1
        else:
            jobs.append(verdict)
    for attempt, candidates in claims.items():
        claimed = claim_attempts([delivery.pk for _, delivery in candidates], attempt, now)
        for frame, delivery in candidates:
            if delivery.pk in claimed:
                jobs.append(InFlight(delivery, frame, attempt, now))
            else:
                defer(broker, consumer, frame, delivery, attempt, delay_ms=1000)  # raced a duplicate
                settled += 1
    for frame in again:
        more, more_settled = prepare_burst(subscription, broker, consumer, [frame])
        jobs += more
        settled += more_settled
    return jobs, settled


def load_deliveries(subscription: Subscription, ids: set[int]) -> dict[int, Delivery]:
    """Read the deliveries of these ids (one query), each wired to the session's own subscription."""
    deliveries = {d.pk: d for d in Delivery.objects.select_related("message").filter(pk__in=ids)} if ids else {}
    for delivery in deliveries.values():
        if delivery.subscription_id == subscription.pk:
            delivery.subscription = subscription
            if delivery.message.room_id == subscription.room_id:
                delivery.message.room = subscription.room
    return deliveries


def judge(subscription: Subscription, broker: Broker, consumer: Consumer, frame: ReceivedMessage,
          delivery: Delivery | None, attempt: int, now: datetime) -> InFlight | str | None:
    """Apply the rules to one frame: settle it now (None), resume it (InFlight), or CLAIM a new attempt."""
    if (delivery is None or delivery.is_final or delivery.subscription_id != subscription.pk
            or str(delivery.message_id) != frame.headers.get(frames.MESSAGE_ID)):
        consumer.ack(frame)  # deleted, settled, not ours, or from another database: nothing to do
        return None
    if delivery.message.is_expired(now):
        settle.expire(delivery, attempt)
        consumer.ack(frame)
        return None
    if delivery.status == Status.LEASED and attempt <= delivery.attempts:
        consumer.ack(frame)  # a pull consumer's lease holds this attempt; the frame is a duplicate
        return None
    if attempt < delivery.attempts or (attempt == delivery.attempts and delivery.attempt_started_at is None):
        consumer.ack(frame)  # a stale copy: this attempt's outcome is recorded and its successor sent
        return None
    if attempt == delivery.attempts:
        return resume_unfinished(subscription, broker, consumer, frame, delivery, attempt, now)
    return CLAIM


def claim_attempts(delivery_ids: list[int], attempt: int, now: datetime) -> set[int]:
    """Start attempt `attempt` of each delivery still before it and unsettled; return the ids claimed."""
    claimed = Delivery.objects.filter(
        pk__in=delivery_ids, attempts__lt=attempt, status__in=settle.UNSETTLED
    ).update(attempts=attempt, attempt_started_at=now, updated_at=now)
    if claimed == len(delivery_ids):
        return set(delivery_ids)
    # Some were taken by another worker (or settled) meanwhile: ours carry this claim's timestamp.
    return set(Delivery.objects.filter(pk__in=delivery_ids, attempts=attempt, attempt_started_at=now)
               .values_list("pk", flat=True))


def resume_unfinished(subscription: Subscription, broker: Broker, consumer: Consumer,
                      frame: ReceivedMessage, delivery: Delivery, attempt: int,
                      now: datetime) -> InFlight | None:
    """Handle a frame whose attempt was started but never finished."""
    started = delivery.attempt_started_at
    finish_by = started + timedelta(milliseconds=subscription.timeout_ms) + CRASH_GRACE
    if now < finish_by:
        # Another worker may still be on it: look again once it must have finished.
        defer(broker, consumer, frame, delivery, attempt, delay_ms=_ms_between(now, finish_by))
        return None
    crashes = settle.record_crash(delivery, attempt)
    if crashes >= POISON_LIMIT:
        reason = f"poison message: the worker died {crashes} times while delivering it"
        settle.dead_letter(delivery, attempt, reason)
        consumer.ack(frame)
        return None
    return InFlight(delivery, frame, attempt, timezone.now())


def defer(broker: Broker, consumer: Consumer, frame: ReceivedMessage, delivery: Delivery,
          attempt: int, delay_ms: int) -> None:
    """Put the same attempt back on the broker to be looked at again after `delay_ms`."""
    broker.send(frames.frame_for(delivery, attempt=attempt, delay_ms=delay_ms,
                                 next_delay_ms=None, body=frame.body))
    settle.record_send(delivery, PublishedMessage.Kind.RECHECK, delivery.destination, attempt, delay_ms)
    consumer.ack(frame)


def record_successes(consumer: Consumer, finished: list[tuple[InFlight, PushResult]]) -> None:
    """Settle successful POSTs as delivered (one transaction for all), then ack their frames."""
    settle.mark_delivered_many([(job.delivery, job.attempt, job.started_at, result) for job, result in finished])
    for job, _ in finished:
        consumer.ack(job.frame)


def record_failures(subscription: Subscription, broker: Broker, consumer: Consumer,
                    finished: list[tuple[InFlight, PushResult]]) -> int:
    """Settle failed POSTs per CONTRACT §4 and §5 (retry copies sent together), ack their frames; return how many."""
    subscription.record_error(finished[-1][1].error)
    if any(result.gone for _, result in finished):
        subscription.disable(f"{subscription.push_url} answered 410 Gone at "
                             f"{timezone.now().isoformat(timespec='seconds')}")
    statuses = settle.settle_failures(
        broker, [settle.Failure(job.delivery, job.frame.body, job.attempt, job.started_at, result)
                 for job, result in finished], subscription.retry_policy)
    settled = 0
    for (job, _), status in zip(finished, statuses, strict=True):
        if status is not None:  # else the copy was not confirmed: the original comes back
            consumer.ack(job.frame)
            settled += 1
    return settled


def _ms_between(start: datetime, end: datetime) -> int:
    return max(0, int((end - start).total_seconds() * 1000))
