"""Read the log rows of the hours in scope over JDBC, in partitions split on id bounds.

Each fact row (an attempt, a send, an expiry) comes with its delivery's subscription and its
message's room, event type and publish time. That lookup by primary key is joined at the
source: PostgreSQL does it with its indexes, while a shuffle join in Spark made a full run on
1 M attempts several times slower (docs/analytics.md). Spark does all the aggregation.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from analytics.jobs.config import IdRange, JobConfig
from analytics.jobs.hours import Scope

# A deleted subscription leaves subscription_id null; its queue name still says which one it was.
DIMENSIONS = r"""
    m.room_id, m.event_type,
    coalesce(d.subscription_id, substring(d.destination FROM '::subscription-(\d+)$')::bigint) AS subscription_id"""
JOIN_DIMENSIONS = "JOIN delivery_delivery d ON d.id = f.delivery_id JOIN delivery_message m ON m.id = d.message_id"


def read_attempts(spark: SparkSession, config: JobConfig, scope: Scope, ids: IdRange | None) -> DataFrame:
    """Return the attempts started in scope, with their hour and dimensions."""
    query = f"""
        SELECT f.id, f.attempt, f.started_at, f.duration_ms, f.outcome, f.status_code::int AS status_code,
               m.created_at AS published_at, {DIMENSIONS}
        FROM delivery_attempts f {JOIN_DIMENSIONS}
        WHERE {scope.sql("f.started_at")}"""
    return jdbc(spark, config, query, "id", ids).withColumn("hour", F.date_trunc("hour", "started_at"))


def read_sends(spark: SparkSession, config: JobConfig, scope: Scope, ids: IdRange | None) -> DataFrame:
    """Return the broker sends (published_messages) made in scope, with their hour and dimensions."""
    query = f"""
        SELECT f.id, f.kind, f.attempt, f.delay_ms, f.sent_at, {DIMENSIONS}
        FROM published_messages f {JOIN_DIMENSIONS}
        WHERE {scope.sql("f.sent_at")}"""
    return jdbc(spark, config, query, "id", ids).withColumn("hour", F.date_trunc("hour", "sent_at"))


def read_expiries(spark: SparkSession, config: JobConfig, scope: Scope, ids: IdRange | None) -> DataFrame:
    """Return the deliveries that expired in scope (status `expired`, set at updated_at; it never changes again)."""
    query = f"""
        SELECT d.id, d.updated_at AS expired_at, {DIMENSIONS}
        FROM delivery_delivery d JOIN delivery_message m ON m.id = d.message_id
        WHERE d.status = 'expired' AND {scope.sql("d.updated_at")}"""
    return jdbc(spark, config, query, "id", ids).withColumn("hour", F.date_trunc("hour", "expired_at"))


def jdbc(spark: SparkSession, config: JobConfig, query: str, id_column: str, ids: IdRange | None) -> DataFrame:
    """Read `query` over JDBC in partitions split on `id_column` between the lowest and highest of `ids`."""
    reader = (
        spark.read.format("jdbc")
        .option("url", config.database.jdbc_url)
        .option("dbtable", f"({query}) AS source")
        .option("fetchsize", str(config.fetchsize))
    )
    for key, value in config.database.jdbc_properties.items():
        reader = reader.option(key, value)
    partitions = partition_count(config, ids)
    if ids is not None and partitions > 1:
        reader = (reader.option("partitionColumn", id_column).option("lowerBound", str(ids.low))
                  .option("upperBound", str(ids.high + 1)).option("numPartitions", str(partitions)))
    return reader.load()


def partition_count(config: JobConfig, ids: IdRange | None) -> int:
    """Return `config.partitions`, or more when each would hold over `rows_per_partition` rows."""
    if ids is None:
        return 1
    return max(config.partitions, -(-ids.rows // config.rows_per_partition))
