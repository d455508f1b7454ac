"""Move settled messages past their room's retention to the Parquet archive, then out of PostgreSQL."""

from __future__ import annotations

import argparse

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from analytics import archive, runner


class Command(BaseCommand):
    help = ("Archive settled messages older than their room's retention to DOVECOTE_ARCHIVE_URL (Parquet, "
            "with Spark), then remove them from PostgreSQL (docs/analytics.md#retention-and-the-archive).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="print what would move, and change nothing")
        parser.add_argument("--master", help="Spark master URL (default DOVECOTE_SPARK_MASTER, local[*])")
        # Tests only: SIGKILL this process right after the first batch's Parquet write (a crash before the delete).
        parser.add_argument("--kill-after-write", action="store_true", help=argparse.SUPPRESS)

    def handle(self, *args: object, dry_run: bool, master: str | None, kill_after_write: bool,
               **options: object) -> None:
        if not runner.reports_supported():
            raise CommandError("the archive job reads PostgreSQL over JDBC: set DATABASE_URL")
        if dry_run:
            self.stdout.write(str(archive.plan(timezone.now())))
            return
        try:
            run = runner.run_archive(master=master, kill_after_write=kill_after_write)
        except archive.ArchiveInProgress as busy:
            self.stderr.write(f"skipped: {busy}")
            return
        except Exception as error:
            raise CommandError(f"archive run failed: {type(error).__name__}: {error}") from error
        self.stdout.write(f"archive run {run.pk}: {run.messages} message(s) in {run.batches} batch(es), "
                          f"{run.rows} row(s) removed, {run.discarded} batch(es) discarded, to {run.url}")
