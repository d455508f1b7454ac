"""Read the log tables over JDBC: only the hours in scope, in partitions split on id bounds."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from analytics.jobs.config import JobConfig
from analytics.jobs.hours import Scope

IdBounds = tuple[int, int]  # the lowest and highest id of a table

def read_attempts(spark: SparkSession, config: JobConfig, scope: Scope, bounds: IdBounds | None) -> DataFrame:
    """Return the attempts started in scope."""
    query = f"""
        SELECT id, delivery_id, attempt, started_at, duration_ms, outcome, status_code
        FROM delivery_attempts WHERE {scope.sql("started_at")}"""
    return jdbc(spark, config, query, "id", bounds).withColumn("status_code", F.col("status_code").cast("int"))


def read_sends(spark: SparkSession, config: JobConfig, scope: Scope, bounds: IdBounds | None) -> DataFrame:
    """Return the broker sends (published_messages) made in scope."""
    query = f"""
        SELECT id, delivery_id, kind, attempt, delay_ms, sent_at
        FROM published_messages WHERE {scope.sql("sent_at")}"""
    return jdbc(spark, config, query, "id", bounds)


def read_deliveries(spark: SparkSession, config: JobConfig, scope: Scope, bounds: IdBounds | None) -> DataFrame:
    """Return the deliveries the scope's attempts, sends and expiries belong to, with their message's fields.

    The delivery and its message are one dimension (room, event type, publish time), so they are
    joined at the source; for a partial scope only the deliveries the scope's rows name are read.
    """
    relevant = "TRUE" if scope.ranges is None else f"""(
            d.id IN (SELECT delivery_id FROM delivery_attempts WHERE {scope.sql("started_at")})
            OR d.id IN (SELECT delivery_id FROM published_messages WHERE {scope.sql("sent_at")})
            OR (d.status = 'expired' AND {scope.sql("d.updated_at")}))"""
    query = f"""
        SELECT d.id AS delivery_id, d.subscription_id, d.destination, d.status, d.updated_at,
               m.room_id, m.event_type, m.created_at AS published_at
        FROM delivery_delivery d JOIN delivery_message m ON m.id = d.message_id
        WHERE {relevant}"""
    deliveries = jdbc(spark, config, query, "delivery_id", bounds)
    # A deleted subscription leaves subscription_id null; its queue name still says which one it was.
    from_destination = F.regexp_extract("destination", r"::subscription-(\d+)$", 1).try_cast("long")
    return deliveries.withColumn("subscription_id", F.coalesce("subscription_id", from_destination)).drop(
        "destination")


def jdbc(spark: SparkSession, config: JobConfig, query: str, id_column: str, bounds: IdBounds | None) -> DataFrame:
    """Read `query` over JDBC in `config.partitions` partitions split on `id_column` between `bounds`."""
    reader = (
        spark.read.format("jdbc")
        .option("url", config.database.jdbc_url)
        .option("dbtable", f"({query}) AS source")
        .option("fetchsize", str(config.fetchsize))
    )
    for key, value in config.database.jdbc_properties.items():
        reader = reader.option(key, value)
    if bounds is not None and config.partitions > 1:
        low, high = bounds
        reader = (reader.option("partitionColumn", id_column).option("lowerBound", str(low))
                  .option("upperBound", str(high + 1)).option("numPartitions", str(config.partitions)))
    return reader.load()
