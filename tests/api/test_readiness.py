"""/healthz/live answers while the process does; /healthz/ready also needs a live Celery worker and beat.

A real worker (with its beat) is killed: readiness fails, naming both, and recovers once a worker
is started again. Only staff users and admin keys see what each check found.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.cache import cache
from django.test import Client, override_settings

from api import health
from dovecote import heartbeats
from rooms.models import ApiKey

HEARTBEAT_MAX_AGE_S = 3


@pytest.fixture(autouse=True)
def no_earlier_heartbeats() -> Iterator[None]:
    """Forget the heartbeats and the cached checks of earlier tests' workers."""
    def forget() -> None:
        for role in heartbeats.ROLES:
            cache.delete(heartbeats.KEY.format(role=role))
        health.RECENT_READY.forget()
    forget()
    with override_settings(DOVECOTE_HEARTBEAT_MAX_AGE_SECONDS=HEARTBEAT_MAX_AGE_S):
        yield
    forget()


def wait_for_readiness(client: Client, status: int, timeout: float = 30.0, **headers: str) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        response = client.get("/healthz/ready", **headers)
        if response.status_code == status or time.monotonic() > deadline:
            assert response.status_code == status, response.json()
            return response.json()
        time.sleep(0.2)


@pytest.mark.django_db
def test_liveness_answers_without_looking_at_any_service(client: Client) -> None:
    response = client.get("/healthz/live")
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert client.get("/healthz/live/").status_code == 200


@pytest.mark.django_db
def test_without_a_worker_or_beat_readiness_fails_and_says_why_only_to_admins(client: Client) -> None:
    anonymous = client.get("/healthz/ready")
    assert anonymous.status_code == 503
    assert anonymous.json() == {"status": "unavailable", "down": ["worker", "beat"]}
    admin = {"HTTP_AUTHORIZATION": f"Bearer {ApiKey.issue('ops', is_admin=True)[1]}"}
    health.RECENT_READY.forget()
    body = client.get("/healthz/ready/", **admin).json()
    assert body["checks"]["worker"]["error"] == "HeartbeatMissing: no worker has sent a heartbeat"
    assert body["checks"]["database"]["ok"] and body["checks"]["broker"]["ok"]


@pytest.mark.django_db
def test_an_old_heartbeat_is_not_enough(client: Client) -> None:
    heartbeats.record("worker", "celery@old", now=time.time() - HEARTBEAT_MAX_AGE_S - 5)
    heartbeats.record("beat", "host")
    admin = {"HTTP_AUTHORIZATION": f"Bearer {ApiKey.issue('ops', is_admin=True)[1]}"}
    body = client.get("/healthz/ready", **admin).json()
    assert body["down"] == ["worker"]
    assert "the last worker heartbeat (celery@old) is 8 s old" in body["checks"]["worker"]["error"]


@pytest.mark.django_db(transaction=True)
def test_readiness_fails_when_the_worker_is_killed_and_recovers_when_it_is_back(client: Client, start_worker) -> None:
    first = start_worker("ready")
    wait_for_readiness(client, 200)

    first.kill()

    body = wait_for_readiness(client, 503)
    assert set(body["down"]) == {"worker", "beat"}
    start_worker("ready-again")
    wait_for_readiness(client, 200)


def children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


@pytest.mark.django_db(transaction=True)
def test_readiness_fails_naming_beat_when_only_beat_dies(client: Client, start_worker) -> None:
    worker = start_worker("beat-dies")
    wait_for_readiness(client, 200)
    [beat] = children(worker.process.pid)  # `celery worker -B` runs beat in a child process

    os.kill(beat, signal.SIGKILL)

    body = wait_for_readiness(client, 503)
    assert body["down"] == ["beat"]
