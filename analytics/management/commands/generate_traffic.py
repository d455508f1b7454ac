"""Fill the log tables with synthetic delivery history (analytics/synthetic_history/)."""

from __future__ import annotations

import time
from collections import Counter
from datetime import datetime

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analytics import synthetic_history
from analytics.management.commands.run_reports import moment


class Command(BaseCommand):
    help = "Write N synthetic messages published over D days, with every delivery, send and attempt."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--messages", type=int, required=True, help="messages to publish")
        parser.add_argument("--days", type=float, default=7.0, help="spread over this many days (default 7)")
        parser.add_argument("--seed", type=int, default=1, help="random seed: the same seed, the same history")
        parser.add_argument("--end", type=moment, help="the history ends here (ISO 8601; default: now)")

    def handle(self, *args: object, messages: int, days: float, seed: int, end: datetime | None,
               **options: object) -> None:
        if messages < 1 or days <= 0:
            raise CommandError("--messages must be 1 or more and --days more than 0")
        started = time.monotonic()
        verbosity = int(options.get("verbosity", 1))

        def report(counts: Counter[str]) -> None:
            if verbosity > 1:
                self.stderr.write(f"{counts['messages']} messages, {counts['attempts']} attempts, "
                                  f"{time.monotonic() - started:.1f} s")

        try:
            summary = synthetic_history.generate(messages, days, seed=seed, end=end, progress=report)
        except RuntimeError as error:
            raise CommandError(str(error)) from error
        statuses = ", ".join(f"{status} {count}" for status, count in sorted(summary.statuses.items()))
        self.stdout.write(
            f"{summary.messages} messages, {summary.deliveries} deliveries ({statuses}), {summary.sends} sends, "
            f"{summary.attempts} attempts in {time.monotonic() - started:.1f} s")
