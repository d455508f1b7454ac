"""Write one archive batch's log rows to Parquet, and read the archive back for the reports.

Layout: one dataset per table, `{url}/{messages,deliveries,attempts,sends}/date=YYYY-MM-DD/batch=N/`,
with the PostgreSQL table's columns (date: the messages' created_at day, UTC; N: the batch's id in
`archive_batches`). A batch's messages are listed in `archive_claims`; writing it again overwrites
the same folders with the same rows, so a batch interrupted before its delete is simply redone.
Readers take only the batches recorded `done` (their rows have left PostgreSQL in the same
transaction), so the archive and the rows still in PostgreSQL never hold the same row.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from analytics.jobs.config import JobConfig
from analytics.jobs.sources import jdbc

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


def read_archived(spark: SparkSession, url: str, name: str, batches: Sequence[int]) -> DataFrame | None:
    """Return the rows of one dataset in the given (done) batches, or None when there are none."""
    if not batches:
        return None
    root = f"{url.rstrip('/')}/{name}"
    frame = spark.read.option("basePath", root).parquet(root)
    return frame.where(F.col("batch").isin([int(b) for b in batches])).drop("date", "batch")
