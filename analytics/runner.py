"""Run the report jobs from Django: their configuration from settings and DATABASES, in this process or a child.

`manage.py run_reports` runs them here (this process is the Spark driver); the Celery task
(analytics/tasks.py) in a child process, so a worker never hosts a JVM. Asking for a run and
following it is analytics/runs.py.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
from datetime import datetime
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from analytics import archive
from analytics.jobs.config import Database, JobConfig
from analytics.models import ArchiveRun

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
    """Refresh the hours changed since the last run every `every_s`, in one Spark session, until `stop` is set.

    Each refresh is an incremental run (analytics/jobs/main.py); a run another process has in
    progress is skipped, a failed one logged (its report_runs row keeps the error), and the loop goes on.
    """
    from analytics.jobs.main import run_reports as run  # noqa: PLC0415 - imports PySpark
    from analytics.jobs.session import LazySession  # noqa: PLC0415 - imports PySpark
    from analytics.jobs.store import RunInProgress  # noqa: PLC0415

    config = job_config(master)
    spark = LazySession(config)
    try:
        while not stop.is_set():
            started = time.monotonic()
            try:
                log.info("%s", run(spark, config))
            except RunInProgress as busy:
                log.info("refresh skipped: %s", busy)
            except Exception as error:  # noqa: BLE001 - logged; the next refresh tries again
                log.warning("report refresh failed: %s: %s", type(error).__name__, error)
            stop.wait(max(0.0, every_s - (time.monotonic() - started)))
    finally:
        spark.stop()


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
