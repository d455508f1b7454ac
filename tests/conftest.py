from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.conf import settings

from tests.receiver import Receiver
from tests.services import IN_CI, redis_url, stomp_url
from tests.workers import WorkerProcess, close_other_sessions, move_id_sequences_past_earlier_runs


def pytest_sessionstart(session: pytest.Session) -> None:
    engine = settings.DATABASES["default"]["ENGINE"]
    if IN_CI and "postgresql" not in engine:
        raise pytest.UsageError(
            f"CI=true needs the real PostgreSQL: DATABASE_URL is not set (engine {engine}). Run `make test`."
        )


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker) -> Iterator[None]:  # noqa: ANN001
    with django_db_blocker.unblock():
        move_id_sequences_past_earlier_runs()
    yield
    with django_db_blocker.unblock():
        close_other_sessions()


@pytest.fixture(scope="session")
def live_services() -> None:
    """Require the real STOMP broker and Redis (fail under CI=true, skip elsewhere)."""
    stomp_url()
    redis_url()


@pytest.fixture(scope="module")
def worker(django_db_setup, live_services, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkerProcess]:  # noqa: ANN001
    """A real Celery worker with beat, on the test database, for the tests of one module."""
    process = WorkerProcess(tmp_path_factory.mktemp("workers"), "worker")
    yield process
    process.stop()


@pytest.fixture
def start_worker(django_db_setup, live_services, tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:  # noqa: ANN001
    """Start workers inside one test (to kill them, or to give them other settings)."""
    started: list[WorkerProcess] = []

    def start(name: str = "worker", **env: str) -> WorkerProcess:
        process = WorkerProcess(tmp_path, f"{name}-{len(started)}", env)
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    yield server
    server.close()


@pytest.fixture
def admin_key(db) -> str:  # noqa: ANN001
    from rooms.models import ApiKey

    _, plaintext = ApiKey.issue("admin", is_admin=True)
    return plaintext
