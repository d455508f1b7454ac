"""With DOVECOTE_LOG_FORMAT=json, every line `make run`'s processes write is one JSON object.

bin/web (granian: its own log and its access log), bin/worker and bin/beat (Celery, its banners
and shutdown notices) run as the Procfile runs them, on the suite's services; a publish goes
through them to a receiver that fails once, so a retry, a delivery and Django's own request log
are written too; then SIGTERM stops them, as Ctrl-C on `make run` does.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from django.conf import settings

from delivery.models import Delivery
from rooms.models import ApiKey
from tests import workers
from tests.demo_process import free_port
from tests.factories import make_event_type, make_room, make_subscription
from tests.receiver import Receiver, failing_then
from tests.run_processes import BinProcess

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def stack(tmp_path: Path, live_services, django_db_blocker) -> Iterator[dict[str, BinProcess]]:
    """bin/web, bin/worker and bin/beat in json mode, stopped (SIGTERM) when the test ends."""
    env = {**os.environ, "DOVECOTE_LOG_FORMAT": "json", "DATABASE_URL": workers.test_database_url(),
           "STOMP_URL": settings.STOMP_URL, "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
           "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"), "PORT": str(free_port()), "WEB_WORKERS": "1",
           "WORKER_THREADS": "4", "DOVECOTE_PUSH_SESSION_SECONDS": "5"}
    processes = {name: BinProcess(name, env, tmp_path) for name in ("web", "worker", "beat")}
    processes["web"].base = f"http://127.0.0.1:{env['PORT']}"
    try:
        yield processes
    finally:
        for process in processes.values():
            process.stop()
        with django_db_blocker.unblock():
            workers.close_other_sessions()


def not_json(text: str) -> list[str]:
    """The lines of `text` that are not one JSON object each."""
    bad = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            bad.append(line)
            continue
        if not isinstance(record, dict) or not {"ts", "level", "logger", "msg"} <= record.keys():
            bad.append(line)
    return bad


def test_every_line_of_web_worker_and_beat_is_json_in_json_mode(
        stack: dict[str, BinProcess], receiver: Receiver) -> None:
    web, worker, beat = stack["web"], stack["worker"], stack["beat"]
    room = make_room(delivery_delay_ms=200, delivery_delay_multiplier=1, delivery_attempts=2)
    make_event_type(room)
    key = ApiKey.issue("logs", rooms=[room])[1]
    make_subscription(room, push_url=receiver.script("/flaky", failing_then(1)))
    web.wait_until_serving(f"{web.base}/healthz/live")
    worker.wait_for(" ready.")
    beat.wait_for("beat")

    published = requests.post(f"{web.base}/api/v1/rooms/{room.pk}/messages/", timeout=30,
                              headers={"Authorization": f"Bearer {key}"},
                              json={"event_type": "order.created", "event_version": "1", "payload": {"n": 1}})
    assert published.status_code == 202, published.text
    assert requests.get(f"{web.base}/api/v1/nowhere/", timeout=30).status_code == 404  # Django logs a warning
    message_id = published.json()["message_id"]
    deadline = time.monotonic() + 90
    while Delivery.objects.get(message_id=message_id).status != "delivered":
        assert time.monotonic() < deadline, f"not delivered:\n{worker.text()[-5000:]}"
        time.sleep(0.2)
    for process in stack.values():
        process.stop()

    texts = {name: process.text() for name, process in stack.items()}
    assert "/api/v1/rooms/" in texts["web"], "granian's access log is written"
    assert "Warm shutdown" in texts["worker"] or "shutdown" in texts["worker"].lower()
    froze = {name: [r["msg"] for line in text.splitlines() if (r := json.loads(line))["logger"] == "dovecote.heap"]
             for name, text in texts.items()}
    assert all(len(records) == 1 and records[0].startswith("froze ") for records in froze.values()), (
        f"each process freezes what it made at start once (dovecote/heap.py): {froze}")
    offending = {name: bad for name, text in texts.items() if (bad := not_json(text))}
    assert not offending, "lines that are not JSON objects:\n" + "\n".join(
        f"{name}: {line!r}" for name, lines in offending.items() for line in lines)
    # The delivery's session was started by a Celery task (deliver_push_sessions) and beat's ticked all along, yet no
    # line says a task was received or succeeded: those come only at DEBUG (dovecote/settings.py LOGGING).
    per_task = [record for line in texts["worker"].splitlines()
                if (record := json.loads(line))["logger"] in ("celery.worker.strategy", "celery.app.trace")]
    assert not per_task, per_task[:5]
