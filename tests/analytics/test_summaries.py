"""analytics/jobs/summaries.py on hand-made attempts, without Spark: counts, exact percentiles, nulls.

The report tests (test_analytics_reports.py) check every figure of a generated history against SQL
through Spark; these pin the edges a generated history may not reach: percentile_disc's rank at small
and odd group sizes, a group with no successful or no timed attempt, null subscriptions, event types
and status codes, and a task split over several Arrow batches.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta

import pyarrow as pa

from analytics.jobs.summaries import COUNTS, FIGURES, PERCENTILES, SCHEMA, summarise

HOUR = datetime(2026, 11, 29, 10, tzinfo=UTC)
INPUT = pa.schema([
    ("hour", pa.timestamp("us", tz="UTC")), ("room_id", pa.int64()), ("subscription_id", pa.int64()),
    ("event_type", pa.string()), ("outcome", pa.string()), ("status_code", pa.int32()), ("attempt", pa.int32()),
    ("latency_ms", pa.int64()), ("duration_ms", pa.int64()),
])


def attempt(hour: datetime = HOUR, room: int = 1, subscription: int | None = 7, event_type: str | None = "a",
            outcome: str = "success", status: int | None = None, number: int = 1, latency: int | None = 0,
            duration: int | None = 0) -> dict:
    return {"hour": hour, "room_id": room, "subscription_id": subscription, "event_type": event_type,
            "outcome": outcome, "status_code": status, "attempt": number,
            "latency_ms": latency if outcome == "success" else None,
            "duration_ms": None if outcome == "crashed" else duration}


def summarised(rows: list[dict], batch_rows: int = 1000) -> list[dict]:
    """Run `summarise` on `rows` sent as Arrow batches of `batch_rows`, as Spark sends a task's rows."""
    table = pa.Table.from_pylist(rows, schema=INPUT)
    output = list(summarise(iter(table.to_batches(max_chunksize=batch_rows))))
    assert all(batch.schema == SCHEMA for batch in output)
    return pa.Table.from_batches(output, schema=SCHEMA).to_pylist()


def percentile_disc(values: list[int], p: float) -> int | None:
    """PostgreSQL's percentile_disc: the value at rank ceil(p × N) of the values in order."""
    if not values:
        return None
    return sorted(values)[max(math.ceil(p * len(values)), 1) - 1]


def expected_levels(rows: list[dict]) -> dict[tuple, dict]:
    """Every level's groups and figures, computed the plain way."""
    widths = {"room": 2, "subscription": 3, "event_type": 4}
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        keys = (row["hour"], row["room_id"], row["subscription_id"], row["event_type"])
        for level, width in widths.items():
            groups[(level, *keys[:width], *[None] * (4 - width))].append(row)
    expected = {}
    for grain, members in groups.items():
        latencies = [r["latency_ms"] for r in members if r["latency_ms"] is not None]
        durations = [r["duration_ms"] for r in members if r["duration_ms"] is not None]
        success = [r for r in members if r["outcome"] == "success"]
        figures = {
            "attempts": len(members), "delivered": len(success), "failed_attempts": len(members) - len(success),
            "delivered_attempts": sum(r["attempt"] for r in success),
            "retry_attempts": sum(1 for r in members if r["attempt"] > 1), "timed_attempts": len(durations),
            "duration_max_ms": max(durations, default=None),
        }
        for name, values in (("latency", latencies), ("duration", durations)):
            for p in PERCENTILES:
                figures[f"{name}_p{round(p * 100)}_ms"] = percentile_disc(values, p)
        expected[grain] = figures
    return expected


def by_grain(output: list[dict]) -> dict[tuple, dict]:
    return {(row["level"], row["hour"], row["room_id"], row["subscription_id"], row["event_type"]):
            {name: row[name] for name in COUNTS + FIGURES}
            for row in output if row["level"] != "error"}


def test_percentiles_are_postgresqls_percentile_disc_at_every_group_size() -> None:
    rows = []
    for size in (1, 2, 3, 19, 20, 21, 99, 100, 101, 1000):  # where ceil(p × N) and its rounding matter
        subscription_values = random.Random(size).sample(range(100_000), size)
        rows += [attempt(subscription=size, latency=value, duration=value // 3) for value in subscription_values]

    output = by_grain(summarised(rows, batch_rows=97))

    assert output == expected_levels(rows)
    assert output[("subscription", HOUR, 1, 20, None)]["latency_p95_ms"] == percentile_disc(
        [r["latency_ms"] for r in rows if r["subscription_id"] == 20], 0.95)


def test_values_too_wide_to_pack_with_their_group_are_sorted_by_two_keys() -> None:
    rows = [attempt(subscription=s, latency=v, duration=v) for s in (1, 2) for v in (2**61, -(2**61), 5, 0, 2**40)]

    assert by_grain(summarised(rows)) == expected_levels(rows)


def test_groups_without_a_success_or_a_timed_attempt_get_null_figures_and_counts_of_zero() -> None:
    rows = [
        attempt(subscription=1, outcome="failure", status=500, duration=40),
        attempt(subscription=1, outcome="timeout", duration=30_000, number=2),
        attempt(subscription=2, outcome="crashed"),
        attempt(subscription=3, latency=250, duration=120, number=3),
    ]

    output = by_grain(summarised(rows))

    assert output == expected_levels(rows)
    failing = output[("subscription", HOUR, 1, 1, None)]
    assert failing["delivered"] == 0 and failing["latency_p50_ms"] is None and failing["duration_max_ms"] == 30_000
    crashed = output[("subscription", HOUR, 1, 2, None)]
    assert crashed["timed_attempts"] == 0 and crashed["duration_p99_ms"] is None
    assert output[("room", HOUR, 1, None, None)]["retry_attempts"] == 2


def test_null_subscriptions_and_event_types_are_groups_of_their_own() -> None:
    rows = [attempt(subscription=None, event_type=None, latency=5), attempt(subscription=None, event_type="b"),
            attempt(subscription=4, event_type=None, latency=9), attempt(room=2, hour=HOUR + timedelta(hours=1))]

    output = by_grain(summarised(rows))

    assert output == expected_levels(rows)
    assert ("event_type", HOUR, 1, None, None) in output  # no subscription, no event type
    assert ("subscription", HOUR, 1, None, None) in output  # the subscription level of the rows above
    assert output[("event_type", HOUR, 1, None, None)]["latency_p50_ms"] == 5


def test_failed_attempts_are_counted_per_subscription_outcome_and_status_code() -> None:
    rows = [
        attempt(outcome="failure", status=500), attempt(outcome="failure", status=500, event_type="b"),
        attempt(outcome="failure", status=503), attempt(outcome="timeout"), attempt(outcome="timeout"),
        attempt(subscription=None, outcome="connection_error"), attempt(),
    ]

    errors = {(row["subscription_id"], row["outcome"], row["status_code"]): row["failed_attempts"]
              for row in summarised(rows) if row["level"] == "error"}

    failed = Counter((r["subscription_id"], r["outcome"], r["status_code"]) for r in rows if r["outcome"] != "success")
    assert errors == dict(failed) == {(7, "failure", 500): 2, (7, "failure", 503): 1, (7, "timeout", None): 2,
                                      (None, "connection_error", None): 1}


def test_a_task_without_failures_or_rows_gives_what_it_has() -> None:
    assert [row["level"] for row in summarised([attempt()])] == ["room", "subscription", "event_type"]
    assert list(summarise(iter([]))) == []
    assert list(summarise(iter(pa.Table.from_pylist([], schema=INPUT).to_batches()))) == []
