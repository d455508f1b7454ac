"""Generate a synthetic history: publish times over the days asked, simulated in batches, written with COPY."""

from __future__ import annotations

import contextlib
import itertools
import math
import queue
import random
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import connection, transaction

from analytics.synthetic_history.copy_writer import (
    ATTEMPT_COLUMNS,
    DELIVERY_COLUMNS,
    MESSAGE_COLUMNS,
    SEND_COLUMNS,
    CopyTable,
)
from analytics.synthetic_history.fixtures import Setup, ensure_rooms
from analytics.synthetic_history.simulation import Simulator
from delivery.models import Delivery, DeliveryAttempt, Message, SendRecord

BATCH_MESSAGES = 5_000


@dataclass(frozen=True)
class Summary:
    messages: int
    deliveries: int
    sends: int
    attempts: int
    statuses: dict[str, int]



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
