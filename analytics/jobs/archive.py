"""Write one archive batch's log rows to Parquet, and read the archive back for the reports.

Layout: one dataset per table, `{url}/{messages,deliveries,attempts,sends}/date=YYYY-MM-DD/batch=N/`,
with the PostgreSQL table's columns (date: the messages' created_at day, UTC; N: the batch's id in
`archive_batches`). A batch's messages are listed in `archive_claims`; writing it again overwrites
the same folders with the same rows, so a batch interrupted before its delete is simply redone.
Readers take only the batches recorded `done` (their rows have left PostgreSQL in the same
transaction), so the archive and the rows still in PostgreSQL never hold the same row, and of
those only the batches whose rows' times meet the hours being recomputed (`first_at`..`last_at`),
read by their folders (no listing of the whole archive).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from analytics.jobs.config import JobConfig
from analytics.jobs.sources import jdbc
from analytics.jobs.store import ArchivedBatch

CLAIMED = "SELECT message_id FROM archive_claims WHERE batch_id = {batch}"
# Each dataset: the query selecting a batch's rows of its table.
DATASETS = {
    "messages": "SELECT m.* FROM delivery_message m WHERE m.id IN ({claimed})",
    "deliveries": "SELECT d.* FROM delivery_delivery d WHERE d.message_id IN ({claimed})",
    "attempts": "SELECT a.* FROM delivery_attempts a JOIN delivery_delivery d ON d.id = a.delivery_id "
                "WHERE d.message_id IN ({claimed})",
    "sends": "SELECT p.* FROM published_messages p JOIN delivery_delivery d ON d.id = p.delivery_id "
             "WHERE d.message_id IN ({claimed})",
}


def write_batch(spark: SparkSession, config: JobConfig, batch_id: int, paths: dict[str, str]) -> dict[str, int]:
    """Write the batch's rows of every table to its path (overwriting); return the rows written per dataset."""
    written = {}
    for name, query in DATASETS.items():
        frame = jdbc(spark, config, query.format(claimed=CLAIMED.format(batch=int(batch_id))), "id", None).cache()
        try:
            written[name] = frame.count()
            frame.coalesce(1).write.mode("overwrite").parquet(paths[name])
        finally:
            frame.unpersist()
    return written


# ---- the archived side of the report inputs (analytics/jobs/sources.py reads the hot side) --------

def read_dataset(spark: SparkSession, batches: Sequence[ArchivedBatch], name: str) -> DataFrame | None:
    """Return one dataset's rows of these batches (None: no batch), read from their folders only."""
    if not batches:
        return None
    by_root: dict[str, list[str]] = {}
    for batch in batches:
        by_root.setdefault(f"{batch.url.rstrip('/')}/{name}", []).append(batch.path(name))
    frames = [spark.read.option("basePath", root).parquet(*paths).drop("date", "batch")
              for root, paths in by_root.items()]
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    return union


def archived_deliveries(spark: SparkSession, archive: Sequence[ArchivedBatch]) -> DataFrame | None:
    """Return the archived deliveries with their message's dimensions, as sources.DIMENSIONS has them."""
    deliveries, messages = read_dataset(spark, archive, "deliveries"), read_dataset(spark, archive, "messages")
    if deliveries is None or messages is None:
        return None
    subscription = F.coalesce(
        F.col("subscription_id"),
        F.regexp_extract("destination", r"::subscription-(\d+)$", 1).cast("bigint"),  # "" (no match) reads null
    )
    dimensions = messages.select(F.col("id").alias("message_id"), "room_id", "event_type",
                                 F.col("created_at").alias("published_at"))
    return deliveries.join(dimensions, "message_id").select(
        F.col("id").alias("delivery_id"), "status", "updated_at", "room_id", "event_type", "published_at",
        subscription.alias("subscription_id"))


def in_scope(frame: DataFrame, condition: str) -> DataFrame:
    return frame.where(F.expr(condition))


def archived_inputs(spark: SparkSession, archive: Sequence[ArchivedBatch],
                    where: dict[str, str]) -> dict[str, DataFrame] | None:
    """Return the archived attempts, sends and expiries in scope, with the columns the hot reads have.

    `where` holds each input's scope condition (Scope.sql of its timestamp column).
    """
    dimensions = archived_deliveries(spark, archive)
    attempts, sends = read_dataset(spark, archive, "attempts"), read_dataset(spark, archive, "sends")
    if dimensions is None or attempts is None or sends is None:
        return None
    keys = ["room_id", "event_type", "subscription_id"]
    return {
        "attempts": in_scope(attempts, where["attempts"]).join(dimensions, "delivery_id").select(
            "id", "attempt", "started_at", "duration_ms", "outcome", F.col("status_code").cast("int"),
            "published_at", *keys).withColumn("hour", F.date_trunc("hour", "started_at")),
        "sends": in_scope(sends, where["sends"]).join(dimensions, "delivery_id").select(
            "id", "kind", "attempt", "delay_ms", "sent_at", *keys).withColumn("hour", F.date_trunc("hour", "sent_at")),
        "expiries": in_scope(dimensions.where(F.col("status") == "expired"), where["expiries"]).select(
            F.col("delivery_id").alias("id"), F.col("updated_at").alias("expired_at"), *keys,
        ).withColumn("hour", F.date_trunc("hour", "expired_at")),
    }


def with_archive(hot: DataFrame, archived: DataFrame | None) -> DataFrame:
    """Return the hot rows and the archived ones, the archived cast to the hot columns' types."""
    if archived is None:
        return hot
    return hot.unionByName(archived.select([F.col(f.name).cast(f.dataType) for f in hot.schema.fields]))
