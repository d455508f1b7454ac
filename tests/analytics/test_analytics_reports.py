"""The Spark report jobs on a real local Spark session, checked figure by figure against SQL.

One Spark session and one generated history serve the whole module; the tests run in file order
and build on each other (a full run, a repeated run, new traffic and an incremental run, …).
The history is committed (Spark reads over its own connections); each test only reads through
Django's connection, and writes what the jobs must see through committed connections of its own.
"""

from __future__ import annotations

import importlib.util
import shutil
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

from tests.services import IN_CI

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

REPORT_TABLES = ["report_hourly", "report_latency", "report_errors", "report_retry_cost"]
LOG_TABLES = ["delivery_attempts", "published_messages", "delivery_delivery", "delivery_message"]
HISTORY_END = datetime.now(UTC).replace(minute=30, second=0, microsecond=0) - timedelta(hours=3)
PERCENTILES = (0.5, 0.95, 0.99)


def require_spark() -> None:
    """Fail under CI=true (skip elsewhere) when Java, PySpark or the JDBC driver is missing."""
    from django.conf import settings

    jars = [Path(jar) for jar in settings.DOVECOTE_SPARK_JARS.split(",") if jar]
    if shutil.which("java") is None:
        missing("Java is not on PATH: install openjdk-17-jre-headless")
    if importlib.util.find_spec("pyspark") is None:
        missing("PySpark is not installed in this Python: run `make venv`")
    if not jars or not all(jar.is_file() for jar in jars):
        missing(f"the JDBC driver {settings.DOVECOTE_SPARK_JARS} is missing: run scripts/test-tools.sh")


def missing(reason: str) -> None:
    message = f"{reason} (CI=true makes this a failure)"
    if IN_CI:
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="module")
def spark(django_db_setup) -> Iterator[Any]:
    require_spark()
    from analytics import runner
    from analytics.jobs.session import build_session

    session = build_session(runner.job_config())
    yield session
    session.stop()


@pytest.fixture(scope="module")
def history(django_db_setup, django_db_blocker) -> Iterator[None]:
    """About 2,500 messages over two days, committed, so Spark's JDBC connections see them."""
    from analytics import synthetic_history

    with django_db_blocker.unblock():
        clear_tables()
        synthetic_history.generate(2_500, 2, seed=7, end=HISTORY_END)
    yield
    with django_db_blocker.unblock():
        clear_tables()
        from rooms.models import Room

        Room.objects.filter(name__startswith="demo-").delete()


@pytest.fixture
def sql() -> Callable[..., list[tuple]]:
    return query


def committed[T](work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run `work` on a connection of its own, outside the test's transaction, so the jobs see what it wrote."""
    from django.db import connection as own

    result: list[Any] = []

    def target() -> None:
        try:
            result.append(work(*args, **kwargs))
        except BaseException as error:  # noqa: BLE001 - raised in the test's thread below
            result.append(error)
        finally:
            own.close()

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if isinstance(result[0], BaseException):
        raise result[0]
    return result[0]


def clear_tables() -> None:
    tables = ", ".join([*REPORT_TABLES, *[f"{t}_staging" for t in REPORT_TABLES], "report_runs", *LOG_TABLES])
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {tables} CASCADE")


def query(sql_text: str, params: list[Any] | None = None) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql_text, params)
        return cursor.fetchall()


def run(spark: Any, **options: Any) -> Any:
    from analytics import runner
    from analytics.jobs.main import run_reports

    return run_reports(lambda: spark, runner.job_config(), **options)


# ---- the same figures, computed in SQL ------------------------------------------------------------

DELIVERIES = r"""
    SELECT d.id, coalesce(d.subscription_id, substring(d.destination FROM '::subscription-(\d+)$')::bigint) AS sub,
           d.status, d.updated_at, m.room_id, m.event_type,
           (extract(epoch FROM m.created_at) * 1000000)::bigint AS published_us
    FROM delivery_delivery d JOIN delivery_message m ON m.id = d.message_id
"""

HOURLY_SQL = f"""
WITH d AS ({DELIVERIES}), events AS (
    SELECT date_trunc('hour', p.sent_at) AS hour, d.room_id, d.sub, d.event_type,
           (p.kind = 'publish')::int AS published, 0 AS delivered, 0 AS attempts, 0 AS failed,
           (p.kind = 'retry')::int AS retried, (p.kind = 'dead_letter')::int AS dead_lettered, 0 AS expired,
           0 AS delivered_attempts
    FROM published_messages p JOIN d ON d.id = p.delivery_id
    UNION ALL
    SELECT date_trunc('hour', a.started_at), d.room_id, d.sub, d.event_type, 0, (a.outcome = 'success')::int, 1,
           (a.outcome <> 'success')::int, 0, 0, 0, CASE WHEN a.outcome = 'success' THEN a.attempt ELSE 0 END
    FROM delivery_attempts a JOIN d ON d.id = a.delivery_id
    UNION ALL
    SELECT date_trunc('hour', d.updated_at), d.room_id, d.sub, d.event_type, 0, 0, 0, 0, 0, 0, 1, 0
    FROM d WHERE d.status = 'expired'
)
SELECT hour, room_id, sub, event_type, sum(published), sum(delivered), sum(attempts), sum(failed), sum(retried),
       sum(dead_lettered), sum(expired), sum(delivered_attempts)
FROM events GROUP BY 1, 2, 3, 4
"""

ERRORS_SQL = f"""
WITH d AS ({DELIVERIES})
SELECT date_trunc('hour', a.started_at), d.room_id, d.sub, a.outcome, a.status_code, count(*)
FROM delivery_attempts a JOIN d ON d.id = a.delivery_id WHERE a.outcome <> 'success' GROUP BY 1, 2, 3, 4, 5
"""

RETRY_COST_SQL = f"""
WITH d AS ({DELIVERIES}), events AS (
    SELECT date_trunc('hour', p.sent_at) AS hour, d.room_id, d.sub, (p.kind = 'publish')::int AS publishes,
           (p.kind = 'replay')::int AS replays, (p.kind = 'retry')::int AS retries,
           (p.kind = 'dead_letter')::int AS dead_letters, (p.kind = 'recheck')::int AS rechecks,
           CASE WHEN p.kind = 'retry' THEN p.delay_ms ELSE 0 END AS retry_delay_ms, 0 AS retry_attempts
    FROM published_messages p JOIN d ON d.id = p.delivery_id
    UNION ALL
    SELECT date_trunc('hour', a.started_at), d.room_id, d.sub, 0, 0, 0, 0, 0, 0, (a.attempt > 1)::int
    FROM delivery_attempts a JOIN d ON d.id = a.delivery_id
)
SELECT hour, room_id, sub, sum(publishes), sum(replays), sum(retries), sum(dead_letters), sum(rechecks),
       sum(retry_delay_ms), sum(retry_attempts)
FROM events GROUP BY 1, 2, 3
"""


def latency_sql() -> str:
    fractions = "ARRAY[" + ", ".join(repr(p) for p in PERCENTILES) + "]::float8[]"
    return f"""
WITH d AS ({DELIVERIES}), a AS (
    SELECT date_trunc('hour', a.started_at) AS hour, d.room_id, d.sub, d.event_type, a.outcome,
           CASE WHEN a.outcome = 'success' THEN
               ((extract(epoch FROM a.started_at) * 1000000)::bigint - d.published_us) / 1000 + a.duration_ms
           END AS latency_ms,
           CASE WHEN a.outcome <> 'crashed' THEN a.duration_ms END AS duration_ms
    FROM delivery_attempts a JOIN d ON d.id = a.delivery_id
)
SELECT GROUPING(sub, event_type), hour, room_id, sub, event_type,
       count(*) FILTER (WHERE outcome = 'success'),
       percentile_disc({fractions}) WITHIN GROUP (ORDER BY latency_ms) FILTER (WHERE latency_ms IS NOT NULL),
       count(duration_ms),
       percentile_disc({fractions}) WITHIN GROUP (ORDER BY duration_ms) FILTER (WHERE duration_ms IS NOT NULL),
       max(duration_ms)
FROM a GROUP BY GROUPING SETS ((hour, room_id), (hour, room_id, sub), (hour, room_id, sub, event_type))
"""


def by_grain(rows: list[tuple], width: int) -> dict[tuple, tuple]:
    return {tuple(row[:width]): tuple(int(v) if isinstance(v, Decimal) else v for v in row[width:]) for row in rows}


def assert_counts_match(report_sql: str, oracle_sql: str, width: int) -> int:
    """Compare a report table with its SQL twin row by row; return the rows compared."""
    reported, expected = by_grain(query(report_sql), width), by_grain(query(oracle_sql), width)
    assert reported.keys() == expected.keys()
    mismatched = {grain: (reported[grain], expected[grain]) for grain in expected if reported[grain] != expected[grain]}
    assert not mismatched, f"{len(mismatched)} rows differ, e.g. {next(iter(mismatched.items()))}"
    return len(expected)


def assert_hourly_matches_sql() -> None:
    compared = assert_counts_match(
        "SELECT hour, room_id, subscription_id, event_type, published, delivered, attempts, failed_attempts, "
        "retried, dead_lettered, expired, delivered_attempts FROM report_hourly", HOURLY_SQL, 4)
    assert compared > 100
    for delivered, dead, expired, attempts_sum, rate, per_delivered in query(
            "SELECT delivered, dead_lettered, expired, delivered_attempts, success_rate, attempts_per_delivered "
            "FROM report_hourly"):
        settled = delivered + dead + expired
        assert rate == (pytest.approx(delivered / settled, abs=1e-12) if settled else None)
        assert per_delivered == (pytest.approx(attempts_sum / delivered, abs=1e-12) if delivered else None)


def assert_latency_matches_sql() -> None:
    """Every group's percentiles equal PostgreSQL's percentile_disc: the reports' are exact."""
    levels = {0: "event_type", 1: "subscription", 3: "room"}
    reported = {row[:5]: row[5:] for row in query(
        "SELECT level, hour, room_id, subscription_id, event_type, delivered, latency_p50_ms, latency_p95_ms, "
        "latency_p99_ms, timed_attempts, duration_p50_ms, duration_p95_ms, duration_p99_ms, duration_max_ms "
        "FROM report_latency")}
    expected = {(levels[row[0]], *row[1:5]): row[5:] for row in query(latency_sql())}
    assert reported.keys() == expected.keys()
    mismatched = {}
    for grain, (delivered, latency, timed, duration, duration_max) in expected.items():
        wanted = (delivered, *(latency or [None] * 3), timed, *(duration or [None] * 3), duration_max)
        if reported[grain] != wanted:
            mismatched[grain] = (reported[grain], wanted)
    assert not mismatched, f"{len(mismatched)} of {len(expected)} rows differ, e.g. {next(iter(mismatched.items()))}"


def assert_every_figure_matches_sql() -> None:
    assert_hourly_matches_sql()
    assert_latency_matches_sql()
    assert_counts_match("SELECT hour, room_id, subscription_id, outcome, status_code, failed_attempts "
                        "FROM report_errors", ERRORS_SQL, 5)
    assert_counts_match("SELECT hour, room_id, subscription_id, publishes, replays, retries, dead_letters, rechecks, "
                        "retry_delay_ms, retry_attempts FROM report_retry_cost", RETRY_COST_SQL, 3)


def snapshot() -> dict[str, dict[str, tuple]]:
    """Return every report row by table and key: (hour, the whole row)."""
    return {table: {row[0]: row[1:] for row in query(f"SELECT key, hour, t.* FROM {table} t")}
            for table in REPORT_TABLES}


def latest_run() -> dict[str, Any]:
    columns = ["id", "status", "mode", "progress", "hours_processed", "rows_written", "watermark_at", "scope", "error"]
    row = query(f"SELECT {', '.join(columns)} FROM report_runs ORDER BY id DESC LIMIT 1")[0]
    return dict(zip(columns, row, strict=True))


# ---- the tests ------------------------------------------------------------------------------------

def test_a_full_run_computes_every_figure_as_sql_does(spark, history, sql) -> None:
    summary = run(spark, full=True)

    assert_every_figure_matches_sql()
    run_row = latest_run()
    assert run_row["status"] == "succeeded" and run_row["mode"] == "full" and run_row["progress"] == 100
    assert run_row["rows_written"] == summary.rows_written == sum(
        query(f"SELECT count(*) FROM {t}")[0][0] for t in REPORT_TABLES)
    assert run_row["watermark_at"] is not None
    assert all(query(f"SELECT count(*) FROM {t}_staging")[0][0] == 0 for t in REPORT_TABLES)


def test_the_history_has_every_kind_of_row_the_reports_count(history, sql) -> None:
    kinds = dict(query("SELECT kind, count(*) FROM published_messages GROUP BY kind"))
    outcomes = dict(query("SELECT outcome, count(*) FROM delivery_attempts GROUP BY outcome"))
    statuses = dict(query("SELECT status, count(*) FROM delivery_delivery GROUP BY status"))
    assert {"publish", "retry", "dead_letter"} <= kinds.keys()
    assert {"success", "failure", "timeout", "connection_error", "nacked"} <= outcomes.keys()
    assert {"delivered", "acked", "dead_lettered", "expired"} <= statuses.keys()


def test_a_repeated_run_changes_nothing(spark, history, sql, capsys) -> None:
    before = snapshot()

    incremental = run(spark)
    assert snapshot() == before
    assert incremental.mode == "incremental" and incremental.rows_written == 0
    assert latest_run()["scope"] == "nothing changed"

    call_command("run_reports", "--full")  # the command runs the jobs on the session already running
    assert "(full, every hour)" in capsys.readouterr().out
    assert snapshot() == before
    run_row = latest_run()
    assert (run_row["status"], run_row["progress"], run_row["error"]) == ("succeeded", 100, "")


def test_an_incremental_run_after_new_traffic_changes_only_the_affected_hours(spark, history, sql) -> None:
    from analytics import synthetic_history

    before = snapshot()
    marks = [query(f"SELECT max(id) FROM {table}")[0][0]
             for table in ("published_messages", "delivery_attempts", "delivery_delivery")]
    committed(synthetic_history.generate, 300, 0.1, seed=11, end=HISTORY_END - timedelta(hours=20))
    affected = {row[0] for row in query(
        "SELECT date_trunc('hour', sent_at) FROM published_messages WHERE id > %s "
        "UNION SELECT date_trunc('hour', started_at) FROM delivery_attempts WHERE id > %s "
        "UNION SELECT date_trunc('hour', updated_at) FROM delivery_delivery WHERE id > %s AND status = 'expired'",
        marks)}

    summary = run(spark)

    assert summary.mode == "incremental" and summary.hours_processed == len(affected)
    after = snapshot()
    for table in REPORT_TABLES:
        changed = {key for key in before[table].keys() | after[table].keys()
                   if before[table].get(key) != after[table].get(key)}
        assert changed, table
        assert {(before[table].get(key) or after[table][key])[0] for key in changed} <= affected, table
    assert_every_figure_matches_sql()
    run(spark)
    assert snapshot() == after


def test_a_run_over_a_window_repairs_those_hours_and_leaves_the_watermark(spark, history, sql) -> None:
    before = snapshot()
    hour = query("SELECT hour FROM report_hourly ORDER BY delivered DESC LIMIT 1")[0][0]
    assert committed(query, "DELETE FROM report_hourly WHERE hour = %s RETURNING key", [hour])
    watermark = query("SELECT max(watermark_at) FROM report_runs")[0][0]

    summary = run(spark, since=hour + timedelta(minutes=10), until=hour + timedelta(minutes=20))

    assert summary.hours_processed == 1
    assert snapshot() == before
    assert latest_run()["watermark_at"] is None
    assert query("SELECT max(watermark_at) FROM report_runs")[0][0] == watermark


def test_a_failed_run_leaves_the_reports_as_they_were(spark, history, sql, monkeypatch) -> None:
    from analytics.jobs import main

    before = snapshot()
    written = []

    def fail_after_the_first_table(frame: Any, config: Any, table: str, run_id: int) -> None:
        if written:
            raise RuntimeError("the executor was lost")
        write_staging(frame, config, table, run_id)
        written.append(table)

    write_staging = main.write_staging
    monkeypatch.setattr(main, "write_staging", fail_after_the_first_table)
    with pytest.raises(RuntimeError, match="executor was lost"):
        run(spark, full=True)

    failed = latest_run()
    assert failed["status"] == "failed" and "executor was lost" in failed["error"]
    assert snapshot() == before
    monkeypatch.undo()
    assert run(spark).mode == "incremental"  # the failed run recorded no watermark; the last good one counts
    assert query("SELECT count(*) FROM report_hourly_staging")[0][0] == 0


def test_a_run_is_skipped_while_another_is_running(spark, history, sql, capsys) -> None:
    import psycopg

    from analytics import runner
    from analytics.jobs.store import RunInProgress

    database = runner.job_config().database
    with psycopg.connect(**database.psycopg_kwargs(), autocommit=True) as other:
        # Another driver's run: recorded running, its heartbeat fresh.
        [alive] = other.execute("INSERT INTO report_runs (status, mode, master, started_at, heartbeat_at, progress, "
                                "stage) VALUES ('running', 'full', '', now(), now(), 10, 'computing') RETURNING id"
                                ).fetchone()
        try:
            runs = query("SELECT count(*) FROM report_runs")[0][0]
            with pytest.raises(RunInProgress):
                run(spark)
            call_command("run_reports")
            assert "skipped: another report run is in progress" in capsys.readouterr().err
            assert query("SELECT count(*) FROM report_runs")[0][0] == runs
        finally:
            other.execute("DELETE FROM report_runs WHERE id = %s", [alive])


def test_a_run_whose_heartbeat_stopped_is_recorded_failed_and_the_next_run_goes_ahead(spark, history, sql) -> None:
    from analytics.jobs.store import ABANDONED_ERROR, HEARTBEAT_TIMEOUT_S

    [dead] = committed(query, "INSERT INTO report_runs (status, mode, master, started_at, heartbeat_at, progress, "
                              "stage) VALUES ('running', 'full', '', now(), now() - make_interval(secs => %s), 50, "
                              "'computing') "
                   "RETURNING id", [HEARTBEAT_TIMEOUT_S + 1])[0]
    assert run(spark).run_id != dead
    assert query("SELECT status, error FROM report_runs WHERE id = %s", [dead])[0] == ("failed", ABANDONED_ERROR)
    assert latest_run()["status"] == "succeeded"
