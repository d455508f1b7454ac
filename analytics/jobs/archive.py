"""Write one archive batch's log rows to Parquet, and read the archive back for the reports.

Layout, under `{url}/{dataset}/date=YYYY-MM-DD/batch=N/` (date: the messages' created_at day, UTC;
N: the batch's id in `archive_batches`):
- one dataset per table, `messages`, `deliveries`, `attempts`, `sends`: the PostgreSQL rows with the
  table's columns, the archive of record;
- one per report input, `report_attempts`, `report_sends`, `report_expiries`: the rows the report
  jobs' queries (analytics/jobs/sources.py) return for the batch's messages, their dimensions (room,
  event type, subscription, publish time) joined in PostgreSQL as the batch is written, so a report
  reads them as they are, with no join in Spark.
A batch's messages are listed in `archive_claims`; writing it again overwrites the same folders with
the same rows, so a batch interrupted before its delete is simply redone. Readers take only the
batches recorded `done` (their rows have left PostgreSQL in the same transaction), so the archive
and the rows still in PostgreSQL never hold the same row, and of those only the batches whose rows'
times meet the hours being recomputed (`first_at`..`last_at`), read by their folders (no listing of
the whole archive). A batch archived before the report inputs existed (`layout` 1) gets them from
its own tables' Parquet the first time a report run reads it (`add_report_inputs`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from analytics.jobs.config import JobConfig
from analytics.jobs.sources import QUERIES, jdbc, with_hour
from analytics.jobs.store import ArchivedBatch

LAYOUT = 2  # what a batch written now holds: its tables and its report inputs (archive_batches.layout)
MESSAGES = "SELECT message_id FROM archive_claims WHERE batch_id = {batch}"
TABLES = {
    "messages": "SELECT m.* FROM delivery_message m WHERE m.id IN ({messages})",
    "deliveries": "SELECT d.* FROM delivery_delivery d WHERE d.message_id IN ({messages})",
    "attempts": "SELECT a.* FROM delivery_attempts a JOIN delivery_delivery d ON d.id = a.delivery_id "
                "WHERE d.message_id IN ({messages})",
    "sends": "SELECT p.* FROM published_messages p JOIN delivery_delivery d ON d.id = p.delivery_id "
             "WHERE d.message_id IN ({messages})",
}
# Each dataset: the query selecting a batch's rows of it ({messages}: the batch's message ids).
DATASETS = {
    **TABLES,
    **{f"report_{name}": query.format(where="d.message_id IN ({messages})") for name, query in QUERIES.items()},
}


def write_batch(spark: SparkSession, config: JobConfig, batch_id: int, path: Callable[[str], str]) -> dict[str, int]:
    """Write the batch's rows of every dataset to `path(dataset)` (overwriting); return the rows written per dataset.

    Each dataset is its own Spark jobs, run side by side: a batch's jobs are small, and one after the other
    they spent most of their time waiting on JDBC round trips and job scheduling (docs/analytics.md, measured).
    """
    messages = MESSAGES.format(batch=int(batch_id))

    def write(name: str) -> int:
        frame = jdbc(spark, config, DATASETS[name].format(messages=messages), "id", None).cache()
        try:
            rows = frame.count()
            frame.coalesce(1).write.mode("overwrite").parquet(path(name))
            return rows
        finally:
            frame.unpersist()

    with ThreadPoolExecutor(len(DATASETS), thread_name_prefix="archive-write") as pool:
        return dict(zip(DATASETS, pool.map(write, DATASETS), strict=True))


# ---- the archived side of the report inputs (analytics/jobs/sources.py reads the hot side) --------

def archived_inputs(spark: SparkSession, archive: Sequence[ArchivedBatch], where: dict[str, str],
                    schemas: dict[str, StructType]) -> dict[str, DataFrame]:
    """Return the archived rows of each report input (sources.QUERIES) in scope, with their hour (none: no batch).

    `where` holds each input's scope condition on its time column (sources.TIMES), `schemas` its columns
    as the hot read has them: the archive holds the same queries' rows, so Spark reads them with that
    schema instead of a job per input reading one file's (0.5-2.7 s each on a cold JVM).
    """
    if not archive:
        return {}
    inputs = {name: read_dataset(spark, archive, f"report_{name}", schemas[name]).drop("batch") for name in QUERIES}
    return {name: with_hour(rows.where(F.expr(where[name])), name) for name, rows in inputs.items()}


def with_archive(hot: DataFrame, archived: DataFrame | None) -> DataFrame:
    """Return the hot rows and the archived ones, the archived cast to the hot columns' types."""
    if archived is None:
        return hot
    return hot.unionByName(archived.select([F.col(f.name).cast(f.dataType) for f in hot.schema.fields]))


def read_dataset(spark: SparkSession, batches: Sequence[ArchivedBatch], name: str,
                 schema: StructType | None = None) -> DataFrame:
    """Return one dataset's rows of these batches (at least one) with their `batch`, read from their folders only
    (with `schema`, its columns; else the files say)."""
    by_root: dict[str, list[str]] = {}
    for batch in batches:
        by_root.setdefault(f"{batch.url.rstrip('/')}/{name}", []).append(batch.path(name))
    reader = spark.read if schema is None else spark.read.schema(schema)
    frames = [reader.option("basePath", root).parquet(*paths).drop("date") for root, paths in by_root.items()]
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    return union


# ---- batches archived before the report inputs (layout 1) ---------------------------------------

def add_report_inputs(spark: SparkSession, batches: Sequence[ArchivedBatch]) -> None:
    """Write the report inputs of batches archived without them, from their own tables' Parquet.

    The same rows as the queries give, joined here in Spark (once per batch, when a report run first
    reads it): each fact with its delivery's subscription and its message's room, type and time.
    """
    if not batches:
        return
    deliveries = read_dataset(spark, batches, "deliveries")
    messages = read_dataset(spark, batches, "messages")
    attempts, sends = read_dataset(spark, batches, "attempts"), read_dataset(spark, batches, "sends")
    subscription = F.coalesce(
        F.col("subscription_id"),
        F.regexp_extract("destination", r"::subscription-(\d+)$", 1).cast("bigint"),  # "" (no match) reads null
    )
    dimensions = messages.select(F.col("id").alias("message_id"), "room_id", "event_type",
                                 F.col("created_at").alias("published_at"))
    found = deliveries.join(dimensions, "message_id").select(
        F.col("id").alias("delivery_id"), "status", "updated_at", "room_id", "event_type", "published_at",
        subscription.alias("subscription_id"), "batch")
    keys = ["room_id", "event_type", "subscription_id"]
    inputs = {
        "attempts": attempts.drop("batch").join(found, "delivery_id").select(
            "id", "attempt", "started_at", "duration_ms", "outcome", F.col("status_code").cast("int"),
            "published_at", *keys, "batch"),
        "sends": sends.drop("batch").join(found, "delivery_id").select(
            "id", "kind", "attempt", "delay_ms", "sent_at", *keys, "batch"),
        "expiries": found.where(F.col("status") == "expired").select(
            F.col("delivery_id").alias("id"), F.col("updated_at").alias("expired_at"), *keys, "batch"),
    }
    for name, frame in inputs.items():
        cached = frame.cache()
        try:
            for batch in batches:
                (cached.where(F.col("batch") == batch.id).drop("batch").coalesce(1)
                 .write.mode("overwrite").parquet(batch.path(f"report_{name}")))
        finally:
            cached.unpersist()
