"""The Reports page's "Refresh now": one report task per request, never a second run, and a panel that follows it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import TYPE_CHECKING
from unittest import mock

import pytest
import redis
from django.conf import settings
from django.test import Client
from django.utils import timezone
from kombu.exceptions import OperationalError

from analytics.models import HEARTBEAT_TIMEOUT, WORKER_PATIENCE, ReportRun
from analytics.runs import Refresh, RunState, report_progress, request_report_run

if TYPE_CHECKING:
    from django.contrib.auth.models import User

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "progress"}


@pytest.fixture
def delay() -> Iterator[mock.MagicMock]:
    with mock.patch("analytics.tasks.run_reports.delay") as patched:
        yield patched


def panel(client: Client, **params: str) -> str:
    response = client.get("/reports/", params, **HTMX)
    assert response.status_code == 200
    return response.content.decode()


def test_refresh_puts_one_report_task_on_the_celery_broker(staff_client: Client) -> None:
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    broker.delete("celery")
    try:
        response = staff_client.post("/reports/refresh/")
        queued = [json.loads(frame)["headers"]["task"] for frame in broker.lrange("celery", 0, -1)]
    finally:
        broker.delete("celery")  # no worker of a later test may start a JVM for it

    assert response.status_code == 302 and response["Location"] == "/reports/"
    assert queued == ["analytics.tasks.run_reports"]
    page = staff_client.get("/reports/").content.decode()
    assert "Report run requested" in page and "waiting for a Celery worker" in page


def test_with_htmx_the_button_swaps_in_a_panel_that_polls_while_waiting_for_a_worker(
        staff_client: Client, delay: mock.MagicMock) -> None:
    html = staff_client.post("/reports/refresh/", **HTMX).content.decode()

    delay.assert_called_once_with()
    assert html.lstrip().startswith('<section id="progress"') and "<html" not in html
    assert 'data-state="waiting"' in html and 'hx-trigger="every 1s"' in html
    assert "Report run requested" in html and "waiting for a Celery worker" in html
    assert "Refresh now</button>" in html and " disabled>Refresh now" in html


def test_a_second_click_while_waiting_starts_nothing(staff_client: Client, delay: mock.MagicMock) -> None:
    staff_client.post("/reports/refresh/", **HTMX)
    html = staff_client.post("/reports/refresh/", **HTMX).content.decode()
    assert delay.call_count == 1
    assert "already requested and waiting for a worker" in html


def test_no_task_is_enqueued_while_a_run_is_running(staff_client: Client, delay: mock.MagicMock) -> None:
    ReportRun.objects.create(mode="incremental", progress=30, stage="computing report_latency")  # heartbeat: now

    html = staff_client.post("/reports/refresh/", **HTMX).content.decode()

    delay.assert_not_called()
    assert "already in progress: no second run was started" in html
    assert 'data-state="running"' in html and 'hx-trigger="every 1s"' in html
    assert "computing report_latency" in html and '<progress max="100" value="30"' in html


def test_a_run_a_worker_has_taken_but_not_yet_begun_also_counts_as_in_progress(
        staff_client: Client, delay: mock.MagicMock) -> None:
    ReportRun.objects.create(mode="full", status="succeeded", progress=100)
    ReportRun.objects.create(mode="incremental", stage="starting")  # taken, Spark starting
    html = staff_client.post("/reports/refresh/", **HTMX).content.decode()
    delay.assert_not_called()
    assert 'data-state="starting"' in html and 'hx-trigger="every 1s"' in html


def test_a_run_left_running_by_a_dead_process_is_shown_stopped_and_a_new_one_can_start(
        staff_client: Client, delay: mock.MagicMock) -> None:
    silent_since = timezone.now() - HEARTBEAT_TIMEOUT - timedelta(seconds=1)
    ReportRun.objects.create(mode="incremental", progress=50, stage="computing report_errors",
                             heartbeat_at=silent_since)

    html = panel(staff_client)
    assert 'data-state="abandoned"' in html and "its heartbeat stopped" in html
    assert "hx-trigger" not in html

    staff_client.post("/reports/refresh/", **HTMX)
    delay.assert_called_once_with()


def test_the_panel_shows_a_finished_run_and_stops_polling(staff_client: Client) -> None:
    run = ReportRun.objects.create(mode="full", status="succeeded", progress=100, stage="done", hours_processed=168,
                                   rows_written=5_432)
    ReportRun.objects.filter(pk=run.pk).update(finished_at=run.started_at + timedelta(seconds=42))

    html = panel(staff_client)

    assert 'data-state="succeeded"' in html and "hx-trigger" not in html
    assert '<span class="badge badge-succeeded" data-run-status>succeeded</span>' in html
    assert "<dd>168</dd>" in html and "<dd>5432</dd>" in html and "<dd>42 s</dd>" in html


def test_the_panel_shows_why_a_run_failed(staff_client: Client) -> None:
    ReportRun.objects.create(mode="incremental", status="failed", progress=30, finished_at=timezone.now(),
                             error="Py4JJavaError: connection refused")
    html = panel(staff_client)
    assert 'data-state="failed"' in html and "hx-trigger" not in html
    assert "Py4JJavaError: connection refused" in html


def test_a_poll_that_sees_the_run_succeed_reloads_the_page_for_the_new_figures(staff_client: Client) -> None:
    ReportRun.objects.create(mode="full", status="succeeded", progress=100, finished_at=timezone.now())
    assert staff_client.get("/reports/", {"watch": "1"}, **HTMX)["HX-Refresh"] == "true"
    assert "HX-Refresh" not in staff_client.get("/reports/", **HTMX)  # on first load: nothing to follow


def test_the_progress_fragment_reads_no_report_table(staff_client: Client) -> None:
    response = staff_client.get("/reports/", **HTMX)
    assert "figures" not in response.context and "<svg" not in response.content.decode()


def test_a_request_is_taken_by_the_first_run_that_starts_after_it() -> None:
    now = timezone.now()
    earlier = ReportRun.objects.create(mode="full", status="succeeded", progress=100, finished_at=now)
    with mock.patch("analytics.tasks.run_reports.delay"):
        assert request_report_run(now) == Refresh.REQUESTED
    assert report_progress(now).state == RunState.WAITING
    assert report_progress(now).run == earlier

    started = ReportRun.objects.get(status="requested")  # a worker's run takes the request, and ends
    ReportRun.objects.filter(pk=started.pk).update(status="succeeded", progress=100, started_at=now, finished_at=now)

    progress = report_progress(now)
    assert (progress.state, progress.run, progress.requested_at) == (RunState.SUCCEEDED, started, None)


def test_a_request_no_worker_takes_is_shown_stalled_and_may_be_made_again(delay: mock.MagicMock) -> None:
    now = timezone.now()
    assert request_report_run(now - WORKER_PATIENCE - timedelta(seconds=1)) == Refresh.REQUESTED

    assert report_progress(now).state == RunState.STALLED
    assert request_report_run(now) == Refresh.REQUESTED
    assert delay.call_count == 2 and report_progress(now).state == RunState.WAITING


def test_a_stalled_request_says_to_check_the_worker(staff_client: Client, delay: mock.MagicMock) -> None:
    request_report_run(timezone.now() - timedelta(minutes=6))
    html = panel(staff_client)
    assert 'data-state="stalled"' in html and "Is a Celery worker running" in html and "hx-trigger" not in html


def test_when_the_broker_is_down_the_request_is_forgotten(staff_client: Client, delay: mock.MagicMock) -> None:
    delay.side_effect = OperationalError("Error 111 connecting to 127.0.0.1:6379")
    html = staff_client.post("/reports/refresh/", **HTMX).content.decode()
    assert "The Celery broker did not answer" in html and 'data-state="never"' in html
    assert report_progress(timezone.now()).state == RunState.NEVER


def test_the_runs_state_needs_no_cache_when_it_is_down_the_page_shows_the_runs_and_a_run_can_be_asked_for(
        staff_client: Client, delay: mock.MagicMock) -> None:
    ReportRun.objects.create(mode="full", status="succeeded", progress=100, finished_at=timezone.now())
    with mock.patch("django.core.cache.cache.get", side_effect=ConnectionError("cache down")), \
            mock.patch("django.core.cache.cache.add", side_effect=ConnectionError("cache down")):
        page = panel(staff_client)
        html = staff_client.post("/reports/refresh/", **HTMX).content.decode()
    assert 'data-state="succeeded"' in page
    assert "Report run requested" in html and 'data-state="waiting"' in html
    delay.assert_called_once_with()


def test_without_postgresql_the_page_says_the_reports_need_it_and_starts_nothing(
        staff_client: Client, delay: mock.MagicMock) -> None:
    with mock.patch("analytics.runner.reports_supported", return_value=False):
        page = staff_client.get("/reports/").content.decode()
        response = staff_client.post("/reports/refresh/")
        flashed = staff_client.get("/reports/").content.decode()

    delay.assert_not_called()
    assert "No reports in the demo." in page and "run on Spark" in page and 'data-state="unsupported"' in page
    assert "use this button" not in page  # it is off here
    assert ' disabled title="The report jobs need Spark and PostgreSQL' in page
    assert "hx-trigger" not in page.split('id="progress"')[1].split("</section>")[0]
    assert response.status_code == 302 and "this instance runs on SQLite, so no run was started" in flashed


def test_the_task_itself_skips_without_postgresql() -> None:
    from analytics.tasks import run_reports

    with mock.patch("analytics.runner.reports_supported", return_value=False), \
            mock.patch("analytics.runner.run_reports_in_child") as child:
        assert run_reports() == "skipped"
    child.assert_not_called()


def test_a_plain_post_comes_back_to_the_filtered_page(staff_client: Client, delay: mock.MagicMock) -> None:
    response = staff_client.post("/reports/refresh/?room=3&window=24h&watch=1")
    assert response.status_code == 302 and response["Location"] == "/reports/?room=3&window=24h"


def test_only_staff_can_ask_for_a_run(client: Client, outsider: User, delay: mock.MagicMock) -> None:
    assert client.post("/reports/refresh/")["Location"] == "/login/?next=/reports/refresh/"
    assert client.post("/reports/refresh/", **HTMX)["HX-Redirect"].startswith("/login/")
    client.force_login(outsider)
    assert client.post("/reports/refresh/").status_code == 403
    delay.assert_not_called()
