"""Celery tasks of the analytics app."""

from __future__ import annotations

import logging

from celery import shared_task
from django.utils import timezone

from analytics import runner
from analytics.models import ReportRun

log = logging.getLogger("dovecote.analytics")


@shared_task(ignore_result=True, acks_late=False)
def run_reports(full: bool = False) -> str:
    """Run the report jobs (beat: hourly; the console's Refresh now) in a child process, unless one runs already.

    The child's run takes the request the console left, if there is one (analytics/jobs/store.py).
    Where `run_reports --follow` runs, it is left to it: it takes the request at once and
    refreshes the changed hours every 30 s anyway.
    """
    if not runner.reports_supported():  # embedded mode (make demo) runs on SQLite: no JDBC source
        log.info("report run skipped: the report jobs read PostgreSQL (set DATABASE_URL)")
        return "skipped"
    if runner.follower_is_live():
        log.info("report run left to run_reports --follow")  # a request waits for it; the hours it refreshes itself
        return "left to the follower"
    if alive := ReportRun.objects.alive(timezone.now()).first():
        log.info("report run skipped: %s is in progress", alive)  # no JVM started only to be turned away
        return "skipped"
    output = runner.run_reports_in_child(full=full)
    log.info("%s", output)
    return output


@shared_task(ignore_result=True, acks_late=False)
def archive() -> str:
    """Archive and remove the messages past their retention (beat: hourly), in a child process (it runs Spark)."""
    if not runner.reports_supported():
        log.info("archive run skipped: the archive job reads PostgreSQL (set DATABASE_URL)")
        return "skipped"
    output = runner.run_command_in_child("archive")
    log.info("%s", output)
    return output
