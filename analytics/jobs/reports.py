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
computed from the attempts for each level (grouping sets: percentiles do not add up):
  delivered         as above
  latency_p50/p95/p99_ms   of (successful attempt's start + its duration − message created_at), in whole ms
                    (the subscriber's answer or the consumer's ack, measured from the publish API's 202)
  timed_attempts    attempts started in the hour except `crashed` ones (their duration is unknown, logged as 0)
  duration_p50/p95/p99_ms, duration_max_ms   of those attempts' duration_ms
  Percentiles are percentile_approx(x, p, accuracy) (accuracy 10,000 by default), each group summarised
  in a single task (never merged from partial summaries, whose error can exceed the bound): the value
  returned is one of the group's values whose rank is within N / accuracy of the exact rank ceil(p × N),
  i.e. it lies between the exact percentile_disc(p − 1/accuracy) and percentile_disc(p + 1/accuracy).
  Groups of fewer than `accuracy` values get the exact percentile_disc(p).

report_errors, per hour × room × subscription × outcome × status code:
  failed_attempts   attempts started in the hour whose outcome is not `success`; status_code is the HTTP
                    status for `failure`, null for timeouts, connection errors, leases and crashes

report_retry_cost, per hour × room × subscription:
  publishes, replays, retries, dead_letters, rechecks   published_messages rows of each kind sent in the hour
  retry_delay_ms    sum of delay_ms of the retry sends (the backoff the EBR settings imposed)
  retry_attempts    attempts numbered 2 or more started in the hour (the subscriber requests EBR added)
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

KEYS = ["hour", "room_id", "subscription_id", "event_type"]
SUBSCRIPTION_KEYS = ["hour", "room_id", "subscription_id"]
PERCENTILES = [0.5, 0.95, 0.99]
LEVEL_KEYS = {"room": KEYS[:2], "subscription": KEYS[:3], "event_type": KEYS}

# The columns of each report table (and its staging twin, which adds run_id).
HOURLY_COLUMNS = ["key", *KEYS, "published", "delivered", "attempts", "failed_attempts", "retried",
                  "dead_lettered", "expired", "delivered_attempts", "success_rate", "attempts_per_delivered"]
LATENCY_COLUMNS = ["key", "level", *KEYS, "delivered", "latency_p50_ms", "latency_p95_ms", "latency_p99_ms",
                   "timed_attempts", "duration_p50_ms", "duration_p95_ms", "duration_p99_ms", "duration_max_ms"]
ERROR_COLUMNS = ["key", *SUBSCRIPTION_KEYS, "outcome", "status_code", "failed_attempts"]
RETRY_COST_COLUMNS = ["key", *SUBSCRIPTION_KEYS, "publishes", "replays", "retries", "dead_letters", "rechecks",
                      "retry_delay_ms", "retry_attempts"]


def hourly(attempts: DataFrame, sends: DataFrame, expiries: DataFrame) -> DataFrame:
    """Count publishes, deliveries, failures, retries, dead letters and expiries per room, subscription, type, hour."""
    success = F.col("outcome") == "success"
    counts = [
        sends.groupBy(KEYS).agg(count_where(F.col("kind") == "publish").alias("published"),
                                count_where(F.col("kind") == "retry").alias("retried"),
                                count_where(F.col("kind") == "dead_letter").alias("dead_lettered")),
        attempts.groupBy(KEYS).agg(F.count("*").alias("attempts"),
                                   count_where(success).alias("delivered"),
                                   count_where(~success).alias("failed_attempts"),
                                   F.sum(F.when(success, F.col("attempt")).otherwise(0)).cast("long")
                                   .alias("delivered_attempts")),
        expiries.groupBy(KEYS).agg(F.count("*").alias("expired")),
    ]
    settled = F.col("delivered") + F.col("dead_lettered") + F.col("expired")
    return sum_by(KEYS, counts).withColumns({
        "key": row_key(*KEYS),
        "success_rate": ratio(F.col("delivered"), settled),
        "attempts_per_delivered": ratio(F.col("delivered_attempts"), F.col("delivered")),
    }).select(*HOURLY_COLUMNS)


def latency(attempts: DataFrame, accuracy: int, partitions: int) -> DataFrame:
    """Take latency and attempt duration percentiles per hour for each room, subscription and event type."""
    success = F.col("outcome") == "success"
    since_publish_ms = F.expr("div(unix_micros(started_at) - unix_micros(published_at), 1000)")
    values = attempts.select(
        *KEYS, success.alias("success"),
        F.when(success, since_publish_ms + F.col("duration_ms")).alias("latency_ms"),
        F.when(F.col("outcome") != "crashed", F.col("duration_ms").cast("long")).alias("duration_ms"),
    )
    # Each group of each level (all include hour and room) is then aggregated whole in one task, so
    # percentile_approx never merges partial summaries: merged ones broke the 1/accuracy bound on 10 M rows.
    timed = values.repartition(partitions, "hour", "room_id")
    figures = [
        count_where(F.col("success")).alias("delivered"),
        F.percentile_approx("latency_ms", PERCENTILES, accuracy).alias("latency"),
        F.count("duration_ms").alias("timed_attempts"),
        F.percentile_approx("duration_ms", PERCENTILES, accuracy).alias("duration"),
        F.max("duration_ms").alias("duration_max_ms"),
    ]
    levels = [timed.groupBy(*keys).agg(*figures).withColumn("level", F.lit(level))
              for level, keys in LEVEL_KEYS.items()]
    merged = levels[0]
    for level in levels[1:]:
        merged = merged.unionByName(level, allowMissingColumns=True)
    percentiles = {f"{name}_p{round(p * 100)}_ms": F.col(name)[i]
                   for name in ("latency", "duration") for i, p in enumerate(PERCENTILES)}
    return merged.withColumns({"key": row_key("level", *KEYS), **percentiles}).select(*LATENCY_COLUMNS)


def errors(attempts: DataFrame) -> DataFrame:
    """Count failed attempts per subscription, hour, outcome and HTTP status code."""
    keys = [*SUBSCRIPTION_KEYS, "outcome", "status_code"]
    failed = attempts.where(F.col("outcome") != "success")
    return failed.groupBy(keys).agg(F.count("*").alias("failed_attempts")).withColumn(
        "key", row_key(*keys)).select(*ERROR_COLUMNS)


def retry_cost(attempts: DataFrame, sends: DataFrame) -> DataFrame:
    """Count the sends of each kind and the redelivery attempts per subscription and hour."""
    kind = F.col("kind")
    counts = [
        sends.groupBy(SUBSCRIPTION_KEYS).agg(
            count_where(kind == "publish").alias("publishes"), count_where(kind == "replay").alias("replays"),
            count_where(kind == "retry").alias("retries"), count_where(kind == "dead_letter").alias("dead_letters"),
            count_where(kind == "recheck").alias("rechecks"),
            F.sum(F.when(kind == "retry", F.col("delay_ms")).otherwise(0)).cast("long").alias("retry_delay_ms")),
        attempts.groupBy(SUBSCRIPTION_KEYS).agg(count_where(F.col("attempt") > 1).alias("retry_attempts")),
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

