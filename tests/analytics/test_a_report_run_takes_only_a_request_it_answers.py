"""A report run takes the waiting request only when it does at least what was asked.

`manage.py run_reports --full` where a follower runs leaves a `requested` row for it. If the
follower's own refresh, an incremental one, came due as the request came in, its run used to take
the row, run incremental and mark the request done: `--full` printed an incremental run's summary
and no full run ever happened (seen in the quick bench's archive group, `--every 2`). Now a run that
does not answer the request is refused as behind a live run, and the request waits for one that does.
A request whose asker died while it waited (its heartbeat stopped) is withdrawn, so nothing waits for one
no one answers.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from analytics import runner
from analytics.jobs.main import REPORTS
from analytics.jobs.store import ReportStore, RunInProgress
from analytics.models import HEARTBEAT_TIMEOUT, ReportRun

pytestmark = pytest.mark.django_db(transaction=True)

WINDOW = (datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 2, tzinfo=UTC))
OTHER_WINDOW = (datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 3, tzinfo=UTC))
EVERY_HOUR = (None, None)

# (the request's mode and window, the run's mode and window, whether the run takes the request)
CASES = [
    (("incremental", *EVERY_HOUR), ("incremental", *EVERY_HOUR), True),  # the console's Refresh, a worker's run
    (("incremental", *EVERY_HOUR), ("full", *EVERY_HOUR), True),  # a full run does all an incremental one does
    (("full", *EVERY_HOUR), ("full", *EVERY_HOUR), True),
    (("full", *EVERY_HOUR), ("incremental", *EVERY_HOUR), False),  # the follower's refresh, due as --full asks
    (("full", *WINDOW), ("full", *WINDOW), True),  # --since/--until, run by the follower
    (("full", *WINDOW), ("full", *EVERY_HOUR), True),
    (("full", *WINDOW), ("incremental", *EVERY_HOUR), False),
    (("full", *WINDOW), ("full", *OTHER_WINDOW), False),
    (("incremental", *EVERY_HOUR), ("full", *WINDOW), False),  # a window keeps the watermark: no refresh
]


def ask(mode: str, since: datetime | None, until: datetime | None) -> ReportRun:
    return ReportRun.objects.create(status=ReportRun.Status.REQUESTED, mode=mode, window_start=since,
                                    window_end=until, requested_at=timezone.now(), started_at=None, heartbeat_at=None)


@pytest.mark.parametrize(("asked", "run", "taken"), CASES)
def test_a_run_takes_the_request_only_if_it_answers_it(asked: tuple, run: tuple, taken: bool) -> None:
    request = ask(*asked)
    mode, since, until = run
    with ReportStore.open(runner.job_config().database) as store:
        if taken:
            assert store.start_run(mode, "local[*]", since, until, REPORTS) == request.pk
        else:
            with pytest.raises(RunInProgress, match=rf"run {request.pk}, {asked[0]}, asked for .* waiting for a run"):
                store.start_run(mode, "local[*]", since, until, REPORTS)
    request.refresh_from_db()
    seen = (request.status, request.mode, request.window_start, request.window_end)
    assert seen == (("running", mode, since, until) if taken else ("requested", *asked)), seen
    assert ReportRun.objects.count() == 1, list(ReportRun.objects.values())


def test_a_request_is_withdrawn_when_the_process_that_asked_stops_waiting(monkeypatch) -> None:
    """Left behind, a request for a full run would hold back every worker's incremental run until one answered it."""
    monkeypatch.setattr(runner, "follower_is_live", lambda: True)

    def interrupted(request: ReportRun, *args: object, **kwargs: object) -> None:
        assert ReportRun.objects.filter(status=ReportRun.Status.REQUESTED, mode="full").exists(), \
            list(ReportRun.objects.values())
        raise KeyboardInterrupt  # Ctrl-C while `run_reports --full` waits for the follower

    monkeypatch.setattr(ReportRun, "refresh_from_db", interrupted)  # what the waiting loop does after each pause
    with pytest.raises(KeyboardInterrupt):
        runner.run_by_follower(full=True)
    assert not ReportRun.objects.exists(), list(ReportRun.objects.values())


def test_a_request_whose_asker_died_is_withdrawn_by_the_next_run() -> None:
    """The follower gone before it took the request, and `run_reports --full` killed (SIGKILL) while it waited:
    nothing answers the request, and it held back every incremental run (beat's, each hour) until one did."""
    request = ask("full", *EVERY_HOUR)
    stopped = timezone.now() - HEARTBEAT_TIMEOUT - timedelta(seconds=1)
    ReportRun.objects.filter(pk=request.pk).update(heartbeat_at=stopped)
    with ReportStore.open(runner.job_config().database) as store:
        run_id = store.start_run("incremental", "local[*]", None, None, REPORTS)
        store.stop_heartbeat()
    runs = list(ReportRun.objects.values_list("pk", "status", "mode"))
    assert runs == [(run_id, "running", "incremental")] and run_id != request.pk, runs


def test_a_request_whose_asker_still_waits_holds_its_place() -> None:
    request = ask("full", *EVERY_HOUR)
    ReportRun.objects.filter(pk=request.pk).update(heartbeat_at=timezone.now() - HEARTBEAT_TIMEOUT / 2)
    with ReportStore.open(runner.job_config().database) as store, pytest.raises(RunInProgress):
        store.start_run("incremental", "local[*]", None, None, REPORTS)
    assert ReportRun.objects.get().status == "requested"


def test_retiring_withdraws_a_dead_askers_request_and_keeps_the_consoles() -> None:
    """The console's request has no heartbeat: any run answers it, so it waits for a worker however old it is."""
    now = timezone.now()
    dead = ask("full", *EVERY_HOUR)
    ReportRun.objects.filter(pk=dead.pk).update(heartbeat_at=now - HEARTBEAT_TIMEOUT - timedelta(seconds=1))
    ReportRun.objects.retire_abandoned(now)
    assert not ReportRun.objects.exists(), list(ReportRun.objects.values())
    console = ask("incremental", *EVERY_HOUR)
    ReportRun.objects.filter(pk=console.pk).update(requested_at=now - timedelta(hours=2))
    ReportRun.objects.retire_abandoned(now)
    assert list(ReportRun.objects.values_list("pk", "status")) == [(console.pk, "requested")]


def test_the_asker_writes_its_requests_heartbeat_while_it_waits(monkeypatch) -> None:
    monkeypatch.setattr(runner, "follower_is_live", lambda: True)
    monkeypatch.setattr(runner, "HEARTBEAT_S", 0.0)  # at every look, not every 10 s
    seen: list[datetime | None] = []
    look = ReportRun.refresh_from_db

    def looked(request: ReportRun, *args: object, **kwargs: object) -> None:
        seen.append(ReportRun.objects.values_list("heartbeat_at", flat=True).get(pk=request.pk))
        if len(seen) == 3:  # the follower runs it
            ReportRun.objects.filter(pk=request.pk).update(status=ReportRun.Status.SUCCEEDED,
                                                          finished_at=timezone.now())
        look(request, *args, **kwargs)

    monkeypatch.setattr(ReportRun, "refresh_from_db", looked)
    done = runner.run_by_follower(full=True)
    assert done is not None and done.status == ReportRun.Status.SUCCEEDED
    assert None not in seen and seen == sorted(seen) and len(set(seen)) == 3, seen
