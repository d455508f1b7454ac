"""Push delivery: a session drains one subscription's queue with at most `max_in_flight` POSTs.

A session is a Celery task (`delivery.tasks.deliver_push`) that holds the subscription's claim
(`session_token`, `session_until`), so one session per subscription runs at a time whatever the
number of workers. It receives frames with a prefetch of `max_in_flight`, POSTs them from a
thread pool (HTTP only; the database is touched by the session thread alone), settles each
outcome, and ends when its time budget is spent, when it has been idle with no retry due soon,
or when the subscription stops being active. Frames it has not acked return to the queue.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
import uuid
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


def start_sessions_for_deliveries(delivery_ids: Iterable[int]) -> list[int]:
    """Start sessions for the push subscriptions of these deliveries."""
    subscription_ids = (
        Delivery.objects.filter(pk__in=list(delivery_ids), subscription__type=Subscription.Type.PUSH)
        .values_list("subscription_id", flat=True).distinct()
    )
    return start_sessions(subscription_ids)


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
        self.held: list[tuple[float, int, ReceivedMessage]] = []  # (due, sequence, frame), a heap
        self._sequence = itertools.count()
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
                for frame in self._release_due():
                    self._start(consumer, pool, transport, frame)
                while len(self.in_flight) + len(self.held) < width and self._still_active():
                    frame = consumer.receive(timeout=self._receive_wait())
                    if frame is None:
                        break
                    last_activity = time.monotonic()
                    if not self._hold(frame):
                        self._start(consumer, pool, transport, frame)
            if self.in_flight:
                if not accepting:
                    self._still_active()  # keep the claim while draining
                done, _ = wait(self.in_flight, timeout=0.01, return_when=FIRST_COMPLETED)
                for future in done:
                    self._finish(consumer, self.in_flight.pop(future), future.result())
                    last_activity = time.monotonic()
                continue
            if not accepting:
                return  # held frames go back to the queue unacked, for the next session
            if self.held:
                if len(self.held) >= width:
                    time.sleep(self._receive_wait())
                continue
            if time.monotonic() - last_activity > IDLE_EXIT_S and not self._retry_due_soon():
                return

    def _hold(self, frame: ReceivedMessage) -> bool:
        """Keep a frame that arrived before its time (see frames.NOT_BEFORE); say whether it was kept."""
        wait_s = frames.seconds_until_due(frame)
        if wait_s <= 0:
            return False
        heapq.heappush(self.held, (time.monotonic() + wait_s, next(self._sequence), frame))
        return True

    def _release_due(self) -> list[ReceivedMessage]:
        due = []
        while self.held and self.held[0][0] <= time.monotonic():
            due.append(heapq.heappop(self.held)[2])
        return due

    def _receive_wait(self) -> float:
        """How long to block for the next frame without delaying a finished POST or a held frame."""
        if self.in_flight:
            return 0.0
        if self.held:
            return max(0.0, min(0.2, self.held[0][0] - time.monotonic()))
        return 0.2

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
               frame: ReceivedMessage) -> None:
        try:
            job = prepare(self.subscription, self.broker, consumer, frame)
        except BrokerError:
            log.exception("push: broker error while preparing frame %s", frame.broker_message_id)
            return
        if job is None:
            self.settled += 1
            return
        message = job.delivery.message
        request = PushRequest(
            url=self.subscription.push_url, body=frame.body, message_id=str(message.id),
            correlation_id=message.correlation_id, attempt=job.attempt,
            signing_secret=self.subscription.signing_secret, timeout_ms=self.subscription.timeout_ms,
        )
        self.in_flight[pool.submit(transport.post, request)] = job

    def _finish(self, consumer: Consumer, job: InFlight, result: PushResult) -> None:
        try:
            record_outcome(self.subscription, self.broker, consumer, job, result)
            self.settled += 1
        except BrokerError:
            # The original stays unacked and comes back; `prepare` treats it as an unfinished attempt.
            log.exception("push: broker error while settling delivery %s", job.delivery.pk)


# ---- the state rules of one frame ----------------------------------------------------------------

def prepare(subscription: Subscription, broker: Broker, consumer: Consumer,
            frame: ReceivedMessage) -> InFlight | None:
    """Decide what to do with a frame: start its attempt, or settle it now (return None)."""
    try:
        info = FrameInfo.of(frame)
    except ValueError:
        log.error("push: dropping a frame without Dovecote headers on %s", frame.destination)
        consumer.ack(frame)
        return None
    delivery = (Delivery.objects.select_related("message__room", "subscription__room")
                .filter(pk=info.delivery_id).first())
    if (delivery is None or delivery.is_final or delivery.subscription_id != subscription.pk
            or str(delivery.message_id) != frame.headers.get(frames.MESSAGE_ID)):
        consumer.ack(frame)  # deleted, settled, not ours, or from another database: nothing to do
        return None
    now = timezone.now()
    if delivery.message.is_expired(now):
        settle.expire(delivery, info.attempt)
        consumer.ack(frame)
        return None
    if delivery.status == Status.LEASED and info.attempt <= delivery.attempts:
        consumer.ack(frame)  # a pull consumer's lease holds this attempt; the frame is a duplicate
        return None
    if info.attempt < delivery.attempts or (
        info.attempt == delivery.attempts and delivery.attempt_started_at is None
    ):
        consumer.ack(frame)  # a stale copy: this attempt's outcome is recorded and its successor sent
        return None
    if info.attempt == delivery.attempts:
        return resume_unfinished(subscription, broker, consumer, frame, delivery, info.attempt, now)
    claimed = Delivery.objects.filter(
        pk=delivery.pk, attempts__lt=info.attempt, status__in=settle.UNSETTLED
    ).update(attempts=info.attempt, attempt_started_at=now, updated_at=now)
    if not claimed:
        defer(broker, consumer, frame, delivery, info.attempt, delay_ms=1000)  # raced a duplicate
        return None
    return InFlight(delivery, frame, info.attempt, now)


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
        settle.dead_letter(broker, delivery, frame.body, attempt, reason)
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


def record_outcome(subscription: Subscription, broker: Broker, consumer: Consumer,
                   job: InFlight, result: PushResult) -> None:
    """Settle a finished POST per CONTRACT §4 and §5."""
    delivery, attempt = job.delivery, job.attempt
    if result.ok:
        settle.mark_delivered(delivery, attempt, job.started_at, result)
        consumer.ack(job.frame)
        return
    subscription.record_error(result.error)
    if result.gone:
        subscription.disable(f"{subscription.push_url} answered 410 Gone at "
                             f"{timezone.now().isoformat(timespec='seconds')}")
    settle.settle_failure(broker, delivery, job.frame.body, attempt, subscription.retry_policy, job.started_at, result)
    consumer.ack(job.frame)


def _ms_between(start: datetime, end: datetime) -> int:
    return max(0, int((end - start).total_seconds() * 1000))
