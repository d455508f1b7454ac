"""One subscription's push session: its queue's frames, at most its share of `max_in_flight` POSTs at once.

A session lives on its worker's event loop (engine.py); a hot subscription has one on several
workers, each with a share of `max_in_flight` that the engine rereads every second (claims.py).
Its consumer listens on the subscription's destination with a prefetch of `max_in_flight`, from when the session
has a share (one joining a hot subscription waits until the others have made room, not holding frames); frames
land in an inbox, and whenever POSTs are below its share the session takes what the inbox holds, as far as the
engine's socket budget gives it slots (budget.py: one per POST, fair between rooms), has the
engine's steps start their attempts (steps.py: the frame rules), and POSTs the attempts that start.
Each outcome is recorded by the steps, which ack the frame; only then does its slot free up. A slot frees
whatever happens to its frame (try/finally), and the transport returns every failure as a value.

What the receiver asks is heeded the moment its answer is read, in memory, before the outcome is
recorded: a 410 stops the session (no POST starts after it; the row says `disabled` once recorded),
a 429 or 503 with Retry-After pauses it until then (and the row's `throttled_until` tells the
sessions that come after). An attempt already judged but not yet POSTed when that happens is
withdrawn: its claim undone, its frame back in the inbox, taken again when POSTs may start.

Each claim reads the subscription's secret version with the delivery: an attempt that sees a newer
one than the session holds (a rotation since the engine's last reread) rereads the secrets before
signing.

The circuit breaker (session_breaker.py, subscriptions/breaker_rules.py) gates what the session takes, read from
memory: while it is open, the frames taken are put back on the broker until the next probe time
(no attempt starts, none is counted); once that time comes, the breaker turns half-open and one
frame at a time is taken, its attempt the probe; closed, up to `max_in_flight`.

A session stops taking frames when the subscription is paused, disabled or deleted, when its
claim is lost, when the worker stops, or when its budget (DOVECOTE_PUSH_SESSION_SECONDS) is
spent; it then finishes the POSTs under way and ends, and frames it did not take go back to
the queue. A session with nothing to do for DOVECOTE_PUSH_SESSION_IDLE_SECONDS, and no retry due
soon, ends too: until then it stays warm, so the first message after a quiet spell finds it ready.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Coroutine
from datetime import datetime, timedelta
from typing import Any, Protocol

from django.utils import timezone
from opentelemetry.trace import Span, SpanKind, StatusCode, set_span_in_context

from delivery import frames, metrics
from delivery.attempts import Arrival, Attempt
from delivery.broker import Broker, BrokerError, Consumer, ReceivedMessage
from delivery.push import claims, session_breaker
from delivery.push.bookkeeper import Bookkeeper
from delivery.push.budget import SocketBudget
from delivery.push.rate import RateLimiter
from delivery.push.steps import Steps
from delivery.transports import PushRequest, PushResult, PushTransport
from dovecote import tracing
from subscriptions.models import SECRET_FIELDS, Subscription

log = logging.getLogger("delivery.push")

WAKE_EVERY_S = 1.0  # at least this often a session looks at its state
OWN_MOVE_S = 3.0  # after the session moves the breaker, a reread older than this keeps the session's state
# The consecutive-failure count reaches the subscription row at most this often (and when the session
# ends): written on every change, it was an UPDATE of one row per failed attempt and per success after one.
FAILURES_WRITE_S = 1.0
Breaker = Subscription.Breaker


class Engine(Protocol):
    """What a session needs of the engine that runs it (engine.py's PushEngine)."""

    token: str  # the claim of every session on the engine
    broker: Broker
    bookkeeper: Bookkeeper  # the session's other database calls (claims, the breaker, secrets)
    steps: Steps  # start, hold back or withdraw attempts, record outcomes: the only way the session does any
    transport: PushTransport
    budget: SocketBudget  # a slot per POST in flight, shared by every session of the engine
    rate: RateLimiter
    session_budget_s: float
    session_idle_s: float

    async def adopt(self, subscription_id: int, token: str) -> claims.Held | None: ...


class PushSession:
    """Deliver one subscription's queue until told to stop, idle, or out of budget."""

    def __init__(self, engine: Engine, subscription_id: int, token: str) -> None:
        self.engine = engine
        self.subscription_id = subscription_id
        self.token = token
        self.subscription: Subscription | None = None
        self.version: str | None = None  # of the subscription's rows as last read (claims.Held.version)
        self.sessions = 1  # the subscription's live sessions on every worker, at the last renewal (claims.py)
        self.share = 0  # POSTs this session may have under way: its share of max_in_flight (set on adoption)
        self._sized_for = 1  # the session count its POSTs in flight fit the share of
        self.inbox: deque[ReceivedMessage] = deque()
        self.in_flight = 0  # frames taken and not yet settled: judged, POSTing, or being recorded
        self.accepting = True
        self.gone = False  # the receiver answered 410: no POST starts any more
        self.hand_over = False  # when the session ends: start a new one if work is due
        self.retry_due_soon = False  # set by the engine for idle sessions
        self.started = time.monotonic()
        self.last_activity = self.started
        self.settled = 0
        self._wakeup = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self.outcomes: session_breaker.OutcomeCounter | None = None  # set when the session adopts its subscription
        self._moving = False  # a breaker transition is being recorded
        self._moved_at = -OWN_MOVE_S  # monotonic time of the session's last breaker transition
        self._failures_written_at = -FAILURES_WRITE_S  # monotonic
        self._failures_lock = asyncio.Lock()  # one write of the count at a time, in order
        self.tokens = 0  # POSTs the rate limit (max_per_second) lets the session start now
        self._token_waiters = 0  # POSTs waiting for a token
        self._token_lock = asyncio.Lock()  # one take at a time
        self._secrets_lock = asyncio.Lock()  # one reread of the signing secrets at a time

    # -- what the engine tells a session ----------------------------------------------------------

    def refreshed(self, held: claims.Held | None) -> None:
        """Take the subscription as it is now, with the session's share (None: deleted, or the claim was lost).

        A subscription not reread (its rows unchanged since the session's version) stays the session's own.
        """
        subscription = None if held is None else held.subscription or self.subscription
        if held is None or subscription is None or not subscription.is_active:
            self.stop()
            return
        # A session that lost a partner grows its share only once its claim row says it is sized for fewer
        # sessions (the report this renewal wrote): a session joining meanwhile sizes itself by that row
        # (claims.share), and the two together ran 13 POSTs for a max_in_flight of 9.
        granted = min(held.share, max(1, subscription.max_in_flight // self._sized_for))
        changed = subscription is not self.subscription or (held.sessions, granted) != (self.sessions, self.share)
        self.sessions, self.share = held.sessions, granted
        if self.subscription is not None and subscription is not self.subscription:
            if self._moving or time.monotonic() - self._moved_at < OWN_MOVE_S:
                keep_breaker_state(subscription, self.subscription)  # the reread may predate our transition
            subscription.throttled_until = later(subscription.throttled_until, self.subscription.throttled_until)
        self.subscription, self.version = subscription, held.version
        if changed:  # not every session every second: a thousand woken at once held up every other's frames
            self._wakeup.set()

    def wake(self) -> None:
        """Look at the session's state now (the engine changed something the loop reads)."""
        self._wakeup.set()

    def stop(self, *, hand_over: bool = False) -> None:
        """Take no more frames: finish the POSTs under way, then end."""
        self.accepting = False
        self.hand_over = (self.hand_over or hand_over) and not self.gone  # after a 410, only a resume restarts it
        if self.subscription is not None:
            self._slots(0)  # wait for no slot of the socket budget: the other sessions get them
        self._wakeup.set()

    def report(self) -> claims.Report:
        """What the engine's renewal records: the session count this session fits the share of, and if it is hot."""
        if self.subscription is not None and self.in_flight <= max(1, self.subscription.max_in_flight // self.sessions):
            self._sized_for = self.sessions
        return claims.Report(sized_for=self._sized_for, hot=self.is_hot(), version=self.version)

    def is_hot(self) -> bool:
        """At its share of max_in_flight with frames waiting, the breaker closed and no pause: more sessions help."""
        subscription = self.subscription
        if not self.accepting or subscription is None or not self.inbox or self.share == 0:
            return False
        paused = subscription.throttled_until is not None and subscription.throttled_until > timezone.now()
        return subscription.breaker_state == Breaker.CLOSED and not paused and self.in_flight >= self._width()

    def is_idle(self) -> bool:
        return (not self.inbox and self.in_flight == 0
                and time.monotonic() - self.last_activity > self.engine.session_idle_s)

    # -- the session ------------------------------------------------------------------------------

    async def run(self) -> None:
        engine = self.engine
        held = await engine.adopt(self.subscription_id, self.token)
        if held is None:
            return  # another session took over meanwhile, or this worker runs one already
        assert held.subscription is not None  # an adoption always reads it
        self.subscription, self.version, self.sessions, self.share = \
            held.subscription, held.version, held.sessions, held.share
        self._sized_for = held.sessions
        self.outcomes = session_breaker.OutcomeCounter(self.subscription.breaker_failures)
        loop = asyncio.get_running_loop()
        def arrived(frame: ReceivedMessage) -> None:  # on the broker's thread
            loop.call_soon_threadsafe(self._arrived, frame)

        consumer = None
        try:
            await self._until_shared()
            if self.accepting:
                consumer = engine.broker.consumer(self.subscription.destination,
                                                  prefetch=self.subscription.max_in_flight, on_message=arrived)
                await self._loop(consumer)
        finally:
            engine.budget.forget(self.subscription.room_id, self.subscription_id)
            if consumer is not None:
                consumer.close()
            await self._write_failures()  # the last count (after any write under way)
            await engine.bookkeeper.call(claims.release, self.subscription_id, engine.token, hand_over=self.hand_over)
        log.info("push session for subscription %s ended after %d deliveries", self.subscription_id, self.settled)

    async def _until_shared(self) -> None:
        """Wait, before subscribing, until the session may POST: a session joining a hot subscription has no share
        until the others have shrunk to make room (claims.share, one or two renewals). Subscribed at once, it had
        the broker hand it a prefetch of frames that then waited in its inbox while the other sessions could have
        delivered them: the last of 3,000 queued messages arrived 2 s late (`make bench`'s push figure with two
        workers, 945 and 989 deliveries/s where one worker did 2,986)."""
        while self.accepting and self.share == 0:
            await self._wait()
        self.last_activity = time.monotonic()  # idle from now: it had no frames to take before

    def _arrived(self, frame: ReceivedMessage) -> None:
        self.inbox.append(frame)
        self.last_activity = time.monotonic()
        self._wakeup.set()

    async def _loop(self, consumer: Consumer) -> None:
        budget_s = self.engine.session_budget_s
        while True:
            assert self.subscription is not None
            if self.accepting and not self.subscription.is_active:  # e.g. disabled by a 410 just now
                self.stop()
            if self.accepting and time.monotonic() - self.started > budget_s:
                self.stop(hand_over=True)
            state = self.subscription.breaker_state
            if self.accepting and self.inbox and state == Breaker.OPEN:
                if self._breaker_gate(consumer):
                    continue
            elif (self.accepting and self.inbox and self.in_flight < self._width() and not self._moving
                  and self._take_frames(consumer)):
                continue
            if not self.accepting and self.in_flight == 0:
                return
            if self.accepting and self.is_idle() and not self.retry_due_soon:
                return
            if self._failures_due():
                self._spawn(self._write_failures())
            await self._wait()

    async def _wait(self) -> None:
        """Wait for a wake-up (a frame, a slot, a settled POST, a changed subscription) or for `_sleep_s` to pass.

        A timer that sets the event, not `asyncio.wait_for`: its timeout scope cost 5.1 µs of CPU per wait
        against 3.0 (a scratch script), and every frame of a fan-out is at least one wait of its session.
        """
        self._wakeup.clear()
        timer = asyncio.get_running_loop().call_later(self._sleep_s(), self._wakeup.set)
        try:
            await self._wakeup.wait()
        finally:
            timer.cancel()

    def _take_frames(self, consumer: Consumer) -> bool:
        """Start judging and POSTing what the inbox holds, within max_in_flight and a 429's pause; True if it did."""
        subscription = self.subscription
        assert subscription is not None
        if (until := subscription.throttled_until) is not None and until > timezone.now():
            self._slots(0)
            return False  # the receiver asked the whole subscription to slow down (429/503 with Retry-After)
        slots = self._slots(min(self._width() - self.in_flight, len(self.inbox)))
        if not slots:
            return False  # the engine's socket budget wakes the session when a slot is given to it
        frames = [self.inbox.popleft() for _ in range(slots)]
        self.in_flight += len(frames)
        self._spawn(self._attempt(consumer, frames))
        return True

    def _slots(self, wants: int) -> int:
        """Take up to `wants` slots of the engine's socket budget, one per POST to start; return how many."""
        assert self.subscription is not None
        return self.engine.budget.take(self.subscription.room_id, self.subscription_id, wants, self._wakeup.set)

    def _release_slots(self, count: int) -> None:
        assert self.subscription is not None
        self.engine.budget.release(self.subscription.room_id, self.subscription_id, count)

    async def _token(self) -> None:
        """Wait for a token of max_per_second (none needed without a limit), just before a POST.

        Taken right before the POST, not before judging, so the POSTs leave when the tokens are due
        (rate.py); a take asks for as many as POSTs wait, so no token is kept for later.
        """
        self._token_waiters += 1
        try:
            async with self._token_lock:
                while self.tokens == 0:
                    limit = self.subscription.max_per_second if self.subscription is not None else None
                    if limit is None:
                        return
                    granted, wait_s = await self.engine.rate.take(self.subscription_id, limit, self._token_waiters)
                    await asyncio.sleep(wait_s)  # until the tokens granted may be used, or until asking again
                    self.tokens += granted
                self.tokens -= 1
        finally:
            self._token_waiters -= 1

    def _sleep_s(self) -> float:
        """How long the loop may wait for news: until a 429's pause ends, at most a second while there is work.

        A quiet session (nothing in its inbox or under way, no count to write) sleeps until it would
        end, idle or out of budget: whatever it waits for wakes it (a frame, a changed subscription, a
        stop). Each of a thousand idle sessions looking at its state every second cost the event
        loop, and every other subscription's frames waited behind them.
        """
        sleep = WAKE_EVERY_S
        if self.inbox and self.subscription is not None and (until := self.subscription.throttled_until) is not None:
            sleep = min(sleep, max(0.001, (until - timezone.now()).total_seconds()))
        elif self._quiet():
            engine, now = self.engine, time.monotonic()
            ends = min(self.last_activity + engine.session_idle_s, self.started + engine.session_budget_s)
            sleep = max(sleep, ends - now + 0.001)
        return sleep

    def _quiet(self) -> bool:
        counter = self.outcomes
        return (not self.inbox and self.in_flight == 0 and not self._tasks and not self._moving
                and self.accepting and (counter is None or (counter.unwritten == 0 and not counter.reset)))

    def _width(self) -> int:
        """How many frames may be under way: one while the breaker probes, else the session's share of max_in_flight."""
        assert self.subscription is not None
        return min(1, self.share) if self.subscription.breaker_state == Breaker.HALF_OPEN else self.share

    def _breaker_gate(self, consumer: Consumer) -> bool:
        """With the breaker open: hold what the inbox has until the next probe, or start probing; True if it acted."""
        subscription = self.subscription
        assert subscription is not None
        if self._moving or subscription.breaker_state != Breaker.OPEN:
            return False
        next_probe = subscription.breaker_next_probe_at
        now = timezone.now()
        if next_probe is None or now >= next_probe:
            if self.in_flight:
                return False  # attempts started before it opened finish first
            self._moving = True
            self._spawn(self._move(session_breaker.probe_now, subscription))
            return True
        frames = list(self.inbox)
        self.inbox.clear()
        self.in_flight += len(frames)
        delay_ms = max(1, int((next_probe - now).total_seconds() * 1000))
        self._spawn(self._hold(consumer, frames, delay_ms))
        return True

    async def _hold(self, consumer: Consumer, frames: list[ReceivedMessage], delay_ms: int) -> None:
        assert self.subscription is not None
        arrivals = [Arrival(self.subscription, consumer, frame) for frame in frames]
        try:
            await self.engine.steps.hold_frames(arrivals, delay_ms)
        except Exception:
            log.exception("push session for subscription %s could not hold %d frames", self.subscription_id,
                          len(frames))
            self.stop(hand_over=True)
        finally:
            self._settled(len(frames))

    async def _move(self, record: Any, *args: Any) -> None:
        """Record a breaker transition on a bookkeeper thread; the session takes no frame meanwhile.

        A transition another session recorded first (the state moved meanwhile) is not this session's:
        the engine's next reread brings the state that session recorded.
        """
        try:
            if await self.engine.bookkeeper.call(record, *args):
                self._moved_at = time.monotonic()
        except Exception:
            log.exception("push session for subscription %s could not record a breaker transition",
                          self.subscription_id)
            self.stop(hand_over=True)
        finally:
            self._moving = False
            self._wakeup.set()

    async def _count_outcome(self, attempt: Attempt, result: PushResult) -> None:
        """Count the outcome for the breaker; record the transition it causes, or the failure count."""
        subscription, counter = self.subscription, self.outcomes
        if subscription is None or counter is None or result.gone:
            return
        move = session_breaker.judge_outcome(subscription.breaker_state, counter, subscription.breaker_policy,
                                             attempt, result)
        if move is not None and not self._moving:
            self._moving = True
            # The count stays the sessions' sum: this session's part is added by its next write, not set here.
            await self._move(session_breaker.record_move, subscription, move, None)
        elif self._failures_due():
            await self._write_failures()

    def _failures_due(self) -> bool:
        """The row lacks failures (or a success) counted here, and the last write is FAILURES_WRITE_S old."""
        counter, subscription = self.outcomes, self.subscription
        if counter is None or subscription is None:
            return False
        if counter.reset and not counter.unwritten and not subscription.breaker_failures:
            counter.reset = False  # a success, with no failure on the row (at the last reread) to restart
        return ((counter.unwritten > 0 or counter.reset) and not self._failures_lock.locked()
                and time.monotonic() - self._failures_written_at >= FAILURES_WRITE_S)

    async def _write_failures(self) -> None:
        """Add the failures counted here to the row's count (every session's), one write at a time; read it back."""
        async with self._failures_lock:
            counter = self.outcomes
            if counter is None or not (counter.unwritten or counter.reset):
                return
            taken = counter.take_unwritten()
            row = -1
            try:
                row = await self.engine.bookkeeper.call(session_breaker.record_failures, self.subscription_id, *taken)
            except Exception:
                log.exception("push session for subscription %s could not record its failure count",
                              self.subscription_id)
            finally:
                counter.written(row, taken)
                self._failures_written_at = time.monotonic()

    def _heed(self, result: PushResult) -> datetime | None:
        """Act on what the receiver asked, in memory, as its answer is read; return a 429/503's pause end, if any.

        A 410 stops the session; a 429 (or 503) with Retry-After pauses the whole subscription, not only
        that message, until then. Both before the outcome is recorded: no POST may start meanwhile.
        """
        if result.gone:
            self.gone = True
            self.stop()
            return None
        if self.subscription is None or (until := throttled_until(result)) is None:
            return None
        self.subscription.throttled_until = later(self.subscription.throttled_until, until)
        return until

    def _may_post(self) -> bool:
        """Say whether a judged attempt may be POSTed now: not after a 410, nor while stopped or paused by a 429."""
        subscription = self.subscription
        if self.gone or subscription is None or not subscription.is_active:
            return False
        return subscription.throttled_until is None or subscription.throttled_until <= timezone.now()

    async def _record_throttle(self, until: datetime) -> None:
        """Keep a 429's pause on the row, for the sessions that come after this one."""
        try:
            await self.engine.bookkeeper.call(record_throttle, self.subscription_id, until)
        except Exception:
            log.exception("push session for subscription %s could not record a receiver's pause",
                          self.subscription_id)

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _attempt(self, consumer: Consumer, frames: list[ReceivedMessage]) -> None:
        """Judge frames that arrived together, then POST the attempts they start (each frees its slot when done)."""
        assert self.subscription is not None
        arrivals = [Arrival(self.subscription, consumer, frame) for frame in frames]
        started: list[Attempt] = []
        try:
            started = [result for result in await self.engine.steps.start_attempts(arrivals) if result is not None]
        except Exception:
            log.exception("push session for subscription %s could not judge %d frames", self.subscription_id,
                          len(frames))
            self.stop(hand_over=True)
        finally:
            self._release_slots(len(frames) - len(started))
            self._settled(len(frames) - len(started))
        await asyncio.gather(*(self._post_in_slot(attempt) for attempt in started))

    async def _post_in_slot(self, attempt: Attempt) -> None:
        """POST an attempt; its slot of the socket budget goes back when the POST ends, whatever happened.

        Not after the outcome is recorded: the record holds no socket, and the session's `max_in_flight`
        still counts the attempt until then. Held through the record, slots sat idle while the ledger wrote,
        and the sessions of a busy room waited for them.
        """
        released = False

        def free_slot() -> None:
            nonlocal released
            if not released:
                released = True
                self._release_slots(1)

        try:
            await self._post(attempt, free_slot)
        finally:
            free_slot()

    async def _post(self, attempt: Attempt, free_slot: Callable[[], None]) -> None:
        """POST an attempt and record its outcome, or withdraw it if POSTs stopped meanwhile; its slot frees anyway."""
        withdrawn = False
        try:
            await self._token()  # the subscription's rate limit, before the attempt's span starts
            secrets = await self._signing_secrets(attempt)
            if not self._may_post():  # nothing awaited from here to the POST: a 410 or 429 read meanwhile counts
                withdrawn = True
                await self._withdraw(attempt)
                return
            span, traceparent = trace_attempt(attempt)
            result = await self.engine.transport.post(self._request(attempt, traceparent, secrets))
            free_slot()
            if (until := self._heed(result)) is not None:
                await self._record_throttle(until)
            await self._record(attempt, result, span)
        except Exception:
            log.exception("push session for subscription %s could not finish an attempt", self.subscription_id)
            self.stop(hand_over=True)
        finally:
            if withdrawn:
                self._returned(1)
            else:
                self._settled(1)

    def _request(self, attempt: Attempt, traceparent: str, secrets: tuple[str, ...]) -> PushRequest:
        """The signed request of an attempt, with the trace context the receiver continues from."""
        subscription = attempt.arrival.subscription
        message = attempt.delivery.message
        return PushRequest(url=subscription.push_url, body=attempt.frame.body, message_id=str(message.id),
                           correlation_id=message.correlation_id, attempt=attempt.attempt,
                           signing_secret=secrets[0], previous_secret=secrets[1] if len(secrets) > 1 else "",
                           timeout_ms=subscription.timeout_ms, traceparent=traceparent)

    async def _withdraw(self, attempt: Attempt) -> None:
        """Undo the claim of an attempt that may not start now; its frame goes back in the inbox, to be judged again."""
        try:
            await self.engine.steps.withdraw(attempt)
        finally:
            self.inbox.appendleft(attempt.frame)

    async def _record(self, attempt: Attempt, result: PushResult, span: Span | None) -> None:
        """Record a POST's outcome (which acks its frame) and count it for the breaker."""
        message = attempt.delivery.message
        if span is not None:
            end_attempt_span(span, result)
        metrics.record_push_attempt(message.room_id, result.outcome, result.status_code, result.duration_ms / 1000)
        settling = settle_span(span, attempt, result) if span is not None else None
        try:
            await self.engine.steps.record_outcomes([(attempt, result)])
            await self._count_outcome(attempt, result)
        except (BrokerError, Exception) as error:
            if settling is not None:
                settling.record_exception(error)
                settling.set_status(StatusCode.ERROR, "the outcome was not recorded")
            log.exception("push session for subscription %s could not record an outcome", self.subscription_id)
            self.stop(hand_over=True)
        else:
            if result.ok:
                finished = result.finished_at or timezone.now()
                metrics.record_push_delivered(message.room_id, (finished - message.created_at).total_seconds())
        finally:
            if settling is not None:
                settling.end()

    async def _signing_secrets(self, attempt: Attempt) -> tuple[str, ...]:
        """The secrets that sign this attempt: reread first if its claim saw a newer version (a rotation just now)."""
        held = attempt.arrival.subscription
        if attempt.delivery.secret_version > held.secret_version:
            async with self._secrets_lock:  # one reread for the attempts that all saw the same rotation
                if attempt.delivery.secret_version > held.secret_version:
                    await self._reread_secrets(held)
        return held.signing_secrets(attempt.started_at)

    async def _reread_secrets(self, held: Subscription) -> None:
        """Take the subscription's current secrets into the objects the session signs with."""
        try:
            fresh = await self.engine.bookkeeper.call(claims.reread_secrets, self.subscription_id)
        except Exception:  # the engine's reread, within a second, brings them too
            log.exception("push session for subscription %s could not reread its rotated secrets",
                          self.subscription_id)
            return
        for subscription in (held, self.subscription):
            if fresh is not None and subscription is not None and fresh.secret_version > subscription.secret_version:
                for field in SECRET_FIELDS:
                    setattr(subscription, field, getattr(fresh, field))

    def _settled(self, count: int) -> None:
        self.settled += count
        self._returned(count)

    def _returned(self, count: int) -> None:
        """Free `count` slots (frames settled, or put back in the inbox)."""
        self.in_flight -= count
        self.last_activity = time.monotonic()
        self._wakeup.set()

    async def drain(self) -> None:
        """Wait for the POSTs under way to finish (the engine's stop)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


def trace_attempt(attempt: Attempt) -> tuple[Span | None, str]:
    """The attempt's span (with tracing on) and the traceparent the receiver gets: the span's, else the frame's."""
    traceparent = tracing.valid_traceparent(attempt.frame.headers.get(frames.TRACEPARENT))  # never raw into HTTP
    if not tracing.enabled():
        return None, traceparent
    span = attempt_span(attempt, traceparent)
    return span, tracing.traceparent_of(span)  # the receiver continues from this attempt


def attempt_attributes(attempt: Attempt) -> dict[str, str | int]:
    """The ids every span of a push attempt carries (docs/operations.md#tracing)."""
    message = attempt.delivery.message
    return {"dovecote.correlation_id": message.correlation_id, "dovecote.message_id": str(message.id),
            "dovecote.delivery_id": attempt.delivery.pk, "dovecote.subscription_id": attempt.arrival.subscription.pk,
            "dovecote.attempt": attempt.attempt}


def attempt_span(attempt: Attempt, traceparent: str) -> Span:
    """The client span of one push POST, in its message's trace (the frame's traceparent), or a new trace."""
    return tracing.tracer().start_span("POST", context=tracing.context_of(traceparent), kind=SpanKind.CLIENT,
                                       attributes={"http.request.method": "POST", **attempt_attributes(attempt)})


def end_attempt_span(span: Span, result: PushResult) -> None:
    span.set_attribute("dovecote.outcome", result.outcome)
    if result.status_code is not None:
        span.set_attribute("http.response.status_code", result.status_code)
    if not result.ok:
        span.set_status(StatusCode.ERROR, result.error[:200])
    span.end()


def settle_span(attempt_span: Span, attempt: Attempt, result: PushResult) -> Span:
    """The span of recording an attempt's outcome (delivered, or retry, dead letter, expiry), under the attempt."""
    return tracing.tracer().start_span("settle", context=set_span_in_context(attempt_span),
                                       attributes={**attempt_attributes(attempt), "dovecote.outcome": result.outcome})


def keep_breaker_state(fresh: Subscription, own: Subscription) -> None:
    """Copy the session's own breaker state onto a reread subscription that may predate it."""
    for field in ("breaker_state", "breaker_reason", "breaker_failures", "breaker_opened_at", "breaker_probes",
                  "breaker_next_probe_at"):
        setattr(fresh, field, getattr(own, field))


def later(first: datetime | None, second: datetime | None) -> datetime | None:
    """The later of two optional times."""
    if first is None or second is None:
        return first or second
    return max(first, second)


def throttled_until(result: PushResult) -> datetime | None:
    """Until when a 429 or 503 with Retry-After pauses the subscription (from the end of the attempt), if it does."""
    if result.retry_after_ms is None or result.status_code not in (429, 503):
        return None
    return (result.finished_at or timezone.now()) + timedelta(milliseconds=result.retry_after_ms)


def record_throttle(subscription_id: int, until: datetime) -> None:
    """Keep a receiver's slow-down on the row, so the session that takes over honours it too (never shortened)."""
    Subscription.objects.throttle(subscription_id, until)
