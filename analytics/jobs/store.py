"""The report store on the driver (psycopg): the run lock, run records, the watermark and the swap.

Spark's JDBC writer commits each partition on its own, so a run never writes the report tables
directly: it appends to the `*_staging` tables, and `publish` then deletes the hours in scope and
copies the staged rows in, for every report table, in ONE PostgreSQL transaction together with the
run's watermark. A reader sees the old figures or the new ones, never a mix; a run that dies leaves
the report tables and the watermark as they were, and the next run simply does the work again.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

import psycopg

from analytics.jobs.config import Database, IdRange
from analytics.jobs.hours import Scope

# One report run at a time per database: a session-level advisory lock, released if the driver dies.
RUN_LOCK = 0x646F7665636F7465 & 0x7FFFFFFFFFFFFFFF  # "dovecote"
# Each input a run reads: its table, the timestamp that puts a row in an hour, and which rows count.
INPUTS = {
    "sends": ("published_messages", "sent_at", "TRUE"),
    "attempts": ("delivery_attempts", "started_at", "TRUE"),
    "expiries": ("delivery_delivery", "updated_at", "status = 'expired'"),
}

class RunInProgress(Exception):
    """Another report run holds the lock."""


@dataclass(frozen=True)
class Marks:
    """How far the log went when a run started: the database clock and each table's highest id."""

    at: datetime
    max_send_id: int
    max_attempt_id: int
    max_delivery_id: int


@dataclass(frozen=True)
class Report:
    """One report table and the columns a run stages for it."""

    table: str
    columns: Sequence[str]

    @property
    def staging(self) -> str:
        return f"{self.table}_staging"


TOUCHED_HOURS = """
WITH changed AS MATERIALIZED (
    SELECT id FROM delivery_delivery WHERE updated_at >= %(since)s
), stamps AS (
    SELECT sent_at AS at FROM published_messages WHERE id > %(max_send_id)s
    UNION ALL SELECT sent_at FROM published_messages WHERE sent_at >= %(since)s
    UNION ALL SELECT sent_at FROM published_messages WHERE delivery_id IN (SELECT id FROM changed)
    UNION ALL SELECT started_at FROM delivery_attempts WHERE id > %(max_attempt_id)s
    UNION ALL SELECT started_at FROM delivery_attempts WHERE started_at >= %(since)s
    UNION ALL SELECT started_at FROM delivery_attempts WHERE delivery_id IN (SELECT id FROM changed)
    UNION ALL SELECT updated_at FROM delivery_delivery
        WHERE status = 'expired' AND (id > %(max_delivery_id)s OR id IN (SELECT id FROM changed))
)
SELECT DISTINCT date_trunc('hour', at) FROM stamps ORDER BY 1
"""


class ReportStore:
    """An autocommit connection that holds the run lock for as long as the run lasts."""

    def __init__(self, connection: psycopg.Connection) -> None:
        self.connection = connection

    @classmethod
    @contextmanager
    def open(cls, database: Database) -> Iterator[ReportStore]:
        """Connect (session time zone UTC, so date_trunc cuts UTC hours) and take the run lock."""
        with psycopg.connect(**database.psycopg_kwargs(), autocommit=True, options="-c TimeZone=UTC",
                             application_name="dovecote-reports") as connection:
            if not connection.execute("SELECT pg_try_advisory_lock(%s)", [RUN_LOCK]).fetchone()[0]:
                raise RunInProgress("another report run is in progress (it holds the report lock)")
            yield cls(connection)

    def execute(self, sql: str, params: Sequence[object] | dict[str, object] | None = None) -> psycopg.Cursor:
        return self.connection.execute(sql, params)

    # ---- runs ------------------------------------------------------------------------------------

    def start_run(self, mode: str, master: str, since: datetime | None, until: datetime | None,
                  reports: Sequence[Report]) -> int:
        """Record a new run as running, after clearing up after any run that died without saying so."""
        # We hold the lock, so a run still marked running is dead, and nobody else writes staging rows.
        self.execute("UPDATE report_runs SET status = 'failed', finished_at = now(), "
                     "error = 'abandoned: the process running it stopped' WHERE status = 'running'")
        for report in reports:
            # DELETE, not TRUNCATE: its lock does not wait for readers of the table to finish.
            self.execute(f"DELETE FROM {report.staging}")
        return self.execute(
            "INSERT INTO report_runs (status, mode, master, window_start, window_end, progress, stage) "
            "VALUES ('running', %s, %s, %s, %s, 0, 'starting') RETURNING id", [mode, master, since, until]
        ).fetchone()[0]

    def progress(self, run_id: int, percent: int, stage: str) -> None:
        self.execute("UPDATE report_runs SET progress = %s, stage = %s WHERE id = %s", [percent, stage[:200], run_id])

    def fail(self, run_id: int, error: str) -> None:
        self.execute("UPDATE report_runs SET status = 'failed', finished_at = now(), error = %s WHERE id = %s",
                     [error, run_id])

    # ---- the watermark -----------------------------------------------------------------------------

    def marks(self) -> Marks:
        """Return the clock and highest ids now (taken before reading, so nothing is missed between runs)."""
        row = self.execute(
            "SELECT now(), (SELECT coalesce(max(id), 0) FROM published_messages), "
            "(SELECT coalesce(max(id), 0) FROM delivery_attempts), (SELECT coalesce(max(id), 0) FROM delivery_delivery)"
        ).fetchone()
        return Marks(*row)

    def last_marks(self) -> Marks | None:
        """Return the watermark of the latest successful run that recorded one."""
        row = self.execute(
            "SELECT watermark_at, max_send_id, max_attempt_id, max_delivery_id FROM report_runs "
            "WHERE status = 'succeeded' AND watermark_at IS NOT NULL ORDER BY watermark_at DESC, id DESC LIMIT 1"
        ).fetchone()
        return Marks(*row) if row else None

    def touched_hours(self, previous: Marks, overlap: timedelta) -> list[datetime]:
        """Return the hours of every log row written or changed since `previous` (less `overlap`).

        A row counts when its id is past the previous run's highest id (this catches history written
        with old timestamps, as generate_traffic does), when its own timestamp is past the watermark
        less the overlap (this catches rows whose transaction committed after a later id's), or when
        its delivery changed since then (an attempt row is written when the attempt ends, with the
        time it started, in the transaction that updates the delivery). Each branch uses an index.
        """
        params = {"since": previous.at - overlap, "max_send_id": previous.max_send_id,
                  "max_attempt_id": previous.max_attempt_id, "max_delivery_id": previous.max_delivery_id}
        return [row[0] for row in self.execute(TOUCHED_HOURS, params)]

    def id_range(self, name: str, scope: Scope) -> IdRange | None:
        """Return the lowest and highest id of an input's rows in scope, and how many there are (None: none)."""
        table, column, condition = INPUTS[name]
        low, high, rows = self.execute(
            f"SELECT min(id), max(id), count(*) FROM {table} WHERE {condition} AND {scope.sql(column)}").fetchone()
        return None if low is None else IdRange(low, high, rows)

    # ---- the swap ------------------------------------------------------------------------------

    def publish(self, run_id: int, scope: Scope, reports: Sequence[Report], marks: Marks | None,
                scope_text: str) -> tuple[int, int]:
        """Replace the scope's report rows by the staged ones and finish the run, in one transaction.

        DELETE rather than TRUNCATE even for a full run: TRUNCATE would lock readers out until the
        commit, while DELETE lets the API keep reading the previous figures meanwhile.
        Return (rows written, distinct hours written).
        """
        rows = 0
        with self.connection.transaction():
            for report in reports:
                columns = ", ".join(report.columns)
                self.execute(f"DELETE FROM {report.table} WHERE {scope.sql('hour')}")
                rows += self.execute(
                    f"INSERT INTO {report.table} ({columns}) SELECT {columns} FROM {report.staging} "
                    "WHERE run_id = %s", [run_id]).rowcount
            staged_hours = " UNION ".join(f"SELECT hour FROM {r.staging} WHERE run_id = %(run)s" for r in reports)
            hours = self.execute(f"SELECT count(*) FROM ({staged_hours}) AS hours", {"run": run_id}).fetchone()[0]
            for report in reports:
                self.execute(f"DELETE FROM {report.staging} WHERE run_id = %s", [run_id])
            self.execute(
                "UPDATE report_runs SET status = 'succeeded', finished_at = now(), progress = 100, stage = 'done', "
                "rows_written = %s, hours_processed = %s, scope = %s, watermark_at = %s, max_send_id = %s, "
                "max_attempt_id = %s, max_delivery_id = %s WHERE id = %s",
                [rows, hours, scope_text, *(marks_fields(marks)), run_id])
        return rows, hours


def marks_fields(marks: Marks | None) -> list[object]:
    if marks is None:
        return [None, None, None, None]
    return [marks.at, marks.max_send_id, marks.max_attempt_id, marks.max_delivery_id]
