"""The report figures, as DataFrame transformations of the log rows read in scope.

Every figure belongs to the UTC hour of one timestamp of one log row, so a report row depends
only on the rows of its own hour: recomputing an hour from the log always gives the same row.
Room and event type are the message's; the subscription is the delivery's (for a deleted
subscription, the one its queue name names). The inputs (analytics/jobs/sources.py) carry those
dimensions and an `hour` column.

report_hourly, per hour × room × subscription × event type:
  published         published_messages rows of kind `publish` sent in the hour (first sends; replays excluded)
  retried           published_messages rows of kind `retry` sent in the hour (redeliveries scheduled by EBR)
  dead_lettered     published_messages rows of kind `dead_letter` sent in the hour
  attempts          delivery_attempts rows started in the hour (push POSTs and pull leases, every outcome)
  delivered         attempts started in the hour with outcome `success` (a 2xx, or a pull ack); a
                    duplicate delivery after a worker crash counts again, as it was delivered again
  failed_attempts   attempts started in the hour with any other outcome (failure, timeout,
                    connection_error, lease_expired, nacked, crashed)
  expired           deliveries now `expired` whose status was set in the hour (updated_at; final, never changes)
  delivered_attempts  the sum of the attempt numbers of those successful attempts
  success_rate      delivered / (delivered + dead_lettered + expired): the share of outcomes settled in
                    the hour that were deliveries; null when nothing settled
  attempts_per_delivered  delivered_attempts / delivered: 1.0 when everything succeeds at the first try

report_latency, per hour at three levels (room; room × subscription; room × subscription × event type),
computed from the attempts for each level (percentiles do not add up):
  delivered         as above
  latency_p50/p95/p99_ms   of (successful attempt's start + its duration − message created_at), in whole ms
                    (the subscriber's answer or the consumer's ack, measured from the publish API's 202)
  timed_attempts    attempts started in the hour except `crashed` ones (their duration is unknown, logged as 0)
  duration_p50/p95/p99_ms, duration_max_ms   of those attempts' duration_ms
  Percentiles are exact, PostgreSQL's percentile_disc(p): the value at rank ceil(p × N) of the group's
  N values in order (analytics/jobs/summaries.py).

The attempts are read once and summarised at every grain the reports take from them (attempt_figures);
the sends are counted once at the finest grain (send_counts); each report is built from those.

report_errors, per hour × room × subscription × outcome × status code:
  failed_attempts   attempts started in the hour whose outcome is not `success`; status_code is the HTTP
                    status for `failure`, null for timeouts, connection errors, leases and crashes

report_retry_cost, per hour × room × subscription:
  publishes, replays, retries, dead_letters, rechecks   published_messages rows of each kind sent in the hour
  retry_delay_ms    sum of delay_ms of the retry sends (the backoff the EBR settings imposed)
  retry_attempts    attempts numbered 2 or more started in the hour (the subscriber requests EBR added)
"""

from __future__ import annotations

from pyspark import cloudpickle
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from analytics.jobs import summaries

# Executors run `summaries.summarise` without this code installed: ship the module with the function.
cloudpickle.register_pickle_by_value(summaries)

KEYS = ["hour", "room_id", "subscription_id", "event_type"]
SUBSCRIPTION_KEYS = ["hour", "room_id", "subscription_id"]
LEVELS = list(summaries.LEVELS)  # report_latency's levels: room, subscription, event_type

# The columns of each report table (and its staging twin, which adds run_id).
HOURLY_COLUMNS = ["key", *KEYS, "published", "delivered", "attempts", "failed_attempts", "retried",
                  "dead_lettered", "expired", "delivered_attempts", "success_rate", "attempts_per_delivered"]
LATENCY_COLUMNS = ["key", "level", *KEYS, "delivered", "latency_p50_ms", "latency_p95_ms", "latency_p99_ms",
                   "timed_attempts", "duration_p50_ms", "duration_p95_ms", "duration_p99_ms", "duration_max_ms"]
ERROR_COLUMNS = ["key", *SUBSCRIPTION_KEYS, "outcome", "status_code", "failed_attempts"]
RETRY_COST_COLUMNS = ["key", *SUBSCRIPTION_KEYS, "publishes", "replays", "retries", "dead_letters", "rechecks",
                      "retry_delay_ms", "retry_attempts"]


def attempt_figures(attempts: DataFrame, partitions: int) -> DataFrame:
    """Summarise the attempts once, for every report that counts them (analytics/jobs/summaries.py).

    The attempts are shuffled by hour and room into `partitions` tasks, so every group of every level
    is whole in one task, where numpy counts it and takes its exact percentiles.
    """
    success = F.col("outcome") == "success"
    since_publish_ms = F.expr("div(unix_micros(started_at) - unix_micros(published_at), 1000)")
    values = attempts.select(
        *KEYS, "outcome", F.col("status_code").cast("int"), F.col("attempt").cast("int"),
        F.when(success, since_publish_ms + F.col("duration_ms")).cast("long").alias("latency_ms"),
        F.when(F.col("outcome") != "crashed", F.col("duration_ms")).cast("long").alias("duration_ms"),
    )
    return values.repartition(partitions, "hour", "room_id").mapInArrow(summaries.summarise, summaries.DDL)


def send_counts(sends: DataFrame) -> DataFrame:
    """Count the sends of each kind per hour, room, subscription and event type (the finest grain any report takes)."""
    kind = F.col("kind")
    return sends.groupBy(KEYS).agg(
        *(count_where(kind == name).alias(name) for name in ("publish", "replay", "retry", "dead_letter", "recheck")),
        F.sum(F.when(kind == "retry", F.col("delay_ms")).otherwise(0)).cast("long").alias("retry_delay_ms"))


def hourly(figures: DataFrame, sends: DataFrame, expiries: DataFrame) -> DataFrame:
    """Count publishes, deliveries, failures, retries, dead letters and expiries per room, subscription, type, hour."""
    counts = [
        sends.select(*KEYS, F.col("publish").alias("published"), F.col("retry").alias("retried"),
                     F.col("dead_letter").alias("dead_lettered")),
        figures.where(F.col("level") == "event_type").select(
            *KEYS, "attempts", "delivered", "failed_attempts", "delivered_attempts"),
        expiries.groupBy(KEYS).agg(F.count("*").alias("expired")),
    ]
    settled = F.col("delivered") + F.col("dead_lettered") + F.col("expired")
    return sum_by(KEYS, counts).withColumns({
        "key": row_key(*KEYS),
        "success_rate": ratio(F.col("delivered"), settled),
        "attempts_per_delivered": ratio(F.col("delivered_attempts"), F.col("delivered")),
    }).select(*HOURLY_COLUMNS)


def latency(figures: DataFrame) -> DataFrame:
    """Take latency and attempt duration percentiles per hour for each room, subscription and event type."""
    return (figures.where(F.col("level").isin(*LEVELS)).withColumn("key", row_key("level", *KEYS))
            .select(*LATENCY_COLUMNS))


def errors(figures: DataFrame) -> DataFrame:
    """Count failed attempts per subscription, hour, outcome and HTTP status code."""
    keys = [*SUBSCRIPTION_KEYS, "outcome", "status_code"]
    return figures.where(F.col("level") == "error").withColumn("key", row_key(*keys)).select(*ERROR_COLUMNS)


def retry_cost(figures: DataFrame, sends: DataFrame) -> DataFrame:
    """Count the sends of each kind and the redelivery attempts per subscription and hour."""
    counts = [
        sends.groupBy(SUBSCRIPTION_KEYS).agg(
            *(F.sum(name).alias(alias) for name, alias in (
                ("publish", "publishes"), ("replay", "replays"), ("retry", "retries"),
                ("dead_letter", "dead_letters"), ("recheck", "rechecks"), ("retry_delay_ms", "retry_delay_ms")))),
        figures.where(F.col("level") == "subscription").select(*SUBSCRIPTION_KEYS, "retry_attempts"),
    ]
    return sum_by(SUBSCRIPTION_KEYS, counts).withColumn("key", row_key(*SUBSCRIPTION_KEYS)).select(
        *RETRY_COST_COLUMNS)


# ---- helpers -----------------------------------------------------------------------------------

def count_where(condition: Column) -> Column:
    return F.count(F.when(condition, True))


def ratio(numerator: Column, denominator: Column) -> Column:
    return F.when(denominator > 0, numerator.cast("double") / denominator)


def sum_by(keys: list[str], parts: list[DataFrame]) -> DataFrame:
    """Outer-merge per-key counts from several sources: absent counts are 0."""
    merged = parts[0]
    for part in parts[1:]:
        merged = merged.unionByName(part, allowMissingColumns=True)
    counts = [c for c in merged.columns if c not in keys]
    # Union, then sum: unlike a full outer join on the keys, this keeps a null key (no subscription) as one group.
    return merged.groupBy(keys).agg(*[F.coalesce(F.sum(c), F.lit(0)).cast("long").alias(c) for c in counts])


def row_key(*columns: str) -> Column:
    """Return the grain of a row as text, e.g. `2026-01-02T03|4|17|order.paid` (`*`: all, or none)."""
    parts = []
    for name in columns:
        value = F.date_format(name, "yyyy-MM-dd'T'HH") if name == "hour" else F.col(name).cast("string")
        parts.append(F.coalesce(value, F.lit("*")))
    return F.concat_ws("|", *parts)

