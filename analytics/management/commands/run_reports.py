"""Recompute the report tables from the log tables with Spark (docs/analytics.md)."""

from __future__ import annotations

import logging
import signal
import threading
from datetime import datetime

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.dateparse import parse_datetime

from analytics import runner
from analytics.jobs.hours import UTC
from analytics.jobs.store import RunInProgress, RunSummary

FOLLOW_EVERY_S = 30.0
log = logging.getLogger("dovecote.analytics")


def moment(text: str) -> datetime:
    value = parse_datetime(text)
    if value is None:
        raise ValueError(f"not an ISO 8601 time: {text!r}")
    return value if value.tzinfo else value.replace(tzinfo=UTC)


class Command(BaseCommand):
    help = ("Recompute the report tables: the hours changed since the last run, or every hour with --full. Where "
            "run_reports --follow runs, it runs the run (its Spark driver is warm) and this command waits for it.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--since", type=moment,
                            help="recompute every hour from this one (ISO 8601, UTC if no zone); keeps the watermark")
        parser.add_argument("--until", type=moment, help="recompute every hour before this time")
        parser.add_argument("--master", help="Spark master URL (default DOVECOTE_SPARK_MASTER, local[*]); the run "
                                             "is then this process's even where a follower runs")
        parser.add_argument("--full", action="store_true", help="every hour, not only those changed")
        parser.add_argument("--follow", action="store_true",
                            help="keep one Spark session and refresh the changed hours every --every seconds "
                                 "until SIGTERM or Ctrl-C")
        parser.add_argument("--every", type=float, default=FOLLOW_EVERY_S,
                            help=f"seconds between two refreshes with --follow (default {FOLLOW_EVERY_S:g})")

    def handle(self, *args: object, since: datetime | None, until: datetime | None, master: str | None,
               full: bool, follow: bool, every: float, **options: object) -> None:
        if follow:
            if since or until or full:
                raise CommandError("--follow refreshes the changed hours: it takes no --since, --until or --full")
            if every <= 0:
                raise CommandError(f"--every must be a number of seconds above 0, not {every:g}")
            self.follow(every, master)
            return
        if master is None and (asked := runner.run_by_follower(since=since, until=until, full=full)) is not None:
            if asked.status == asked.Status.FAILED:
                raise CommandError(f"report run {asked.pk} failed in run_reports --follow: {asked.error}")
            seconds = asked.duration(asked.finished_at).total_seconds() if asked.finished_at else 0.0
            summary = RunSummary(asked.pk, asked.mode, asked.scope, asked.rows_written or 0, asked.hours_processed or 0,
                                 seconds)
            self.stdout.write(f"{summary}, run by run_reports --follow")
            return
        try:
            summary = runner.run_reports(since=since, until=until, full=full, master=master)
        except RunInProgress as busy:
            self.stderr.write(f"skipped: {busy}")
            return
        except Exception as error:
            raise CommandError(f"report run failed: {type(error).__name__}: {error}") from error
        self.stdout.write(str(summary))

    def follow(self, every: float, master: str | None) -> None:
        """Refresh until SIGTERM or SIGINT, which end the loop once the refresh under way is published."""
        stop = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
        if not runner.reports_supported():  # the embedded demo (SQLite): idle, so `make run` keeps going
            log.warning("not following: the report jobs read PostgreSQL over JDBC (set DATABASE_URL)")
            stop.wait()
            return
        log.info("following: refreshing the changed hours every %g s", every)
        runner.follow_reports(every, stop, master=master)
        log.info("stopped following")
