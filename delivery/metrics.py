"""The delivery path's Prometheus counters and histograms, incremented where things happen.

Recording one costs an increment in memory (a memory-mapped file under PROMETHEUS_MULTIPROC_DIR
when several processes share the scrape): never a query, never a call out. The push path records
each attempt once, in its session (delivery/push/session.py). What needs a query or a call to the
broker (sessions running, leases, the outbox backlog, queue depths) is read when /metrics is
scraped (api/metrics.py). Every metric is listed in docs/operations.md#metrics.

Label values are bounded: `room` is a room's id, for the first DOVECOTE_METRICS_MAX_ROOMS rooms
a process records; the rooms after those are counted as room="_other" by that process.
`outcome` and `status_class` take a handful of fixed values.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from django.conf import settings
from prometheus_client import Counter, Histogram

import dovecote.metrics  # noqa: F401 - sets up the metric files before the first metric is made

OTHER = "_other"

MESSAGES_PUBLISHED = Counter(
    "dovecote_messages_published", "Messages accepted by a publish (202), by room.", ["room"])
DELIVERIES_CREATED = Counter(
    "dovecote_deliveries_created", "Deliveries created by publishes: one per message and matching subscription.",
    ["room"])
DELIVERED = Counter(
    "dovecote_deliveries_delivered",
    "Deliveries settled by their subscriber: a 2xx to a push (path=push) or an ack of a pull lease (path=pull).",
    ["room", "path"])
PUSH_ATTEMPTS = Counter(
    "dovecote_push_attempts", "Push POSTs made, by room, outcome and status class of the answer.",
    ["room", "outcome", "status_class"])
RETRIES = Counter(
    "dovecote_retries_scheduled", "Failed attempts (push or pull) whose next attempt the broker confirmed.", ["room"])
DEAD_LETTERS = Counter("dovecote_dead_letters", "Deliveries dead-lettered.", ["room"])
EXPIRED = Counter(
    "dovecote_deliveries_expired",
    "Deliveries expired before delivery: at an attempt, on the broker, or by the sweeper.", ["where"])
UNROUTABLE = Counter(
    "dovecote_messages_unroutable", "Messages published that matched no subscription (kept, re-publishable).",
    ["room"])
REPLAYS = Counter("dovecote_replays", "Dead letters replayed (sent again from attempt 1).", ["room"])
ATTEMPT_DURATION = Histogram(
    "dovecote_push_attempt_duration_seconds", "How long each push POST took, whatever its outcome.", ["room"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0))
DELIVERY_LATENCY = Histogram(
    "dovecote_delivery_latency_seconds",
    "From the publish of a message to the end of the push attempt that delivered it.", ["room"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0))


class RoomLabels:
    """The `room` label of a room id: its id for the first `limit` rooms seen here, OTHER for the rest."""

    def __init__(self) -> None:
        self._labels: dict[int, str] = {}
        self._lock = threading.Lock()

    def __call__(self, room_id: int | None) -> str:
        if room_id is None:
            return OTHER
        label = self._labels.get(room_id)
        if label is not None:
            return label
        with self._lock:
            if len(self._labels) >= settings.DOVECOTE_METRICS_MAX_ROOMS:
                return OTHER
            return self._labels.setdefault(room_id, str(room_id))

    def forget(self) -> None:
        with self._lock:
            self._labels.clear()


room_label = RoomLabels()


def record_push_attempt(room_id: int, outcome: str, status_code: int | None, duration_s: float) -> None:
    """Count one push POST and its duration (the push session's hot path: two increments, labels cached)."""
    attempts, duration = _attempt_series(room_id, outcome, status_class(status_code))
    attempts.inc()
    duration.observe(duration_s)


def record_push_delivered(room_id: int, latency_s: float) -> None:
    """Count a push delivery recorded as delivered, and its latency from the publish."""
    delivered, latency = _delivered_series(room_id)
    delivered.inc()
    latency.observe(latency_s)


@functools.lru_cache(maxsize=4096)
def _attempt_series(room_id: int, outcome: str, klass: str) -> tuple[Any, Any]:
    room = room_label(room_id)
    return PUSH_ATTEMPTS.labels(room, outcome, klass), ATTEMPT_DURATION.labels(room)


@functools.lru_cache(maxsize=1024)
def _delivered_series(room_id: int) -> tuple[Any, Any]:
    room = room_label(room_id)
    return DELIVERED.labels(room, "push"), DELIVERY_LATENCY.labels(room)


def status_class(status_code: int | None) -> str:
    """`2xx` … `5xx` for an HTTP status, `none` when no answer came (timeout, refused connection)."""
    return f"{status_code // 100}xx" if status_code and 100 <= status_code < 600 else "none"
