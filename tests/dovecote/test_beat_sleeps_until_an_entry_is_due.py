"""Beat sleeps until its next entry is due, and sends each entry when it is.

Celery's own scheduler woke 10 ms before each entry and then ticked without sleeping until the
entry was due (a negative wait, which its loop does not sleep): about 470 ticks and 24 ms of CPU a
second with this project's schedule (dovecote/heartbeats.py, HeartbeatScheduler.adjust).
"""

from __future__ import annotations

import time
from datetime import timedelta

from celery import beat as celery_beat

from dovecote.celery import app
from dovecote.heartbeats import HeartbeatScheduler

SENDS = 20
PERIOD_S = 0.05


def run_beat_loop(scheduler_cls: type[celery_beat.Scheduler]) -> tuple[list[float], list[float]]:
    """Beat's own loop (celery.beat.Service.start) over one entry due every PERIOD_S, until it was sent SENDS times.

    Returns every wait the scheduler's ticks asked for and, for each send, the seconds since the entry's last
    run as the scheduler counts it. Nothing reaches the broker.
    """
    since_last_run: list[float] = []

    class Probe(scheduler_cls):  # type: ignore[misc, valid-type]
        def apply_async(self, entry: celery_beat.ScheduleEntry, producer: object = None, advance: bool = True,
                        **kwargs: object) -> None:
            assert entry.last_run_at is not None
            since_last_run.append((entry.default_now() - entry.last_run_at).total_seconds())

    scheduler = Probe(app=app, lazy=True)
    scheduler.data = {"probe": scheduler.Entry(name="probe", task="probe", schedule=timedelta(seconds=PERIOD_S),
                                               app=app)}
    waits: list[float] = []
    deadline = time.monotonic() + 60
    while len(since_last_run) < SENDS and time.monotonic() < deadline:
        interval = scheduler.tick()
        waits.append(interval)
        if interval and interval > 0.0:  # what Service.start does with it
            time.sleep(interval)
    assert len(since_last_run) == SENDS, f"{len(since_last_run)} sends in 60 s; the last waits: {waits[-20:]}"
    return waits, since_last_run


def test_beat_sleeps_until_each_entry_is_due() -> None:
    waits, _ = run_beat_loop(HeartbeatScheduler)
    negative = [wait for wait in waits if wait < 0]
    assert not negative, f"{len(negative)} ticks asked for a negative wait, which beat's loop does not sleep: " \
                         + str(negative[:10])
    # A send returns 0 (tick again at once), then one wait for the next: about two ticks a send.
    assert len(waits) <= 4 * SENDS, f"{len(waits)} ticks for {SENDS} sends; waits asked for: {waits[:40]}"


def test_each_entry_is_sent_no_sooner_than_its_period() -> None:
    """Sleeping to an entry's time sends it no sooner than a period after its last run."""
    _, since_last_run = run_beat_loop(HeartbeatScheduler)
    assert min(since_last_run) >= PERIOD_S, f"seconds from each send's last run to it: {since_last_run}"


def test_celerys_own_scheduler_spins_before_each_entry() -> None:
    """The measure above tells the two apart: Celery's scheduler asks for negative waits before its entries."""
    waits, _ = run_beat_loop(celery_beat.Scheduler)
    assert sum(1 for wait in waits if wait < 0) > SENDS, f"{len(waits)} ticks; the first waits: {waits[:40]}"
