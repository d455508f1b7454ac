"""Report tables the Spark jobs write (`analytics/jobs/`), their staging twins, and the runs.

Django owns the schema (migrations); the jobs only read the log tables and write these, so a
cluster never needs DDL rights. Each report table has a `*_staging` twin: Spark appends a run's
rows there over JDBC, then one PostgreSQL transaction swaps them in (analytics/jobs/store.py).
What every figure counts is in docs/analytics.md and analytics/jobs/reports.py.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import models
from django.db.models import F, FloatField, Max, Sum
from django.db.models.functions import Cast, Now, NullIf


class ReportRun(models.Model):
    """One run of the report jobs: its scope, progress, outcome and the watermark it reached."""

    class Status(models.TextChoices):
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    class Mode(models.TextChoices):
        FULL = "full"  # every hour (of the window, if one was given)
        INCREMENTAL = "incremental"  # the hours touched since the last watermark

    status = models.CharField(max_length=20, choices=Status.choices, db_default=Status.RUNNING)
    mode = models.CharField(max_length=20, choices=Mode.choices)
    master = models.CharField(max_length=200, db_default="")
    window_start = models.DateTimeField(null=True, blank=True, help_text="--since, if given.")
    window_end = models.DateTimeField(null=True, blank=True, help_text="--until, if given.")
    started_at = models.DateTimeField(db_default=Now())
    finished_at = models.DateTimeField(null=True, blank=True)
    progress = models.PositiveSmallIntegerField(db_default=0, help_text="0 to 100.")
    stage = models.CharField(max_length=200, db_default="")
    hours_processed = models.PositiveIntegerField(null=True, blank=True)
    rows_written = models.BigIntegerField(null=True, blank=True)
    scope = models.TextField(db_default="", blank=True, help_text="The hour ranges recomputed.")
    error = models.TextField(db_default="", blank=True)
    # The watermark (set by runs without a window): the database clock and the highest ids this run
    # had seen when it started. The next incremental run recomputes the hours of every row past it.
    watermark_at = models.DateTimeField(null=True, blank=True)
    max_send_id = models.BigIntegerField(null=True, blank=True)
    max_attempt_id = models.BigIntegerField(null=True, blank=True)
    max_delivery_id = models.BigIntegerField(null=True, blank=True)

    class Meta:
        db_table = "report_runs"
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["status", "-started_at"], name="report_run_status_recent")]

    def __str__(self) -> str:
        return f"report run {self.pk} ({self.status})"

    @property
    def is_running(self) -> bool:
        return self.status == self.Status.RUNNING

    def duration(self, now: datetime) -> timedelta:
        """Return how long the run took, or has taken so far while it runs."""
        return (self.finished_at or now) - self.started_at


# ---- per room, subscription, event type and hour ----------------------------------------------

class HourlyQuerySet(models.QuerySet):
    def settled(self, *grain: str) -> models.QuerySet:
        """Sum the settled outcomes per `grain` (e.g. "hour"), with their success rate (null: none settled).

        The rate is computed from the sums, as each row's is from its counts: rates do not average.
        """
        sums = self.values(*grain).annotate(delivered=Sum("delivered"), dead_lettered=Sum("dead_lettered"),
                                            expired=Sum("expired"))
        settled = F("delivered") + F("dead_lettered") + F("expired")
        return sums.annotate(success_rate=Cast(F("delivered"), FloatField()) / NullIf(settled, 0)).order_by(*grain)


class HourlyFigures(models.Model):
    hour = models.DateTimeField()
    room_id = models.BigIntegerField()
    subscription_id = models.BigIntegerField(null=True)
    event_type = models.CharField(max_length=200)
    published = models.BigIntegerField()
    delivered = models.BigIntegerField()
    attempts = models.BigIntegerField()
    failed_attempts = models.BigIntegerField()
    retried = models.BigIntegerField()
    dead_lettered = models.BigIntegerField()
    expired = models.BigIntegerField()
    delivered_attempts = models.BigIntegerField(help_text="Sum of the attempt numbers of the successful attempts.")
    success_rate = models.FloatField(null=True)
    attempts_per_delivered = models.FloatField(null=True)

    class Meta:
        abstract = True


class HourlyReport(HourlyFigures):
    """Delivery counts per room, subscription, event type and hour."""

    # The row's grain as text (hour|room|subscription|event type): a rerun rewrites the same keys,
    # so repeated runs leave identical tables, and a duplicated grain is an error, not a double count.
    key = models.CharField(max_length=300, primary_key=True)

    objects = HourlyQuerySet.as_manager()

    class Meta:
        db_table = "report_hourly"
        ordering = ["hour", "key"]
        indexes = [
            models.Index(fields=["hour"], name="report_hourly_hour"),
            models.Index(fields=["room_id", "hour"], name="report_hourly_room"),
            models.Index(fields=["subscription_id", "hour"], name="report_hourly_subscription"),
        ]


class HourlyStaging(HourlyFigures):
    run_id = models.BigIntegerField(db_index=True)
    key = models.CharField(max_length=300)

    class Meta:
        db_table = "report_hourly_staging"


# ---- latency and attempt duration percentiles ------------------------------------------------

class LatencyQuerySet(models.QuerySet):
    def slowest_endpoints(self) -> models.QuerySet:
        """Rank subscriptions by their worst hourly attempt-duration p95, slowest first.

        Percentiles do not add up across hours, so each figure is the worst hour's (and the attempts the total).
        """
        return (self.filter(level=LatencyFigures.Level.SUBSCRIPTION).values("room_id", "subscription_id").annotate(
            timed_attempts=Sum("timed_attempts"), worst_hour_p50_ms=Max("duration_p50_ms"),
            worst_hour_p95_ms=Max("duration_p95_ms"), worst_hour_p99_ms=Max("duration_p99_ms"),
            duration_max_ms=Max("duration_max_ms"),
        ).order_by(F("worst_hour_p95_ms").desc(nulls_last=True), "subscription_id"))


class LatencyFigures(models.Model):
    class Level(models.TextChoices):
        ROOM = "room"  # subscription and event type are null: every subscription of the room
        SUBSCRIPTION = "subscription"  # event type is null: every event type
        EVENT_TYPE = "event_type"

    level = models.CharField(max_length=20, choices=Level.choices)
    hour = models.DateTimeField()
    room_id = models.BigIntegerField()
    subscription_id = models.BigIntegerField(null=True)
    event_type = models.CharField(max_length=200, null=True)
    delivered = models.BigIntegerField()
    latency_p50_ms = models.BigIntegerField(null=True)
    latency_p95_ms = models.BigIntegerField(null=True)
    latency_p99_ms = models.BigIntegerField(null=True)
    timed_attempts = models.BigIntegerField()
    duration_p50_ms = models.BigIntegerField(null=True)
    duration_p95_ms = models.BigIntegerField(null=True)
    duration_p99_ms = models.BigIntegerField(null=True)
    duration_max_ms = models.BigIntegerField(null=True)

    class Meta:
        abstract = True


class LatencyReport(LatencyFigures):
    """Delivery latency and attempt duration percentiles per hour, at three levels of detail."""

    key = models.CharField(max_length=320, primary_key=True)

    objects = LatencyQuerySet.as_manager()

    class Meta:
        db_table = "report_latency"
        ordering = ["hour", "key"]
        indexes = [
            models.Index(fields=["level", "hour"], name="report_latency_level_hour"),
            models.Index(fields=["room_id", "hour"], name="report_latency_room"),
            models.Index(fields=["subscription_id", "hour"], name="report_latency_subscription"),
        ]


class LatencyStaging(LatencyFigures):
    run_id = models.BigIntegerField(db_index=True)
    key = models.CharField(max_length=320)

    class Meta:
        db_table = "report_latency_staging"


# ---- failed attempts by outcome and status code ------------------------------------------------

class ErrorFigures(models.Model):
    hour = models.DateTimeField()
    room_id = models.BigIntegerField()
    subscription_id = models.BigIntegerField(null=True)
    outcome = models.CharField(max_length=20)
    status_code = models.IntegerField(null=True)
    failed_attempts = models.BigIntegerField()

    class Meta:
        abstract = True


class ErrorReport(ErrorFigures):
    """Failed attempts per subscription, hour, outcome (the error class) and HTTP status code."""

    key = models.CharField(max_length=200, primary_key=True)

    class Meta:
        db_table = "report_errors"
        ordering = ["hour", "key"]
        indexes = [
            models.Index(fields=["hour"], name="report_errors_hour"),
            models.Index(fields=["room_id", "hour"], name="report_errors_room"),
            models.Index(fields=["subscription_id", "hour"], name="report_errors_subscription"),
        ]


class ErrorStaging(ErrorFigures):
    run_id = models.BigIntegerField(db_index=True)
    key = models.CharField(max_length=200)

    class Meta:
        db_table = "report_errors_staging"


# ---- the retry cost: sends and attempts the EBR settings added -----------------------------------

RETRY_COST_FIGURES = ["publishes", "replays", "retries", "dead_letters", "rechecks", "retry_delay_ms",
                      "retry_attempts"]


class RetryCostQuerySet(models.QuerySet):
    def totals(self, *grain: str) -> models.QuerySet:
        """Sum every retry-cost figure per `grain` (e.g. "hour", "room_id")."""
        return self.values(*grain).annotate(**{figure: Sum(figure) for figure in RETRY_COST_FIGURES}).order_by(*grain)


class RetryCostFigures(models.Model):
    hour = models.DateTimeField()
    room_id = models.BigIntegerField()
    subscription_id = models.BigIntegerField(null=True)
    publishes = models.BigIntegerField()
    replays = models.BigIntegerField()
    retries = models.BigIntegerField()
    dead_letters = models.BigIntegerField()
    rechecks = models.BigIntegerField()
    retry_delay_ms = models.BigIntegerField(help_text="Sum of the scheduled delays of the retry sends.")
    retry_attempts = models.BigIntegerField(help_text="Attempts numbered 2 or more.")

    class Meta:
        abstract = True


class RetryCostReport(RetryCostFigures):
    """Broker sends per kind and redelivery attempts, per subscription and hour."""

    key = models.CharField(max_length=100, primary_key=True)

    objects = RetryCostQuerySet.as_manager()

    class Meta:
        db_table = "report_retry_cost"
        ordering = ["hour", "key"]
        indexes = [
            models.Index(fields=["hour"], name="report_retry_cost_hour"),
            models.Index(fields=["room_id", "hour"], name="report_retry_cost_room"),
        ]


class RetryCostStaging(RetryCostFigures):
    run_id = models.BigIntegerField(db_index=True)
    key = models.CharField(max_length=100)

    class Meta:
        db_table = "report_retry_cost_staging"
