from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from django.conf import settings
from django.core.management.base import CommandError
from django.test import TransactionTestCase

from tests.callers import KINDS, Caller
from tests.fresh_ids import destroy_the_runs_queues, start_ids_after_earlier_databases
from tests.receiver import Receiver
from tests.schema_validation import take_violations
from tests.services import DEFAULT_STOMP_URL, IN_CI, redis_url, stomp_url
from tests.workers import WorkerProcess, close_other_sessions

if TYPE_CHECKING:
    from django.contrib.auth.models import Permission, User
    from django.test import Client


def _flush_again_after_a_deadlock(teardown: Callable[[TransactionTestCase], None]) -> Callable[..., None]:
    """Wrap TransactionTestCase's flush (TRUNCATE of every table) so that a deadlock victim flushes again.

    A transactional test's worker process may still be committing (its deferred foreign-key checks
    lock the rows they point at) when the flush starts; PostgreSQL then aborts one of the two, and a
    clean-clone run (cc45) failed on a flush it chose. Whatever the worker was doing is over by the
    next try.
    """
    def flush(self: TransactionTestCase) -> None:
        for attempt in range(1, FLUSH_TRIES + 1):
            try:
                return teardown(self)
            except CommandError as error:
                if attempt == FLUSH_TRIES or "deadlock detected" not in str(error.__cause__):
                    raise
                time.sleep(0.5 * attempt)

    return flush


FLUSH_TRIES = 3
TransactionTestCase._fixture_teardown = _flush_again_after_a_deadlock(  # type: ignore[method-assign]
    TransactionTestCase._fixture_teardown)


def pytest_sessionstart(session: pytest.Session) -> None:
    engine = settings.DATABASES["default"]["ENGINE"]
    if IN_CI and "postgresql" not in engine:
        raise pytest.UsageError(
            f"CI=true needs the real PostgreSQL: DATABASE_URL is not set (engine {engine}). Run `make test`."
        )


@pytest.fixture(autouse=True)
def relay_finished_before_the_flush(request: pytest.FixtureRequest) -> Iterator[None]:
    """Let this process's outbox relay finish what a transactional test gave it before the database is flushed.

    The flush (TRUNCATE) after such a test deadlocked with the relay thread still marking rows queued.
    The database fixture is set up first here, so it is torn down (flushed) after this waits.
    """
    marker = request.node.get_closest_marker("django_db")
    if marker is not None and marker.kwargs.get("transaction"):
        request.getfixturevalue("_django_db_helper")
    yield
    from delivery.outbox import running_relay

    if (relay := running_relay()) is not None and not relay.wait_idle(timeout=60):
        pytest.fail("the outbox relay was still sending 60 s after the test ended", pytrace=False)


@pytest.fixture(autouse=True)
def api_replies_match_the_schema() -> Iterator[None]:
    """Fail a test when an API reply it received contradicts the OpenAPI schema (tests/schema_validation.py)."""
    take_violations()
    yield
    if violations := take_violations():
        pytest.fail("API replies that contradict /api/v1/schema/:\n" + "\n".join(violations), pytrace=False)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker) -> Iterator[None]:
    with django_db_blocker.unblock():
        start = start_ids_after_earlier_databases()
    yield
    with django_db_blocker.unblock():
        close_other_sessions()
    if start is not None:
        destroy_the_runs_queues(start, os.environ.get("STOMP_URL") or DEFAULT_STOMP_URL)


@pytest.fixture(scope="session")
def live_services() -> None:
    """Require the real STOMP broker and Redis (fail under CI=true, skip elsewhere)."""
    stomp_url()
    redis_url()


@pytest.fixture(scope="module")
def worker(django_db_setup, live_services, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkerProcess]:
    """A real Celery worker with beat, on the test database, for the tests of one module."""
    process = WorkerProcess(tmp_path_factory.mktemp("workers"), "worker")
    yield process
    process.stop()


@pytest.fixture
def start_worker(django_db_setup, live_services, tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    """Start workers inside one test (to kill them, or to give them other settings)."""
    started: list[WorkerProcess] = []

    def start(name: str = "worker", nofile: int | None = None, **env: str) -> WorkerProcess:
        process = WorkerProcess(tmp_path, f"{name}-{len(started)}", env, nofile=nofile)
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
def admin_key(db) -> str:
    from rooms.models import ApiKey

    _, plaintext = ApiKey.issue("admin", is_admin=True)
    return plaintext


@pytest.fixture
def api_room(db):
    """The room the `caller` fixture's room key belongs to, with event type order.created v1."""
    from tests.factories import make_event_type, make_room

    room = make_room()
    make_event_type(room)
    return room


@pytest.fixture(params=KINDS)
def caller(request: pytest.FixtureRequest, api_room) -> Caller:
    """Each kind of API caller in turn, relative to `api_room`."""
    from rooms.models import ApiKey
    from tests.factories import make_room

    keys = {
        "admin": lambda: ApiKey.issue("admin", is_admin=True)[1],
        "room key": lambda: ApiKey.issue("room", rooms=[api_room])[1],
        "other room's key": lambda: ApiKey.issue("other", rooms=[make_room()])[1],
        "no key": lambda: None,
    }
    return Caller(request.param, keys[request.param]())


# The web UI's users: staff may use every page; a signed-in user without staff status gets 403.
@pytest.fixture
def owner(django_user_model: type[User]) -> User:
    """A staff superuser, as `createsuperuser` makes."""
    return django_user_model.objects.create_user("owner", password="owner-pass-1", is_staff=True, is_superuser=True)


# What an operator needs beyond staff status: a permission for every change (docs/security.md's matrix).
OPERATOR_PERMISSIONS = ["rooms.add_room", "rooms.change_room", "rooms.delete_room", "rooms.add_eventtype",
                        "rooms.add_apikey", "rooms.change_apikey", "subscriptions.add_subscription",
                        "subscriptions.change_subscription", "subscriptions.pause_subscription",
                        "subscriptions.delete_subscription", "delivery.add_message", "delivery.change_delivery",
                        "delivery.delete_delivery", "analytics.add_reportrun"]


@pytest.fixture
def member(django_user_model: type[User]) -> User:
    """A staff user without superuser rights, granted the operator's permissions: the everyday operator."""
    user = django_user_model.objects.create_user("member", is_staff=True)  # no password: tests force_login
    user.user_permissions.set(permissions(OPERATOR_PERMISSIONS))
    return user


@pytest.fixture
def staff_with(django_user_model: type[User]) -> Callable[..., User]:
    """Make staff users granted exactly the permissions named (`"rooms.change_apikey"`), and no other."""
    made = itertools.count(1)

    def make(*names: str) -> User:
        user = django_user_model.objects.create_user(f"staff-{next(made)}", is_staff=True)
        user.user_permissions.set(permissions(names))
        return user

    return make


def permissions(names: Iterable[str]) -> list[Permission]:
    """Return the Permission rows named `"app_label.codename"`, failing on a name that has none."""
    from django.contrib.auth.models import Permission
    from django.db.models import Q

    named = list(names)
    wanted = Q(pk__in=[])
    for name in named:
        app, codename = name.split(".", 1)
        wanted |= Q(content_type__app_label=app, codename=codename)
    found = list(Permission.objects.filter(wanted))
    assert len(found) == len(named), f"not every one of {named} is a permission: found {found}"
    return found


@pytest.fixture
def viewer(django_user_model: type[User]) -> User:
    """A staff user with no model permissions: may look at every page, mint and destroy nothing."""
    return django_user_model.objects.create_user("viewer", is_staff=True)


@pytest.fixture
def outsider(django_user_model: type[User]) -> User:
    """A signed-in user without staff status."""
    return django_user_model.objects.create_user("outsider")


@pytest.fixture
def staff_client(client: Client, member: User) -> Client:
    """The test client signed in as a staff user."""
    client.force_login(member)
    return client
