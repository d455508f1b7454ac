"""Report tables the Spark jobs write (`analytics/jobs/`), their staging twins, and the runs.

Django owns the schema (migrations); the jobs only read the log tables and write these, so a
cluster never needs DDL rights. Each report table has a `*_staging` twin: Spark appends a run's
rows there over JDBC, then one PostgreSQL transaction swaps them in (analytics/jobs/store.py).
What every figure counts is in docs/analytics.md and analytics/jobs/reports.py.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import models
from django.db.models import F, FloatField, Max, Q, Sum, Value
from django.db.models.functions import Cast, Now, NullIf

from analytics.jobs.store import ABANDONED_ERROR, HEARTBEAT_S, HEARTBEAT_TIMEOUT_S

# How the report runs' state is kept (docs/analytics.md#runs): a run's driver writes `heartbeat_at`
# every HEARTBEAT_EVERY (analytics/jobs/store.py); a running run whose heartbeat is older than
# HEARTBEAT_TIMEOUT has lost its process. A request no worker took within WORKER_PATIENCE is stalled.
HEARTBEAT_EVERY = timedelta(seconds=HEARTBEAT_S)
HEARTBEAT_TIMEOUT = timedelta(seconds=HEARTBEAT_TIMEOUT_S)
WORKER_PATIENCE = timedelta(minutes=5)


class ReportRunQuerySet(models.QuerySet["ReportRun"]):
    def active(self) -> ReportRunQuerySet:
        """The run asked for or running (at most one: the constraint `one_active_report_run`)."""
        return self.filter(status__in=ReportRun.ACTIVE)

    def alive(self, now: datetime) -> ReportRunQuerySet:
        """The run running with a fresh heartbeat, if there is one."""
        return self.filter(status=ReportRun.Status.RUNNING, heartbeat_at__gte=now - HEARTBEAT_TIMEOUT)

    def retire_abandoned(self, now: datetime) -> int:
        """Record as failed the running runs whose heartbeat stopped (their process is gone); return how many.

        A request whose asker stopped writing its heartbeat (`run_reports` waiting for the follower, then
        killed) is withdrawn: no process waits for it any more, and left behind it would hold back every
        run that does not answer it. The console's requests carry no heartbeat: a worker's run answers them.
        The report jobs do the same when a run starts (analytics/jobs/store.py, in SQL).
        """
        stale = now - HEARTBEAT_TIMEOUT
        self.filter(status=ReportRun.Status.REQUESTED, heartbeat_at__lt=stale).delete()
        return self.filter(status=ReportRun.Status.RUNNING, heartbeat_at__lt=stale).update(
            status=ReportRun.Status.FAILED, finished_at=now, error=ABANDONED_ERROR)


class ReportRun(models.Model):
    """One run of the report jobs: asked for, running (with a heartbeat), then succeeded or failed.

    The row is the run's whole state: the console's Reports page, the API and the Celery task read
    it, and at most one run is requested or running at a time (a partial unique index). A request
    (the console's Refresh; `manage.py run_reports` where a follower runs) waits as `requested` until a
    run takes it: `run_reports --follow`'s within a second where it runs, else a worker's; a run started
    by beat or `make report` takes a waiting request too if it answers it (does at least what was asked:
    analytics/jobs/store.py start_run), or records itself as running.
    """

    class Status(models.TextChoices):
        REQUESTED = "requested"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    class Mode(models.TextChoices):
        FULL = "full"  # every hour (of the window, if one was given)
        INCREMENTAL = "incremental"  # the hours touched since the last watermark

    ACTIVE = (Status.REQUESTED, Status.RUNNING)

    status = models.CharField(max_length=20, choices=Status.choices, db_default=Status.RUNNING)
    mode = models.CharField(max_length=20, choices=Mode.choices)  # asked for, then what ran
    master = models.CharField(max_length=200, db_default="")
    window_start = models.DateTimeField(null=True, blank=True, help_text="--since, if given.")
    window_end = models.DateTimeField(null=True, blank=True, help_text="--until, if given.")
    requested_at = models.DateTimeField(null=True, help_text="When the console asked for it, if it did.")
    started_at = models.DateTimeField(null=True, db_default=Now(), help_text="Null while requested.")
    heartbeat_at = models.DateTimeField(null=True, db_default=Now(),
                                        help_text="Written by the running run's driver every few seconds "
                                                  "(while requested: by the process waiting for it, if one does).")
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

    objects = ReportRunQuerySet.as_manager()

    class Meta:
        db_table = "report_runs"
        ordering = ["-id"]
        indexes = [models.Index(fields=["status", "-started_at"], name="report_run_status_recent")]
        constraints = [
            # One run at a time: whoever asks or starts while one is requested or running gets an IntegrityError.
            models.UniqueConstraint(Value(1), condition=Q(status__in=["requested", "running"]),
                                    name="one_active_report_run"),
        ]

    def __str__(self) -> str:
        return f"report run {self.pk} ({self.status})"

    @property
    def is_running(self) -> bool:
        return self.status == self.Status.RUNNING

    @property
    def is_requested(self) -> bool:
        return self.status == self.Status.REQUESTED

    def is_abandoned(self, now: datetime) -> bool:
        """Say whether the run is recorded as running but its heartbeat stopped: its process is gone."""
        return self.is_running and (self.heartbeat_at is None or self.heartbeat_at < now - HEARTBEAT_TIMEOUT)

    def is_stalled(self, now: datetime) -> bool:
        """Say whether the run was asked for WORKER_PATIENCE ago or more and no worker has taken it."""
        return self.is_requested and self.requested_at is not None and now - self.requested_at >= WORKER_PATIENCE

    def duration(self, now: datetime) -> timedelta:
        """Return how long the run took, or has taken so far while it runs (nothing while it is asked for)."""
        if self.started_at is None:
            return timedelta()
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
    event_type = models.CharField(max_length=200, null=True)  # noqa: DJ001 - null: every event type
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


# ---- the archive: runs, their batches, and what stays of an archived message -------------------

class ArchiveRun(models.Model):
    """One run of the archive job (analytics/archive.py): what it moved, and how it ended.

    Runs hold a PostgreSQL advisory lock while they run, so at most one runs at a time; a run still
    recorded as running when the next one takes the lock lost its process and is recorded failed.
    """

    class Status(models.TextChoices):
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    status = models.CharField(max_length=20, choices=Status.choices, default=Status.RUNNING)
    url = models.CharField(max_length=1000, help_text="DOVECOTE_ARCHIVE_URL when it ran.")
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    batches = models.PositiveIntegerField(default=0, help_text="Batches archived and removed.")
    messages = models.BigIntegerField(default=0, help_text="Messages archived and removed.")
    rows = models.BigIntegerField(default=0, help_text="PostgreSQL rows removed (every table).")
    discarded = models.PositiveIntegerField(default=0, help_text="Batches given up: a message was no longer removable.")
    stage = models.CharField(max_length=200, default="")
    error = models.TextField(blank=True, default="")

    class Meta:
        db_table = "archive_runs"
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"archive run {self.pk} ({self.status})"

    def duration(self, now: datetime) -> timedelta:
        return (self.finished_at or now) - self.started_at


class ArchiveBatch(models.Model):
    """Messages of one room and one day (their created_at, UTC) archived together, under one path per table.

    `claimed`: its messages are listed in ArchiveClaim and may be written to Parquet (again: a rerun
    overwrites the same path). `done`: written, and the rows deleted in the transaction that set it.
    `discarded`: a message stopped being removable before the delete; nothing was deleted and the
    files it may have written are never read. Readers of the archive read only `done` batches.
    """

    class Status(models.TextChoices):
        CLAIMED = "claimed"
        DONE = "done"
        DISCARDED = "discarded"

    run = models.ForeignKey(ArchiveRun, on_delete=models.PROTECT, related_name="batch_set")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.CLAIMED)
    room_id = models.BigIntegerField()
    date = models.DateField(help_text="The messages' created_at date, UTC.")
    url = models.CharField(max_length=1000)
    messages = models.PositiveIntegerField()
    rows = models.BigIntegerField(null=True, blank=True, help_text="PostgreSQL rows removed.")
    # The earliest and latest time its rows carry: a report run reads the batch only for hours in between.
    first_at = models.DateTimeField(null=True, blank=True)
    last_at = models.DateTimeField(null=True, blank=True)
    # What its folders hold (analytics/jobs/archive.py): 1, its tables; 2, its tables and its report inputs.
    layout = models.PositiveSmallIntegerField(default=2)
    claimed_at = models.DateTimeField()
    done_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "archive_batches"
        indexes = [models.Index(fields=["status"], name="archive_batch_status")]

    def __str__(self) -> str:
        return f"archive batch {self.pk} ({self.status})"

    def path(self, table: str) -> str:
        """Return where this batch's rows of `table` are (messages, deliveries, attempts, sends; or a report input)."""
        return f"{self.url.rstrip('/')}/{table}/date={self.date.isoformat()}/batch={self.pk}"


class ArchiveClaim(models.Model):
    """A message an unfinished batch will archive; the batch's rows go when it is done."""

    batch = models.ForeignKey(ArchiveBatch, on_delete=models.CASCADE, related_name="claims")
    message_id = models.UUIDField()

    class Meta:
        db_table = "archive_claims"
        constraints = [models.UniqueConstraint(fields=["message_id"], name="archive_claim_once")]

    def __str__(self) -> str:
        return f"{self.message_id} in batch {self.batch_id}"


class ArchivedMessage(models.Model):
    """What PostgreSQL keeps of an archived message: which room it was in, when it left, and its batch.

    About 100 bytes a message with its primary key index (16-byte id, two 8-byte ids, a timestamp).
    """

    message_id = models.UUIDField(primary_key=True)
    room_id = models.BigIntegerField()
    archived_at = models.DateTimeField()
    batch = models.ForeignKey(ArchiveBatch, on_delete=models.PROTECT, related_name="+")

    class Meta:
        db_table = "archived_messages"

    def __str__(self) -> str:
        return f"{self.message_id} (archived)"

    def location(self, table: str = "messages") -> str:
        return self.batch.path(table)
