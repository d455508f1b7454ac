-- The report figures of analytics/jobs/reports.py computed by PostgreSQL alone, for every hour:
-- the benchmark in docs/analytics.md compares this with a full Spark run. Percentiles are exact
-- (percentile_disc), as Spark's are; every figure is the same as Spark's (tests/analytics/test_analytics_reports.py
-- checks that).
--   psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -f docs/analytics-postgres.sql
\timing on
SET TIME ZONE 'UTC';

CREATE TEMP TABLE pg_deliveries AS
SELECT d.id, coalesce(d.subscription_id, substring(d.destination FROM '::subscription-(\d+)$')::bigint) AS sub,
       d.status, d.updated_at, m.room_id, m.event_type, m.created_at AS published_at
FROM delivery_delivery d JOIN delivery_message m ON m.id = d.message_id;
ANALYZE pg_deliveries;

CREATE TEMP TABLE pg_hourly AS
WITH events AS (
    SELECT date_trunc('hour', p.sent_at) AS hour, d.room_id, d.sub, d.event_type,
           (p.kind = 'publish')::int AS published, 0 AS delivered, 0 AS attempts, 0 AS failed,
           (p.kind = 'retry')::int AS retried, (p.kind = 'dead_letter')::int AS dead_lettered, 0 AS expired,
           0 AS delivered_attempts
    FROM published_messages p JOIN pg_deliveries d ON d.id = p.delivery_id
    UNION ALL
    SELECT date_trunc('hour', a.started_at), d.room_id, d.sub, d.event_type, 0, (a.outcome = 'success')::int, 1,
           (a.outcome <> 'success')::int, 0, 0, 0, CASE WHEN a.outcome = 'success' THEN a.attempt ELSE 0 END
    FROM delivery_attempts a JOIN pg_deliveries d ON d.id = a.delivery_id
    UNION ALL
    SELECT date_trunc('hour', updated_at), room_id, sub, event_type, 0, 0, 0, 0, 0, 0, 1, 0
    FROM pg_deliveries WHERE status = 'expired'
)
SELECT hour, room_id, sub, event_type, sum(published) AS published, sum(delivered) AS delivered,
       sum(attempts) AS attempts, sum(failed) AS failed_attempts, sum(retried) AS retried,
       sum(dead_lettered) AS dead_lettered, sum(expired) AS expired,
       sum(delivered)::float8 / nullif(sum(delivered) + sum(dead_lettered) + sum(expired), 0) AS success_rate,
       sum(delivered_attempts)::float8 / nullif(sum(delivered), 0) AS attempts_per_delivered
FROM events GROUP BY 1, 2, 3, 4;

CREATE TEMP TABLE pg_latency AS
WITH a AS (
    SELECT date_trunc('hour', a.started_at) AS hour, d.room_id, d.sub, d.event_type, a.outcome,
           CASE WHEN a.outcome = 'success' THEN
               ((extract(epoch FROM a.started_at) * 1000000)::bigint
                - (extract(epoch FROM d.published_at) * 1000000)::bigint) / 1000 + a.duration_ms END AS latency_ms,
           CASE WHEN a.outcome <> 'crashed' THEN a.duration_ms END AS duration_ms
    FROM delivery_attempts a JOIN pg_deliveries d ON d.id = a.delivery_id
)
SELECT GROUPING(sub, event_type) AS level, hour, room_id, sub, event_type,
       count(*) FILTER (WHERE outcome = 'success') AS delivered,
       percentile_disc(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY latency_ms)
           FILTER (WHERE latency_ms IS NOT NULL) AS latency,
       count(duration_ms) AS timed_attempts,
       percentile_disc(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY duration_ms)
           FILTER (WHERE duration_ms IS NOT NULL) AS duration,
       max(duration_ms) AS duration_max_ms
FROM a GROUP BY GROUPING SETS ((hour, room_id), (hour, room_id, sub), (hour, room_id, sub, event_type));

CREATE TEMP TABLE pg_errors AS
SELECT date_trunc('hour', a.started_at) AS hour, d.room_id, d.sub, a.outcome, a.status_code,
       count(*) AS failed_attempts
FROM delivery_attempts a JOIN pg_deliveries d ON d.id = a.delivery_id
WHERE a.outcome <> 'success' GROUP BY 1, 2, 3, 4, 5;

CREATE TEMP TABLE pg_retry_cost AS
WITH events AS (
    SELECT date_trunc('hour', p.sent_at) AS hour, d.room_id, d.sub, (p.kind = 'publish')::int AS publishes,
           (p.kind = 'replay')::int AS replays, (p.kind = 'retry')::int AS retries,
           (p.kind = 'dead_letter')::int AS dead_letters, (p.kind = 'recheck')::int AS rechecks,
           CASE WHEN p.kind = 'retry' THEN p.delay_ms ELSE 0 END AS retry_delay_ms, 0 AS retry_attempts
    FROM published_messages p JOIN pg_deliveries d ON d.id = p.delivery_id
    UNION ALL
    SELECT date_trunc('hour', a.started_at), d.room_id, d.sub, 0, 0, 0, 0, 0, 0, (a.attempt > 1)::int
    FROM delivery_attempts a JOIN pg_deliveries d ON d.id = a.delivery_id
)
SELECT hour, room_id, sub, sum(publishes) AS publishes, sum(replays) AS replays, sum(retries) AS retries,
       sum(dead_letters) AS dead_letters, sum(rechecks) AS rechecks, sum(retry_delay_ms) AS retry_delay_ms,
       sum(retry_attempts) AS retry_attempts
FROM events GROUP BY 1, 2, 3;

SELECT (SELECT count(*) FROM pg_hourly) AS hourly, (SELECT count(*) FROM pg_latency) AS latency,
       (SELECT count(*) FROM pg_errors) AS errors, (SELECT count(*) FROM pg_retry_cost) AS retry_cost;
