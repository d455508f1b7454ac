"""Start report runs from Django: the job's configuration comes from settings and DATABASES.

The UI's "Refresh now" asks a worker for a run (`request_report_run`) and follows it (`report_progress`).
"""

from __future__ import annotations

import logging
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.db.models.expressions import RawSQL
from kombu.exceptions import OperationalError

from analytics.jobs.config import Database, JobConfig
from analytics.jobs.store import RUN_LOCK
from analytics.models import ReportRun

if TYPE_CHECKING:
    from analytics.jobs.main import RunSummary

CHILD_TIMEOUT_S = 3 * 3600
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
    )


def run_reports(*, since: datetime | None = None, until: datetime | None = None, full: bool = False,
                master: str | None = None) -> RunSummary:
    """Run the report jobs in this process, as the Spark driver (the JVM starts only if there is work)."""
    from pyspark.sql import SparkSession

    from analytics.jobs.main import run_reports as run
    from analytics.jobs.session import LazySession

    config = job_config(master)
    if active := SparkSession.getActiveSession():  # a session this process already runs (the tests')
        return run(lambda: active, config, since=since, until=until, full=full)
    spark = LazySession(config)
    try:
        return run(spark, config, since=since, until=until, full=full)
    finally:
        spark.stop()


def run_reports_in_child(*, full: bool = False) -> str:
    """Run `manage.py run_reports` in a child process, so the caller never hosts a JVM; return its output."""
    command = [sys.executable, str(settings.BASE_DIR / "manage.py"), "run_reports", *(["--full"] if full else [])]
    done = subprocess.run(command, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, cwd=settings.BASE_DIR,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"run_reports exited with {done.returncode}: {done.stderr.strip()[-2000:]}")
    return done.stdout.strip()


# ---- the UI's refresh button -------------------------------------------------------------------------

# A request waits in the cache under the database and the id of the newest run when it was made: the
# first run with a higher id picked it up. One key per run id, so two clicks at once make one request.
REQUEST_KEY = "analytics:report-run-requested:{database}:after:{run}"
REQUEST_TTL_S = 24 * 3600
WORKER_PATIENCE = timedelta(minutes=5)  # a request no worker took by then is shown as stalled
# Whether a report run holds its advisory lock on this database (analytics/jobs/store.py): the only
# sure sign that a run is alive. A bigint key shows in pg_locks as classid (high half) and objid (low).
RUN_LOCK_HELD = """EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND ((classid::bigint << 32) | objid::bigint) = %s)"""


class RunState(StrEnum):
    UNSUPPORTED = "unsupported"  # not PostgreSQL (embedded mode): the jobs cannot run here
    NEVER = "never"  # no run yet, none requested
    WAITING = "waiting"  # requested, no worker has started it yet
    STALLED = "stalled"  # requested WORKER_PATIENCE ago and still not started
    STARTING = "starting"  # a run holds the lock but has not recorded itself yet
    RUNNING = "running"
    ABANDONED = "abandoned"  # recorded as running, but no process holds the lock: it died
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@dataclass(frozen=True)
class Progress:
    """What the report runs are doing: the newest run and any request waiting for a worker."""

    state: RunState
    run: ReportRun | None = None
    requested_at: datetime | None = None

    @property
    def is_live(self) -> bool:
        """Whether the state will change by itself soon (a page should keep polling)."""
        return self.state in (RunState.WAITING, RunState.STARTING, RunState.RUNNING)

    @property
    def can_request(self) -> bool:
        """Whether asking for a run now would start one."""
        return self.state not in (RunState.UNSUPPORTED, RunState.WAITING, RunState.STARTING, RunState.RUNNING)


class Refresh(StrEnum):
    REQUESTED = "requested"
    UNSUPPORTED = "unsupported"
    IN_PROGRESS = "in progress"
    ALREADY_REQUESTED = "already requested"
    UNREACHABLE = "unreachable"  # the Celery broker or the cache did not answer


def reports_supported() -> bool:
    """Return whether the report jobs can run on this database (they read PostgreSQL over JDBC)."""
    return connection.vendor == "postgresql"


def newest_run() -> tuple[ReportRun | None, bool]:
    """Return the newest run and whether a run holds the lock (one statement, when there is a run)."""
    run = ReportRun.objects.annotate(lock_held=RawSQL(RUN_LOCK_HELD, [RUN_LOCK])).first()
    if run is not None:
        return run, run.lock_held
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {RUN_LOCK_HELD}", [RUN_LOCK])
        return None, cursor.fetchone()[0]


def report_progress(now: datetime) -> Progress:
    """Say what the report runs are doing, for the UI's progress panel (one or two queries, a cache read)."""
    if not reports_supported():
        return Progress(RunState.UNSUPPORTED)
    run, locked = newest_run()
    try:
        requested_at = cache.get(request_key(run))
    except Exception:  # an unreachable cache must not take the page down: the run's record still shows
        log.warning("the cache did not answer: a waiting report request cannot be seen", exc_info=True)
        requested_at = None
    return Progress(run_state(run, locked, requested_at, now), run, requested_at)


def run_state(run: ReportRun | None, locked: bool, requested_at: datetime | None, now: datetime) -> RunState:
    """Decide the state: a held lock first, then a request no run has taken yet, then the newest run's record."""
    if locked:
        return RunState.RUNNING if run is not None and run.is_running else RunState.STARTING
    if requested_at is not None:
        return RunState.WAITING if now - requested_at < WORKER_PATIENCE else RunState.STALLED
    if run is None:
        return RunState.NEVER
    return RunState.ABANDONED if run.is_running else RunState(run.status)


def request_report_run(now: datetime) -> Refresh:
    """Ask a worker for a report run, unless one is running or already asked for."""
    progress = report_progress(now)
    refused = {RunState.UNSUPPORTED: Refresh.UNSUPPORTED, RunState.RUNNING: Refresh.IN_PROGRESS,
               RunState.STARTING: Refresh.IN_PROGRESS, RunState.WAITING: Refresh.ALREADY_REQUESTED}
    if progress.state in refused:
        return refused[progress.state]
    key = request_key(progress.run)
    try:
        if progress.state == RunState.STALLED:
            cache.delete(key)  # no worker took it: ask again
        if not cache.add(key, now, REQUEST_TTL_S):
            return Refresh.ALREADY_REQUESTED  # another click got there first
    except Exception:
        log.warning("the cache did not answer: no report run requested", exc_info=True)
        return Refresh.UNREACHABLE
    from analytics import tasks  # tasks imports this module

    try:
        tasks.run_reports.delay()
    except OperationalError:
        log.warning("the Celery broker did not answer: no report run requested", exc_info=True)
        cache.delete(key)
        return Refresh.UNREACHABLE
    return Refresh.REQUESTED


def request_key(newest: ReportRun | None) -> str:
    return REQUEST_KEY.format(database=connection.settings_dict["NAME"], run=newest.pk if newest is not None else 0)
