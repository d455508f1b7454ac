"""/healthz/ready fails, naming the worker, while a worker has no file descriptors to spare.

A real worker (with its beat) gets its open-file limit lowered to just above what it has open, as
a receiver holding every socket would leave it: its heartbeat says so and readiness answers 503
with `worker_sockets`; once the limit is back, readiness recovers.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Iterator

import pytest
from django.core.cache import cache
from django.test import Client, override_settings

from api import health
from dovecote import heartbeats
from rooms.models import ApiKey
from tests.workers import open_files

HEARTBEAT_MAX_AGE_S = 3


@pytest.fixture(autouse=True)
def no_earlier_heartbeats() -> Iterator[None]:
    """Forget the heartbeats and the cached checks of earlier tests' workers."""
    def forget() -> None:
        for key in [heartbeats.KEY.format(role=role) for role in heartbeats.ROLES] + [heartbeats.SOCKETS_KEY]:
            cache.delete(key)
        health.RECENT_READY.forget()
    forget()
    with override_settings(DOVECOTE_HEARTBEAT_MAX_AGE_SECONDS=HEARTBEAT_MAX_AGE_S):
        yield
    forget()


def wait_for_readiness(client: Client, status: int, admin: dict[str, str], timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        response = client.get("/healthz/ready", **admin)
        if response.status_code == status or time.monotonic() > deadline:
            assert response.status_code == status, response.json()
            return response.json()
        time.sleep(0.2)


@pytest.mark.django_db(transaction=True)
def test_readiness_fails_naming_a_worker_at_its_open_file_limit_and_recovers_when_it_has_room(
        client: Client, start_worker) -> None:
    worker = start_worker("fds")
    admin = {"HTTP_AUTHORIZATION": f"Bearer {ApiKey.issue('ops', is_admin=True)[1]}"}
    wait_for_readiness(client, 200, admin)
    pid = worker.process.pid
    limits = resource.prlimit(pid, resource.RLIMIT_NOFILE)

    resource.prlimit(pid, resource.RLIMIT_NOFILE, (len(open_files(pid)) + 8, limits[1]))
    try:
        body = wait_for_readiness(client, 503, admin)
        anonymous = client.get("/healthz/ready").json()
    finally:
        resource.prlimit(pid, resource.RLIMIT_NOFILE, limits)

    print(body)
    assert "worker_sockets" in body["down"]
    error = body["checks"]["worker_sockets"]["error"]
    assert error.startswith("WorkerOutOfSockets: fds-0@") and "file descriptors" in error, error
    assert "worker_sockets" in anonymous["down"] and "checks" not in anonymous, anonymous
    wait_for_readiness(client, 200, admin)
