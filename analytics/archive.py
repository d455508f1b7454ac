"""The archive job: settled messages past their room's retention go to Parquet, then leave PostgreSQL.

One run, under an advisory lock (one run at a time; a run left `running` by a dead process is
recorded failed by the next):
1. redo every batch left `claimed` by an earlier run, exactly as it was claimed;
2. for each room, page through its removable messages (delivery/retention.py), oldest first, and
   claim each page as a batch (one day of one room, at most DOVECOTE_ARCHIVE_BATCH messages): the
   batch row and one ArchiveClaim per message, in one transaction;
3. for each batch: the Spark job writes its rows of every table, and the report inputs they make,
   under the batch's path, overwriting (analytics/jobs/archive.py); then ONE transaction deletes the
   rows (retention.remove checks the rules again under lock), records a tombstone per message
   (ArchivedMessage), drops the claims and marks the batch done. A message no longer removable
   discards the batch: nothing deleted.
A crash anywhere leaves either a `claimed` batch (its files, if any, are written again by the next
run; readers ignore them until it is done) or a `done` one: nothing lost, nothing read twice.
"""

from __future__ import annotations

import logging
import os
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from analytics.models import ArchiveBatch, ArchiveClaim, ArchivedMessage, ArchiveRun
from delivery import retention
from rooms.models import Room

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from analytics.jobs.config import JobConfig

log = logging.getLogger("dovecote.analytics")

ARCHIVE_LOCK = 0x646F76_61726368  # pg_advisory_lock key of archive runs ("dov" "arch")
ABANDONED = "abandoned: the process running it stopped"

Writer = Callable[[ArchiveBatch], dict[str, int]]


class ArchiveInProgress(Exception):
    """Another archive run holds the lock."""


@dataclass
class Plan:
    """What a dry run found: the batches a run would make, per room."""

    unfinished: int = 0
    batches: list[tuple[int, date, int]] = field(default_factory=list)  # (room, day, messages)

    def __str__(self) -> str:
        lines = [f"{self.unfinished} unfinished batch(es) to redo"]
        lines += [f"room {room} {day}: {count} message(s)" for room, day, count in self.batches]
        total = sum(count for *_, count in self.batches)
        return "\n".join([*lines, f"would archive {total} message(s) in {len(self.batches)} new batch(es)"])


@contextmanager
def archive_lock() -> Iterator[None]:
    """Hold the archive runs' advisory lock on this connection; ArchiveInProgress when another run has it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [ARCHIVE_LOCK])
        if not cursor.fetchone()[0]:
            raise ArchiveInProgress("another archive run is in progress")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [ARCHIVE_LOCK])


Rows = list[tuple[uuid.UUID, datetime]]  # (message id, created_at)


def pages(now: datetime, size: int) -> Iterator[tuple[Room, Rows]]:
    """Yield each room's removable messages as batches: one day (UTC) each, at most `size` messages."""
    for room in Room.objects.order_by("pk"):
        page = retention.Page()
        while rows := retention.removable_messages(room, now, page, size):
            rows = [row for row in rows if day_of(row) == day_of(rows[0])]
            yield room, rows
            page = retention.Page(rows[-1][1], rows[-1][0])


def day_of(row: tuple[uuid.UUID, datetime]) -> date:
    """Return the UTC day a message was published: its batch's, and its folders' `date=`."""
    return row[1].astimezone(UTC).date()


def plan(now: datetime) -> Plan:
    """Say what a run would archive now, changing nothing."""
    found = Plan(unfinished=ArchiveBatch.objects.filter(status=ArchiveBatch.Status.CLAIMED).count())
    for room, rows in pages(now, settings.DOVECOTE_ARCHIVE_BATCH):
        found.batches.append((room.pk, day_of(rows[0]), len(rows)))
    return found


def run_archive(write: Writer, *, now: datetime | None = None, kill_after_write: bool = False) -> ArchiveRun:
    """Archive and remove every removable message (see the module's text); return the run."""
    now = now or timezone.now()
    with archive_lock():
        ArchiveRun.objects.filter(status=ArchiveRun.Status.RUNNING).update(
            status=ArchiveRun.Status.FAILED, finished_at=now, error=ABANDONED)
        run = ArchiveRun.objects.create(url=settings.DOVECOTE_ARCHIVE_URL, started_at=now)
        try:
            for batch in ArchiveBatch.objects.filter(status=ArchiveBatch.Status.CLAIMED).order_by("pk"):
                archive_batch(run, batch, write, now, kill_after_write)
            for room, rows in pages(now, settings.DOVECOTE_ARCHIVE_BATCH):
                archive_batch(run, claim(run, room, rows, now), write, now, kill_after_write)
        except BaseException as error:
            ArchiveRun.objects.filter(pk=run.pk).update(status=ArchiveRun.Status.FAILED, finished_at=timezone.now(),
                                                        error=f"{type(error).__name__}: {error}")
            raise
        ArchiveRun.objects.filter(pk=run.pk).update(status=ArchiveRun.Status.SUCCEEDED, finished_at=timezone.now(),
                                                    stage="done")
    run.refresh_from_db()
    return run


def claim(run: ArchiveRun, room: Room, rows: Rows, now: datetime) -> ArchiveBatch:
    """Record a batch of these messages (one room, one day) and claim each, in one transaction."""
    with transaction.atomic():
        batch = ArchiveBatch.objects.create(run=run, room_id=room.pk, date=day_of(rows[0]),
                                            url=run.url, messages=len(rows), claimed_at=now)
        ArchiveClaim.objects.bulk_create([ArchiveClaim(batch=batch, message_id=message_id) for message_id, _ in rows])
    return batch


def archive_batch(run: ArchiveRun, batch: ArchiveBatch, write: Writer, now: datetime, kill_after_write: bool) -> None:
    """Write the batch to Parquet, then remove its rows and mark it done (or discard it)."""
    ArchiveRun.objects.filter(pk=run.pk).update(stage=f"writing batch {batch.pk} ({batch.messages} messages)")
    started = time.monotonic()
    written = write(batch)
    if kill_after_write:  # tests: a crash between the archive and the delete
        os.kill(os.getpid(), signal.SIGKILL)
    wrote_s, started = time.monotonic() - started, time.monotonic()
    removed = finish(run, batch, now)
    # The transaction's length is how long the batch's rows were locked (docs/analytics.md, measured).
    log.info("archive batch %s: wrote %s rows to Parquet (%s of them report inputs) in %.1f s; %s in a %.3f s "
             "transaction", batch.pk, sum(written.values()),
             sum(rows for name, rows in written.items() if name.startswith("report_")), wrote_s,
             "discarded" if removed is None else f"{removed.rows} rows removed",
             time.monotonic() - started)


def finish(run: ArchiveRun, batch: ArchiveBatch, now: datetime) -> retention.Removed | None:
    """In ONE transaction: remove the batch's rows, record their tombstones and mark it done; or discard it."""
    with transaction.atomic():
        ids = list(ArchiveClaim.objects.filter(batch=batch).values_list("message_id", flat=True))
        removed = retention.remove(ids, now)
        ArchiveClaim.objects.filter(batch=batch).delete()
        if removed is None:  # a message is no longer removable: nothing was deleted
            ArchiveBatch.objects.filter(pk=batch.pk).update(status=ArchiveBatch.Status.DISCARDED)
            run.discarded += 1
        else:
            archived_at = timezone.now()
            ArchivedMessage.objects.bulk_create([
                ArchivedMessage(message_id=i, room_id=batch.room_id, archived_at=archived_at, batch=batch)
                for i in ids])
            ArchiveBatch.objects.filter(pk=batch.pk).update(
                status=ArchiveBatch.Status.DONE, rows=removed.rows, first_at=removed.first_at,
                last_at=removed.last_at, done_at=archived_at)
            run.batches, run.messages = run.batches + 1, run.messages + removed.messages
            run.rows += removed.rows
        ArchiveRun.objects.filter(pk=run.pk).update(batches=run.batches, messages=run.messages, rows=run.rows,
                                                    discarded=run.discarded)
    return removed


def spark_writer(spark: Callable[[], SparkSession], config: JobConfig) -> Writer:
    """Return a Writer running the Spark job of analytics/jobs/archive.py in `spark()`, the session of this process."""
    from analytics.jobs.archive import write_batch  # noqa: PLC0415 - imports PySpark

    def write(batch: ArchiveBatch) -> dict[str, int]:
        return write_batch(spark(), config, batch.pk, batch.path)

    return write

