"""Run the report jobs from Django: their configuration from settings and DATABASES, in this process or a child.

Where `run_reports --follow` runs (Procfile, compose: bin/reports), it runs every report run: its
Spark driver is started and warm, so a run asked for elsewhere (`manage.py run_reports`, the
console's Refresh, beat) is a `requested` report_runs row it takes at once. Where none runs,
`manage.py run_reports` runs the jobs here (this process is the Spark driver) and the Celery task
(analytics/tasks.py) in a child process, so a worker never hosts a JVM. Asking for a run from the
console and following it is analytics/runs.py.
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
import sys
import threading
import time
from datetime import datetime
from typing import TYPE_CHECKING

import psycopg
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.utils import timezone

from analytics import archive
from analytics.jobs.config import Database, JobConfig
from analytics.jobs.store import FOLLOWER_LOCK, HEARTBEAT_S, REQUESTS_CHANNEL
from analytics.models import ArchiveRun, ReportRun

if TYPE_CHECKING:
    from analytics.jobs.store import RunSummary

CHILD_TIMEOUT_S = 3 * 3600
REQUEST_POLL_S = 1.0  # how often the follower looks for a run asked for (a NOTIFY wakes it at once)
ASKER_POLL_S = 0.1  # how often a process asking the follower for a run tries to, then looks at it
# The follower's least pause between two runs, even when a refresh is due: a process asking for a run
# can record its request only while no run is under way (one_active_report_run), and tries every ASKER_POLL_S.
ASKER_GAP_S = 2 * ASKER_POLL_S
STANDBY_POLL_S = 5.0  # how often a second follower tries for the lock
log = logging.getLogger("dovecote.analytics")


def job_config(master: str | None = None) -> JobConfig:
    """Return the report jobs' configuration for this project's database."""
    db = settings.DATABASES["default"]
    if "postgresql" not in db["ENGINE"]:
        raise ImproperlyConfigured("the report jobs read PostgreSQL over JDBC: set DATABASE_URL")
    database = Database(host=db.get("HOST") or "127.0.0.1", port=int(db.get("PORT") or 5432), name=db["NAME"],
                        user=db.get("USER") or "", password=db.get("PASSWORD") or "")
    return JobConfig(
        database=database, master=master or settings.DOVECOTE_SPARK_MASTER,
        driver_memory=settings.DOVECOTE_SPARK_DRIVER_MEMORY, jars=settings.DOVECOTE_SPARK_JARS,
        partitions=settings.DOVECOTE_REPORT_PARTITIONS, fetchsize=settings.DOVECOTE_REPORT_FETCHSIZE,
        class_archives=settings.DOVECOTE_SPARK_CLASS_ARCHIVES,
    )


def run_reports(*, since: datetime | None = None, until: datetime | None = None, full: bool = False,
                master: str | None = None) -> RunSummary:
    """Run the report jobs in this process, as the Spark driver (the JVM starts only if there is work)."""
    # PySpark loads only where a run happens: the web and worker processes import this module too.
    from pyspark.sql import SparkSession  # noqa: PLC0415

    from analytics.jobs.main import run_reports as run  # noqa: PLC0415 - imports PySpark
    from analytics.jobs.session import LazySession  # noqa: PLC0415 - imports PySpark

    config = job_config(master)
    if active := SparkSession.getActiveSession():  # a session this process already runs (the tests')
        return run(lambda: active, config, since=since, until=until, full=full)
    spark = LazySession(config)
    try:
        return run(spark, config, since=since, until=until, full=full)
    finally:
        spark.stop()


def follow_reports(every_s: float, stop: threading.Event, *, master: str | None = None) -> None:
    """Refresh the hours changed since the last run every `every_s` and run what is asked for, until `stop` is set.

    One Spark session serves every run, so each after the first finds the JVM started and its code
    warm: a full run over 2.5 M attempts took 38 s in a fresh driver and 11-12 s in this one. While
    it follows it holds the follower's lock (analytics/jobs/store.py FollowerLock): other processes
    see it and leave their runs to it as requests; a NOTIFY in the request's transaction wakes it at
    once (and it looks every REQUEST_POLL_S, between its refreshes, in any case). A second
    follower stands by until the lock is free. A run another process has in progress is skipped, a
    failed one logged (its report_runs row keeps the error), and the loop goes on. A request is run as
    asked: a refresh due when a request for a full run or a window comes in is refused by the request
    (analytics/jobs/store.py start_run), and the loop runs the request next. Between two runs it
    leaves ASKER_GAP_S free, so a process asking for a run finds a moment to ask even when refreshes
    take longer than `every_s`.
    """
    from analytics.jobs.main import run_reports as run  # noqa: PLC0415 - imports PySpark
    from analytics.jobs.session import LazySession  # noqa: PLC0415 - imports PySpark
    from analytics.jobs.store import FollowerLock, RunInProgress  # noqa: PLC0415

    config = job_config(master)
    spark = LazySession(config)
    lock = FollowerLock(config.database)
    standing_by = False
    next_refresh = time.monotonic()
    try:
        while not stop.is_set():
            try:
                if not lock.acquire():
                    if not standing_by:
                        log.info("another run_reports --follow holds the follower's lock: standing by")
                        standing_by = True
                    stop.wait(STANDBY_POLL_S)
                    continue
                request = lock.waiting_request()
            except psycopg.OperationalError as error:
                log.warning("the follower's connection to the database failed: %s", error)
                stop.wait(REQUEST_POLL_S)
                continue
            if standing_by:
                log.info("took the follower's lock: following")
                standing_by = False
            if request is None and time.monotonic() < next_refresh:
                try:
                    lock.wait_for_request(min(REQUEST_POLL_S, next_refresh - time.monotonic()))
                except psycopg.OperationalError as error:
                    log.warning("the follower's connection to the database failed: %s", error)
                    stop.wait(REQUEST_POLL_S)
                continue
            started = time.monotonic()
            try:
                if request is None:
                    log.info("%s", run(spark, config))
                else:
                    summary = run(spark, config, since=request.since, until=request.until, full=request.full)
                    log.info("%s, as asked", summary)
            except RunInProgress as busy:
                log.info("refresh skipped: %s", busy)
            except Exception as error:  # noqa: BLE001 - logged; the next refresh tries again
                log.warning("report run failed: %s: %s", type(error).__name__, error)
                stop.wait(REQUEST_POLL_S)
            if request is None:
                next_refresh = started + every_s
            next_refresh = max(next_refresh, time.monotonic() + ASKER_GAP_S)
    finally:
        lock.release()
        spark.stop()


def follower_is_live() -> bool:
    """Say whether a `run_reports --follow` holds the follower's lock on this database."""
    if not reports_supported():
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted "
                       "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
                       "AND classid = %s AND objid = %s AND objsubid = 2)", FOLLOWER_LOCK)
        return bool(cursor.fetchone()[0])


def wake_follower() -> None:
    """Tell the follower, if one listens, that a run was asked for (sent when the caller's transaction commits)."""
    if reports_supported():
        with connection.cursor() as cursor:
            cursor.execute(f"NOTIFY {REQUESTS_CHANNEL}")


def run_by_follower(*, since: datetime | None = None, until: datetime | None = None,
                    full: bool = False) -> ReportRun | None:
    """Ask the live follower for this run and wait until it ends; None when no follower is live to take it.

    The request can be made only while no run is under way (one_active_report_run), so it waits for
    the follower's refresh in progress and asks in the pause the follower leaves after it (ASKER_GAP_S).
    The follower runs it as asked; a refresh of its own that comes due meanwhile does not take it
    (analytics/jobs/store.py start_run). If the follower goes away before taking it, the request is
    left for the caller's own run, which takes it; if the caller stops waiting first, it withdraws it.
    While it waits it writes the request's heartbeat every HEARTBEAT_S, as a running run does: if the
    caller dies too (SIGKILL), the next run or request withdraws the request once that heartbeat is
    HEARTBEAT_TIMEOUT_S old, so a request for a full run no one answers never holds back the hourly runs.
    """
    mode = ReportRun.Mode.FULL if full or since or until else ReportRun.Mode.INCREMENTAL
    request = None
    while request is None:
        if not follower_is_live():
            return None
        waiting = ReportRun.objects.filter(status=ReportRun.Status.REQUESTED)
        if (ReportRun.objects.alive(timezone.now()) | waiting).exists():  # ask after it: an INSERT would be refused
            time.sleep(ASKER_POLL_S)
            continue
        try:
            with transaction.atomic():
                ReportRun.objects.retire_abandoned(timezone.now())
                now = timezone.now()
                request = ReportRun.objects.create(
                    status=ReportRun.Status.REQUESTED, mode=mode, window_start=since, window_end=until,
                    requested_at=now, started_at=None, heartbeat_at=now)
                wake_follower()
        except IntegrityError:  # a run started, or was asked for, since: ask after it
            time.sleep(ASKER_POLL_S)
    log.info("asked the follower for report run %s (%s)", request.pk, mode)
    heartbeat = time.monotonic()
    try:
        while True:
            time.sleep(ASKER_POLL_S)
            if time.monotonic() - heartbeat >= HEARTBEAT_S:
                heartbeat = time.monotonic()
                ReportRun.objects.filter(pk=request.pk, status=ReportRun.Status.REQUESTED).update(
                    heartbeat_at=timezone.now())
            request.refresh_from_db()
            if request.status in (ReportRun.Status.SUCCEEDED, ReportRun.Status.FAILED):
                return request
            if request.is_requested and not follower_is_live():
                return None  # the follower stopped before taking it
            if request.is_abandoned(timezone.now()):
                ReportRun.objects.retire_abandoned(timezone.now())
    except BaseException:  # Ctrl-C, a lost connection: a request no one waits for is withdrawn if not yet taken
        with contextlib.suppress(DatabaseError):
            ReportRun.objects.filter(pk=request.pk, status=ReportRun.Status.REQUESTED).delete()
        raise


def run_archive(*, master: str | None = None, kill_after_write: bool = False) -> ArchiveRun:
    """Run the archive job in this process, as the Spark driver (the JVM starts only if a batch is written)."""
    from analytics.jobs.session import LazySession  # noqa: PLC0415 - imports PySpark

    config = job_config(master)
    spark = LazySession(config)
    try:
        return archive.run_archive(archive.spark_writer(spark, config), kill_after_write=kill_after_write)
    finally:
        spark.stop()


def run_reports_in_child(*, full: bool = False) -> str:
    """Run `manage.py run_reports` in a child process, so the caller never hosts a JVM; return its output."""
    return run_command_in_child("run_reports", *(["--full"] if full else []))


def run_command_in_child(name: str, *arguments: str) -> str:
    """Run `manage.py NAME ARGUMENTS` in a child process, so the caller never hosts a JVM; return its output."""
    command = [sys.executable, str(settings.BASE_DIR / "manage.py"), name, *arguments]
    done = subprocess.run(command, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, cwd=settings.BASE_DIR,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{name} exited with {done.returncode}: {done.stderr.strip()[-2000:]}")
    return done.stdout.strip()


def reports_supported() -> bool:
    """Return whether the report jobs can run on this database (they read PostgreSQL over JDBC)."""
    return connection.vendor == "postgresql"
