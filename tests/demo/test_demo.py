"""`make demo`'s entry point: one process, no services, and within 30 s deliveries, retries and dead letters;
a restart that goes on where the last run stopped; a second demo that leaves a running one alone."""

from __future__ import annotations

import socket
import sqlite3
import time
import urllib.error
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from celery.beat import Scheduler
from django.conf import settings

from demo import embedded
from demo.state import DemoState
from dovecote.celery import app
from dovecote.heartbeats import HeartbeatScheduler
from tests.demo_process import Demo, answers, free_port, get_json


def key_works(port: int, key: str) -> bool:
    try:
        get_json(f"http://127.0.0.1:{port}/api/v1/rooms/", key)
    except urllib.error.HTTPError as error:
        assert error.code == 401, error  # noqa: PT017 - a helper: only a 401 says the key does not work
        return False
    return True


def test_the_demo_delivers_retries_and_dead_letters_within_30_seconds(tmp_path: Path) -> None:
    port = free_port()
    demo = Demo.start(tmp_path / "state", port)
    try:
        key = demo.banner("API key")
        base = f"http://127.0.0.1:{port}/api/v1/messages/"
        deadline = time.monotonic() + 30
        seen: dict[str, bool] = {}
        while time.monotonic() < deadline and len(seen) < 3:
            rows = get_json(f"{base}?page_size=500", key)["results"]
            for row in rows:
                if row["status"] == "delivered":
                    seen["delivered"] = True
                if row["status"] == "dead_lettered":
                    seen["dead_lettered"] = True
                if row["attempts"] >= 2:
                    seen["retried"] = True
            time.sleep(0.5)
        assert seen == {"delivered": True, "dead_lettered": True, "retried": True}, demo.log.read_text()[-2000:]
        assert get_json(f"http://127.0.0.1:{port}/healthz/", key)["status"] == "ok"
    finally:
        output = demo.stop()
    assert "Dovecote demo stopped." in output
    assert not list((tmp_path / "cwd").glob("celerybeat-schedule*"))  # runtime files stay under var/


def overdue_push_deliveries(database: Path, older_than: timedelta) -> list[tuple]:
    """Return push deliveries `queued` or `retrying` whose due time passed more than `older_than` ago.

    Those of a subscription whose circuit breaker is open are left out: they wait for its probes on
    purpose (the demo's receiver that is down opens its breaker), each probe cycle moving them on.
    """
    cutoff = (datetime.now(UTC) - older_than).replace(tzinfo=None).isoformat(" ")
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        return db.execute(
            "SELECT d.id, d.status, d.attempts, d.next_attempt_at, d.updated_at FROM delivery_delivery d "
            "JOIN subscriptions_subscription s ON s.id = d.subscription_id "
            "WHERE s.type = 'push' AND d.status IN ('queued', 'retrying') AND s.breaker_state = 'closed' "
            "AND COALESCE(d.next_attempt_at, d.updated_at) < ?", [cutoff]).fetchall()


def receiver_urls(database: Path) -> list[str]:
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        return [url for (url,) in db.execute("SELECT push_url FROM subscriptions_subscription "
                                             "WHERE push_url LIKE '%/demo/receiver/'")]


@pytest.mark.slow
def test_a_restarted_demo_keeps_its_login_follows_its_port_and_leaves_nothing_overdue(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = Demo.start(state, free_port(), rate=10)
    try:
        login, key = first.banner("login"), first.banner("API key")
        time.sleep(6)  # deliveries in every state, retries among them, when it stops
    finally:
        first.stop()

    second = Demo.start(state, free_port())
    try:
        assert (second.banner("login"), second.banner("API key")) == (login, key)
        output = second.log.read_text()
        assert "sending again" in output and "the same login and key as before" in output
        assert key_works(second.port, key)
        assert receiver_urls(state / "demo.sqlite3") == [f"http://127.0.0.1:{second.port}/demo/receiver/"] * 2
        time.sleep(8)
        assert overdue_push_deliveries(state / "demo.sqlite3", timedelta(seconds=5)) == []
        rows = get_json(f"http://127.0.0.1:{second.port}/api/v1/messages/?page_size=500", key)["results"]
        assert any(row["status"] == "delivered" for row in rows if row["subscription"] is not None)
    finally:
        second.stop()


@pytest.mark.slow
def test_a_second_demo_leaves_the_running_one_as_it_was(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = Demo.start(state, free_port())
    try:
        key = first.banner("API key")
        login_file = (state / "demo-login.json").read_text()

        same_port, status_port = Demo.start(state, first.port).finish()
        other_port, status_other = Demo.start(state, free_port(), "--reset").finish()

        assert same_port == 1 and f"port {first.port} is in use by the demo of this saved state" in status_port
        assert other_port == 1 and "a demo already runs on this saved state" in status_other
        for output in (status_port, status_other):
            assert f"open http://127.0.0.1:{first.port}/" in output and "Traceback" not in output
            assert "API key:" not in output
        assert (state / "demo-login.json").read_text() == login_file
        assert key_works(first.port, key)
        assert answers(f"http://127.0.0.1:{first.port}/healthz/")
    finally:
        first.stop()


def test_a_demo_on_a_port_something_else_uses_says_which_port_to_use_and_touches_nothing(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "demo.sqlite3").write_bytes(b"saved state")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        status, output = Demo.start(state, port, "--reset").finish()

    assert status == 1
    assert output.strip().startswith(f"port {port} is in use: `PORT=")
    suggested = int(output.split("PORT=")[1].split()[0])
    assert suggested > port and "make demo`" in output and "Traceback" not in output
    assert sorted(p.name for p in state.iterdir()) == ["demo.sqlite3"]  # not migrated, not reset, no lock
    assert (state / "demo.sqlite3").read_bytes() == b"saved state"


def test_demo_reset_forgets_the_database_the_login_and_beat_schedule_files(tmp_path: Path, settings) -> None:
    settings.BASE_DIR = tmp_path
    settings.CELERY_BEAT_SCHEDULE_FILENAME = str(tmp_path / "var" / "celerybeat-schedule")
    (tmp_path / "var").mkdir()
    state = DemoState(tmp_path / "var" / "dovecote.sqlite3")
    names = ["var/dovecote.sqlite3", "var/dovecote.sqlite3-wal", "var/dovecote.sqlite3-shm", "var/dovecote-login.json",
             "var/celerybeat-schedule", "var/celerybeat-schedule-wal", "celerybeat-schedule", "var/secret-key"]
    for name in names:
        (tmp_path / name).write_text("x")

    removed = state.forget()

    assert sorted(str(p.relative_to(tmp_path)) for p in removed) == sorted(set(names) - {"var/secret-key"})
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == ["var", "var/secret-key"]


def test_beat_keeps_no_schedule_file_outside_var() -> None:
    assert Path(app.conf.beat_schedule_filename).parent == settings.BASE_DIR / "var"
    scheduler = embedded.beat_service(app).service.get_scheduler(lazy=True)
    # The demo's beat keeps its schedule in memory, no file at all (the heartbeat subclass adds none).
    assert type(scheduler) is HeartbeatScheduler and HeartbeatScheduler.__bases__ == (Scheduler,)
