"""Recompute the report tables from the log tables with Spark (docs/analytics.md)."""

from __future__ import annotations

from datetime import datetime

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.dateparse import parse_datetime

from analytics import runner
from analytics.jobs.hours import UTC
from analytics.jobs.store import RunInProgress


def moment(text: str) -> datetime:
    value = parse_datetime(text)
    if value is None:
        raise ValueError(f"not an ISO 8601 time: {text!r}")
    return value if value.tzinfo else value.replace(tzinfo=UTC)


class Command(BaseCommand):
    help = "Recompute the report tables: the hours changed since the last run, or every hour with --full."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--since", type=moment,
                            help="recompute every hour from this one (ISO 8601, UTC if no zone); keeps the watermark")
        parser.add_argument("--until", type=moment, help="recompute every hour before this time")
        parser.add_argument("--master", help="Spark master URL (default DOVECOTE_SPARK_MASTER, local[*])")
        parser.add_argument("--full", action="store_true", help="every hour, not only those changed")

    def handle(self, *args: object, since: datetime | None, until: datetime | None, master: str | None,
               full: bool, **options: object) -> None:
        try:
            summary = runner.run_reports(since=since, until=until, full=full, master=master)
        except RunInProgress as busy:
            self.stderr.write(f"skipped: {busy}")
            return
        except Exception as error:
            raise CommandError(f"report run failed: {type(error).__name__}: {error}") from error
        self.stdout.write(str(summary))
