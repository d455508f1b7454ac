"""The dashboard: the last hour's figures, throughput per minute, the subscriptions failing most."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from unittest import mock

import pytest
from django.test import Client
from django.utils import timezone

from delivery.models import Delivery
from tests.factories import make_delivery, make_message, make_room, make_subscription
from tests.report_rows import add_hourly
from tests.ui_world import World, add_attempt, build_world

pytestmark = pytest.mark.django_db

HOUR = timedelta(hours=1)


@pytest.fixture
def world() -> World:
    return build_world()


def test_the_figures_count_the_last_hour(staff_client: Client, world: World) -> None:
    old = make_message(world.room, created_at=timezone.now() - timedelta(hours=2))
    make_delivery(old, world.push, status="dead_lettered")
    Delivery.objects.filter(message=old).update(updated_at=timezone.now() - timedelta(hours=2))

    stats = staff_client.get("/").context["last_hour"].stats

    assert stats == {"published": 3, "delivered": 2, "dead_lettered": 1, "retrying_now": 1, "retries": 2, "resent": 0,
                     "unroutable": 0}


def test_the_cards_and_the_chart_poll_as_one_fragment(staff_client: Client, world: World) -> None:
    page = staff_client.get("/").content.decode()
    assert 'id="last-hour" class="last-hour" aria-label="The last hour" hx-get="/" hx-trigger="every 5s"' in page

    fragment = staff_client.get("/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="last-hour")

    assert "last_hour" in fragment.context and "failing" not in fragment.context
    html = fragment.content.decode()
    assert '<div class="card-value" data-stat="published">3</div>' in html and "<svg" in html


def test_throughput_has_a_bar_per_minute_and_the_cards_count_the_same_bars(staff_client: Client, world: World) -> None:
    last_hour = staff_client.get("/").context["last_hour"]
    chart = last_hour.throughput
    assert len(chart.bars) == 60
    assert chart.total_published == sum(bar.published for bar in chart.bars) == last_hour.stats["published"] == 3
    assert chart.total_delivered == sum(bar.delivered for bar in chart.bars) == last_hour.stats["delivered"] == 2


def test_the_window_is_the_60_minutes_up_to_now_for_the_cards_and_the_chart(
        staff_client: Client, world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    now = timezone.now()
    monkeypatch.setattr("console.dashboard.timezone", SimpleNamespace(now=lambda: now))  # no minute ticks by
    first_minute = now.replace(second=0, microsecond=0) - timedelta(minutes=59)
    before = make_message(world.room, created_at=first_minute - timedelta(seconds=1))
    make_delivery(before, world.push, status="delivered")
    Delivery.objects.filter(message=before).update(updated_at=before.created_at)
    inside = make_message(world.room, created_at=first_minute)
    make_delivery(inside, world.push, status="delivered")
    Delivery.objects.filter(message=inside).update(updated_at=inside.created_at)

    last_hour = staff_client.get("/").context["last_hour"]

    assert last_hour.stats["published"] == last_hour.throughput.total_published == 4
    assert last_hour.stats["delivered"] == last_hour.throughput.total_delivered == 3
    assert last_hour.throughput.bars[0].published == last_hour.throughput.bars[0].delivered == 1


def test_the_subscriptions_failing_most_come_first_with_their_last_error(staff_client: Client, world: World) -> None:
    other = make_delivery(make_message(world.room), world.pull, status="retrying")
    add_attempt(other, 1, "lease_expired", None, "lease ran out")
    add_attempt(other, 2, "success", None, "")
    stale = make_delivery(make_message(world.room), world.pull)
    add_attempt(stale, 1, "failure", 500, "old", at=timezone.now() - timedelta(hours=3))

    response = staff_client.get("/")

    assert [(s.name, s.failures) for s in response.context["failing"]] == [("billing", 3), ("warehouse", 1)]
    assert "HTTP 503" in response.content.decode()


def test_the_reports_panel_charts_success_per_room_over_the_newest_24_report_hours(staff_client: Client) -> None:
    newest = datetime(2026, 5, 4, 12, tzinfo=UTC)  # in the past: the panel follows the newest report hour
    orders, payments = make_room(name="orders"), make_room(name="payments")
    billing, ledger = make_subscription(orders, name="billing"), make_subscription(payments, name="ledger")
    add_hourly(orders.pk, billing.pk, newest, delivered=90, dead_lettered=10, expired=0)
    add_hourly(orders.pk, billing.pk, newest - 23 * HOUR, delivered=100, dead_lettered=0, expired=0)
    add_hourly(orders.pk, billing.pk, newest - 24 * HOUR, delivered=0, dead_lettered=500, expired=0)  # too old
    add_hourly(payments.pk, ledger.pk, newest - HOUR, delivered=15, dead_lettered=0, expired=5)

    response = staff_client.get("/")
    panel = response.context["reports"]
    html = response.content.decode()

    assert panel.end == newest + HOUR
    assert [(room.name, room.rate, room.settled) for room in panel.rooms] == [("orders", "95%", 200),
                                                                             ("payments", "75%", 20)]
    assert len(panel.rooms[0].chart.slots) == 24 and panel.rooms[0].chart.slots[-1].title.startswith("2026-05-04 12:00")
    assert html.count('class="chart line-chart sparkline"') == 2
    assert f'href="/reports/?room={orders.pk}">orders</a>' in html and 'href="/reports/">Reports</a>' in html


def test_before_any_report_the_panel_points_to_the_reports_page(staff_client: Client) -> None:
    html = staff_client.get("/").content.decode()
    assert "No report has been computed yet" in html and 'href="/reports/">Reports</a>' in html


def test_in_the_demo_the_panel_says_why_there_are_no_reports_and_what_to_run(staff_client: Client) -> None:
    with mock.patch("analytics.runner.reports_supported", return_value=False):  # the demo runs on SQLite
        html = staff_client.get("/").content.decode()

    assert "No report has been computed yet" not in html
    assert "No reports in this demo: the report jobs run on Spark" in html and "<code>make report</code>" in html


def test_a_dashboard_poll_reads_no_report_table(staff_client: Client, world: World) -> None:
    response = staff_client.get("/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="last-hour")
    assert "reports" not in response.context


def test_the_worker_and_beat_last_seen_and_the_outbox_backlog_are_shown(staff_client: Client, world: World) -> None:
    from django.core.cache import cache

    from dovecote import heartbeats

    for role in heartbeats.ROLES:
        cache.delete(heartbeats.KEY.format(role=role))
    heartbeats.record("worker", "celery@box", now=time.time() - 2)
    waiting = make_message(world.room, created_at=timezone.now() - timedelta(seconds=90))
    make_delivery(waiting, world.push, status="pending")
    Delivery.objects.filter(message=waiting).update(created_at=timezone.now() - timedelta(seconds=90))

    fragment = staff_client.get("/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="processes")

    page = fragment.content.decode()
    assert 'data-process="worker">alive<' in page and "last seen 2 s ago · celery@box" in page
    assert 'data-process="beat">never seen<' in page
    processes = fragment.context["processes"]
    assert processes.outbox.pending == Delivery.objects.filter(status="pending").count() >= 1
    assert processes.outbox.oldest_age_s >= 90
    assert "last_hour" not in fragment.context
    assert 'id="processes"' in staff_client.get("/").content.decode()
