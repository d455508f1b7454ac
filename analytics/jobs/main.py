"""Run the report jobs: in-process (`python -m analytics.jobs.main`) or `spark-submit analytics/jobs/main.py`.

The database comes from DATABASE_URL (postgres://user:password@host:port/name), kept out of the
command line so the password does not show in `ps`. See docs/analytics.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

if not __package__:
    # Run as a file by spark-submit: make the `analytics` package (two folders up) importable.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from analytics.jobs import reports
from analytics.jobs.archive import LAYOUT, add_report_inputs, archived_inputs, with_archive
from analytics.jobs.config import Database, JobConfig
from analytics.jobs.hours import UTC, Scope
from analytics.jobs.session import LazySession
from analytics.jobs.sources import QUERIES, TIMES, partitions_for, read_input
from analytics.jobs.store import INPUTS, Marks, Report, ReportStore, RunInProgress, RunSummary

REPORTS = [
    Report("report_hourly", reports.HOURLY_COLUMNS),
    Report("report_latency", reports.LATENCY_COLUMNS),
    Report("report_errors", reports.ERROR_COLUMNS),
    Report("report_retry_cost", reports.RETRY_COST_COLUMNS),
]


def run_reports(spark: Callable[[], SparkSession], config: JobConfig, *, since: datetime | None = None,
                until: datetime | None = None, full: bool = False) -> RunSummary:
    """Recompute the report rows of the hours changed since the last run.

    With `full`, every hour; with `since`/`until`, every hour of that window (a backfill or a repair,
    which leaves the watermark where it was). `spark` is called for the session only when some
    hour needs recomputing.
    """
    started = time.monotonic()
    windowed = since is not None or until is not None
    with ReportStore.open(config.database) as store:
        previous = None if full or windowed else store.last_marks()
        marks = store.marks()
        mode = "full" if previous is None else "incremental"
        run_id = store.start_run(mode, config.master, since, until, REPORTS)
        try:
            scope = plan(store, config, previous, Scope.window(since, until))
            store.progress(run_id, 5, f"recomputing {scope.describe()}")
            if not scope.is_empty:
                stage_reports(spark(), config, store, run_id, scope)
            # Only a run over every hour may move the watermark: a window leaves other hours behind.
            rows, hours = store.publish(run_id, scope, REPORTS, None if windowed else marks, scope.describe())
        except BaseException as error:
            store.fail(run_id, f"{type(error).__name__}: {error}")
            raise
    return RunSummary(run_id, mode, scope.describe(), rows, hours, time.monotonic() - started)


def plan(store: ReportStore, config: JobConfig, previous: Marks | None, window: Scope) -> Scope:
    """Return the hours to recompute: all of the window, or those touched since the previous watermark."""
    if previous is None:
        return window
    hours = store.touched_hours(previous, timedelta(seconds=config.overlap_s))
    return Scope.of_hours(hours, config.max_ranges).intersect(window)


def stage_reports(spark: SparkSession, config: JobConfig, store: ReportStore, run_id: int, scope: Scope) -> None:
    """Read the scope's log rows, compute every report and append it to its staging table."""
    ids = {name: store.id_range(name, scope) for name in INPUTS}
    # The rows retention moved to the archive, beside those still in PostgreSQL (never the same row twice).
    batches = store.archived_batches(scope)
    older = [batch for batch in batches if batch.layout < LAYOUT]
    if older:
        store.progress(run_id, 5, f"writing the report inputs of {len(older)} archive batch(es) archived without them")
        add_report_inputs(spark, older)
        store.record_layout(older, LAYOUT)
    hot = {name: read_input(spark, config, name, scope, ids[name]) for name in QUERIES}
    archived = archived_inputs(spark, batches, {name: scope.sql(TIMES[name]) for name in QUERIES},
                               {name: frame.drop("hour").schema for name, frame in hot.items()})
    # Each input is read once, summarised at the finest grain any report takes from it; the small
    # summaries are cached, and the four reports built from them.
    attempts = with_archive(hot["attempts"], archived.get("attempts"))
    at_most = (ids["attempts"].rows if ids["attempts"] else 0) + sum(batch.rows for batch in batches)
    figures = reports.attempt_figures(attempts, partitions_for(config, at_most)).cache()
    sends = reports.send_counts(with_archive(hot["sends"], archived.get("sends"))).cache()
    expiries = with_archive(hot["expiries"], archived.get("expiries"))
    store.progress(run_id, 8, "reading and summarising the attempts and sends")
    figures.count()
    sends.count()
    outputs = [
        reports.hourly(figures, sends, expiries),
        reports.latency(figures),
        reports.errors(figures),
        reports.retry_cost(figures, sends),
    ]
    try:
        for done, (report, frame) in enumerate(zip(REPORTS, outputs, strict=True)):
            store.progress(run_id, 10 + 20 * done, f"computing {report.table}")
            write_staging(frame, config, report.staging, run_id)
        store.progress(run_id, 90, "swapping the new rows in")
    finally:
        for frame in (sends, figures):
            frame.unpersist()


def write_staging(frame: DataFrame, config: JobConfig, table: str, run_id: int) -> None:
    """Append `frame` to a staging table over JDBC, at most `config.partitions` connections at once."""
    writer = (
        frame.withColumn("run_id", F.lit(run_id)).write.format("jdbc")
        .option("url", config.database.jdbc_url)
        .option("dbtable", table)
        .option("batchsize", "5000")
        .option("numPartitions", str(config.partitions))
        .mode("append")
    )
    for key, value in config.database.jdbc_properties.items():
        writer = writer.option(key, value)
    writer.save()


# ---- the command line ----------------------------------------------------------------------------

def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Recompute Dovecote's report tables from the log tables.")
    parser.add_argument("--since", type=moment, help="recompute every hour from this one (ISO 8601)")
    parser.add_argument("--until", type=moment, help="recompute every hour before this time (ISO 8601)")
    parser.add_argument("--full", action="store_true", help="every hour, not only those changed since the last run")
    parser.add_argument("--master", default=os.environ.get("DOVECOTE_SPARK_MASTER", "local[*]"))
    parser.add_argument("--driver-memory", default=os.environ.get("DOVECOTE_SPARK_DRIVER_MEMORY", "1g"))
    parser.add_argument("--jars", default=os.environ.get("DOVECOTE_SPARK_JARS", JobConfig.jars))
    parser.add_argument("--partitions", type=int, default=JobConfig.partitions)
    parser.add_argument("--fetchsize", type=int, default=JobConfig.fetchsize)
    return parser.parse_args(argv)


def moment(text: str) -> datetime:
    """Parse an ISO 8601 time; one without a zone is UTC."""
    value = datetime.fromisoformat(text)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    url = os.environ.get("DATABASE_URL")
    if not url:
        print("DATABASE_URL is not set (postgres://user:password@host:port/name)", file=sys.stderr)
        return 2
    config = JobConfig(database=Database.from_url(url), master=args.master, driver_memory=args.driver_memory,
                       jars=args.jars, partitions=args.partitions, fetchsize=args.fetchsize)
    spark = LazySession(config)
    try:
        print(run_reports(spark, config, since=args.since, until=args.until, full=args.full))
    except RunInProgress as busy:
        print(f"skipped: {busy}", file=sys.stderr)
        return 3
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
