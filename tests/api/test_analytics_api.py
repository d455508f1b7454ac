"""GET /api/v1/reports/…: the report tables as JSON, filtered and scoped to the key's rooms."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import Client

from analytics.models import ErrorReport, HourlyReport, LatencyReport, ReportRun, RetryCostReport
from rooms.models import ApiKey
from tests.factories import make_room, make_subscription

pytestmark = pytest.mark.django_db

HOUR = datetime(2026, 5, 4, 10, tzinfo=UTC)


def get(client: Client, path: str, key: str, **params: Any) -> Any:
    return client.get(f"/api/v1/reports/{path}/", params, HTTP_AUTHORIZATION=f"Bearer {key}")


def hourly(room_id: int, subscription_id: int, hour: datetime, event_type: str = "order.paid", **figures: int) -> None:
    values = {"published": 10, "delivered": 9, "attempts": 12, "failed_attempts": 3, "retried": 2, "dead_lettered": 1,
              "expired": 0, "delivered_attempts": 11, **figures}
    HourlyReport.objects.create(
        key=f"{hour:%Y-%m-%dT%H}|{room_id}|{subscription_id}|{event_type}", hour=hour, room_id=room_id,
        subscription_id=subscription_id, event_type=event_type, **values, success_rate=0.9,
        attempts_per_delivered=values["delivered_attempts"] / values["delivered"])


@pytest.fixture
def reports() -> dict[str, Any]:
    """Two rooms; room A has two subscriptions and three hours of figures, room B one row."""
    room_a, room_b = make_room(), make_room()
    fast, slow = make_subscription(room_a, name="fast"), make_subscription(room_a, name="slow")
    other = make_subscription(room_b)
    for offset in range(3):
        hourly(room_a.pk, fast.pk, HOUR + timedelta(hours=offset))
    hourly(room_a.pk, slow.pk, HOUR, event_type="order.created", delivered=4, published=5)
    hourly(room_b.pk, other.pk, HOUR)
    for subscription, p95 in ((fast, 80), (slow, 2_400), (other, 9_000)):
        for level, event_type in (("subscription", None), ("event_type", "order.paid")):
            LatencyReport.objects.create(
                key=f"{level}|{HOUR:%Y-%m-%dT%H}|{subscription.room_id}|{subscription.pk}|{event_type or '*'}",
                level=level, hour=HOUR, room_id=subscription.room_id, subscription_id=subscription.pk,
                event_type=event_type, delivered=9, latency_p50_ms=100, latency_p95_ms=900, latency_p99_ms=1_500,
                timed_attempts=12, duration_p50_ms=p95 // 4, duration_p95_ms=p95, duration_p99_ms=p95 * 2,
                duration_max_ms=p95 * 3)
    for subscription, code, outcome in ((slow, 503, "failure"), (slow, None, "timeout"), (other, 500, "failure")):
        ErrorReport.objects.create(key=f"{HOUR:%Y-%m-%dT%H}|{subscription.pk}|{outcome}|{code}", hour=HOUR,
                                   room_id=subscription.room_id, subscription_id=subscription.pk, outcome=outcome,
                                   status_code=code, failed_attempts=7)
    for subscription, retries in ((fast, 2), (slow, 6), (other, 1)):
        RetryCostReport.objects.create(
            key=f"{HOUR:%Y-%m-%dT%H}|{subscription.room_id}|{subscription.pk}", hour=HOUR,
            room_id=subscription.room_id, subscription_id=subscription.pk, publishes=10, replays=0, retries=retries,
            dead_letters=1, rechecks=0, retry_delay_ms=retries * 1000, retry_attempts=retries)
    _, room_key = ApiKey.issue("room a", rooms=[room_a])
    return {"room_a": room_a, "room_b": room_b, "fast": fast, "slow": slow, "other": other, "room_key": room_key}


def test_an_admin_key_sees_every_room_oldest_hour_first(client: Client, admin_key: str, reports) -> None:
    body = get(client, "hourly", admin_key).json()
    assert body["count"] == 5
    rows = body["results"]
    assert [row["hour"] for row in rows] == sorted(row["hour"] for row in rows)
    assert set(rows[0]) == {"hour", "room", "subscription", "event_type", "published", "delivered", "attempts",
                            "failed_attempts", "retried", "dead_lettered", "expired", "success_rate",
                            "attempts_per_delivered"}
    assert {row["room"] for row in rows} == {reports["room_a"].pk, reports["room_b"].pk}


def test_a_room_key_sees_only_its_rooms_and_naming_another_is_403(client: Client, reports) -> None:
    key = reports["room_key"]
    for path in ("hourly", "latency", "errors", "retry-cost", "endpoints"):
        rows = get(client, path, key).json()["results"]
        assert rows and {row["room"] for row in rows} == {reports["room_a"].pk}, path
        assert get(client, path, key, room=reports["room_b"].pk).status_code == 403


def test_a_report_needs_an_api_key(client: Client, reports) -> None:
    assert client.get("/api/v1/reports/hourly/").status_code == 401


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"since": (HOUR + timedelta(hours=1)).isoformat()}, 2),
        ({"until": (HOUR + timedelta(hours=1)).isoformat()}, 3),
        ({"event_type": "order.created"}, 1),
    ],
)
def test_hourly_rows_filter_by_time_and_event_type(client: Client, admin_key: str, reports, params,
                                                   expected: int) -> None:
    assert get(client, "hourly", admin_key, **params).json()["count"] == expected


def test_rows_filter_by_subscription_and_page(client: Client, admin_key: str, reports) -> None:
    body = get(client, "hourly", admin_key, subscription=reports["fast"].pk, page_size=2).json()
    assert body["count"] == 3 and len(body["results"]) == 2 and body["next"]
    assert {row["subscription"] for row in body["results"]} == {reports["fast"].pk}


def test_latency_rows_are_per_subscription_unless_a_level_is_asked(client: Client, admin_key: str, reports) -> None:
    rows = get(client, "latency", admin_key).json()["results"]
    assert {row["level"] for row in rows} == {"subscription"} and len(rows) == 3
    assert rows[0]["event_type"] is None
    detailed = get(client, "latency", admin_key, level="event_type").json()["results"]
    assert {row["event_type"] for row in detailed} == {"order.paid"}
    assert get(client, "latency", admin_key, level="nonsense").status_code == 400


def test_errors_filter_by_outcome_and_status_code(client: Client, admin_key: str, reports) -> None:
    assert get(client, "errors", admin_key, outcome="failure").json()["count"] == 2
    rows = get(client, "errors", admin_key, status_code=503).json()["results"]
    assert [(row["subscription"], row["outcome"], row["failed_attempts"]) for row in rows] == [
        (reports["slow"].pk, "failure", 7)]


def test_retry_cost_is_summed_per_room_or_kept_per_subscription(client: Client, admin_key: str, reports) -> None:
    per_room = {row["room"]: row for row in get(client, "retry-cost", admin_key).json()["results"]}
    room_a = per_room[reports["room_a"].pk]
    assert (room_a["publishes"], room_a["retries"], room_a["retry_delay_ms"]) == (20, 8, 8000)
    assert room_a["extra_sends_per_publish"] == pytest.approx(0.4)
    per_subscription = get(client, "retry-cost", admin_key, by="subscription").json()["results"]
    assert {row["subscription"]: row["retries"] for row in per_subscription} == {
        reports["fast"].pk: 2, reports["slow"].pk: 6, reports["other"].pk: 1}


def test_the_slowest_endpoints_come_first_with_their_push_url(client: Client, admin_key: str, reports) -> None:
    rows = get(client, "endpoints", admin_key).json()["results"]
    assert [row["subscription"] for row in rows] == [reports["other"].pk, reports["slow"].pk, reports["fast"].pk]
    assert rows[1]["name"] == "slow" and rows[1]["push_url"] == reports["slow"].push_url
    assert (rows[1]["worst_hour_p95_ms"], rows[1]["timed_attempts"]) == (2_400, 12)


def test_runs_are_listed_newest_first_with_their_progress(client: Client, reports) -> None:
    ReportRun.objects.create(mode="full", status="succeeded", progress=100, rows_written=42, hours_processed=7)
    ReportRun.objects.create(mode="incremental", progress=30, stage="computing report_latency")
    rows = get(client, "runs", reports["room_key"]).json()["results"]
    assert [(row["status"], row["progress"]) for row in rows] == [("running", 30), ("succeeded", 100)]
    assert rows[0]["stage"] == "computing report_latency"


def test_room_keys_see_no_run_internals_but_admin_keys_do(client: Client, admin_key: str, reports) -> None:
    ReportRun.objects.create(mode="full", status="failed", master="spark://spark.internal:7077",
                             scope="2026-01-01T00 – 2026-01-02T00", error="Py4JJavaError: jdbc:postgresql://db.internal")
    [seen_by_room] = get(client, "runs", reports["room_key"]).json()["results"]
    assert seen_by_room["status"] == "failed"
    assert (seen_by_room["master"], seen_by_room["scope"], seen_by_room["error"]) == (None, None, None)
    assert "internal" not in json.dumps(seen_by_room)
    [seen_by_admin] = get(client, "runs", admin_key).json()["results"]
    assert seen_by_admin["master"] == "spark://spark.internal:7077" and "db.internal" in seen_by_admin["error"]
