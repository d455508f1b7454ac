"""Read the log rows of the hours in scope over JDBC, in partitions split on id bounds.

Each fact row (an attempt, a send, an expiry) comes with its delivery's subscription and its
message's room, event type and publish time. That lookup by primary key is joined at the
source: PostgreSQL does it with its indexes, while a shuffle join in Spark made a full run on
1 M attempts several times slower (docs/analytics.md). Spark does all the aggregation. The archive
writes the same queries' rows for the messages it moves (analytics/jobs/archive.py), so archived
inputs are read as they are, with no join either.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from analytics.jobs.config import IdRange, JobConfig
from analytics.jobs.hours import Scope
from analytics.jobs.store import INPUTS

# A deleted subscription leaves subscription_id null; its queue name still says which one it was.
DIMENSIONS = r"""
    m.room_id, m.event_type,
    coalesce(d.subscription_id, substring(d.destination FROM '::subscription-(\d+)$')::bigint) AS subscription_id"""
JOIN_DIMENSIONS = "JOIN delivery_delivery d ON d.id = f.delivery_id JOIN delivery_message m ON m.id = d.message_id"


# The report inputs: each fact row with its dimensions, where `{where}` selects the rows (the scope's
# hours for the hot reads; a batch's messages when the archive writes them, analytics/jobs/archive.py).
QUERIES = {
    "attempts": f"""
        SELECT f.id, f.attempt, f.started_at, f.duration_ms, f.outcome, f.status_code::int AS status_code,
               m.created_at AS published_at, {DIMENSIONS}
        FROM delivery_attempts f {JOIN_DIMENSIONS}
        WHERE {{where}}""",
    "sends": f"""
        SELECT f.id, f.kind, f.attempt, f.delay_ms, f.sent_at, {DIMENSIONS}
        FROM published_messages f {JOIN_DIMENSIONS}
        WHERE {{where}}""",
    # A delivery's status `expired` is set at updated_at and never changes again.
    "expiries": f"""
        SELECT d.id, d.updated_at AS expired_at, {DIMENSIONS}
        FROM delivery_delivery d JOIN delivery_message m ON m.id = d.message_id
        WHERE {INPUTS["expiries"].condition} AND {{where}}""",
}
# The time of each input's row, which names its hour, as the queries above name it (their source
# column is store.INPUTS's).
TIMES = {"attempts": "started_at", "sends": "sent_at", "expiries": "expired_at"}


def read_input(spark: SparkSession, config: JobConfig, name: str, scope: Scope, ids: IdRange | None) -> DataFrame:
    """Return one input's rows in scope (attempts started, sends made, deliveries expired), with their hour."""
    query = QUERIES[name].format(where=scope.sql(INPUTS[name].time_column))
    return with_hour(jdbc(spark, config, query, "id", ids), name)


def with_hour(frame: DataFrame, name: str) -> DataFrame:
    return frame.withColumn("hour", F.date_trunc("hour", TIMES[name]))


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
    return max(config.partitions, tasks_for(config, ids.rows))


def partitions_for(config: JobConfig, rows: int) -> int:
    """Return the shuffle partitions for aggregating `rows`: `config.shuffle_partitions`, or more so that
    no task holds over `rows_per_partition` rows."""
    return max(config.shuffle_partitions, tasks_for(config, rows))


def tasks_for(config: JobConfig, rows: int) -> int:
    """Return the fewest tasks that hold `rows` with none over `config.rows_per_partition`."""
    return -(-rows // config.rows_per_partition)
