"""Report rows as a report run would leave them: `*_row` builds one (for bulk_create), `add_*` saves one."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db.models import Model

from analytics.models import ErrorReport, HourlyReport, LatencyReport, RetryCostReport


def hourly_row(room_id: int, subscription_id: int, hour: datetime, event_type: str = "order.paid",
               **figures: int) -> HourlyReport:
    values = {"published": 10, "delivered": 9, "attempts": 12, "failed_attempts": 3, "retried": 2, "dead_lettered": 1,
              "expired": 0, "delivered_attempts": 11, **figures}
    settled = values["delivered"] + values["dead_lettered"] + values["expired"]
    return HourlyReport(
        key=f"{hour:%Y-%m-%dT%H}|{room_id}|{subscription_id}|{event_type}", hour=hour, room_id=room_id,
        subscription_id=subscription_id, event_type=event_type, **values,
        success_rate=values["delivered"] / settled if settled else None,
        attempts_per_delivered=values["delivered_attempts"] / values["delivered"] if values["delivered"] else None)


def latency_row(level: str, room_id: int, subscription_id: int | None, hour: datetime,
                percentiles: tuple[int, int, int], *, delivered: int = 9, duration_p95_ms: int = 200) -> LatencyReport:
    """Add a `room` or `subscription` row: latency p50, p95, p99 (ms) and an attempt-duration p95."""
    p50, p95, p99 = percentiles
    return LatencyReport(
        key=f"{level}|{hour:%Y-%m-%dT%H}|{room_id}|{subscription_id or '*'}|*", level=level, hour=hour,
        room_id=room_id, subscription_id=subscription_id if level != "room" else None, event_type=None,
        delivered=delivered, latency_p50_ms=p50, latency_p95_ms=p95, latency_p99_ms=p99, timed_attempts=delivered + 2,
        duration_p50_ms=duration_p95_ms // 4, duration_p95_ms=duration_p95_ms, duration_p99_ms=duration_p95_ms * 2,
        duration_max_ms=duration_p95_ms * 3)


def error_row(room_id: int, subscription_id: int, hour: datetime, outcome: str, status_code: int | None,
              failed_attempts: int) -> ErrorReport:
    return ErrorReport(
        key=f"{hour:%Y-%m-%dT%H}|{subscription_id}|{outcome}|{status_code}", hour=hour, room_id=room_id,
        subscription_id=subscription_id, outcome=outcome, status_code=status_code, failed_attempts=failed_attempts)


def retry_cost_row(room_id: int, subscription_id: int, hour: datetime, **figures: int) -> RetryCostReport:
    values = {"publishes": 10, "replays": 0, "retries": 2, "dead_letters": 1, "rechecks": 0, "retry_delay_ms": 4000,
              "retry_attempts": 2, **figures}
    return RetryCostReport(key=f"{hour:%Y-%m-%dT%H}|{room_id}|{subscription_id}", hour=hour, room_id=room_id,
                           subscription_id=subscription_id, **values)


def saved(build: Callable[..., Model]) -> Callable[..., Model]:
    def add(*args: Any, **kwargs: Any) -> Model:
        row = build(*args, **kwargs)
        row.save(force_insert=True)
        return row

    return add


add_hourly, add_latency, add_error, add_retry_cost = map(saved, (hourly_row, latency_row, error_row, retry_cost_row))
