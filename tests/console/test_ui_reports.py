"""The Reports page: the report tables as SVG charts with their figures, for a room, a subscription or all rooms."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client

from rooms.models import Room
from subscriptions.models import Subscription
from tests.factories import make_room, make_subscription
from tests.report_rows import add_error, add_hourly, add_latency, add_retry_cost

pytestmark = pytest.mark.django_db

HOUR = timedelta(hours=1)
NEWEST = datetime(2026, 5, 4, 12, tzinfo=UTC)  # in the past: the window ends at the newest report hour


@dataclass
class Reports:
    orders: Room
    payments: Room
    fast: Subscription
    slow: Subscription
    ledger: Subscription


@pytest.fixture
def reports() -> Reports:
    """Two rooms over three hours up to NEWEST; orders has a fast and a slow subscription, payments one."""
    orders, payments = make_room(name="orders"), make_room(name="payments")
    fast, slow = make_subscription(orders, name="fast"), make_subscription(orders, name="slow")
    ledger = make_subscription(payments, name="ledger")
    first = NEWEST - 2 * HOUR
    add_hourly(orders.pk, fast.pk, first, delivered=90, dead_lettered=5, expired=5)
    add_hourly(orders.pk, slow.pk, first, delivered=40, dead_lettered=10, expired=0)
    add_hourly(payments.pk, ledger.pk, first, delivered=20, dead_lettered=0, expired=0)
    add_hourly(orders.pk, fast.pk, first + HOUR, delivered=100, dead_lettered=0, expired=0)
    add_hourly(orders.pk, slow.pk, first + HOUR, delivered=0, dead_lettered=0, expired=0, failed_attempts=4)
    add_hourly(orders.pk, fast.pk, NEWEST, delivered=0, dead_lettered=0, expired=0)  # nothing settled
    for hour, (p50, p95, p99) in ((first, (100, 900, 1_500)), (first + HOUR, (120, 700, 1_100))):
        add_latency("room", orders.pk, None, hour, (p50, p95, p99), delivered=130)
        add_latency("subscription", orders.pk, fast.pk, hour, (40, 90, 300), delivered=90, duration_p95_ms=80)
        add_latency("subscription", orders.pk, slow.pk, hour, (400, 2_000, 4_000), delivered=40,
                    duration_p95_ms=2_400)
    add_latency("room", payments.pk, None, first, (50, 60, 70), delivered=20)
    add_latency("subscription", payments.pk, ledger.pk, first, (50, 60, 70), delivered=20, duration_p95_ms=9_000)
    add_error(orders.pk, slow.pk, first, "failure", 503, 7)
    add_error(orders.pk, slow.pk, first + HOUR, "failure", 503, 4)
    add_error(orders.pk, slow.pk, first, "timeout", None, 3)
    add_error(orders.pk, fast.pk, first, "failure", 500, 2)
    add_error(payments.pk, ledger.pk, first, "connection_error", None, 6)
    add_retry_cost(orders.pk, fast.pk, first, publishes=100, retries=5, dead_letters=5, retry_delay_ms=10_000)
    add_retry_cost(orders.pk, slow.pk, first, publishes=50, retries=25, dead_letters=10, rechecks=1, replays=2,
                   retry_delay_ms=75_000)
    add_retry_cost(payments.pk, ledger.pk, first, publishes=20, retries=0, dead_letters=0, retry_delay_ms=0)
    return Reports(orders, payments, fast, slow, ledger)


def figure(html: str, name: str) -> str:
    found = re.search(rf'data-figure="{name}">([^<]*)<', html)
    assert found, f"no figure {name}"
    return found.group(1)


def test_all_rooms_show_every_chart_with_the_figures_of_the_rows(staff_client: Client, reports: Reports) -> None:
    response = staff_client.get("/reports/")
    html = response.content.decode()
    figures = response.context["figures"]

    assert response.status_code == 200
    assert figures.end == NEWEST + HOUR and figures.start == NEWEST + HOUR - 7 * 24 * HOUR
    # (90 + 40 + 20 + 100) delivered of (250 + 15 dead-lettered + 5 expired) settled
    assert (figure(html, "success-rate"), figure(html, "delivered"), figure(html, "dead-lettered"),
            figure(html, "expired")) == ("92.6%", "250", "15", "5")
    assert [(row["hour"], row["success_percent"]) for row in figures.success.hours] == [
        (NEWEST - 2 * HOUR, "88.2%"), (NEWEST - HOUR, "100%"), (NEWEST, "—")]
    assert figure(html, "worst-hour") == "88.2% at 05-04 10:00"
    assert html.count('<svg class="chart line-chart"') == 3  # success rate, and a latency chart per room
    assert html.count('<svg class="chart bar-chart"') == 2  # errors, retry cost
    assert 'role="img" aria-label="Success rate per hour"' in html


def test_the_success_line_breaks_where_nothing_settled(staff_client: Client, reports: Reports) -> None:
    chart = staff_client.get("/reports/?window=24h").context["figures"].success.chart
    assert len(chart.slots) == 24
    path = chart.lines[0].path
    assert path.count("M") == 1 and path.count("L") == 1  # two hours joined, the third has no rate
    assert chart.slots[-1].title == "2026-05-04 12:00 UTC: success rate —"
    assert chart.slots[-2].title == "2026-05-04 11:00 UTC: success rate 100%"


def test_latency_for_all_rooms_is_a_chart_per_room_from_the_room_rows(staff_client: Client, reports: Reports) -> None:
    latency = staff_client.get("/reports/").context["figures"].latency
    assert [(chart.name, chart.delivered) for chart in latency] == [("orders", 260), ("payments", 20)]
    orders = latency[0]
    assert orders.worst["latency_p99_ms"] == 1_500 and orders.latest["latency_p95_ms"] == 700
    assert [line.name for line in orders.chart.lines] == ["p50", "p95", "p99"]


def test_a_room_shows_its_room_level_percentiles_not_an_average_of_its_subscriptions(
        staff_client: Client, reports: Reports) -> None:
    response = staff_client.get(f"/reports/?room={reports.orders.pk}")
    html = response.content.decode()
    figures = response.context["figures"]

    assert figure(html, "success-rate") == "92%"  # 230 of 250
    assert [chart.name for chart in figures.latency] == ["orders"]
    assert figure(html, "latest-latency") == "120 ms · 700 ms · 1.1 s"
    assert figure(html, "worst-p99") == "1.5 s at 05-04 10:00"
    assert "<h2>Retry cost per subscription</h2>" in html
    assert [(row["name"], row["retries"]) for row in figures.retry_cost.rows] == [("orders / slow", 25),
                                                                                  ("orders / fast", 5)]


def test_a_subscription_shows_its_own_latency_errors_and_retry_cost(staff_client: Client, reports: Reports) -> None:
    figures = staff_client.get(f"/reports/?subscription={reports.slow.pk}").context["figures"]

    assert (figures.success.delivered, figures.success.dead_lettered) == (40, 10)
    assert [(chart.name, chart.worst["latency_p99_ms"]) for chart in figures.latency] == [("orders / slow", 4_000)]
    assert [(row["label"], row["failed"]) for row in figures.errors.rows] == [("HTTP 503", 11), ("timeout", 3)]
    assert [row["name"] for row in figures.retry_cost.rows] == ["orders / slow"]


def test_errors_are_summed_by_outcome_and_status_code_most_first(staff_client: Client, reports: Reports) -> None:
    response = staff_client.get("/reports/")
    errors = response.context["figures"].errors

    assert [(row["label"], row["outcome"], row["failed"]) for row in errors.rows] == [
        ("HTTP 503", "failure", 11), ("connection error", "connection_error", 6), ("timeout", "timeout", 3),
        ("HTTP 500", "failure", 2)]
    assert errors.total == 22
    bars = errors.chart.rows
    assert bars[0].segments[0].width > bars[1].segments[0].width > bars[3].segments[0].width
    assert bars[0].title == "HTTP 503: 11 failed attempts"
    assert '<tr data-error="HTTP 503"><td>HTTP 503</td>' in response.content.decode()


def test_the_slowest_endpoints_come_first(staff_client: Client, reports: Reports) -> None:
    response = staff_client.get("/reports/")
    endpoints = response.context["figures"].endpoints
    assert [(row["name"], row["worst_hour_p95_ms"]) for row in endpoints] == [
        ("payments / ledger", 9_000), ("orders / slow", 2_400), ("orders / fast", 80)]
    assert f'href="/subscriptions/{reports.ledger.pk}/"' in response.content.decode()


def test_retry_cost_per_room_sums_its_subscriptions(staff_client: Client, reports: Reports) -> None:
    response = staff_client.get("/reports/")
    rows = {row["name"]: row for row in response.context["figures"].retry_cost.rows}

    orders = rows["orders"]
    assert (orders["publishes"], orders["retries"], orders["dead_letters"], orders["extra_sends"]) == (150, 30, 15, 48)
    assert orders["retries_per_publish"] == pytest.approx(0.2)
    assert orders["mean_retry_delay"] == "2.83 s"  # 85 s of backoff over 30 retries
    assert rows["payments"]["retries_per_publish"] == 0 and rows["payments"]["mean_retry_delay"] == "—"
    bar = response.context["figures"].retry_cost.chart.rows[0]
    assert bar.title == "orders: 30 retries, 15 dead letters, 1 rechecks, 2 replays"


def test_the_window_ends_at_the_newest_report_hour(staff_client: Client, reports: Reports) -> None:
    add_hourly(reports.payments.pk, reports.ledger.pk, NEWEST - 30 * HOUR, delivered=1000, dead_lettered=0)

    day = staff_client.get("/reports/?window=24h").context["figures"]
    week = staff_client.get("/reports/?window=7d").context["figures"]

    assert day.end == NEWEST + HOUR and (day.success.delivered, week.success.delivered) == (250, 1250)
    assert len(week.success.chart.slots) == 168


@pytest.mark.parametrize(("query", "message"), [
    ("room=abc", "Room: Select a valid choice."),
    ("room=999999999", "Room: Select a valid choice."),
    ("subscription=-1", "Subscription: Select a valid choice."),
    ("window=5y", "Window: Select a valid choice. 5y is not one of the available choices."),
])
def test_a_bad_filter_says_what_is_wrong(staff_client: Client, reports: Reports, query: str, message: str) -> None:
    response = staff_client.get(f"/reports/?{query}")
    assert response.status_code == 200
    assert message in response.content.decode()
    assert response.context["figures"] is None and "Fix the filters above" in response.content.decode()


def test_a_subscription_of_another_room_is_refused(staff_client: Client, reports: Reports) -> None:
    response = staff_client.get(f"/reports/?room={reports.payments.pk}&subscription={reports.fast.pk}")
    assert "Subscription fast is not in room payments" in response.content.decode()


def test_before_the_first_run_the_page_says_how_to_compute_the_reports(staff_client: Client) -> None:
    html = staff_client.get("/reports/").content.decode()
    assert "No report yet" in html and "make report" in html and "Refresh now" in html
    assert "<svg" not in html


def test_a_room_without_report_rows_says_so(staff_client: Client, reports: Reports) -> None:
    quiet = make_room(name="quiet")
    html = staff_client.get(f"/reports/?room={quiet.pk}").content.decode()
    assert "No report rows for room quiet" in html and "No report yet" not in html


def test_the_figures_fragment_holds_the_charts_only(staff_client: Client, reports: Reports) -> None:
    response = staff_client.get(f"/reports/?room={reports.orders.pk}", HTTP_HX_REQUEST="true",
                                HTTP_HX_TARGET="figures")
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="figures"') and "<svg" in html
    assert "progress" not in response.context and 'id="progress"' not in html


def test_the_filter_form_swaps_the_figures_and_keeps_the_url(staff_client: Client, reports: Reports) -> None:
    html = staff_client.get("/reports/").content.decode()
    assert 'hx-get="/reports/" hx-target="#figures" hx-swap="outerHTML" hx-push-url="true"' in html
    assert '<option value="7d" selected>last 7 days</option>' in html
