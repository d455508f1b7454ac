"""`run_reports --follow` keeps one Spark session and refreshes the changed hours every few seconds: new
traffic shows in the reports without another command, the runs asked for elsewhere are its to run,
and SIGTERM ends it cleanly.

The SIGTERM goes to its whole process group, as honcho stops `make run`'s processes: it reaches the
Spark JVM too, which used to end the command with exit status 1 (the driver's stop could no longer
reach it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from analytics import runner, runs, synthetic_history, tasks
from analytics.models import ReportRun
from tests import workers
from tests.analytics.test_analytics_reports import require_spark

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 300


def published_in_reports() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(sum(published), 0) FROM report_hourly")
        return int(cursor.fetchone()[0])


def published_in_log() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM published_messages WHERE kind = 'publish'")
        return int(cursor.fetchone()[0])


def wait_for(condition, what: str, log: Path, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert process.poll() is None, f"run_reports --follow exited ({process.returncode}):\n{log.read_text()}"
        assert time.monotonic() < deadline, f"{what} not seen in {DEADLINE_S} s:\n{log.read_text()}"
        time.sleep(0.5)


def ask_between_refreshes() -> ReportRun:
    """Ask for a run as the console does; while a refresh runs (every 2 s here) the console says "in progress"."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        try:
            with transaction.atomic():
                return runs.ask(timezone.now())[0]
        except IntegrityError:
            assert time.monotonic() < deadline, f"no moment without a run in {DEADLINE_S} s"
            time.sleep(0.1)


def test_following_refreshes_the_reports_with_new_traffic_and_stops_on_sigterm(tmp_path: Path) -> None:
    require_spark()
    end = datetime.now(UTC) - timedelta(hours=1)
    synthetic_history.generate(200, 0.5, seed=5, end=end)
    log = tmp_path / "follow.log"
    env = {**os.environ, "DATABASE_URL": workers.test_database_url(), "PYTHONUNBUFFERED": "1"}
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, str(ROOT / "manage.py"), "run_reports", "--follow", "--every", "2"],
                                   cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(lambda: published_in_reports() == published_in_log() > 0, "the first refresh", log, process)

        synthetic_history.generate(100, 0.2, seed=6, end=end)  # new traffic, committed: the next refresh takes it
        wait_for(lambda: published_in_reports() == published_in_log(), "the new traffic in the reports", log, process)
        assert "incremental" in log.read_text(), log.read_text()

        # What is asked for elsewhere is the follower's to run, in its warm driver.
        assert runner.follower_is_live()
        assert tasks.run_reports() == "left to the follower"  # beat's run, or the Refresh's: no child, no JVM
        request = ask_between_refreshes()  # the console's Refresh
        wait_for(lambda: ReportRun.objects.get(pk=request.pk).status == ReportRun.Status.SUCCEEDED,
                 f"the console's request (run {request.pk}) run", log, process)
        # The follower logs a run once it has returned, just after the run's row says it succeeded.
        wait_for(lambda: f"report run {request.pk} (incremental" in log.read_text(),
                 f"the follower's log line of run {request.pk}", log, process)
        out = StringIO()
        call_command("run_reports", "--full", stdout=out)  # waits for the follower's run
        [asked] = ReportRun.objects.filter(mode=ReportRun.Mode.FULL).order_by("-id")[:1]
        assert asked.status == ReportRun.Status.SUCCEEDED, (asked.status, asked.error)
        assert out.getvalue().startswith(f"report run {asked.pk} (full, ") and "run by run_reports --follow" in \
            out.getvalue(), out.getvalue()
        wait_for(lambda: f"report run {asked.pk} (full, " in log.read_text(),
                 f"the follower's log line of run {asked.pk}", log, process)
        assert published_in_reports() == published_in_log()
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            raise
    assert process.returncode == 0, log.read_text()
    assert "stopped following" in log.read_text(), log.read_text()
    assert not runner.follower_is_live()  # its lock went with its connection
    # py4j itself may still log its lost connection (with a traceback) when the JVM died mid-command.
