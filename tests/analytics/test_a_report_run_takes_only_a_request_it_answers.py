"""A report run takes the waiting request only when it does at least what was asked.

`manage.py run_reports --full` where a follower runs leaves a `requested` row for it. If the
follower's own refresh, an incremental one, came due as the request came in, its run used to take
the row, run incremental and mark the request done: `--full` printed an incremental run's summary
and no full run ever happened (seen in the quick bench's archive group, `--every 2`). Now a run that
does not answer the request is refused as behind a live run, and the request waits for one that does.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.utils import timezone

from analytics import runner
from analytics.jobs.main import REPORTS
from analytics.jobs.store import ReportStore, RunInProgress
from analytics.models import ReportRun

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
