"""Synthetic delivery history for demos, tests and benchmarks, written straight to the log tables.

Each delivery is simulated the way the workers record it (delivery/outbox.py, delivery/push/,
delivery/pull.py, delivery/settle.py, by the frame rules of delivery/frame_rules.py): a `publish`
send, then attempts whose failures follow the subscription's RetryPolicy
(an attempt row with `next_delay_ms` and a `retry` send), a dead letter (attempt row and
`dead_letter` send) once no redelivery is left, expiry when the next try would come after the
room's expiration, rare worker crashes (a `recheck` send, a `crashed` row, the same attempt again)
and replays of a few dead letters (a `replay` send, a new life from attempt 1). Whatever is still
in flight at `end` stays `queued` or `retrying`, as it would be in a live system.

Rows go in with COPY, in batches, in one transaction. The rooms and subscriptions are created
once (by name) and reused by later runs; the subscriptions are created paused, because no real
endpoint stands behind them (resume one to send it real traffic).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import queue
import random
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.db import connection, models, transaction
from django.db.backends.utils import CursorWrapper

from delivery.frame_rules import CRASH_GRACE, POISON_LIMIT
from delivery.models import Delivery, DeliveryAttempt, Message, SendRecord
from rooms.models import EventType, Room
from subscriptions.models import Subscription
from subscriptions.retry import RetryPolicy

BATCH_MESSAGES = 5_000
CRASH_CHANCE = 0.0005  # per push attempt: the worker dies mid-POST (frame_rules: RESUME, then POISON)
CRASH_GRACE_MS = int(CRASH_GRACE.total_seconds() * 1000)
REPLAY_CHANCE = 0.05  # of dead letters, replayed by an operator some hours later
LEASE_MS = 30_000
REASONS = {400: "Bad Request", 404: "Not Found", 409: "Conflict", 422: "Unprocessable Entity",
           429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
           503: "Service Unavailable", 504: "Gateway Timeout"}


@dataclass(frozen=True)
class Endpoint:
    """How one synthetic subscriber behaves."""

    name: str
    kind: str = "push"  # push, or pull (a consumer that leases and acks)
    events: tuple[str, ...] = ()  # its event-type filter; empty: every type
    median_ms: float = 80.0  # a successful answer's duration (pull: the time to ack), log-normal
    spread: float = 0.6  # sigma of that log-normal
    fail: float = 0.02  # chance of a non-2xx answer (pull: a nack)
    timeout: float = 0.0  # chance of a timeout (pull: the lease runs out)
    refuse: float = 0.0  # chance of a connection error
    codes: tuple[tuple[int, int], ...] = ((500, 6), (502, 2), (503, 2))  # failure status codes, weighted
    retry_after: bool = False  # 429 and 503 answers carry Retry-After
    outage_hours: int = 0  # every day, an outage this long from 14:00 UTC: nearly every connection refused
    timeout_ms: int = 10_000
    overrides: dict[str, object] = field(default_factory=dict)  # delivery settings overriding the room's


@dataclass(frozen=True)
class RoomPlan:
    name: str
    weight: int  # share of the messages
    events: tuple[tuple[str, int], ...]  # event types, weighted
    endpoints: tuple[Endpoint, ...]
    expiration_ms: int | None = None
    delay_ms: int = 1000
    multiplier: float = 2.0
    attempts: int = 5
    max_delay_ms: int | None = None


ROOMS = (
    RoomPlan("demo-orders", 40, (("order.created", 5), ("order.paid", 3), ("order.shipped", 2)),
             (Endpoint("warehouse", median_ms=45, fail=0.02, timeout=0.002),
              Endpoint("billing", events=("order.paid",), median_ms=120, fail=0.08, codes=((500, 3), (502, 1)),
                       overrides={"delivery_attempts": 8}),
              Endpoint("analytics-sink", kind="pull", median_ms=900, spread=0.9, fail=0.01, timeout=0.01)),
             expiration_ms=3_600_000, delay_ms=1000, multiplier=2.0, attempts=5, max_delay_ms=60_000),
    RoomPlan("demo-payments", 25, (("payment.authorized", 5), ("payment.captured", 4), ("payment.refunded", 1)),
             (Endpoint("ledger", median_ms=250, spread=0.9, fail=0.05, timeout=0.01, retry_after=True,
                       codes=((429, 5), (503, 3), (500, 2))),
              Endpoint("fraud-check", median_ms=900, spread=0.5, fail=0.03, timeout=0.03, timeout_ms=3000,
                       codes=((500, 1), (504, 2)))),
             expiration_ms=600_000, delay_ms=2000, multiplier=1.5, attempts=6, max_delay_ms=30_000),
    RoomPlan("demo-alerts", 15, (("alert.raised", 3), ("alert.resolved", 2)),
             (Endpoint("pager", median_ms=60, fail=0.01, refuse=0.05, outage_hours=2),
              Endpoint("chatops", median_ms=300, fail=0.25, codes=((502, 3), (503, 2)),
                       overrides={"delivery_attempts": 1})),
             expiration_ms=300_000, delay_ms=2000, multiplier=2.0, attempts=10),
    RoomPlan("demo-contacts", 20, (("contact.created", 1), ("contact.updated", 3)),
             (Endpoint("crm-sync", median_ms=200, fail=0.45, codes=((500, 4), (400, 1), (404, 1), (422, 1))),
              Endpoint("mailer", median_ms=80, fail=0.01, overrides={"delivery_delay_ms": 500})),
             delay_ms=500, multiplier=3.0, attempts=4, max_delay_ms=20_000),
)


@dataclass
class Target:
    """A subscription with what the simulation needs of it."""

    subscription: Subscription
    endpoint: Endpoint
    policy: RetryPolicy
    codes: list[int]
    code_weights: list[int]

    def __post_init__(self) -> None:
        self.destination = self.subscription.destination


@dataclass
class Setup:
    room: Room
    plan: RoomPlan
    event_names: list[str]
    event_weights: list[int]
    targets_by_event: dict[str, list[Target]]


@dataclass(frozen=True)
class Summary:
    messages: int
    deliveries: int
    sends: int
    attempts: int
    statuses: dict[str, int]


# ---- rooms and subscriptions ---------------------------------------------------------------------

def ensure_rooms(plans: Sequence[RoomPlan] = ROOMS) -> list[Setup]:
    """Create the synthetic rooms, event types and subscriptions that do not exist yet; return them."""
    return [ensure_room(plan) for plan in plans]


def ensure_room(plan: RoomPlan) -> Setup:
    room, _ = Room.objects.get_or_create(name=plan.name, defaults={
        "description": "synthetic traffic (manage.py generate_traffic)",
        "message_expiration_ms": plan.expiration_ms, "delivery_delay_ms": plan.delay_ms,
        "delivery_delay_multiplier": plan.multiplier, "delivery_attempts": plan.attempts,
        "max_delivery_delay_ms": plan.max_delay_ms,
    })
    for name, _ in plan.events:
        EventType.objects.get_or_create(room=room, name=name, version="1")
    targets = [ensure_target(room, endpoint) for endpoint in plan.endpoints]
    by_event = {name: [t for t in targets if not t.endpoint.events or name in t.endpoint.events]
                for name, _ in plan.events}
    return Setup(room, plan, [n for n, _ in plan.events], [w for _, w in plan.events], by_event)


def ensure_target(room: Room, endpoint: Endpoint) -> Target:
    subscription, _ = Subscription.objects.get_or_create(room=room, name=endpoint.name, defaults={
        "type": endpoint.kind,
        "push_url": f"https://hooks.example.com/{endpoint.name}" if endpoint.kind == "push" else "",
        "event_types": [{"name": name} for name in endpoint.events],
        "timeout_ms": endpoint.timeout_ms,
        # No real endpoint stands behind these: paused, so no worker tries one.
        "status": Subscription.Status.PAUSED,
        "status_reason": "synthetic traffic (manage.py generate_traffic): no real endpoint behind it",
        **endpoint.overrides,
    })
    subscription.room = room
    return Target(subscription, endpoint, subscription.retry_policy,
                  [c for c, _ in endpoint.codes], [w for _, w in endpoint.codes])


# ---- the simulation ------------------------------------------------------------------------------

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
            return "connection_error", None, "ConnectError: [Errno 111] Connection refused", rng.uniform(1, 30), None
        roll -= refuse
        if roll < endpoint.timeout:
            return ("timeout", None, f"timed out after {endpoint.timeout_ms} ms (ReadTimeout)",
                    endpoint.timeout_ms + rng.uniform(0, 15), None)
        roll -= endpoint.timeout
        duration = min(rng.lognormvariate(math.log(endpoint.median_ms), endpoint.spread), endpoint.timeout_ms - 1)
        if roll < endpoint.fail:
            code = rng.choices(target.codes, target.code_weights)[0]
            wait = rng.choice((5_000, 10_000, 30_000)) if endpoint.retry_after and code in (429, 503) else None
            return "failure", code, f"HTTP {code}: {REASONS.get(code, 'Error')}", duration, wait
        return "success", rng.choice((200, 200, 200, 204)), "", duration, None

    def lease(self, target: Target) -> tuple[str, int | None, str, float, int | None]:
        """Return the outcome of one pull lease: acked, nacked for retry, or run out."""
        rng, endpoint = self.rng, target.endpoint
        roll = rng.random()
        if roll < endpoint.timeout:
            return "lease_expired", None, "the lease ran out before the consumer acked", LEASE_MS, None
        duration = min(rng.lognormvariate(math.log(endpoint.median_ms), endpoint.spread), LEASE_MS - 1)
        if roll < endpoint.timeout + endpoint.fail:
            return "nacked", None, "nacked by the consumer (retry)", duration, None
        return "success", None, "", duration, None

    def pickup_ms(self, target: Target) -> float:
        """Return how long a frame waits on the broker before an attempt starts."""
        if target.endpoint.kind == "pull":
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
        self.status, self.updated_at, self.next_attempt_at = "pending", self.created_at, None
        self.number = 0  # the attempt under way or last started (Delivery.attempts)
        self.started_at: datetime | None = None  # of an attempt still under way at the end
        self.life, self.crashes, self.last_code, self.last_error = 1, 0, None, ""

    def run(self) -> None:
        rng, end = self.sim.rng, self.sim.end
        sent = min(self.created_at + ms(rng.uniform(2, 40)), end)  # the outbox relay's send and receipt
        self.send("publish", self.target.destination, 1, 0, sent)
        self.status, self.updated_at = "queued", sent
        frame, start = 1, sent + ms(self.sim.pickup_ms(self.target))
        while frame:
            frame, start = self.step(frame, start)
        if self.status == "retrying" and self.next_attempt_at is None:
            self.next_attempt_at = start

    def step(self, frame: int, start: datetime) -> tuple[int, datetime]:
        """Handle attempt `frame` due at `start`; return the next (0 when settled or past the end)."""
        if start > self.sim.end:
            return 0, start
        if self.expires_at is not None and start >= self.expires_at:
            # A frame seen after expiry is settled without an attempt (push.prepare → settle.expire).
            self.settle("expired", start, code=self.last_code, error="expired before delivery")
            return 0, start
        self.number = frame
        if self.target.endpoint.kind == "push" and self.sim.rng.random() < CRASH_CHANCE:
            return self.crash(frame, start)
        if self.target.endpoint.kind == "pull":
            outcome, code, error, duration, wait = self.sim.lease(self.target)
        else:
            outcome, code, error, duration, wait = self.sim.answer(self.target, start)
        finish = start + ms(duration)
        if finish > self.sim.end:  # still under way at the end: its row is written when it finishes
            self.started_at = start
            if self.target.endpoint.kind == "pull":
                self.status = "leased"
            return 0, start
        if outcome == "success":
            self.attempt(frame, start, duration, outcome, code, "", None)
            self.settle("acked" if self.target.endpoint.kind == "pull" else "delivered", finish, code=code)
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
            self.settle("expired", finish, code=code, error=error)
            return 0, start
        self.attempt(frame, start, duration, outcome, code, error, delay)
        self.send("retry", self.target.destination, frame + 1, delay, self.soon_after(finish))
        self.settle("retrying", finish, code=code, error=error)
        self.next_attempt_at = finish + ms(delay)
        return frame + 1, self.next_attempt_at + ms(rng.uniform(0, 25))

    def crash(self, frame: int, start: datetime) -> tuple[int, datetime]:
        """The worker died mid-POST: a recheck send, then a `crashed` row, then the same attempt again."""
        timeout_ms = self.target.endpoint.timeout_ms
        back = self.sim.rng.uniform(50, 1_000)  # the broker hands the frame to another worker
        self.send("recheck", self.target.destination, frame, int(timeout_ms + CRASH_GRACE_MS - back),
                  start + ms(back))
        resumed = start + ms(timeout_ms + CRASH_GRACE_MS)
        if resumed > self.sim.end:
            self.started_at = start
            return 0, start
        self.crashes += 1
        self.attempt(frame, start, 0, "crashed", None,
                     "the worker stopped before recording an outcome; the broker redelivered the message", None)
        if self.crashes >= POISON_LIMIT:
            reason = f"poison message: the worker died {self.crashes} times while delivering it"
            return self.dead_letter(frame, resumed, None, reason)
        return frame, resumed

    def dead_letter(self, frame: int, at: datetime, code: int | None, reason: str) -> tuple[int, datetime]:
        """Move to the dead letters; an operator replays a few of them later."""
        rng = self.sim.rng
        sent = self.soon_after(at)
        self.send("dead_letter", self.target.destination, frame, 0, sent)
        self.settle("dead_lettered", sent, code=code, error=reason)
        replay_at = sent + timedelta(minutes=rng.uniform(10, 360))
        if rng.random() >= REPLAY_CHANCE or replay_at > self.sim.end:
            return 0, sent
        # dead_letters.replay: pending with attempts 0, then the outbox sends a `replay` frame.
        self.life += 1
        self.crashes, self.number, self.last_code, self.last_error = 0, 0, None, ""
        resent = min(replay_at + ms(rng.uniform(2, 40)), self.sim.end)
        self.send("replay", self.target.destination, 1, 0, resent)
        self.settle("queued", resent)
        return 1, resent + ms(self.sim.pickup_ms(self.target))

    def soon_after(self, moment: datetime) -> datetime:
        """Return when the copy sent after an attempt is confirmed: a few ms later, but not past the end."""
        return min(moment + ms(self.sim.rng.uniform(1, 8)), self.sim.end)

    def settle(self, status: str, at: datetime, *, code: int | None = None, error: str = "") -> None:
        self.status, self.updated_at = status, at
        self.last_code, self.last_error = code, error
        if status != "retrying":
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


# ---- writing ---------------------------------------------------------------------------------------

MESSAGE_COLUMNS = ["id", "room_id", "event_type", "event_version", "payload", "correlation_id", "idempotency_key",
                   "created_at", "expires_at"]
DELIVERY_COLUMNS = ["id", "message_id", "subscription_id", "destination", "status", "attempts", "next_attempt_at",
                    "attempt_started_at", "redelivery_count", "replays", "last_status_code", "last_error",
                    "created_at", "updated_at"]
SEND_COLUMNS = ["delivery_id", "kind", "destination", "attempt", "delay_ms", "correlation_id", "sent_at"]
ATTEMPT_COLUMNS = ["delivery_id", "correlation_id", "life", "attempt", "started_at", "duration_ms", "outcome",
                   "status_code", "error", "next_delay_ms"]


class CopyTable:
    """COPY rows into a model's table: the columns given, plus every other column at its default.

    Built from the model, so a column added later with a plain default needs no change here.
    """

    def __init__(self, model: type[models.Model], columns: list[str]) -> None:
        fields = {f.column: f for f in model._meta.concrete_fields}
        if unknown := set(columns) - set(fields):
            raise ValueError(f"{model._meta.db_table} has no column {sorted(unknown)}")
        rest = [f for column, f in fields.items() if column not in columns and not f.primary_key]
        if dynamic := [f.name for f in rest if f.has_default() and callable(f.default)]:
            raise ValueError(f"generate_traffic does not fill {model._meta.db_table}.{dynamic}")
        self.defaults = tuple(f.get_db_prep_save(f.get_default(), connection) for f in rest)
        names = ", ".join(columns + [f.column for f in rest])
        self.sql = f"COPY {model._meta.db_table} ({names}) FROM STDIN"

    def write(self, cursor: CursorWrapper, rows: Iterable[tuple]) -> None:
        defaults = self.defaults
        with cursor.copy(self.sql) as copy:
            for row in rows:
                copy.write_row(row + defaults)


def generate(messages: int, days: float, *, seed: int = 1, end: datetime | None = None,
             progress: Callable[[Counter[str]], None] | None = None) -> Summary:
    """Write `messages` synthetic messages published over the `days` before `end`, with their whole log."""
    if connection.vendor != "postgresql":
        raise RuntimeError("generate_traffic writes with COPY: it needs PostgreSQL (set DATABASE_URL)")
    rng = random.Random(seed)
    end = (end or datetime.now(UTC)).astimezone(UTC)
    setups = ensure_rooms()
    simulator = Simulator(rng, end)
    tables = {name: CopyTable(model, columns) for name, model, columns in (
        ("messages", Message, MESSAGE_COLUMNS), ("deliveries", Delivery, DELIVERY_COLUMNS),
        ("sends", SendRecord, SEND_COLUMNS), ("attempts", DeliveryAttempt, ATTEMPT_COLUMNS))}
    counts: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    batches = (simulate_batch(simulator, rng, setups, times)
               for times in batched(publish_times(rng, messages, days, end), BATCH_MESSAGES))
    with transaction.atomic(), connection.cursor() as cursor:
        # Django's foreign keys are DEFERRABLE INITIALLY DEFERRED: checking them as rows arrive costs the
        # same, but a deferred check queues every row until COMMIT (GBs and minutes for 10 M attempts).
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        for rows in in_background(batches):
            for name, batch in rows.items():
                tables[name].write(cursor, batch)
                counts[name] += len(batch)
            statuses.update(row[4] for row in rows["deliveries"])
            if progress:
                progress(counts)
        for table in ("delivery_message", "delivery_delivery", "published_messages", "delivery_attempts"):
            cursor.execute(f"ANALYZE {table}")  # fresh statistics, so the planner sees the bulk load
    return Summary(counts["messages"], counts["deliveries"], counts["sends"], counts["attempts"], dict(statuses))


def simulate_batch(simulator: Simulator, rng: random.Random, setups: list[Setup],
                   times: list[datetime]) -> dict[str, list[tuple]]:
    """Simulate one batch of messages and return its rows per table."""
    rows: dict[str, list[tuple]] = {"messages": [], "deliveries": [], "sends": [], "attempts": []}
    plans = rng.choices(setups, [s.plan.weight for s in setups], k=len(times))
    pairs = []
    for created_at, setup in zip(times, plans, strict=True):
        message = message_row(rng, setup, created_at)
        rows["messages"].append(message)
        pairs += [(message, target) for target in setup.targets_by_event[message[2]]]
    for (message, target), delivery_id in zip(pairs, reserve_ids(len(pairs)), strict=True):
        delivery, sends, attempts = simulator.deliver(message, target, delivery_id)
        rows["deliveries"].append(delivery)
        rows["sends"] += sends
        rows["attempts"] += attempts
    return rows


def message_row(rng: random.Random, setup: Setup, created_at: datetime) -> tuple:
    event_type = rng.choices(setup.event_names, setup.event_weights)[0]
    number = rng.getrandbits(40)
    payload = f'{{"id": {number}, "amount": {rng.randint(1, 99_999) / 100}, "source": "generate_traffic"}}'
    expires_at = setup.room.expires_at(created_at)
    # Ids are truly random (not from the seed): the same seed run twice must not collide.
    return (uuid.uuid4(), setup.room.pk, event_type, "1", payload, str(uuid.uuid4()), None, created_at, expires_at)


def reserve_ids(count: int) -> list[int]:
    """Take `count` ids from the deliveries' sequence, as inserts would (sequences ignore transactions)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT nextval(pg_get_serial_sequence('delivery_delivery', 'id')) "
                       "FROM generate_series(1, %s)", [count])
        return [row[0] for row in cursor.fetchall()]


def in_background[T](items: Iterator[T], depth: int = 2) -> Iterator[T]:
    """Yield `items` computed by a thread up to `depth` ahead, so simulating overlaps PostgreSQL's COPY work."""
    done = object()
    handoff: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                if stop.is_set():
                    return
                handoff.put(item)
            handoff.put(done)
        except BaseException as error:  # noqa: BLE001 - handed over, and raised in the consuming thread
            handoff.put(error)
        finally:
            connection.close()  # this thread's own connection (it reserved ids with it)

    thread = threading.Thread(target=produce, name="generate-traffic", daemon=True)
    thread.start()
    try:
        while (item := handoff.get()) is not done:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while thread.is_alive():  # unblock a producer waiting on a full queue
            with contextlib.suppress(queue.Empty):
                handoff.get(timeout=0.1)


def publish_times(rng: random.Random, count: int, days: float, end: datetime) -> list[datetime]:
    """Return `count` publish times over the `days` before `end`, busier by day (peak 14:00 UTC), in order."""
    span = days * 86_400
    start = end - timedelta(seconds=span)
    times = []
    while len(times) < count:
        moment = start + timedelta(seconds=rng.random() * span)
        hour = moment.hour + moment.minute / 60
        if rng.random() < 0.3 + 0.7 * (1 + math.cos(2 * math.pi * (hour - 14) / 24)) / 2:
            times.append(moment)
    return sorted(times)


def batched(items: list[datetime], size: int) -> Iterator[list[datetime]]:
    iterator = iter(items)
    while batch := list(itertools.islice(iterator, size)):
        yield batch
