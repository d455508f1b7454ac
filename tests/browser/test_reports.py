"""The Reports page in a real browser: its SVG charts draw, the filters swap them, and Refresh now follows a run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING
from unittest import mock

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from analytics.models import ReportRun
from tests.browser.conftest import Browsing
from tests.browser.scenery import build_scenery

if TYPE_CHECKING:
    from django.contrib.auth.models import User

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def delay() -> Iterator[mock.MagicMock]:
    """The live server runs in this process: record the task instead of handing a worker a Spark run."""
    with mock.patch("analytics.tasks.run_reports.delay") as patched:
        yield patched


def test_the_reports_page_draws_its_charts_and_the_filters_swap_them(browsing: Browsing, owner: User) -> None:
    scenery = build_scenery()
    page = browsing.page
    browsing.log_in("owner", "owner-pass-1")
    expect(page.locator("#report-rooms svg.sparkline")).to_have_count(2)

    page.locator("nav.sidebar").get_by_role("link", name="Reports").click()
    expect(page.locator("h1")).to_have_text("Reports")
    expect(page.locator("#success svg[role=img] path.line-success")).to_have_count(1)
    expect(page.locator("#latency svg.line-chart")).to_have_count(2)  # one per room
    expect(page.locator("#latency svg path.line-p99")).to_have_count(2)
    expect(page.locator("#failures svg rect.bar-error").first).to_be_visible()
    expect(page.locator("#retry-cost svg rect.bar-retries")).to_have_count(2)
    expect(page.locator("#endpoints tbody tr").first).to_contain_text("orders / warehouse")
    assert page.locator("#success [data-figure=success-rate]").inner_text().endswith("%")

    page.locator("select[name=room]").select_option(label="orders")
    page.locator("select[name=window]").select_option(label="last 24 hours")
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#figures .window-note")).to_contain_text("Room orders")
    expect(page).to_have_url(f"{browsing.base_url}/reports/?room={scenery.orders.pk}&subscription=&window=24h")
    expect(page.locator("#latency svg.line-chart")).to_have_count(1)
    expect(page.locator("#success svg rect.slot")).to_have_count(24)
    expect(page.locator("#retry-cost")).to_contain_text("Retry cost per subscription")


def test_refresh_now_waits_for_a_worker_then_follows_the_run_until_it_ends(
        browsing: Browsing, owner: User, delay: mock.MagicMock) -> None:
    page = browsing.page
    browsing.log_in("owner", "owner-pass-1")
    browsing.goto("/reports/")
    expect(page.locator("#figures")).to_contain_text("No report yet")

    page.get_by_role("button", name="Refresh now").click()
    panel = page.locator("#progress")
    expect(panel).to_contain_text("waiting for a Celery worker")
    expect(page.get_by_role("button", name="Refresh now")).to_be_disabled()
    assert delay.call_count == 1

    # A worker's run takes the request and records its progress on the same row.
    run = ReportRun.objects.get(status="requested")
    ReportRun.objects.filter(pk=run.pk).update(status="running", started_at=timezone.now(), heartbeat_at=timezone.now(),
                                               progress=30, stage="computing report_latency")
    expect(panel).to_have_attribute("data-state", "running")
    expect(panel).to_contain_text("computing report_latency")
    ReportRun.objects.filter(pk=run.pk).update(progress=70, stage="computing report_retry_cost")
    expect(panel.locator("[data-run-progress]")).to_have_text("70%")
    ReportRun.objects.filter(pk=run.pk).update(status="failed", error="RuntimeError: the executor was lost")

    expect(panel).to_have_attribute("data-state", "failed")
    expect(panel).to_contain_text("RuntimeError: the executor was lost")
    expect(page.get_by_role("button", name="Refresh now")).to_be_enabled()
    polls = []
    page.on("request", lambda request: polls.append(request.url) if "watch=1" in request.url else None)
    page.wait_for_timeout(2_500)
    assert polls == [], "the panel kept polling after the run ended"


def test_a_run_that_succeeds_while_the_page_follows_it_reloads_the_figures(
        browsing: Browsing, owner: User) -> None:
    page = browsing.page
    browsing.log_in("owner", "owner-pass-1")
    run = ReportRun.objects.create(mode="full", progress=90, stage="swapping the new rows in")
    browsing.goto("/reports/")
    expect(page.locator("#progress")).to_have_attribute("data-state", "running")
    build_scenery()  # the run's rows
    ReportRun.objects.filter(pk=run.pk).update(status="succeeded", progress=100, stage="done")

    expect(page.locator("#success svg path.line-success")).to_have_count(1)
    expect(page.locator("#progress")).to_have_attribute("data-state", "succeeded")
