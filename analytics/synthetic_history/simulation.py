"""One delivery's life as the workers would record it: its sends, its attempts and its row at the end."""

from __future__ import annotations

import math
import random
from datetime import datetime, timedelta

from analytics.synthetic_history.fixtures import Target
from delivery.frame_rules import CRASH_GRACE, POISON_LIMIT
from delivery.models import Delivery, DeliveryAttempt, SendRecord
from subscriptions.models import Subscription

Status, Outcome, Kind, Type = Delivery.Status, DeliveryAttempt.Outcome, SendRecord.Kind, Subscription.Type
CRASH_CHANCE = 0.0005  # per push attempt: the worker dies mid-POST (frame_rules: RESUME, then POISON)
CRASH_GRACE_MS = int(CRASH_GRACE.total_seconds() * 1000)
REPLAY_CHANCE = 0.05  # of dead letters, replayed by an operator some hours later
LEASE_MS = 30_000
REASONS = {400: "Bad Request", 404: "Not Found", 409: "Conflict", 422: "Unprocessable Entity",
           429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
           503: "Service Unavailable", 504: "Gateway Timeout"}


def ms(value: float) -> timedelta:
    return timedelta(milliseconds=value)


class Simulator:
    """Turn one message and subscription into the delivery, send and attempt rows the workers would write."""

    def __init__(self, rng: random.Random, end: datetime) -> None:
        self.rng = rng
        self.end = end

    def answer(self, target: Target, start: datetime) -> tuple[str, int | None, str, float, int | None]:
        """Return (outcome, status code, error, duration ms, Retry-After ms) of one push attempt."""
        rng, endpoint = self.rng, target.endpoint
        refuse = endpoint.refuse
        if endpoint.outage_hours and 0 <= start.hour - 14 < endpoint.outage_hours:
            refuse = 0.95
        roll = rng.random()
        if roll < refuse:
            return (Outcome.CONNECTION_ERROR, None, "ConnectError: [Errno 111] Connection refused",
                    rng.uniform(1, 30), None)
        roll -= refuse
        if roll < endpoint.timeout:
            return (Outcome.TIMEOUT, None, f"timed out after {endpoint.timeout_ms} ms (ReadTimeout)",
                    endpoint.timeout_ms + rng.uniform(0, 15), None)
        roll -= endpoint.timeout
        duration = min(rng.lognormvariate(math.log(endpoint.median_ms), endpoint.spread), endpoint.timeout_ms - 1)
        if roll < endpoint.fail:
            code = rng.choices(target.codes, target.code_weights)[0]
            wait = rng.choice((5_000, 10_000, 30_000)) if endpoint.retry_after and code in (429, 503) else None
            return Outcome.FAILURE, code, f"HTTP {code}: {REASONS.get(code, 'Error')}", duration, wait
        return Outcome.SUCCESS, rng.choice((200, 200, 200, 204)), "", duration, None

    def lease(self, target: Target) -> tuple[str, int | None, str, float, int | None]:
        """Return the outcome of one pull lease: acked, nacked for retry, or run out."""
        rng, endpoint = self.rng, target.endpoint
        roll = rng.random()
        if roll < endpoint.timeout:
            return Outcome.LEASE_EXPIRED, None, "the lease ran out before the consumer acked", LEASE_MS, None
        duration = min(rng.lognormvariate(math.log(endpoint.median_ms), endpoint.spread), LEASE_MS - 1)
        if roll < endpoint.timeout + endpoint.fail:
            return Outcome.NACKED, None, "nacked by the consumer (retry)", duration, None
        return Outcome.SUCCESS, None, "", duration, None

    def pickup_ms(self, target: Target) -> float:
        """Return how long a frame waits on the broker before an attempt starts."""
        if target.endpoint.kind == Type.PULL:
            return self.rng.uniform(200, 5_000)  # the consumer polls
        return self.rng.uniform(3, 150)

    def deliver(self, message: tuple, target: Target, delivery_id: int) -> tuple[tuple, list[tuple], list[tuple]]:
        """Return the delivery row (as of `end`), its sends and its attempts."""
        life = Life(self, message, target, delivery_id)
        life.run()
        return life.row(), life.sends, life.attempts


class Life:
    """The state of one delivery while it is simulated, and the rows it leaves."""

    def __init__(self, simulator: Simulator, message: tuple, target: Target, delivery_id: int) -> None:
        self.sim, self.target, self.id = simulator, target, delivery_id
        self.message_id, self.correlation_id, self.created_at, self.expires_at = (
            message[0], message[5], message[7], message[8])
        self.sends: list[tuple] = []
        self.attempts: list[tuple] = []
        self.status, self.updated_at, self.next_attempt_at = Status.PENDING, self.created_at, None
        self.number = 0  # the attempt under way or last started (Delivery.attempts)
        self.started_at: datetime | None = None  # of an attempt still under way at the end
        self.life, self.crashes, self.last_code, self.last_error = 1, 0, None, ""

    def run(self) -> None:
        rng, end = self.sim.rng, self.sim.end
        sent = min(self.created_at + ms(rng.uniform(2, 40)), end)  # the outbox relay's send and receipt
        self.send(Kind.PUBLISH, self.target.destination, 1, 0, sent)
        self.status, self.updated_at = Status.QUEUED, sent
        frame, start = 1, sent + ms(self.sim.pickup_ms(self.target))
        while frame:
            frame, start = self.step(frame, start)
        if self.status == Status.RETRYING and self.next_attempt_at is None:
            self.next_attempt_at = start

    def step(self, frame: int, start: datetime) -> tuple[int, datetime]:
        """Handle attempt `frame` due at `start`; return the next (0 when settled or past the end)."""
        if start > self.sim.end:
            return 0, start
        if self.expires_at is not None and start >= self.expires_at:
            # A frame seen after expiry is settled without an attempt (push.prepare → settle.expire).
            self.settle(Status.EXPIRED, start, code=self.last_code, error="expired before delivery")
            return 0, start
        self.number = frame
        if self.target.endpoint.kind == Type.PUSH and self.sim.rng.random() < CRASH_CHANCE:
            return self.crash(frame, start)
        if self.target.endpoint.kind == Type.PULL:
            outcome, code, error, duration, wait = self.sim.lease(self.target)
        else:
            outcome, code, error, duration, wait = self.sim.answer(self.target, start)
        finish = start + ms(duration)
        if finish > self.sim.end:  # still under way at the end: its row is written when it finishes
            self.started_at = start
            if self.target.endpoint.kind == Type.PULL:
                self.status = Status.LEASED
            return 0, start
        if outcome == Outcome.SUCCESS:
            self.attempt(frame, start, duration, outcome, code, "", None)
            self.settle(Status.ACKED if self.target.endpoint.kind == Type.PULL else Status.DELIVERED, finish, code=code)
            return 0, start
        return self.fail(frame, start, finish, duration, outcome, code, error, wait)

    def fail(self, frame: int, start: datetime, finish: datetime, duration: float, outcome: str,
             code: int | None, error: str, wait: int | None) -> tuple[int, datetime]:
        """Settle a failed attempt as settle.settle_failure does: dead letter, expiry or retry."""
        policy, rng = self.target.policy, self.sim.rng
        if not policy.can_retry(frame):
            self.attempt(frame, start, duration, outcome, code, error, None)
            reason = f"gave up after {frame} attempt{'s' if frame > 1 else ''}: {error}"
            return self.dead_letter(frame, finish, code, reason)
        delay = max(policy.delay_after(frame), wait or 0)
        if self.expires_at is not None and finish + ms(delay) >= self.expires_at:
            self.attempt(frame, start, duration, outcome, code, error, None)
            self.settle(Status.EXPIRED, finish, code=code, error=error)
            return 0, start
        self.attempt(frame, start, duration, outcome, code, error, delay)
        self.send(Kind.RETRY, self.target.destination, frame + 1, delay, self.soon_after(finish))
        self.settle(Status.RETRYING, finish, code=code, error=error)
        self.next_attempt_at = finish + ms(delay)
        return frame + 1, self.next_attempt_at + ms(rng.uniform(0, 25))

    def crash(self, frame: int, start: datetime) -> tuple[int, datetime]:
        """The worker died mid-POST: a recheck send, then a `crashed` row, then the same attempt again."""
        timeout_ms = self.target.endpoint.timeout_ms
        back = self.sim.rng.uniform(50, 1_000)  # the broker hands the frame to another worker
        self.send(Kind.RECHECK, self.target.destination, frame, int(timeout_ms + CRASH_GRACE_MS - back),
                  start + ms(back))
        resumed = start + ms(timeout_ms + CRASH_GRACE_MS)
        if resumed > self.sim.end:
            self.started_at = start
            return 0, start
        self.crashes += 1
        self.attempt(frame, start, 0, Outcome.CRASHED, None,
                     "the worker stopped before recording an outcome; the broker redelivered the message", None)
        if self.crashes >= POISON_LIMIT:
            reason = f"poison message: the worker died {self.crashes} times while delivering it"
            return self.dead_letter(frame, resumed, None, reason)
        return frame, resumed

    def dead_letter(self, frame: int, at: datetime, code: int | None, reason: str) -> tuple[int, datetime]:
        """Move to the dead letters; an operator replays a few of them later."""
        rng = self.sim.rng
        sent = self.soon_after(at)
        self.send(Kind.DEAD_LETTER, self.target.destination, frame, 0, sent)
        self.settle(Status.DEAD_LETTERED, sent, code=code, error=reason)
        replay_at = sent + timedelta(minutes=rng.uniform(10, 360))
        if rng.random() >= REPLAY_CHANCE or replay_at > self.sim.end:
            return 0, sent
        # dead_letters.replay: pending with attempts 0, then the outbox sends a `replay` frame.
        self.life += 1
        self.crashes, self.number, self.last_code, self.last_error = 0, 0, None, ""
        resent = min(replay_at + ms(rng.uniform(2, 40)), self.sim.end)
        self.send(Kind.REPLAY, self.target.destination, 1, 0, resent)
        self.settle(Status.QUEUED, resent)
        return 1, resent + ms(self.sim.pickup_ms(self.target))

    def soon_after(self, moment: datetime) -> datetime:
        """Return when the copy sent after an attempt is confirmed: a few ms later, but not past the end."""
        return min(moment + ms(self.sim.rng.uniform(1, 8)), self.sim.end)

    def settle(self, status: str, at: datetime, *, code: int | None = None, error: str = "") -> None:
        self.status, self.updated_at = status, at
        self.last_code, self.last_error = code, error
        if status != Status.RETRYING:
            self.next_attempt_at = None

    def send(self, kind: str, destination: str, attempt: int, delay_ms: int, at: datetime) -> None:
        self.sends.append((self.id, kind, destination, attempt, int(delay_ms), self.correlation_id, at))

    def attempt(self, frame: int, start: datetime, duration: float, outcome: str, code: int | None,
                error: str, next_delay: int | None) -> None:
        self.attempts.append((self.id, self.correlation_id, self.life, frame, start, round(duration), outcome,
                              code, error, next_delay))

    def row(self) -> tuple:
        """Return the delivery row as of the end of the simulated history."""
        return (self.id, self.message_id, self.target.subscription.pk, self.target.destination, self.status,
                self.number, self.next_attempt_at, self.started_at, self.crashes, self.life - 1, self.last_code,
                self.last_error, self.created_at, self.updated_at)

