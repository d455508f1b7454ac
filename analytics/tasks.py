"""Celery tasks of the analytics app."""

from __future__ import annotations

import logging

from celery import shared_task

from analytics import actions

log = logging.getLogger("dovecote.analytics")


@shared_task(ignore_result=True, acks_late=False)
def run_reports(full: bool = False) -> str:
    """Run the report jobs (beat: hourly; the UI's refresh button) in a child process."""
    if not actions.reports_supported():  # embedded mode (make demo) runs on SQLite: no JDBC source
        log.info("report run skipped: the report jobs read PostgreSQL (set DATABASE_URL)")
        return "skipped"
    output = actions.run_reports_in_child(full=full)
    log.info("%s", output)
    return output
