"""The report runs as the console follows them: asking a worker for a run, and what the runs are doing.

Everything is read from the `report_runs` rows (analytics/models.py), which the runs themselves
keep up to date: `requested` (the console asked; no worker has taken it), `running` (with a
heartbeat), `succeeded`, `failed`. The Reports page's panel (console/reports.py) shows one of the
RunStates below, each a reading of the newest row and the clock.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from django.db import IntegrityError, transaction
from kombu.exceptions import OperationalError

from analytics import runner, tasks
from analytics.models import ReportRun

log = logging.getLogger("dovecote.analytics")


class RunState(StrEnum):
    UNSUPPORTED = "unsupported"  # not PostgreSQL (embedded mode): the jobs cannot run here
    NEVER = "never"  # no run yet, none requested
    WAITING = "waiting"  # requested, no worker has taken it yet
    STALLED = "stalled"  # requested WORKER_PATIENCE ago and still not taken
    STARTING = "starting"  # a worker took it and is starting the run
    RUNNING = "running"
    ABANDONED = "abandoned"  # recorded as running, but its heartbeat stopped: its process is gone
    SUCCEEDED = "succeeded"
    FAILED = "failed"


LIVE = (RunState.WAITING, RunState.STARTING, RunState.RUNNING)


@dataclass(frozen=True)
class Progress:
    """What the report runs are doing: the state, the run it is about, and a request waiting for a worker."""

    state: RunState
    run: ReportRun | None = None  # the running or last run (while a request waits: the one before it)
    requested_at: datetime | None = None

    @property
    def is_live(self) -> bool:
        """Whether the state will change by itself soon (a page should keep polling)."""
        return self.state in LIVE

    @property
    def can_request(self) -> bool:
        """Whether asking for a run now would start one."""
        return self.state not in (RunState.UNSUPPORTED, *LIVE)


class Refresh(StrEnum):
    REQUESTED = "requested"
    UNSUPPORTED = "unsupported"
    IN_PROGRESS = "in progress"
    ALREADY_REQUESTED = "already requested"
    UNREACHABLE = "unreachable"  # the Celery broker did not answer


def report_progress(now: datetime) -> Progress:
    """Say what the report runs are doing, for the Reports page's panel (one query, two while a request waits)."""
    if not runner.reports_supported():
        return Progress(RunState.UNSUPPORTED)
    newest = ReportRun.objects.first()
    if newest is None:
        return Progress(RunState.NEVER)
    if newest.is_requested:
        before = ReportRun.objects.exclude(status=ReportRun.Status.REQUESTED).first()
        state = RunState.STALLED if newest.is_stalled(now) else RunState.WAITING
        return Progress(state, before, newest.requested_at)
    return Progress(run_state(newest, now), newest)


def run_state(run: ReportRun, now: datetime) -> RunState:
    """Read a run that a worker has taken: starting, running, abandoned, or how it ended."""
    if run.is_abandoned(now):
        return RunState.ABANDONED
    if run.is_running:
        return RunState.STARTING if run.stage == "starting" else RunState.RUNNING
    return RunState(run.status)


def request_report_run(now: datetime) -> Refresh:
    """Ask a worker for a report run, unless one is running or already asked for.

    The request is a `requested` row; the Celery task's run takes it when it starts. A request no
    worker took in WORKER_PATIENCE is made again (the same row, a new task); a run whose heartbeat
    stopped is recorded failed first. When the Celery broker does not answer, the request is forgotten.
    """
    progress = report_progress(now)
    refused = {RunState.UNSUPPORTED: Refresh.UNSUPPORTED, RunState.RUNNING: Refresh.IN_PROGRESS,
               RunState.STARTING: Refresh.IN_PROGRESS, RunState.WAITING: Refresh.ALREADY_REQUESTED}
    if progress.state in refused:
        return refused[progress.state]
    try:
        with transaction.atomic():
            ReportRun.objects.retire_abandoned(now)
            request, made = ask(now)
    except IntegrityError:  # another click, or a run, got there first
        return Refresh.IN_PROGRESS if ReportRun.objects.filter(status=ReportRun.Status.RUNNING).exists() \
            else Refresh.ALREADY_REQUESTED
    try:
        tasks.run_reports.delay()
    except OperationalError:
        log.warning("the Celery broker did not answer: no report run requested", exc_info=True)
        if made:
            request.delete()
        return Refresh.UNREACHABLE
    return Refresh.REQUESTED


def ask(now: datetime) -> tuple[ReportRun, bool]:
    """Record the request: the stalled one again, or a new row; return it and whether it is new."""
    runner.wake_follower()  # where run_reports --follow runs, it takes the request at once
    stalled = ReportRun.objects.filter(status=ReportRun.Status.REQUESTED).first()
    if stalled is not None:
        ReportRun.objects.filter(pk=stalled.pk).update(requested_at=now)
        return stalled, False
    request = ReportRun.objects.create(status=ReportRun.Status.REQUESTED, mode=ReportRun.Mode.INCREMENTAL,
                                       requested_at=now, started_at=None, heartbeat_at=None)
    return request, True
