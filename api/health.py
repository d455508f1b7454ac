"""Health: `/healthz/live`, `/healthz/ready` and `/healthz/` (docs/operations.md#health).

- `/healthz/live`: the process answers (200). A liveness probe restarts a process that does not.
- `/healthz/ready`: the database, the message broker and the Celery broker answer, and a Celery
  worker and beat have sent a heartbeat (dovecote/heartbeats.py) within
  DOVECOTE_HEARTBEAT_MAX_AGE_SECONDS, and no worker said within that time that it has fewer than
  DOVECOTE_WORKER_MIN_FREE_FDS file descriptors left (`worker_sockets`); else 503 naming what is down.
- `/healthz/`: the three services only (what it always answered; docker-compose's web check).

Anyone may ask (200, or 503 naming the checks that failed); only staff users and admin API keys
see each check's timing and error text, which can name internal hosts. Each web process checks at
most once every HEALTH_CACHE_SECONDS, whoever asks and however often, and asks the broker through
its one shared connection rather than opening a new one per call.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET
from kombu import Connection

from delivery.broker.base import BrokerUnavailable
from delivery.broker.shared import shared_broker
from dovecote import heartbeats
from dovecote.throttling import API_KEY_FAILURES
from rooms.models import ApiKey

CHECK_TIMEOUT_S = 3.0
HEALTH_CACHE_SECONDS = 2.0


def check_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def check_broker() -> None:
    broker = shared_broker()  # connects on first use; reconnects by itself after that
    if not broker.is_connected():
        raise BrokerUnavailable(f"the connection to the broker at {broker.url.rpartition('@')[2]} is down")


def check_celery_broker() -> None:
    if settings.CELERY_BROKER_URL.startswith("memory://"):
        return  # embedded mode: the Celery broker lives in this process
    with Connection(settings.CELERY_BROKER_URL, connect_timeout=CHECK_TIMEOUT_S) as conn:
        conn.ensure_connection(max_retries=1, timeout=CHECK_TIMEOUT_S)


def check_heartbeat(role: str) -> Callable[[], None]:
    """A check that a process of `role` (worker, beat) sent a heartbeat recently."""
    def check() -> None:
        seen = heartbeats.last_seen(role)
        if seen is None:
            raise HeartbeatMissing(f"no {role} has sent a heartbeat")
        age = time.time() - seen["at"]
        if age > settings.DOVECOTE_HEARTBEAT_MAX_AGE_SECONDS:
            raise HeartbeatMissing(f"the last {role} heartbeat ({seen.get('name', '?')}) is {age:.0f} s old")
    return check


class HeartbeatMissing(Exception):
    """No process of a role has said it is alive recently."""


def check_worker_sockets() -> None:
    """Fail while a worker recently said it has no file descriptors to spare (dovecote/heartbeats.py)."""
    short = heartbeats.short_of_sockets()
    if short is None or time.time() - short["at"] > settings.DOVECOTE_HEARTBEAT_MAX_AGE_SECONDS:
        return
    if not short.get("socket_ok", True):
        raise WorkerOutOfSockets(f"{short.get('name', '?')} cannot open a socket "
                                 f"({short.get('open')} of {short.get('limit')} file descriptors open)")
    raise WorkerOutOfSockets(f"{short.get('name', '?')} has {short.get('open')} of its {short.get('limit')} file "
                             f"descriptors open, fewer than DOVECOTE_WORKER_MIN_FREE_FDS "
                             f"({settings.DOVECOTE_WORKER_MIN_FREE_FDS}) left")


class WorkerOutOfSockets(Exception):
    """A worker is at its open-file limit: its pushes, beat's tasks and its database connections fail."""


CHECKS: dict[str, Callable[[], None]] = {
    "database": check_database,
    "broker": check_broker,
    "celery_broker": check_celery_broker,
}
READY_CHECKS: dict[str, Callable[[], None]] = {
    **CHECKS,
    "worker": check_heartbeat("worker"),
    "worker_sockets": check_worker_sockets,
    "beat": check_heartbeat("beat"),
}


def run_check(check: Callable[[], None]) -> dict[str, object]:
    """Run one check and report ok, how long it took, and the error if any."""
    started = time.monotonic()
    try:
        check()
    except Exception as error:  # noqa: BLE001 - any failure means "down", and its text is the report
        return {"ok": False, "error": f"{type(error).__name__}: {error}"[:500], "ms": _ms_since(started)}
    return {"ok": True, "ms": _ms_since(started)}


def _ms_since(started: float) -> int:
    return round((time.monotonic() - started) * 1000)


class RecentChecks:
    """The last results of the checks in this process, run again once they are HEALTH_CACHE_SECONDS old."""

    def __init__(self, checks: dict[str, Callable[[], None]]) -> None:
        self.checks = checks
        self._lock = threading.Lock()
        self._results: dict[str, dict[str, object]] = {}
        self._taken_at = -float("inf")
        self._for: tuple[str, ...] = ()

    def results(self) -> dict[str, dict[str, object]]:
        with self._lock:  # callers arriving during a check wait for its result rather than check again
            services = (settings.STOMP_URL, settings.CELERY_BROKER_URL, connection.settings_dict["NAME"])
            if services != self._for or time.monotonic() - self._taken_at >= HEALTH_CACHE_SECONDS:
                self._results = {name: run_check(check) for name, check in self.checks.items()}
                self._taken_at, self._for = time.monotonic(), services
            return self._results

    def forget(self) -> None:
        with self._lock:
            self._taken_at = -float("inf")


RECENT = RecentChecks(CHECKS)
RECENT_READY = RecentChecks(READY_CHECKS)


def may_see_details(request: HttpRequest) -> bool:
    """Say whether the caller is a staff user or brings an admin API key (False while the database is down)."""
    try:
        if request.user.is_authenticated and request.user.is_staff:
            return True
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return False
        key = ApiKey.authenticate(token.strip())  # a right key before the limit, as api.auth does
        if key is None and API_KEY_FAILURES.seconds_blocked(request):
            return False
    except DatabaseError:
        return False
    if key is None:
        API_KEY_FAILURES.record_failure(request)
    return key is not None and key.is_admin


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Answer 200 when the database, the broker and the Celery broker are up, else 503 naming the ones down."""
    return health_reply(request, RECENT)


@require_GET
def ready(request: HttpRequest) -> JsonResponse:
    """Answer 200 when the services are up and a worker and beat are alive, else 503 naming what is not."""
    return health_reply(request, RECENT_READY)


@require_GET
def live(request: HttpRequest) -> JsonResponse:
    """Answer 200: this process serves requests."""
    response = JsonResponse({"status": "ok"})
    response["Cache-Control"] = "no-store"
    return response


def health_reply(request: HttpRequest, recent: RecentChecks) -> JsonResponse:
    results = recent.results()
    down = [name for name, result in results.items() if not result["ok"]]
    body: dict[str, object] = {"status": "ok" if not down else "unavailable", "down": down}
    if may_see_details(request):
        body["checks"] = results
    response = JsonResponse(body, status=503 if down else 200)
    response["Cache-Control"] = "no-store"
    return response
