"""The report store on the driver (psycopg): the run's record and heartbeat, the watermark and the swap.

Spark's JDBC writer commits each partition on its own, so a run never writes the report tables
directly: it appends to the `*_staging` tables, and `publish` then deletes the hours in scope and
copies the staged rows in, for every report table, in ONE PostgreSQL transaction together with the
run's watermark. A reader sees the old figures or the new ones, never a mix; a run that dies leaves
the report tables and the watermark as they were, and the next run simply does the work again.

One run at a time, whoever starts it (the console's request through Celery, beat, `make report`,
spark-submit): a run's whole state is its `report_runs` row, and a partial unique index lets at
most one row be `requested` or `running`. A starting run takes the waiting request, or inserts a
`running` row; the index refuses it while another is alive (RunInProgress). While it runs, a
thread writes its heartbeat every HEARTBEAT_S; a `running` row whose heartbeat is older than
HEARTBEAT_TIMEOUT_S lost its driver, and the next run records it failed. A run that was so
declared dead cannot publish: the swap checks, in its transaction, that the row is still its own.
A process waiting for its request (analytics/runner.py run_by_follower) writes the request's heartbeat
the same way; a request whose heartbeat stopped is withdrawn by the next run.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

import psycopg

from analytics.jobs.config import Database, IdRange
from analytics.jobs.hours import Scope

HEARTBEAT_S = 10  # how often a running run writes its heartbeat
# The session-level advisory lock (pg_advisory_lock's two int4 keys) the live `run_reports --follow` holds on a
# connection of its own: other processes hand their runs to it while it is held (analytics/runner.py).
FOLLOWER_LOCK = (0x646F7665, 1)
REQUESTS_CHANNEL = "dovecote_report_requests"  # NOTIFYed in the transaction that asks for a run: wakes the follower
HEARTBEAT_TIMEOUT_S = 60  # a running run whose heartbeat is older has lost its driver
ABANDONED_ERROR = "abandoned: the process running it stopped (its heartbeat stopped)"


@dataclass(frozen=True)
class Input:
    """A log table a run reads (its rows with their dimensions: analytics/jobs/sources.py's QUERIES)."""

    table: str
    alias: str  # the table's name in the queries
    time: str  # the timestamp that puts a row in an hour
    condition: str = "TRUE"  # which of its rows count

    @property
    def time_column(self) -> str:
        return f"{self.alias}.{self.time}"


INPUTS = {
    "sends": Input("published_messages", "f", "sent_at"),
    "attempts": Input("delivery_attempts", "f", "started_at"),
    "expiries": Input("delivery_delivery", "d", "updated_at", "d.status = 'expired'"),
}

class RunInProgress(Exception):
    """Another report run is running (its heartbeat is fresh), or asked for and waiting for a run that answers it."""


class RunLost(Exception):
    """This run's row is no longer running: another run declared it abandoned (its heartbeat was late)."""


@dataclass(frozen=True)
class Marks:
    """How far the log went when a run started: the database clock and each table's highest id."""

    at: datetime
    max_send_id: int
    max_attempt_id: int
    max_delivery_id: int


@dataclass(frozen=True)
class ArchivedBatch:
    """A done archive batch: its rows are under `{url}/{dataset}/date={date}/batch={id}`.

    `layout`: 1, its tables only (archived before the report inputs); 2, its tables and report inputs.
    `rows`: the PostgreSQL rows it removed, of every table (so at least its attempts).
    """

    url: str
    id: int
    date: date
    layout: int
    rows: int

    def path(self, dataset: str) -> str:
        return f"{self.url.rstrip('/')}/{dataset}/date={self.date.isoformat()}/batch={self.id}"


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


@dataclass(frozen=True)
class RunSummary:
    run_id: int
    mode: str
    scope: str
    rows_written: int
    hours_processed: int
    seconds: float

    def __str__(self) -> str:
        return (f"report run {self.run_id} ({self.mode}, {self.scope}): {self.rows_written} rows over "
                f"{self.hours_processed} hours in {self.seconds:.1f} s")


@dataclass(frozen=True)
class Request:
    """A run asked for and waiting for a driver to take it (a `requested` report_runs row)."""

    full: bool
    since: datetime | None
    until: datetime | None


class FollowerLock:
    """The follower's own connection, holding FOLLOWER_LOCK while it follows, and what it reads of the requests.

    PostgreSQL keeps the lock while the connection lives and frees it when the process dies (its
    socket closes), so `pg_locks` says whether a follower is live without a heartbeat of its own.
    """

    def __init__(self, database: Database) -> None:
        self.database = database
        self.connection: psycopg.Connection | None = None

    def acquire(self) -> bool:
        """Take the lock unless another follower holds it (or keep it: a lost connection is made again)."""
        if self.connection is not None and not self.connection.closed:
            return True
        connection = psycopg.connect(**self.database.psycopg_kwargs(), autocommit=True, options="-c TimeZone=UTC",
                                     application_name="dovecote-reports-follower")
        if connection.execute("SELECT pg_try_advisory_lock(%s, %s)", FOLLOWER_LOCK).fetchone() == (True,):
            connection.execute(f"LISTEN {REQUESTS_CHANNEL}")
            self.connection = connection
            return True
        connection.close()
        return False

    def waiting_request(self) -> Request | None:
        """The run asked for and not taken yet, if there is one (at most one: the index one_active_report_run)."""
        assert self.connection is not None, "acquire() first"
        try:
            row = self.connection.execute(
                "SELECT mode, window_start, window_end FROM report_runs WHERE status = 'requested' "
                "ORDER BY id LIMIT 1").fetchone()
        except psycopg.OperationalError:
            self.release()  # the lock went with the connection: acquire() takes it again, if it can
            raise
        return None if row is None else Request(row[0] == "full", row[1], row[2])

    def wait_for_request(self, timeout: float) -> None:
        """Wait up to `timeout` s for a NOTIFY that a run was asked for (read it with waiting_request())."""
        assert self.connection is not None, "acquire() first"
        try:
            for _ in self.connection.notifies(timeout=max(0.0, timeout), stop_after=1):
                break
        except psycopg.OperationalError:
            self.release()
            raise

    def release(self) -> None:
        if self.connection is not None:
            self.connection.close()  # the lock is the session's: it goes with it
            self.connection = None


class ReportStore:
    """An autocommit connection to the database the run reports on, and the run's heartbeat."""

    def __init__(self, database: Database, connection: psycopg.Connection) -> None:
        self.database = database
        self.connection = connection
        self._heartbeat: threading.Thread | None = None
        self._stop = threading.Event()

    @classmethod
    @contextmanager
    def open(cls, database: Database) -> Iterator[ReportStore]:
        """Connect (session time zone UTC, so date_trunc cuts UTC hours); stop the heartbeat on the way out."""
        with psycopg.connect(**database.psycopg_kwargs(), autocommit=True, options="-c TimeZone=UTC",
                             application_name="dovecote-reports") as connection:
            store = cls(database, connection)
            try:
                yield store
            finally:
                store.stop_heartbeat()

    def execute(self, sql: str, params: Sequence[object] | dict[str, object] | None = None) -> psycopg.Cursor:
        return self.connection.execute(sql, params)

    def one(self, sql: str, params: Sequence[object] | dict[str, object] | None = None) -> tuple[Any, ...]:
        """Run a statement that always returns one row (an aggregate, an INSERT … RETURNING); return it."""
        row = self.execute(sql, params).fetchone()
        if row is None:
            raise RuntimeError(f"no row from: {sql[:80]}")
        return row

    # ---- runs ------------------------------------------------------------------------------------

    def start_run(self, mode: str, master: str, since: datetime | None, until: datetime | None,
                  reports: Sequence[Report]) -> int:
        """Take the waiting request this run answers or record a new running run; start its heartbeat; return its id.

        A run answers a request when it does at least what was asked: a full run (every hour, no
        window) answers any; an incremental run, an incremental request; a run over a window, a
        request for the same window. Any other run waiting its turn behind the request is refused like
        a run behind a live one (RunInProgress), so a request for a full run is never marked done by
        an incremental one (the follower's next refresh, beat's), and the request is left for a run
        that answers it: the follower's, or that of the process that asked.

        A run left running whose heartbeat stopped is recorded failed first, and a request whose asker
        stopped writing its heartbeat is withdrawn (report_runs.ReportRunQuerySet.retire_abandoned is the
        same rule): no request holds the runs back once no process waits for it.
        """
        self.execute("UPDATE report_runs SET status = 'failed', finished_at = now(), error = %s "
                     "WHERE status = 'running' AND heartbeat_at < now() - make_interval(secs => %s)",
                     [ABANDONED_ERROR, HEARTBEAT_TIMEOUT_S])
        self.execute("DELETE FROM report_runs "
                     "WHERE status = 'requested' AND heartbeat_at < now() - make_interval(secs => %s)",
                     [HEARTBEAT_TIMEOUT_S])
        fields = [mode, master, since, until]
        every_hour = mode == "full" and since is None and until is None
        row = self.execute(
            "UPDATE report_runs SET status = 'running', mode = %s, master = %s, window_start = %s, window_end = %s, "
            "started_at = now(), heartbeat_at = now(), progress = 0, stage = 'starting' WHERE id = "
            "(SELECT min(id) FROM report_runs WHERE status = 'requested') AND status = 'requested' "
            "AND (%s OR (window_start IS NOT DISTINCT FROM %s AND window_end IS NOT DISTINCT FROM %s "
            "AND mode IN ('incremental', %s))) RETURNING id",
            [*fields, every_hour, since, until, mode]).fetchone()
        if row is None:
            try:
                row = self.one(
                    "INSERT INTO report_runs (status, mode, master, window_start, window_end, started_at, "
                    "heartbeat_at, progress, stage) VALUES ('running', %s, %s, %s, %s, now(), now(), 0, 'starting') "
                    "RETURNING id",
                    fields)
            except psycopg.errors.UniqueViolation:
                raise RunInProgress(f"another report run is in progress ({self.running_run()})") from None
        run_id = row[0]
        for report in reports:
            # Rows a dead run staged. DELETE, not TRUNCATE: its lock does not wait for readers to finish.
            self.execute(f"DELETE FROM {report.staging} WHERE run_id <> %s", [run_id])
        self.start_heartbeat(run_id)
        return run_id

    def running_run(self) -> str:
        row = self.execute("SELECT id, status, mode, extract(epoch FROM now() - CASE status WHEN 'requested' "
                           "THEN requested_at ELSE heartbeat_at END) "
                           "FROM report_runs WHERE status IN ('requested', 'running')").fetchone()
        if row is None:
            return "it just ended"
        if row[1] == "requested":
            return f"run {row[0]}, {row[2]}, asked for {row[3]:.0f} s ago and waiting for a run that answers it"
        return f"run {row[0]}, {row[1]}, {row[3]:.0f} s since it was last heard of"

    def start_heartbeat(self, run_id: int) -> None:
        """Write the run's heartbeat every HEARTBEAT_S from a thread with its own connection, until the run ends."""
        def beat() -> None:
            with psycopg.connect(**self.database.psycopg_kwargs(), autocommit=True,
                                 application_name="dovecote-reports-heartbeat") as connection:
                while not self._stop.wait(HEARTBEAT_S):
                    connection.execute("UPDATE report_runs SET heartbeat_at = now() "
                                       "WHERE id = %s AND status = 'running'", [run_id])

        self._stop.clear()
        self._heartbeat = threading.Thread(target=beat, name=f"report-run-{run_id}-heartbeat", daemon=True)
        self._heartbeat.start()

    def stop_heartbeat(self) -> None:
        self._stop.set()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=HEARTBEAT_S)
            self._heartbeat = None

    def progress(self, run_id: int, percent: int, stage: str) -> None:
        self.execute("UPDATE report_runs SET progress = %s, stage = %s WHERE id = %s", [percent, stage[:200], run_id])

    def fail(self, run_id: int, error: str) -> None:
        self.stop_heartbeat()
        self.execute("UPDATE report_runs SET status = 'failed', finished_at = now(), error = %s "
                     "WHERE id = %s AND status = 'running'", [error, run_id])

    # ---- the watermark -----------------------------------------------------------------------------

    def marks(self) -> Marks:
        """Return the clock and highest ids now (taken before reading, so nothing is missed between runs)."""
        row = self.one(
            "SELECT now(), (SELECT coalesce(max(id), 0) FROM published_messages), "
            "(SELECT coalesce(max(id), 0) FROM delivery_attempts), (SELECT coalesce(max(id), 0) FROM delivery_delivery)"
        )
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
        source = INPUTS[name]
        low, high, rows = self.one(f"SELECT min(id), max(id), count(*) FROM {source.table} {source.alias} "
                                   f"WHERE {source.condition} AND {scope.sql(source.time_column)}")
        return None if low is None else IdRange(low, high, rows)

    def archived_batches(self, scope: Scope) -> list[ArchivedBatch]:
        """Return the archive's done batches (their rows left PostgreSQL) with rows in the scope's hours."""
        rows = self.execute(f"SELECT url, id, date, layout, coalesce(rows, 0) FROM archive_batches "
                            f"WHERE status = 'done' AND {scope.sql_overlaps('first_at', 'last_at')} "
                            f"ORDER BY id").fetchall()
        return [ArchivedBatch(*row) for row in rows]

    def record_layout(self, batches: Sequence[ArchivedBatch], layout: int) -> None:
        """Record that these batches' folders now hold the datasets of `layout`."""
        self.execute("UPDATE archive_batches SET layout = %s WHERE id = ANY(%s)", [layout, [b.id for b in batches]])

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
            owned = self.execute("SELECT status FROM report_runs WHERE id = %s FOR UPDATE", [run_id]).fetchone()
            if owned is None or owned[0] != "running":
                raise RunLost(f"report run {run_id} was recorded {owned[0] if owned else 'deleted'} while it ran "
                              f"(its heartbeat was late): its figures are not published")
            for report in reports:
                columns = ", ".join(report.columns)
                self.execute(f"DELETE FROM {report.table} WHERE {scope.sql('hour')}")
                rows += self.execute(
                    f"INSERT INTO {report.table} ({columns}) SELECT {columns} FROM {report.staging} "
                    "WHERE run_id = %s", [run_id]).rowcount
            staged_hours = " UNION ".join(f"SELECT hour FROM {r.staging} WHERE run_id = %(run)s" for r in reports)
            hours = self.one(f"SELECT count(*) FROM ({staged_hours}) AS hours", {"run": run_id})[0]
            for report in reports:
                self.execute(f"DELETE FROM {report.staging} WHERE run_id = %s", [run_id])
            self.execute(
                "UPDATE report_runs SET status = 'succeeded', finished_at = now(), progress = 100, stage = 'done', "
                "rows_written = %s, hours_processed = %s, scope = %s, watermark_at = %s, max_send_id = %s, "
                "max_attempt_id = %s, max_delivery_id = %s WHERE id = %s",
                [rows, hours, scope_text, *(marks_fields(marks)), run_id])
        self.stop_heartbeat()
        return rows, hours


def marks_fields(marks: Marks | None) -> list[object]:
    if marks is None:
        return [None, None, None, None]
    return [marks.at, marks.max_send_id, marks.max_attempt_id, marks.max_delivery_id]
